"""Low-bit post-training quantization: RTN and Bit-DGDM against closed forms and torch."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from torch import nn

from reprolab import config
from reprolab.core import quant, schemes
from reprolab.evidence.judging.claims import Claim, PrecisionGap

FAKE = ("rtn_w8a8", "rtn_w4a4", "bitdgdm_w4a4", "bitdgdm_w4a4_noact", "bitdgdm_w4a4_nodecomp")


@pytest.mark.parametrize("bits", range(2, 9))
def test_fake_quant_error_is_at_most_half_a_step(bits):
    torch.manual_seed(bits)
    x = torch.randn(32, 100) * torch.rand(32, 1) * 10
    err = (quant.fake_quant(x, bits, dim=1) - x).abs()
    step = x.abs().amax(dim=1, keepdim=True) / (2 ** (bits - 1) - 1)
    assert (err <= step / 2 + 1e-5).all()
    assert len(torch.unique(quant.fake_quant(x, bits, dim=1)[0])) <= 2**bits - 1


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_per_channel_rtn_matches_torch_fake_quantize(bits):
    torch.manual_seed(0)
    w = torch.randn(16, 40)
    qm = 2 ** (bits - 1) - 1
    scale = w.abs().amax(dim=1) / qm
    ref = torch.fake_quantize_per_channel_affine(
        w, scale, torch.zeros(16, dtype=torch.int32), 0, -qm, qm
    )
    torch.testing.assert_close(quant.fake_quant(w, bits, dim=1), ref, atol=1e-6, rtol=0)


@pytest.mark.parametrize("bits", range(2, 9))
def test_packed_codes_round_trip(bits):
    codes = torch.randint(-(2 ** (bits - 1) - 1), 2 ** (bits - 1), (7, 9), dtype=torch.int8)
    packed = quant._pack(codes, bits)
    assert packed.numel() == (math.ceil(63 / 2) if bits <= 4 else 63)
    assert torch.equal(quant._unpack(packed, bits, 63).view(7, 9).to(torch.int8), codes)


def test_sparse_dense_split_is_exact():
    torch.manual_seed(0)
    x = torch.randn(64, 48) * 3
    dense, sparse = quant.split_outliers(x, 2.5)
    assert torch.equal(dense + sparse, x)
    assert (dense.abs() <= 2.5).all()
    assert torch.equal(sparse != 0, x.abs() > 2.5)


def _low_rank_plus_sparse(m=48, n=40, rank=3, outliers=30, noise=0.01):
    g = torch.Generator().manual_seed(0)
    low = torch.randn(m, rank, generator=g) @ torch.randn(rank, n, generator=g)
    sparse = torch.zeros(m * n)
    idx = torch.randperm(m * n, generator=g)[:outliers]
    sparse[idx] = 20 * torch.sign(torch.randn(outliers, generator=g))
    return low + sparse.view(m, n) + noise * torch.randn(m, n, generator=g), low


def test_decomposition_recovers_a_planted_low_rank_plus_sparse_matrix():
    w, low = _low_rank_plus_sparse()
    left, right, s = quant.decompose(w, rank=3, sparsity=30 / w.numel(), iters=20)
    assert (w - left @ right.T - s).norm() / w.norm() < 0.01
    assert (left @ right.T - low).norm() / low.norm() < 0.02
    assert (s != 0).sum() == 30


def test_decomposition_error_shrinks_with_rank_and_sparsity():
    w, _ = _low_rank_plus_sparse(rank=8, noise=0.3)

    def err(rank, sparsity):
        left, right, s = quant.decompose(w, rank, sparsity)
        return float((w - left @ right.T - s).norm())

    by_rank = [err(r, 0.01) for r in (0, 1, 2, 4, 8, 16)]
    by_sparsity = [err(2, a) for a in (0.0, 0.005, 0.01, 0.05, 0.2)]
    assert all(a >= b - 1e-4 for a, b in zip(by_rank, by_rank[1:], strict=False)), by_rank
    assert all(a >= b - 1e-4 for a, b in zip(by_sparsity, by_sparsity[1:], strict=False))
    assert by_rank[-1] < 0.3 * by_rank[0] and by_sparsity[-1] < 0.8 * by_sparsity[0]


class Net(nn.Module):
    """An MLP whose hidden activations carry a few large outlier channels, as the
    quantization literature reports for transformers."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(32, 64), nn.Linear(64, 64), nn.Linear(64, 10)
        with torch.no_grad():
            self.a.weight[:3] *= 25

    def forward(self, x):
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def _net():
    torch.manual_seed(0)
    return Net().eval()


def _rel(q, ref):
    return float((q - ref).norm() / ref.norm())


def test_quantized_outputs_stay_near_fp32_and_restore_exactly():
    net, x = _net(), torch.randn(256, 32, generator=torch.Generator().manual_seed(1))
    calib = [torch.randn(256, 32, generator=torch.Generator().manual_seed(2))]
    with torch.inference_mode():
        ref = net(x)
    errors = {}
    for scheme in FAKE:
        q = quant.quantize(net, scheme, calibration=calib)
        assert sum(isinstance(m, quant.QuantLinear) for m in q.modules()) == 3
        restored = quant.restore_quantized(_net(), scheme, q.state_dict())
        with torch.inference_mode():
            out = q(x)
            torch.testing.assert_close(restored(x), out)
        errors[scheme] = _rel(out, ref)
    assert errors["rtn_w8a8"] < 0.02
    assert max(errors.values()) < 0.5
    # the outlier-aware scheme beats plain RTN at the same bit width on outlier channels,
    # and each of its two parts contributes
    assert errors["bitdgdm_w4a4"] < errors["rtn_w4a4"]
    assert errors["bitdgdm_w4a4"] < errors["bitdgdm_w4a4_noact"]
    assert errors["bitdgdm_w4a4"] <= errors["bitdgdm_w4a4_nodecomp"] + 1e-6
    assert isinstance(net.a, nn.Linear)  # fp32 model untouched


def test_without_quantization_the_bitdgdm_layer_is_exact():
    """At 8-bit weights and a16 the only error is weight rounding of the residual E;
    with every activation entry an outlier the activation path is fp32 too."""
    net = _net()
    linear = net.b
    layer = quant.QuantLinear.from_linear(linear, schemes.parse("bitdgdm_w8a16"))
    w_hat = layer.dequantized_weight()
    step = layer.scale.float()[:, None]  # fp16 scales, as stored
    assert ((w_hat - linear.weight).abs() <= step * 0.501 + 1e-6).all()
    layer.act_threshold = torch.tensor(0.0)
    x = torch.randn(8, 64)
    torch.testing.assert_close(layer(x), x @ w_hat.T + linear.bias, atol=1e-5, rtol=1e-5)


def test_effective_bytes_follow_the_closed_form():
    lin = nn.Linear(64, 32)
    rtn = quant.quantize(nn.Sequential(lin), "rtn_w4a4")
    assert quant.effective_bytes(rtn) == 64 * 32 // 2 + 32 * 2 + 32 * 4
    bd = quant.quantize(nn.Sequential(lin), "bitdgdm_w4a4", calibration=[torch.randn(4, 64)])
    rank, nnz = 2, round(0.005 * 64 * 32)  # ceil(32 / 16) and alpha * entries
    expected = 64 * 32 // 2 + 32 * 2 + 32 * 4 + (32 + 64) * rank * 2 + nnz * 6 + 4
    assert quant.effective_bytes(bd) == expected
    assert quant.effective_bytes(nn.Sequential(lin)) == (64 * 32 + 32) * 4
    int8 = quant.quantize(nn.Sequential(lin), "int8_dynamic")
    assert quant.effective_bytes(int8) == 64 * 32 + 8 + 32 * 4
    # the same bytes by kind: what the parts of a size ratio are
    assert quant.byte_parts(bd) == {
        "codes": 64 * 32 // 2,
        "scales": 32 * 2 + 4,
        "low_rank": (32 + 64) * rank * 2,
        "sparse": nnz * 6,
        "bias": 32 * 4,
        "unquantized": 0,
    }
    head = nn.Sequential(nn.Linear(64, 32), nn.LayerNorm(32))
    parts = quant.byte_parts(quant.quantize(head, "rtn_w4a4"))
    assert parts["unquantized"] == 2 * 32 * 4 and parts["low_rank"] == parts["sparse"] == 0


def test_layer_errors_are_zero_for_the_model_itself_and_grow_with_fewer_bits():
    net, x = _net(), [torch.randn(64, 32)]
    q8 = quant.quantize(net, "rtn_w8a8")
    itself = quant.layer_errors(q8, q8, x)
    assert set(itself) == {"a", "b", "c"} and all(e == 0 for e in itself.values())
    assert quant.layer_errors(net, _net(), x) == {}  # only quantized layers are listed
    e8 = quant.layer_errors(net, q8, x)
    e4 = quant.layer_errors(net, quant.quantize(net, "rtn_w4a4"), x)
    assert set(e8) == {"a", "b", "c"} and all(e4[k] > e8[k] > 0 for k in e8)


def test_layer_errors_match_a_hand_computed_error_and_a_shared_reference():
    """Brute force: each quantized layer's output over two inputs, run by hand layer by
    layer (each model on its own upstream activations); a precomputed full-precision
    reference (the quantize stage shares one among its schemes) changes no value."""
    torch.manual_seed(3)
    net, inputs = _net(), [torch.randn(8, 32), torch.randn(5, 32)]
    q4 = quant.quantize(net, "rtn_w4a4")

    def outputs(model):
        seen: dict[str, list[torch.Tensor]] = {}
        for x in inputs:
            a = model.a(x)
            b = model.b(torch.relu(a))
            c = model.c(torch.relu(b))
            for name, h in (("a", a), ("b", b), ("c", c)):
                seen.setdefault(name, []).append(h.flatten())
        return {k: torch.cat(v) for k, v in seen.items()}

    with torch.inference_mode():
        ref, got = outputs(net), outputs(q4)
    by_hand = {k: float((got[k] - ref[k]).norm() / ref[k].norm()) for k in ("a", "b", "c")}
    errors = quant.layer_errors(net, q4, inputs)
    assert errors.keys() == by_hand.keys()
    for k in by_hand:
        assert errors[k] == pytest.approx(by_hand[k], rel=1e-6)
    shared = quant.layer_outputs(net, inputs)
    assert quant.layer_errors(net, q4, inputs, shared) == errors
    assert quant.layer_errors(net, quant.quantize(net, "rtn_w8a8"), inputs, shared) == (
        quant.layer_errors(net, quant.quantize(net, "rtn_w8a8"), inputs)
    )


@pytest.mark.parametrize("bits", range(2, 9))
def test_fake_quant_equals_the_int8_codes_times_their_scale_exactly(bits):
    torch.manual_seed(bits)
    x = torch.randn(6, 50, 33) * torch.rand(6, 50, 1) * 4
    x[0, 0] = 0.0  # an all-zero slice keeps scale 1
    codes, scale = quant.quantize_codes(x, bits)
    assert codes.dtype == torch.int8
    assert torch.equal(quant.fake_quant(x, bits), codes.to(torch.float32) * scale)


@pytest.mark.parametrize(
    "name, message",
    [
        ("int3", "unknown quantization scheme 'int3'"),
        ("rtn_w1a8", "weight bit width 1"),
        ("rtn_w16a8", "weight bit width 16"),
        ("bitdgdm_w4a9", "activation bit width 9"),
        ("rtn_w4a4_noact", "ablation of bitdgdm"),
        ("RTN_W4A4", "unknown quantization scheme"),
        (4, "is a string"),
    ],
)
def test_bad_scheme_names_and_bit_widths_are_rejected(name, message):
    with pytest.raises(schemes.UnknownSchemeError, match=message):
        schemes.parse(name)
    with pytest.raises(schemes.UnknownSchemeError, match=message):
        quant.quantize(_net(), name)


def test_calibrated_scheme_without_inputs_fails_clearly():
    with pytest.raises(ValueError, match="needs calibration inputs"):
        quant.quantize(_net(), "bitdgdm_w4a4")


def test_params_select_schemes_and_reject_bad_ones_naming_the_key():
    cfg = config.method_config("ensloss", "smoke", {"quantization": ["rtn_w4a4"]}, "p.yaml")
    assert cfg.quantization == ["rtn_w4a4"]
    with pytest.raises(config.ConfigError, match=r"methods\.ensloss\.smoke\.quantization\[1\]"):
        config.method_config("ensloss", "smoke", {"quantization": ["rtn_w4a4", "w3"]}, "p")
    with pytest.raises(config.ConfigError, match="listed twice"):
        config.method_config("ensloss", "smoke", {"quantization": ["rtn_w4a4"] * 2}, "p")
    with pytest.raises(config.ConfigError, match="does not apply to dp_noise"):
        config.method_config("dp_noise", "smoke", {"quantization": ["rtn_w4a4"]}, "p")


def _table(closer_gap, farther_gap, seeds=5):
    rows = []
    for seed in range(seeds):
        jitter = 0.001 * seed
        for precision, value in (
            ("fp32", 0.9),
            ("bitdgdm_w4a4", 0.9 - closer_gap - jitter),
            ("rtn_w4a4", 0.9 - farther_gap + jitter),
        ):
            rows.append(("qm9", "digress", seed, precision, "validity", value))
    return pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])


#: what every claim now states: its smallest effect, where that comes from, its source
_STATED = {"effect": 0.01, "effect_basis": "margin", "source": "not in the paper text here"}


def test_precision_gap_claim_is_evaluated_once_across_precisions():
    check = PrecisionGap(closer="bitdgdm_w4a4", farther="rtn_w4a4", variant="digress")
    claim = Claim("closer", "s", "98.2 vs 99.0", "QM9", "validity", check, **_STATED)
    assert claim.precisions_to_evaluate(["fp32", "rtn_w4a4", "bitdgdm_w4a4"]) == ["bitdgdm_w4a4"]
    good = claim.evaluate(_table(0.01, 0.2), "bitdgdm_w4a4", "paper")
    assert good["verdict"] == "reproduced"
    assert good["measured"]["value"] == pytest.approx(-0.19, abs=0.01)
    assert good["measured"]["seeds"] == [0, 1, 2, 3, 4]
    assert claim.evaluate(_table(0.2, 0.01), "bitdgdm_w4a4", "paper")["verdict"] == (
        "not_reproduced"
    )
    missing = claim.evaluate(_table(0.01, 0.2).query("precision != 'rtn_w4a4'"), "x", "paper")
    assert (
        missing["verdict"] == "inconclusive" and "not quantized" in missing["measured"]["summary"]
    )

    assert good["headline"] and claim.about_a_scheme


def test_a_claim_that_names_its_scheme_gets_one_verdict_there():
    from reprolab.evidence.judging.claims import Threshold

    check = Threshold(variant="digress", bound=0.85, higher_is_better=True)
    claim = Claim("small", "s", "p", "QM9", "validity", check, **_STATED, precision="bitdgdm_w4a4")
    assert claim.precisions_to_evaluate(["fp32", "rtn_w4a4", "bitdgdm_w4a4"]) == ["bitdgdm_w4a4"]
    at = claim.evaluate(_table(0.01, 0.2), "bitdgdm_w4a4", "paper")
    # 0.89 - jitter over five seeds: above the 0.85 bound, read at the named scheme only
    assert at["verdict"] == "reproduced" and at["headline"]
    assert at["measured"]["value"] == pytest.approx(0.888, abs=0.001)
    gone = claim.evaluate(
        _table(0.01, 0.2).query("precision != 'bitdgdm_w4a4'"), "bitdgdm_w4a4", "p"
    )
    assert gone["verdict"] == "inconclusive"
    assert "bitdgdm_w4a4 were not quantized" in gone["measured"]["summary"]
    # an ordinary claim: a verdict at every precision, the headline one at fp32
    plain = Claim("plain", "s", "p", "QM9", "validity", check, **_STATED)
    assert plain.precisions_to_evaluate(["fp32", "rtn_w4a4"]) == ["fp32", "rtn_w4a4"]
    assert plain.evaluate(_table(0.01, 0.2), "fp32", "paper")["headline"]
    assert not plain.evaluate(_table(0.01, 0.2), "rtn_w4a4", "paper")["headline"]


def test_multihead_attention_keeps_working_after_quantization():
    torch.manual_seed(0)
    attn = nn.MultiheadAttention(16, 2, batch_first=True)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp, self.attn, self.out = nn.Linear(8, 16), attn, nn.Linear(16, 4)

        def forward(self, x):
            h = self.inp(x)
            return self.out(self.attn(h, h, h)[0])

    model = Block().eval()
    q = quant.quantize(model, "rtn_w8a8")
    assert isinstance(q.inp, quant.QuantLinear) and isinstance(q.out, quant.QuantLinear)
    assert type(q.attn.out_proj) is nn.modules.linear.NonDynamicallyQuantizableLinear
    x = torch.randn(2, 5, 8)
    with torch.inference_mode():
        assert _rel(q(x), model(x)) < 0.05


def test_thresholds_are_the_calibration_quantile_and_can_be_reused():
    net = _net()
    calib = [torch.randn(128, 32, generator=torch.Generator().manual_seed(3))]
    th = quant.calibrate_thresholds(net, calib, quantile=0.9)
    x = calib[0].abs().flatten()
    assert th["a"] == pytest.approx(float(torch.quantile(x, 0.9)), rel=0.02)
    assert set(th) == {"a", "b", "c"}
    q1 = quant.quantize(net, "bitdgdm_w4a4", calibration=calib)
    q2 = quant.quantize(net, "bitdgdm_w4a4", thresholds=quant.calibrate_thresholds(net, calib))
    x = torch.randn(16, 32)
    with torch.inference_mode():
        torch.testing.assert_close(q1(x), q2(x))
