"""A unit that cannot be quantized is named, with why: a diverged training run leaves
NaN weights, and torch's dynamic int8 linear refuses them (the failure a paper run of
ensloss met: "In ChooseQuantizationParams, min should be less than or equal to max")."""

from __future__ import annotations

import pytest
import torch

from reprolab.core import quant
from reprolab.stages.quantize import _unit_failure


def _net(weight_fill: float) -> torch.nn.Module:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    with torch.no_grad():
        net[0].weight.fill_(weight_fill)
    return net.eval()


def test_a_diverged_unit_is_named_with_its_non_finite_tensors():
    net = _net(float("nan"))
    qnet = quant.quantize(net, "int8_dynamic")
    with pytest.raises(RuntimeError) as err:  # the real failure, from torch
        qnet(torch.randn(2, 4))
    said = _unit_failure("ensloss", "mnist-0v5__exp__s1001", "int8_dynamic", net, err.value)
    assert said.startswith("quantize@ensloss: unit mnist-0v5__exp__s1001, scheme int8_dynamic:")
    assert "RuntimeError" in said
    # only the NaN-filled weight and what the NaN reached: the first layer's weight
    assert "non-finite weights in 1 tensor(s) (0.weight)" in said
    assert "training diverged" in said


def test_a_finite_unit_says_its_weights_are_finite():
    net = _net(0.5)
    said = _unit_failure("m", "u", "rtn_w4", net, ValueError("boom"))
    assert said.endswith("ValueError: boom; its weights are finite")
