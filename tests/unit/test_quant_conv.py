"""int8 convolutions (torch.ao static quantization per layer) and quantization coverage."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from reprolab.core import io, quant
from reprolab.paths import MethodPaths
from reprolab.stages import report

FAKE = ("rtn_w8a8", "rtn_w4a4", "bitdgdm_w4a4")
QConv2d = torch.ao.nn.quantized.Conv2d


def cnn(seed: int = 0) -> nn.Sequential:
    """TTBA's victim shape (two conv-ReLU-pool blocks, two linear layers) with a
    BatchNorm after the second convolution, on flat 28 x 28 rows."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Unflatten(1, (1, 28, 28)),
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    ).eval()


def images(n: int, seed: int) -> torch.Tensor:
    return torch.rand(n, 784, generator=torch.Generator().manual_seed(seed))


def n_params(modules) -> int:
    return sum(p.numel() for m in modules for p in m.parameters(recurse=False))


def rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out - ref).norm() / ref.norm())


def test_int8_runs_convolutions_with_int8_kernels_and_covers_all_but_batchnorm():
    fp32 = cnn()
    q = quant.quantize(fp32, "int8_dynamic", calibration=[images(128, 1), images(128, 2)])
    convs = [m for m in q.modules() if isinstance(m, quant.Int8Conv)]
    assert len(convs) == 2 and all(type(c.conv) is QConv2d for c in convs)
    assert all(c.conv.weight().dtype == torch.qint8 for c in convs)
    assert all(c.conv.weight().qscheme() == torch.per_channel_affine for c in convs)
    assert not any(type(m) in (nn.Conv2d, nn.Linear) for m in q.modules())
    assert type(fp32[1]) is nn.Conv2d  # the fp32 model is left untouched

    cov = quant.coverage(fp32, q)
    bn = n_params([fp32[5]])
    total = sum(p.numel() for p in fp32.parameters())
    assert cov["parameters"] == total
    assert cov["quantized_parameters"] == total - bn
    assert cov["share"] == pytest.approx(1 - bn / total) and cov["share"] > 0.99
    assert cov["full_precision"] == {"BatchNorm2d": bn}

    # Outputs: relative L2 error of the logits under 5% (measured ~1.1%: 7-bit
    # activations with reduce_range, per-tensor input and output ranges) on held-out rows
    # that were not among the calibration inputs; top-1 agrees on at least 95% of them.
    x = images(512, 3)
    with torch.inference_mode():
        ref, out = fp32(x), q(x)
    assert out.dtype == torch.float32 and out.shape == ref.shape
    assert rel(out, ref) < 0.05
    assert (out.argmax(1) == ref.argmax(1)).float().mean() >= 0.95


def test_int8_cnn_round_trips_through_the_saved_state(tmp_path):
    fp32 = cnn()
    q = quant.quantize(fp32, "int8_dynamic", calibration=[images(128, 1)])
    torch.save(q.state_dict(), tmp_path / "unit.int8_dynamic.pt")
    state = quant.load_state(tmp_path / "unit.int8_dynamic.pt")
    # a fresh architecture with other random weights: everything comes from the state
    restored = quant.restore_quantized(cnn(seed=7), "int8_dynamic", state)
    assert [type(m) for m in restored.modules()] == [type(m) for m in q.modules()]
    x = images(64, 4)
    with torch.inference_mode():
        assert torch.equal(restored(x), q(x))
    assert quant.coverage(cnn(), restored) == quant.coverage(fp32, q)


def test_int8_conv_effective_bytes_and_layer_errors():
    conv = nn.Conv2d(3, 8, 3)
    q = quant.quantize(nn.Sequential(conv), "int8_dynamic", calibration=[torch.randn(4, 3, 9, 9)])
    # int8 weights, fp32 scale + int32 zero point per output channel, fp32 bias, and the
    # input's and output's scale and zero point
    assert quant.effective_bytes(q) == 8 * 3 * 9 + 8 * 8 + 8 * 4 + 16
    fp32 = cnn()
    q = quant.quantize(fp32, "int8_dynamic", calibration=[images(64, 1)])
    errors = quant.layer_errors(fp32, q, [images(64, 2)])
    assert set(errors) == {"1", "4", "9", "11"}  # both convolutions and both linears
    assert all(0 < e < 0.1 for e in errors.values())


def test_int8_with_convolutions_needs_calibration_inputs():
    with pytest.raises(ValueError, match="int8_dynamic' quantizes convolutions.*2 in this"):
        quant.quantize(cnn(), "int8_dynamic")


def test_convolutions_the_kernel_cannot_run_stay_fp32_and_lower_coverage():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding="same"), nn.Flatten()
    ).eval()
    q = quant.quantize(model, "int8_dynamic", calibration=[torch.randn(4, 3, 6, 6)])
    assert isinstance(q[0], quant.Int8Conv) and type(q[1]) is nn.Conv2d
    cov = quant.coverage(model, q)
    assert cov["full_precision"] == {"Conv2d": n_params([model[1]])}
    assert cov["quantized_parameters"] == n_params([model[0]])
    x = torch.randn(2, 3, 6, 6)
    with torch.inference_mode():
        assert rel(q(x), model(x)) < 0.05


@pytest.mark.parametrize("scheme", FAKE)
def test_fake_quantization_leaves_convolutions_fp32_and_says_so(scheme):
    fp32 = cnn()
    q = quant.quantize(fp32, scheme, calibration=[images(64, 1)])
    assert sum(type(m) is nn.Conv2d for m in q.modules()) == 2
    cov = quant.coverage(fp32, q)
    conv, bn = n_params([fp32[1], fp32[4]]), n_params([fp32[5]])
    assert cov["full_precision"] == {"Conv2d": conv, "BatchNorm2d": bn}
    assert cov["quantized_parameters"] == n_params([fp32[9], fp32[11]])


class Mixed(nn.Module):
    """Linear layers between full-precision LayerNorm, an embedding and a bare
    parameter: the Linear share of the parameters is what any scheme can quantize."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.a, self.norm, self.b = nn.Linear(8, 32), nn.LayerNorm(32), nn.Linear(32, 5)
        self.gain = nn.Parameter(torch.ones(5))

    def forward(self, x):
        return self.b(self.norm(torch.relu(self.a(self.emb(x))))) * self.gain


@pytest.mark.parametrize("scheme", ("int8_dynamic", *FAKE))
def test_coverage_of_a_linear_only_model_is_its_linear_share(scheme):
    torch.manual_seed(0)
    model = Mixed().eval()
    x = torch.randint(0, 10, (16,))
    q = quant.quantize(model, scheme, calibration=[x])
    linear = sum(p.numel() for m in model.modules() if type(m) is nn.Linear for p in m.parameters())
    total = sum(p.numel() for p in model.parameters())
    cov = quant.coverage(model, q)
    assert (cov["quantized_parameters"], cov["parameters"]) == (linear, total)
    assert cov["share"] == pytest.approx(linear / total)
    assert cov["full_precision"] == {"Embedding": 80, "LayerNorm": 64, "parameter": 5}


@pytest.mark.parametrize("scheme", ("int8_dynamic", "rtn_w8a8", "bitdgdm_w4a4"))
def test_multihead_attention_left_alone_lowers_coverage(scheme):
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp, self.out = nn.Linear(8, 16), nn.Linear(16, 4)
            self.attn = nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, x):
            h = self.inp(x)
            return self.out(self.attn(h, h, h)[0])

    model = Block().eval()
    x = torch.randn(2, 5, 8)
    q = quant.quantize(model, scheme, calibration=[x])
    cov = quant.coverage(model, q)
    total = sum(p.numel() for p in model.parameters())
    linears = n_params([model.inp, model.out])
    in_proj = 16 * 16 * 3 + 16 * 3
    out_proj = n_params([model.attn.out_proj])
    assert out_proj == 16 * 16 + 16 and total == linears + in_proj + out_proj
    assert cov["quantized_parameters"] == linears
    assert cov["share"] == pytest.approx(linears / total)
    assert cov["full_precision"] == {
        "MultiheadAttention": in_proj,
        "NonDynamicallyQuantizableLinear": out_proj,
    }
    with torch.inference_mode():  # the model still runs (4-bit schemes are coarser)
        assert rel(q(x), model(x)) < (0.25 if "w4" in scheme else 0.05)


def test_report_shows_coverage_and_what_stayed_full_precision(tmp_path):
    def efficiency(coverage, kept):
        return {
            "fp32": {"effective_bytes": 1000},
            "int8_dynamic": {
                "effective_bytes": 300,
                "layer_error_mean": 0.01,
                "coverage": coverage,
                "full_precision": kept,
            },
        }

    for slug, cov, kept in (("cnn", 0.9994, {"BatchNorm2d": 64}), ("mlp", 1.0, {})):
        folder = MethodPaths(tmp_path, slug).eval
        folder.mkdir(parents=True)
        io.write_json(folder / "metrics.json", {"efficiency": efficiency(cov, kept)})
        runtime = MethodPaths(tmp_path, slug).runtime  # latency: not versioned, kept apart
        runtime.mkdir(parents=True)
        latency = {"fp32": 2.0, "int8_dynamic": 1.5}
        io.write_json(runtime / "evaluate.json", {"latency_ms": latency})
    table = report.collect_quantization(tmp_path, ["cnn", "mlp"])
    assert list(table.columns) == report.QUANT_COLUMNS
    text = report.quant_markdown(table)
    assert "| coverage | full precision |" in text
    assert "| cnn | int8_dynamic | 300 | 0.3 | 99.9% | BatchNorm2d (64) | 0.0100 | 1.500 |" in text
    assert "| mlp | int8_dynamic | 300 | 0.3 | 100.0% | none | 0.0100 | 1.500 |" in text
    assert "<td>99.9%</td><td>BatchNorm2d (64)</td>" in report.quant_html(table)
