"""safety_dims' claims as data.

Pan et al. (2025) safety fine-tune Llama-3.1-8B-Instruct (SSFT / DPO on jailbreak
prompts) and analyse the shift of last-token activations: its effective rank at
variance shares tau = 0.4 .. 0.9 stays well above 1 (Fig. "rank"), the leading
component is a refusal direction whose projection classifies refusal with ~0.97-0.99
accuracy in middle layers (the authors' ``first_comp_accuracies.json``), the
non-dominant components are tied to jailbreak styles (hypothetical narrative,
role-play), and removing the tokens most relevant to the safety direction (PLRP
relevance of component 0 at layer 15) lets rewritten prompts bypass refusal. Here each
seed is one LoRA fine-tuning of the small model; every check pools seeds.
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
        paper_value="effective rank well above 1 at tau = 0.9 in every layer (rank figure)",
        paper_setting=_SETTING,
        metric="eff_rank_90",
        check=Threshold(variant="safety_tuned", bound=1.0),
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
    ),
)
