"""Portable kernels (REPROLAB_PORTABLE=1): the pins reach torch, clashes are refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reprolab.ops import portable

ROOT = Path(__file__).resolve().parents[2]


def test_on_by_default_and_off_sets_nothing() -> None:
    env = {"PATH": "/bin"}
    assert portable.apply(env) == portable.PINS
    assert env == {"PATH": "/bin", **portable.PINS}
    env = {"REPROLAB_PORTABLE": "0", "ATEN_CPU_CAPABILITY": "avx512"}
    assert portable.apply(env) == {}
    assert env == {"REPROLAB_PORTABLE": "0", "ATEN_CPU_CAPABILITY": "avx512"}


def test_on_sets_every_pin_and_keeps_equal_ones() -> None:
    env = {"REPROLAB_PORTABLE": "1", "MKL_CBWR": "COMPATIBLE"}
    assert portable.apply(env) == portable.PINS
    assert env == {"REPROLAB_PORTABLE": "1", **portable.PINS}


def test_a_clashing_pin_or_a_bad_value_is_refused_by_name() -> None:
    env = {"REPROLAB_PORTABLE": "1", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}
    with pytest.raises(portable.PortableError, match="ONEDNN_MAX_CPU_ISA=AVX512_CORE_AMX"):
        portable.apply(env)
    assert "MKL_CBWR" not in env, "a refused environment was half-written"
    with pytest.raises(portable.PortableError, match="REPROLAB_PORTABLE='sometimes'"):
        portable.apply({"REPROLAB_PORTABLE": "sometimes"})


def test_openblas_is_pinned_only_where_the_cpu_runs_its_kernels(tmp_path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 fma\n\nflags : fpu\n")
    assert portable.runs_avx2(info)
    info.write_text("processor\t: 0\nflags\t\t: fpu sse4_2 avx fma\n")  # no AVX2
    assert not portable.runs_avx2(info)
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2\n")  # no FMA
    assert not portable.runs_avx2(info)
    assert not portable.runs_avx2(tmp_path / "absent")  # not Linux: nothing pinned
    assert ("OPENBLAS_CORETYPE" in portable.PINS) == _has_avx2()


def _has_avx2() -> bool:
    try:
        return " avx2 " in f" {Path('/proc/cpuinfo').read_text()} ".replace("\n", " ")
    except OSError:
        return False


def _machine(**env: str) -> subprocess.CompletedProcess:
    import os

    pins = {*portable.PINS, *portable.OPENBLAS, portable.ENV}
    base = {k: v for k, v in os.environ.items() if k not in pins}
    return subprocess.run(
        [sys.executable, "-m", "reprolab", "machine"],
        cwd=ROOT,
        env={**base, "REPROLAB_WORKER": "off", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_python_m_reprolab_applies_the_pins_before_torch() -> None:
    """torch's own report of the ISA it dispatches to (not our variable) says AVX2."""
    for env in ({}, {"REPROLAB_PORTABLE": "1"}):  # on by default
        proc = _machine(**env)
        assert proc.returncode == 0, proc.stderr
        kernels = json.loads(proc.stdout)["kernels"]
        assert kernels["torch_cpu_capability"] == ("AVX2" if _has_avx2() else "DEFAULT")
        assert {k: kernels[k] for k in portable.PINS} == portable.PINS
        # OpenBLAS's own report of the kernels numpy's BLAS runs (threadpoolctl)
        assert (kernels["openblas"] == "Haswell") == _has_avx2()
    off = json.loads(_machine(REPROLAB_PORTABLE="0").stdout)["kernels"]
    assert off["MKL_CBWR"] == "" and off["ATEN_CPU_CAPABILITY"] == ""
    assert off["OPENBLAS_CORETYPE"] == ""
    bad = _machine(ATEN_CPU_CAPABILITY="avx512")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "ATEN_CPU_CAPABILITY=avx512" in bad.stderr and "Traceback" not in bad.stderr
