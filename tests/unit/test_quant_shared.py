"""Quantized states stored against a shared base (quant.save_state / load_state): units
tuned from one pretrained model store only the layers they changed, and read back the
same model as a whole-state save."""

from __future__ import annotations

import copy
import os

import pytest
import torch
from torch import nn

from reprolab.core import quant


def pretrained(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(*(nn.Linear(64, 64) for _ in range(6)))


def tuned(base: nn.Module, seed: int) -> nn.Module:
    """The base with its top layer changed: what a LoRA merged into one layer does."""
    model = copy.deepcopy(base)
    torch.manual_seed(100 + seed)
    with torch.no_grad():
        model[-1].weight.add_(0.1 * torch.randn_like(model[-1].weight))
    return model


@pytest.mark.parametrize("scheme", ["int8_dynamic", "rtn_w4a8"])
def test_delta_states_read_back_the_whole_model_and_store_less(tmp_path, scheme):
    base = pretrained()
    units = [quant.quantize(tuned(base, s), scheme) for s in range(3)]
    shared = None
    for i, q in enumerate(units):
        shared = quant.save_state(q.state_dict(), tmp_path / f"u{i}.pt", shared)
    # reference: the whole state saved the usual way
    torch.save(units[2].state_dict(), tmp_path / "whole.pt")
    whole, delta = (tmp_path / "whole.pt").stat().st_size, (tmp_path / "u2.pt").stat().st_size
    # one of six equal-sized layers differs: the delta holds about a sixth of the bytes
    assert delta < whole / 3
    assert quant.state_files(tmp_path / "u2.pt") == [tmp_path / "u2.pt", tmp_path / "u0.pt"]
    assert quant.state_files(tmp_path / "u0.pt") == [tmp_path / "u0.pt"]
    x = torch.randn(16, 64)
    for i, q in enumerate(units):
        state = quant.load_state(tmp_path / f"u{i}.pt")
        assert sorted(state) == sorted(q.state_dict())
        restored = quant.restore_quantized(pretrained(seed=9), scheme, state)
        with torch.inference_mode():
            assert torch.equal(restored(x), q(x))
    # the units differ from each other where they were tuned
    with torch.inference_mode():
        assert not torch.equal(units[1](x), units[2](x))


def test_a_changed_base_file_is_reread_and_a_missing_one_is_named(tmp_path):
    base = pretrained()
    a, b = (quant.quantize(tuned(base, s), "int8_dynamic") for s in (0, 1))
    shared = quant.save_state(a.state_dict(), tmp_path / "a.pt")
    quant.save_state(b.state_dict(), tmp_path / "b.pt", shared)
    quant.load_state(tmp_path / "b.pt")  # caches a.pt
    # a.pt rewritten with another model: b's untouched layers now come from it
    other = quant.quantize(pretrained(seed=5), "int8_dynamic")
    torch.save(other.state_dict(), tmp_path / "a.pt")
    stat = (tmp_path / "a.pt").stat()
    os.utime(tmp_path / "a.pt", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    state = quant.load_state(tmp_path / "b.pt")
    key = "0._packed_params._packed_params"
    assert torch.equal(state[key][0].int_repr(), other.state_dict()[key][0].int_repr())
    (tmp_path / "a.pt").unlink()
    with pytest.raises(FileNotFoundError, match=r"a\.pt.*quantize stage"):
        quant.load_state(tmp_path / "b.pt")
