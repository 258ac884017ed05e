"""int8 post-training quantization: real int8 layers, close outputs, smaller state."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from reprolab.core import quant
from reprolab.methods.ensloss.net import mlp


def model():
    torch.manual_seed(0)
    return mlp(64, 128, 2).eval()


def test_int8_model_is_close_to_fp32_and_smaller():
    fp32 = model()
    x = torch.rand(512, 64)
    q = quant.quantize(fp32, "int8_dynamic")
    dynamic = torch.ao.nn.quantized.dynamic.Linear
    assert sum(isinstance(m, dynamic) for m in q.modules()) == 3
    assert all(m.weight().dtype == torch.qint8 for m in q.modules() if isinstance(m, dynamic))
    assert not any(type(m) is nn.Linear for m in q.modules())
    with torch.inference_mode():
        ref, out = fp32(x), q(x)
    # per-tensor int8 weights and activations: error well under 2% of the output scale
    assert (out - ref).abs().max() < 0.02 * ref.abs().max() + 1e-3
    assert quant.state_bytes(q) < 0.5 * quant.state_bytes(fp32)
    assert any(type(m) is nn.Linear for m in fp32.modules())  # original untouched


def test_restore_gives_the_same_quantized_model():
    fp32 = model()
    q = quant.quantize(fp32, "int8_dynamic")
    restored = quant.restore_quantized(model(), "int8_dynamic", q.state_dict())
    x = torch.rand(16, 64)
    with torch.inference_mode():
        torch.testing.assert_close(restored(x), q(x))


def test_unknown_scheme_is_rejected():
    with pytest.raises(quant.UnknownSchemeError, match="unknown quantization scheme 'int3'"):
        quant.quantize(model(), "int3")


def test_latency_reports_median_and_spread():
    lat = quant.latency_ms(model(), torch.rand(8, 64), repeats=8, warmup=1)
    assert lat["median"] > 0 and lat["iqr"] >= 0


@pytest.mark.parametrize("scheme", ["int8_dynamic", "rtn_w8a8"])
def test_keep_fp32_leaves_the_named_layers_exact_and_survives_a_restore(scheme):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    q = quant.quantize(model, scheme, keep_fp32=("2",))
    assert type(q[2]) is nn.Linear and torch.equal(q[2].weight, model[2].weight)
    assert type(q[0]) is not nn.Linear  # the other layer is quantized
    cov = quant.coverage(model, q)
    assert cov["quantized_parameters"] == 8 * 16 + 16
    x = torch.randn(5, 8)
    arch = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    restored = quant.restore_quantized(arch, scheme, q.state_dict(), keep_fp32=("2",))
    torch.testing.assert_close(restored(x), q(x))
