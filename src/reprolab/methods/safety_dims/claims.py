"""safety_dims' claims as data.

Pan et al. (2025) safety fine-tune Llama-3.1-8B-Instruct (SSFT / DPO on jailbreak
prompts) and analyse the shift of last-token activations: safety-aligned behaviour is
"jointly controlled by multi-dimensional directions" (abstract; the authors' code sweeps
its effective rank at variance shares tau = 0.4 .. 0.9, card), the leading
component is a refusal direction whose projection classifies refusal with ~0.97-0.99
accuracy in middle layers (the authors' ``first_comp_accuracies.json``), the
non-dominant components are tied to jailbreak styles (hypothetical narrative,
role-play), and removing the tokens most relevant to the safety direction (PLRP
relevance of component 0 at layer 15) lets rewritten prompts bypass refusal. Here each
seed is one LoRA fine-tuning of the small model; every check pools seeds, its interval
read at the look of the sequential plan (``core.claims.Level``, alpha 0.05 two-sided
overall). ``multi_dim_shift`` is the central claim.
"""

from reprolab.core.claims import Claim, PairedDifference, Threshold

_SETTING = (
    "Llama-3.1-8B-Instruct after safety SFT / DPO on jailbreak prompts (StrongREJECT "
    "harmful requests + benign requests), last-token residual stream of every layer"
)

CLAIMS = (
    Claim(
        id="multi_dim_shift",
        statement=(
            "the residual-stream shift from safety fine-tuning is multi-dimensional: "
            "effective rank > 1 at 90% of the variance (mean over the middle layers)"
        ),
        paper_value=(
            "safety-aligned behavior is jointly controlled by multi-dimensional directions "
            "(abstract); effective rank > 1 at 90% variance is the card's test"
        ),
        paper_setting=_SETTING,
        metric="eff_rank_90",
        check=Threshold(variant="safety_tuned", bound=1.0),
        effect=1.0,
        effect_basis=(
            "margin: one extra direction (effective rank 2 vs the bound 1); no rank value "
            "in the abstract or card"
        ),
        source="abstract",
        central=True,
    ),
    Claim(
        id="comp0_refusal_probe",
        statement=(
            "component 0 of the shift classifies refusal with high accuracy (> 0.9, "
            "held-out threshold) in the middle layers"
        ),
        paper_value="~0.97-0.99 refusal accuracy of component 0 in middle layers",
        paper_setting=_SETTING,
        metric="comp0_acc_mid",
        check=Threshold(variant="safety_tuned", bound=0.9),
        effect=0.07,
        effect_basis="paper: 0.97 (card, lower end of ~0.97-0.99) minus the bound 0.9 = 0.07",
        source="card",
    ),
    Claim(
        id="secondary_wrappers",
        statement=(
            "the next components (1..k) of the shift separate the wrapper types (plain, "
            "hypothetical narrative, role-play): permutation p < 0.05 at the middle layer"
        ),
        paper_value="non-dominant directions tied to hypothetical narrative and role-play",
        paper_setting=_SETTING + "; jailbreak styles from the authors' prompt sets",
        metric="wrapper_p",
        check=Threshold(variant="safety_tuned", bound=0.05, higher_is_better=False),
        effect=0.04,
        effect_basis=(
            "margin: a mean permutation p of 0.01 against the bound 0.05 (distance 0.04); "
            "the paper gives no p-value"
        ),
        source="abstract",
    ),
    Claim(
        id="trigger_removal",
        statement=(
            "removing the top-relevance tokens (gradient x input of the component-0 "
            "projection) lowers the refusal score more than removing as many random tokens"
        ),
        paper_value="trigger removal bypasses refusal (relevance-guided rewrites, PLRP)",
        paper_setting=_SETTING + "; relevance from a reference model, StrongREJECT scoring",
        metric="refusal_score_drop",
        check=PairedDifference(method="remove_top", baseline="remove_random"),
        effect=0.5,
        effect_basis=(
            "margin: 0.5 logit of the refusal score logit('I') - logit('Sure') (odds of "
            "refusing change by a factor ~1.65); the paper gives no effect on this scale"
        ),
        source="abstract",
    ),
)
