import torch

from reprolab.core.transformer import Block
from reprolab.methods.bdia.reversible import forward_states, reconstruct


def _blocks(depth, dim, seed):
    torch.manual_seed(seed)
    return torch.nn.ModuleList(Block(dim, heads=2) for _ in range(depth)).eval()


def test_bit_exact_reconstruction_many_seeds_and_ties():
    for seed in range(6):
        blocks = _blocks(5, 8, seed)
        g = torch.Generator().manual_seed(100 + seed)
        for trial in range(4):
            x = torch.randn(6, 5, 8, generator=g) * (1 + 3 * trial)
            if trial % 2:  # exactly on rounding ties: odd multiples of 2**-(bits+1)
                x = (torch.round(x * 2**9) + 0.5) / 2**9
            signs = [torch.randint(0, 2, (6,), generator=g) * 2 - 1 for _ in blocks]
            states, par = forward_states(blocks, x, signs, bits=9)
            rec = reconstruct(blocks, states[-2], states[-1], signs, par, bits=9)
            assert len(rec) == len(states)
            for a, b in zip(rec, states, strict=True):
                assert torch.equal(a, b)


def test_dropping_parity_breaks_inversion():
    blocks = _blocks(3, 8, 0)
    x = torch.randn(4, 5, 8)
    signs = [torch.ones(4, dtype=torch.int64) for _ in blocks]
    states, par = forward_states(blocks, x, signs, bits=9)
    zero = [torch.zeros_like(p) for p in par]
    rec = reconstruct(blocks, states[-2], states[-1], signs, zero, bits=9)
    assert not all(torch.equal(a, b) for a, b in zip(rec, states, strict=True))


def test_custom_autograd_gradient_matches_stored_activation_graph():
    from reprolab.methods.bdia.reversible import bdia_features, plain_features

    blocks = _blocks(4, 8, 3).double().float()
    x = torch.randn(3, 5, 8)
    signs = [torch.tensor([1, -1, 1]) for _ in blocks]
    w = torch.randn(3, 5, 8)
    xa = x.clone().requires_grad_(True)
    (bdia_features(blocks, xa, signs, 20) * w).sum().backward()
    ga = [xa.grad] + [p.grad.clone() for p in blocks.parameters()]
    blocks.zero_grad()
    xb = x.clone().requires_grad_(True)
    (plain_features(blocks, xb, signs) * w).sum().backward()
    gb = [xb.grad] + [p.grad.clone() for p in blocks.parameters()]
    for a, b in zip(ga, gb, strict=True):
        assert torch.allclose(a, b, atol=1e-3, rtol=1e-3)


def _saved_bytes(fn):
    total = [0]

    def pack(t):
        total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn().sum()
    return total[0]


def test_bdia_saves_fewer_activation_bytes_than_stored_graph():
    from reprolab.methods.bdia.reversible import bdia_features, plain_features

    blocks = _blocks(6, 16, 0)
    x = torch.randn(4, 9, 16, requires_grad=True)
    signs = [torch.tensor([1, -1, 1, -1]) for _ in blocks]
    b = _saved_bytes(lambda: bdia_features(blocks, x, signs, 9))
    p = _saved_bytes(lambda: plain_features(blocks, x, signs))
    # six blocks: int8 signs, two int32 states and five packed parity bits per activation,
    # against every block's graph
    n = 4 * 9 * 16  # activations per state
    assert b == 6 * 4 + 2 * 4 * n + 5 * (n // 8)
    assert b < p / 3


class _Square(torch.nn.Module):
    """A deterministic residual branch with no parameters: h(x) = sin(3x) x."""

    def delta(self, x):
        return torch.sin(3 * x) * x


def test_inversion_is_exact_on_every_small_integer_against_python_floor():
    from reprolab.methods.bdia.reversible import bdia_invert, bdia_step

    prev = torch.arange(-4096, 4097, dtype=torch.int64).view(-1, 1)  # one code per sample
    cur = torch.randint(-3000, 3000, prev.shape, generator=torch.Generator().manual_seed(0))
    for sign in (1, -1):
        signs = torch.full((len(prev),), sign)
        nxt, parity = bdia_step(_Square(), prev, cur, signs, bits=9)
        # independent reference: Python's integer floor division and parity
        r = nxt - sign * torch.tensor([v // 2 for v in prev.flatten().tolist()]).view(-1, 1)
        assert torch.equal(parity.flatten(), torch.tensor([v % 2 == 1 for v in prev.flatten()]))
        assert len(torch.unique(r)) > 1  # R_k varies with the sample
        back = bdia_invert(_Square(), cur, nxt, signs, parity, bits=9)
        assert torch.equal(back, prev)


def test_pack_bits_matches_numpy_packbits():
    import numpy as np

    from reprolab.methods.bdia.reversible import pack_bits, unpack_bits

    g = torch.Generator().manual_seed(1)
    for shape in [(3, 5, 7), (8,), (1, 1, 1), (2, 17, 33)]:
        bits = torch.rand(shape, generator=g) < 0.5
        packed = pack_bits(bits)
        ref = np.packbits(bits.numpy().reshape(-1), bitorder="little")
        assert np.array_equal(packed.numpy(), ref)
        assert torch.equal(unpack_bits(packed, bits.shape), bits)


def test_differing_bits_is_a_popcount_of_the_xor():
    from reprolab.methods.bdia.check import differing_bits

    g = torch.Generator().manual_seed(2)
    a = torch.randint(-(2**40), 2**40, (50,), generator=g)
    b = a.clone()
    b[::7] ^= torch.randint(0, 2**20, b[::7].shape, generator=g)
    ref = sum(
        bin((x ^ y) & (2**64 - 1)).count("1") for x, y in zip(a.tolist(), b.tolist(), strict=True)
    )
    assert differing_bits(a, b) == ref > 0
    assert differing_bits(a, a) == 0
    assert differing_bits(torch.tensor([-1]), torch.tensor([0])) == 64


def _embedded(seed, n=32, tokens=5, dim=8):
    return torch.randn(n, tokens, dim, generator=torch.Generator().manual_seed(seed))


def test_reconstruction_check_exact_for_seeds_bits_and_quantized_blocks():
    from reprolab.core import quant
    from reprolab.methods.bdia.check import KINDS, reconstruction_check

    for seed, bits in ((0, 1), (1, 9), (2, 16)):
        blocks = _blocks(4, 8, seed)
        out = reconstruction_check(blocks, _embedded(seed), bits, 2 * len(KINDS), 5, seed)
        assert out["recon_bad_bits"] == 0 and out["recon_unequal_states"] == 0
        assert out["recon_inputs"] == 2 * len(KINDS) * 5
        # K - 1 rebuilt states of 5 x 5 x 8 int64 codes per batch
        assert out["recon_bits_compared"] == 2 * len(KINDS) * 3 * 5 * 5 * 8 * 64
    # the inverse recomputes R_k from the same integer state, so any deterministic block
    # (here int8 dynamically quantized linear layers) inverts exactly too
    qblocks = quant.quantize(_blocks(4, 8, 7), "int8_dynamic")
    out = reconstruction_check(qblocks, _embedded(7), 9, len(KINDS), 6, 7)
    assert out["recon_bad_bits"] == 0


def test_reconstruction_check_reports_differing_bits_when_the_block_is_not_deterministic():
    from reprolab.core.transformer import Block
    from reprolab.methods.bdia.check import reconstruction_check

    torch.manual_seed(0)
    noisy = torch.nn.ModuleList(Block(8, heads=2, dropout=0.5) for _ in range(3)).train()
    out = reconstruction_check(noisy, _embedded(0), 9, 3, 4, 0)
    assert out["recon_bad_bits"] > 0 and out["recon_unequal_states"] > 0


def test_saved_bytes_counts_each_storage_once_and_no_parameters():
    from reprolab.methods.bdia.memory import SavedBytes, saved_bytes

    lin = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4, requires_grad=True)
    # linear saves its input (5 x 4 float32) and its weight (a parameter: not counted)
    assert saved_bytes(lambda: lin(x), lin.parameters()) == 5 * 4 * 4
    # x * x saves x twice: one storage; a view of x is the same storage
    assert saved_bytes(lambda: x * x[:, :].contiguous().view(5, 4), []) == 5 * 4 * 4
    counter = SavedBytes([])
    with counter.counting():
        (x * x).sum()
    assert counter.raw_bytes == 2 * 5 * 4 * 4 and counter.bytes == 5 * 4 * 4


def test_never_nonzero_check_fails_on_a_single_bit():
    import pandas as pd

    from reprolab.methods.bdia.claims import NeverNonzero

    rows = [("t", "bdia", s, "fp32", "recon_bad_bits", 0.0) for s in range(4)]
    rows += [("t", "bdia", s, "fp32", "recon_bits_compared", 1e6) for s in range(4)]
    cols = ["task", "variant", "seed", "precision", "metric", "value"]
    check = NeverNonzero("bdia", compared="recon_bits_compared")
    v = check.evaluate(pd.DataFrame(rows, columns=cols), "recon_bad_bits")
    assert v.verdict == "reproduced" and v.measured["value"] == 0 and v.measured["n"] == 4
    rows[2] = ("t", "bdia", 2, "fp32", "recon_bad_bits", 1.0)
    v = check.evaluate(pd.DataFrame(rows, columns=cols), "recon_bad_bits")
    assert v.verdict == "not_reproduced" and v.measured["units_failing"] == 1


def test_bdia_training_forward_and_gamma_zero_inference():
    from reprolab.methods.bdia.config import BDIAConfig
    from reprolab.methods.bdia.net import FixedPointViT, bdia_logits, build_vit, draw_signs

    cfg = BDIAConfig(dim=8, depth=3, heads=2, bits=20)
    torch.manual_seed(0)
    net = build_vit(64, cfg)
    x = torch.rand(6, 64)
    # evaluation: gamma = 0, the standard forward up to the fixed-point activations
    fixed = FixedPointViT(net, cfg.bits)(x)
    assert not torch.equal(fixed, net(x))
    assert torch.allclose(fixed, net(x), atol=1e-4)
    coarse = FixedPointViT(net, 2)(x)
    assert not torch.allclose(coarse, net(x), atol=1e-4)
    signs = draw_signs(6, 3, torch.Generator().manual_seed(0))
    # the BDIA forward against the float recursion written out (20 fraction bits)
    h = net.embed(x)
    prev, cur = h, h + net.blocks[0].delta(h)
    for k in (1, 2):
        g = 0.5 * signs[k].view(-1, 1, 1).float()
        prev, cur = cur, g * prev + (1 - g) * cur + (1 + g) * net.blocks[k].delta(cur)
    ref = net.readout(cur)
    assert torch.allclose(bdia_logits(net, x, signs, cfg.bits), ref, atol=1e-4)


def test_config_errors_name_the_key():
    import pydantic
    import pytest

    from reprolab.methods.bdia.config import BDIAConfig

    for bad, key in (
        ({"dim": 10, "heads": 4}, "heads"),
        ({"datasets": ["cifar10"]}, "datasets"),
        ({"bits": 0}, "bits"),
        ({"depth": 1}, "depth"),
    ):
        with pytest.raises(pydantic.ValidationError, match=key):
            BDIAConfig(**bad)


def test_revvit_gradient_matches_the_stored_graph_and_keeps_two_streams():
    from reprolab.methods.bdia.revvit import rev_forward, revvit_features

    blocks = _blocks(3, 8, 4).double()
    h = torch.randn(3, 5, 8, dtype=torch.float64)
    w = torch.randn(3, 5, 8, dtype=torch.float64)
    ha = h.clone().requires_grad_(True)
    (revvit_features(blocks, ha) * w).sum().backward()
    ga = [ha.grad] + [p.grad.clone() for p in blocks.parameters()]
    blocks.zero_grad()
    hb = h.clone().requires_grad_(True)
    y1, y2 = rev_forward(blocks, hb)
    (((y1 + y2) / 2) * w).sum().backward()
    gb = [hb.grad] + [p.grad.clone() for p in blocks.parameters()]
    for a, b in zip(ga, gb, strict=True):
        assert torch.allclose(a, b, atol=1e-9)
    saved = _saved_bytes(lambda: revvit_features(blocks, ha))
    assert saved == 2 * 3 * 5 * 8 * 8  # the last two float64 streams only


def test_autograd_forward_equals_the_checked_forward():
    from reprolab.methods.bdia.reversible import bdia_features, forward_states, to_float

    blocks = _blocks(5, 8, 5)
    x = torch.randn(4, 5, 8) * 3
    signs = [torch.tensor([1, -1, -1, 1]) for _ in blocks]
    states, _ = forward_states(blocks, x, signs, bits=9)
    assert torch.equal(bdia_features(blocks, x, signs, 9), to_float(states[-1], 9))
