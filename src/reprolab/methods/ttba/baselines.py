"""The baselines, from adversarial-robustness-toolbox (ART), not re-implemented:
HopSkipJump (Chen et al., 2020) and Sign-OPT (Cheng et al., 2020), untargeted, L2.

Both attack ART's ``PyTorchClassifier`` wrapped around the counting
:class:`~reprolab.methods.ttba.oracle.HardLabelOracle`, whose output is a one-hot label:
the attacks see top-1 labels only, and every row they predict is counted per image.
They run with their authors' (and ART's) default hyper-parameters; iteration and query
limits are set out of reach, so the oracle's budget is what stops them (a predict call
that would overrun it raises :class:`BudgetExhausted`, caught here).

Randomness: both draw from NumPy's global generator, which is seeded per image and
restored afterwards. ART's HopSkipJump draws its initial random image from an unseeded
``np.random.RandomState()``; that one constructor is made to take the same seed while
the attack runs, so runs repeat exactly.
"""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np
from torch import nn

from reprolab.methods.ttba.oracle import BudgetExhausted, HardLabelOracle

#: out of reach: the oracle's budget ends every run
_NO_LIMIT = 10**9


def art_classifier(oracle: HardLabelOracle, in_dim: int):
    from art.estimators.classification import PyTorchClassifier

    return PyTorchClassifier(
        model=oracle,
        loss=nn.CrossEntropyLoss(),
        input_shape=(in_dim,),
        nb_classes=oracle.n_classes,
        clip_values=(0.0, 1.0),
        device_type="cpu",
    )


@contextlib.contextmanager
def seeded_numpy(seed: int):
    """Seed NumPy's global generator (and unseeded ``RandomState()`` constructions) for
    the duration; restore the global state afterwards."""
    saved = np.random.get_state()
    original = np.random.RandomState

    def seeded(seed_arg=None):
        return original(seed if seed_arg is None else seed_arg)

    np.random.seed(seed)
    try:
        with mock.patch("numpy.random.RandomState", seeded):
            yield
    finally:
        np.random.set_state(saved)


def make_attack(name: str, classifier):
    from art.attacks.evasion import HopSkipJump, SignOPTAttack

    if name == "hsja":
        # Defaults of the HSJA paper and ART: 100 initial gradient evaluations growing as
        # sqrt(t), up to 10,000; geometric step search; 100 random-image inits.
        return HopSkipJump(
            classifier,
            targeted=False,
            norm=2,
            max_iter=_NO_LIMIT,
            max_eval=10_000,
            init_eval=100,
            init_size=100,
            verbose=False,
        )
    if name == "signopt":
        # Defaults of the Sign-OPT paper (untargeted) and ART: k = 200 sign queries per
        # gradient, 100 random initial directions, alpha = 0.2, beta = 0.001.
        return SignOPTAttack(
            classifier,
            targeted=False,
            epsilon=0.001,
            num_trial=100,
            max_iter=_NO_LIMIT,
            query_limit=_NO_LIMIT,
            k=200,
            alpha=0.2,
            beta=0.001,
            verbose=False,
        )
    raise ValueError(f"unknown ART attack {name!r}; expected 'hsja' or 'signopt'")


def run_art(name: str, oracle: HardLabelOracle, classifier, seed: int) -> None:
    """Attack ``oracle.x0`` with ART's ``name`` until the oracle's budget is spent (or
    the attack stops by itself). The oracle keeps the query trace."""
    attack = make_attack(name, classifier)
    x = oracle.x0.numpy()[None].astype(np.float32)
    y = np.eye(oracle.n_classes, dtype=np.float32)[[oracle.y0]]
    with seeded_numpy(seed), contextlib.suppress(BudgetExhausted):
        attack.generate(x, y=y)
