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
