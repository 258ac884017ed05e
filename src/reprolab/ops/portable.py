"""Portable kernels (the default; ``REPROLAB_PORTABLE=0`` turns them off): the
instruction set the float kernels dispatch to is pinned, so that the bits of a result
depend less on which x86 CPU ran it.

torch's CPU kernels pick their code path from the CPU they find: ATen's vectorised
kernels by ISA (``ATEN_CPU_CAPABILITY``: default, avx2, avx512), oneDNN's convolutions by
ISA (``ONEDNN_MAX_CPU_ISA``) and MKL's BLAS by ISA and CPU vendor (``MKL_CBWR``). The
same seeds therefore give other bits on an AVX-512 machine than on an AVX2 one, and on
Intel than on AMD. Portable mode sets (measured cost on the smoke pipeline:
``bench/bench_portable.py``, ``bench/results/portable.md``):

- ``ATEN_CPU_CAPABILITY=avx2``: every x86-64 CPU of the last decade has AVX2;
- ``ONEDNN_MAX_CPU_ISA=AVX2``: oneDNN generates no AVX-512 or AMX code;
- ``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical reproducibility branch that gives
  the same results on Intel and non-Intel CPUs (the AVX2 branch holds on Intel CPUs
  only; on others MKL silently takes its automatic branch);
- ``OPENBLAS_CORETYPE=Haswell``: numpy's and scipy's BLAS (OpenBLAS) picks its kernels
  by CPU model, Haswell's (AVX2) on AMD Zen and SkylakeX's (AVX-512) on an AVX-512 Intel
  Xeon; pinned to Haswell's only where the CPU has AVX2 and FMA (forced on a CPU without
  them, the kernels would stop the process). Measured: on an Intel Xeon it makes the
  numpy-made smoke datasets bit-identical to those of an AMD EPYC (docs/evidence.md).

What it does not pin: the thread count (compare runs at the same ``REPROLAB_THREADS``;
``run.json`` records it) and oneDNN's blocking, which may follow the cache sizes.

It is applied by ``python -m reprolab`` (``reprolab.__main__``) before torch is imported,
so every stage, the stage worker and ``make paper`` / ``make run`` honour it. The worker
counts these variables in its identity: a stage asked for with other pins than the
worker's runs in-process instead of in a fork with the wrong kernels. Standard library
only (it runs before anything else is imported).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

ENV = "REPROLAB_PORTABLE"

#: OpenBLAS's kernels pinned where the CPU runs them (see :func:`runs_avx2`)
OPENBLAS = {"OPENBLAS_CORETYPE": "Haswell"}


def runs_avx2(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU has AVX2 and FMA (what OpenBLAS's Haswell kernels execute), from
    the first ``flags`` line of ``cpuinfo``; False where it cannot be read (not Linux,
    not x86)."""
    try:
        with cpuinfo.open() as lines:
            for line in lines:
                if line.startswith("flags"):
                    return {"avx2", "fma"} <= set(line.partition(":")[2].split())
    except OSError:
        pass
    return False


#: variable -> the value portable mode sets
PINS = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "MKL_CBWR": "COMPATIBLE",
    **(OPENBLAS if runs_avx2() else {}),
}

_ON = ("", "1", "on", "true", "yes")  # unset: on
_OFF = ("0", "off", "false", "no")


class PortableError(ValueError):
    """``REPROLAB_PORTABLE`` or a variable it sets holds something else than it needs."""


def enabled(environ: MutableMapping[str, str] = os.environ) -> bool:
    value = environ.get(ENV, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise PortableError(
        f"{ENV}={environ.get(ENV)!r}: expected 1 (portable kernels, the default) or 0 "
        "(the CPU's own)"
    )


def apply(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """Set the pins in ``environ`` when portable mode is on (unless ``REPROLAB_PORTABLE``
    is 0); return what is now pinned (empty when it is off). A pin the user set to
    another value is an error, not silently overridden: the run would not be portable."""
    if not enabled(environ):
        return {}
    clash = {k: environ[k] for k, v in PINS.items() if environ.get(k, v).strip() != v}
    if clash:
        wanted = ", ".join(f"{k}={PINS[k]}" for k in clash)
        found = ", ".join(f"{k}={v}" for k, v in clash.items())
        raise PortableError(
            f"{ENV}=1 needs {wanted}, but the environment has {found}: unset it, or unset {ENV}"
        )
    for key, value in PINS.items():
        environ[key] = value
    return dict(PINS)


def kernel_env(environ: MutableMapping[str, str] = os.environ) -> dict[str, str]:
    """The variables that decide which kernels a process dispatches to, as set now."""
    return {k: environ.get(k, "") for k in (ENV, *PINS, *OPENBLAS)}
