"""Issue 46: residual-stream matching, the self-fusion gate and the pair-level claims of
rotation_fusion, each against a brute-force or closed-form reference."""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from reprolab.contract import Unit
from reprolab.core.transformer import vit
from reprolab.methods.rotation_fusion import SPEC, fusion, method
from reprolab.methods.rotation_fusion.claims import PAIR_REASON, SELF_FUSION
from reprolab.methods.rotation_fusion.config import RotationFusionConfig

WIDTH = 4  # 4! = 24 residual permutations: every one is tried


def _tiny(seed: int = 0) -> torch.nn.Module:
    """A ViT of width 4 (2 heads of 2) on 8 x 8 images, random non-zero biases and
    LayerNorm gains, so every residual-indexed parameter matters."""
    torch.manual_seed(seed)
    net = vit(8, 4, WIDTH, 2, 2, 10, 2.0).eval()
    with torch.no_grad():
        for name, p in net.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.3)
            elif p.ndim == 1:  # LayerNorm gains
                p.uniform_(0.5, 1.5)
    return net


def _x(n: int = 32) -> torch.Tensor:
    return torch.rand(n, 64, generator=torch.Generator().manual_seed(1))


def _objective(ref, other, order) -> float:
    """The weight-matching objective ``sum_i <F_ref[i], F_other[order[i]]>``."""
    with torch.no_grad():
        f_r, f_o = fusion._resid_features(ref).double(), fusion._resid_features(other).double()
        return float((f_r * f_o[list(order)]).sum())


def test_every_residual_permutation_of_a_tiny_model_is_the_same_function():
    """Brute force: all 24 permutations of the residual stream leave the logits as they
    are; a control that permutes the stream everywhere but the head does not."""
    net, x = _tiny(), _x()
    with torch.no_grad():
        ref = net(x)
        for order in itertools.permutations(range(WIDTH)):
            moved = copy.deepcopy(net)
            fusion.permute_residual(moved, order)
            assert torch.allclose(moved(x), ref, atol=1e-5, rtol=0), order
            if order != tuple(range(WIDTH)):
                assert fusion.weight_distance(net, moved) > 0.1
                broken = copy.deepcopy(moved)
                broken.head.weight.copy_(net.head.weight)  # the head left unpermuted
                assert not torch.allclose(broken(x), ref, atol=1e-3, rtol=0), order


def test_residual_matching_recovers_every_known_permutation():
    """For each of the 24 permutations, ``resid_order`` gives back its inverse and the
    matched copy is the model, weight for weight."""
    net = _tiny(1)
    for order in itertools.permutations(range(WIDTH)):
        moved = copy.deepcopy(net)
        fusion.permute_residual(moved, order)
        found = fusion.resid_order(net, moved)
        assert list(np.asarray(order)[found]) == list(range(WIDTH)), order
        assert fusion.weight_distance(net, fusion.match_residual(net, moved)) == 0.0


def test_residual_matching_is_the_brute_force_maximum_between_two_models():
    """Between two unrelated models, ``resid_order`` attains the maximum of the
    matching objective over all 24 permutations."""
    a, b = _tiny(2), _tiny(3)
    found = fusion.resid_order(a, b)
    best = max(_objective(a, b, o) for o in itertools.permutations(range(WIDTH)))
    assert _objective(a, b, found) == pytest.approx(best, rel=1e-12)


def test_random_permuted_copy_is_the_same_function():
    net, x = _tiny(4), _x()
    for resid in (False, True):
        twin = fusion.random_permuted_copy(net, torch.Generator().manual_seed(5), resid)
        with torch.no_grad():
            assert torch.allclose(twin(x), net(x), atol=1e-5, rtol=0)
        assert fusion.weight_distance(net, twin) > 0.1


def test_self_fusion_gate_passes_with_residual_matching_and_fails_without():
    """The gate: a model fused with a permuted copy of itself is the model when the
    fusion undoes every permutation (residual matching on); when the copy's residual
    stream is permuted and the fusion does not match it, the fused model is another
    function, so the gate can fail."""
    net, x = _tiny(6), _x()

    def err(permute_resid, resid, seed=7):
        g = torch.Generator().manual_seed(seed)
        return fusion.self_fusion_err(net, x, g, permute_resid, resid)

    assert err(True, True) < 1e-5
    assert err(False, False) < 1e-5  # no residual permutation to undo
    assert err(False, True) < 1e-5  # matching an unpermuted stream finds the identity
    assert err(True, False) > 1e-2
    # weight for weight: the rotation fusion at 0.5 of net and its matched twin is net
    twin = fusion.random_permuted_copy(net, torch.Generator().manual_seed(8), True)
    fused = fusion.fuse(net, twin, 0.5, "rotation", resid=True)
    assert fusion.weight_distance(net, fused) < 1e-5


def test_gate_follows_the_regime_and_the_config():
    """``method.self_fusion_gate``: the seeds regime's copy permutes the residual
    stream, so the gate holds only with residual matching there; the fine-tune copy
    does not, so it holds without."""
    net = _tiny(9)
    data = {"x_val": (np.random.default_rng(0).random((20, 64)) * 255).astype(np.uint8)}
    data["y_val"] = np.zeros(20, dtype=np.int64)
    on = RotationFusionConfig(resid_match="permutation", resid_regimes=["seeds"])
    off = RotationFusionConfig()
    seeds = Unit("seeds-p0", "endpoints", 0, {"regime": "seeds", "pair": 0})
    tune = Unit("finetune-p0", "endpoints", 0, {"regime": "finetune", "pair": 0})
    assert method.self_fusion_gate(on, seeds, net, data)["self_fusion_ok"] == 1.0
    assert method.self_fusion_gate(off, seeds, net, data)["self_fusion_ok"] == 0.0
    assert method.self_fusion_gate(on, tune, net, data)["self_fusion_ok"] == 1.0
    assert method.resid_on(on, "seeds") and not method.resid_on(on, "finetune")
    assert method.resid_on(off, "seeds") is False


def test_pairs_of_the_seeds_regime_share_no_model():
    """Every model of every pair (run seeds 0-99, slots 0-9) has its own seed."""
    seen: dict[int, tuple] = {}
    for s, k in itertools.product(range(100), range(10)):
        unit = Unit(f"seeds-p{k}", "endpoints", s, {"regime": "seeds", "pair": k})
        got = method.model_seeds(unit)
        assert set(got) == {"a", "b"}
        for name, seed in got.items():
            assert seed not in seen, (seen.get(seed), (s, k, name))
            seen[seed] = (s, k, name)
    tune = method.model_seeds(
        Unit("finetune-p1", "endpoints", 2, {"regime": "finetune", "pair": 1})
    )
    assert tune == {"base": 2010, "a": 2011, "b": 2012}  # the seeds of before


# ---------------------------------------------------------------- the changed claims


def _claim(cid):
    return next(c for c in SPEC.claims if c.id == cid)


def _table(diffs: dict[tuple[int, int], float], ok: dict[int, float], regime: str):
    """Hand-made metrics: per (seed, pair) test_acc of the two variants of the claim
    (baseline 0.5, method 0.5 + diff), and per seed the endpoints' self_fusion_ok."""
    rows = []
    for (seed, pair), d in diffs.items():
        task = f"{regime}-p{pair}"
        for variant, value in (("rotation", 0.5 + d), ("perm", 0.5 + d), ("average", 0.5)):
            rows.append((task, variant, seed, pair, regime, "fp32", "test_acc", value))
        rows.append((task, "endpoints", seed, pair, regime, "fp32", "self_fusion_ok", ok[seed]))
        rows.append((task, "endpoints", seed, pair, regime, "fp32", "test_acc", 0.8))
    cols = ["task", "variant", "seed", "pair", "regime", "precision", "metric", "value"]
    out = pd.DataFrame(rows, columns=cols)
    out["seed"] = out["seed"].astype("Int64")
    return out


DIFFS = {  # 3 seeds x 3 pairs; by seed means the interval is much wider
    (0, 0): 0.030, (0, 1): 0.012, (0, 2): 0.041,
    (1, 0): 0.025, (1, 1): 0.034, (1, 2): 0.018,
    (2, 0): 0.009, (2, 1): 0.044, (2, 2): 0.028,
}  # fmt: skip


@pytest.mark.parametrize("cid", ["rotation_gt_perm_seeds", "perm_gt_average_seeds"])
def test_seeds_claims_count_pairs(cid):
    """The seeds-regime claims' interval is the t-interval over the 9 pair differences
    (scipy), not over the 3 seed means; the unit and its reason are recorded."""
    claim = _claim(cid)
    assert claim.unit == "pair" and claim.unit_reason == PAIR_REASON
    if cid == "rotation_gt_perm_seeds":  # rotation vs perm: make rotation lead by d
        table = _table(DIFFS, {0: 1.0, 1: 1.0, 2: 1.0}, "seeds")
        table.loc[(table.variant == "perm") & (table.metric == "test_acc"), "value"] = 0.5
    else:
        table = _table(DIFFS, {0: 1.0, 1: 1.0, 2: 1.0}, "seeds")
    result = claim.evaluate(table, "fp32", "paper")
    m = result["measured"]
    d = np.array(list(DIFFS.values()))
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert m["n"] == 9 and m["unit"] == "pair"
    assert (m["ci_low"], m["ci_high"]) == pytest.approx((low, high), rel=1e-9)
    assert result["verdict"].startswith("reproduced")
    # by seed (the old definition) the same rows give 3 replicates
    seed_means = [np.mean([DIFFS[s, k] for k in range(3)]) for s in range(3)]
    assert m["n"] != len(seed_means)


@pytest.mark.parametrize(
    "cid,regime",
    [
        ("rotation_gt_perm_seeds", "seeds"),
        ("perm_gt_average_seeds", "seeds"),
        ("rotation_gt_perm_finetune", "finetune"),
        ("perm_gt_average_finetune", "finetune"),
    ],
)
def test_fusion_claims_are_gated_by_self_fusion(cid, regime):
    """One seed whose self-fusion gate failed leaves the claim untested
    (``premise_failed``), whatever the check says; with the gate held everywhere the
    check decides; without the gate's metric the claim is not tested either."""
    claim = _claim(cid)
    assert claim.premise == SELF_FUSION
    table = _table(DIFFS, {0: 1.0, 1: 0.0, 2: 1.0}, regime)
    if cid.startswith("rotation"):
        table.loc[(table.variant == "perm") & (table.metric == "test_acc"), "value"] = 0.5
    failed = claim.evaluate(table, "fp32", "paper")
    assert failed["verdict"] == "premise_failed"
    assert failed["measured"]["premise"]["failing_seeds"] == [1]
    held = table.copy()
    held.loc[held.metric == "self_fusion_ok", "value"] = 1.0
    assert claim.evaluate(held, "fp32", "paper")["verdict"] != "premise_failed"
    unmeasured = table[table.metric != "self_fusion_ok"]
    assert claim.evaluate(unmeasured, "fp32", "paper")["verdict"] == "premise_failed"


def test_finetune_claims_still_count_seeds():
    """The fine-tune claims keep the seed as the replicate: 3 seed means."""
    claim = _claim("rotation_gt_perm_finetune")
    assert claim.unit == "seed"
    table = _table(DIFFS, {0: 1.0, 1: 1.0, 2: 1.0}, "finetune")
    table.loc[(table.variant == "perm") & (table.metric == "test_acc"), "value"] = 0.5
    m = claim.evaluate(table, "fp32", "paper")["measured"]
    means = np.array([np.mean([DIFFS[s, k] for k in range(3)]) for s in range(3)])
    low, high = stats.t.interval(0.95, 2, loc=means.mean(), scale=stats.sem(means))
    assert m["n"] == 3
    assert (m["ci_low"], m["ci_high"]) == pytest.approx((low, high), rel=1e-9)
