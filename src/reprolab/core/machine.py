"""What a result's numbers depend on besides code, config and seeds: the CPU and its
vector extensions, the kernels torch dispatches to (its CPU capability), the BLAS and
oneDNN builds, and the thread counts. The same seeds give other bits on an AMD EPYC with
AVX-512 than on an Intel Xeon with AMX; recording these lets a rerun elsewhere be
compared (``reprolab compare``) and its differences read."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any


def cpu() -> dict[str, Any]:
    """The CPU's model name and the vector extensions that change floating-point results
    (the same seeds give other bits with AVX-512 or AMX than with AVX2)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model in ("", platform.machine()):
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    wanted = ("sse4_2", "avx", "avx2", "fma", "f16c")
    vector = sorted(f for f in flags if f in wanted or f.startswith(("avx512", "amx")))
    return {"model": model, "vector_extensions": vector}


def openblas() -> str:
    """The kernels numpy's and scipy's OpenBLAS run (their own report of the core type
    they dispatch to, e.g. Haswell or SkylakeX), for the copies loaded now."""
    import numpy  # noqa: F401  (loads its OpenBLAS)
    from threadpoolctl import threadpool_info

    found = {
        i.get("architecture") for i in threadpool_info() if i.get("internal_api") == "openblas"
    }
    return " ".join(sorted(a for a in found if a)) or "none"


def kernels() -> dict[str, Any]:
    """torch's CPU capability (the ISA its kernels dispatch to), its BLAS and oneDNN
    builds, numpy's OpenBLAS kernels, and the thread counts in effect."""
    import torch

    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    onednn = re.search(r"(?:MKL-DNN|oneDNN) (v[\d.]+)", config)
    return {
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "blas": blas.group(1) if blas else "unknown",
        "onednn": onednn.group(1) if onednn else "none",
        "openblas": openblas(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", ""),
        "ONEDNN_MAX_CPU_ISA": os.environ.get("ONEDNN_MAX_CPU_ISA", ""),
        "MKL_CBWR": os.environ.get("MKL_CBWR", ""),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", ""),
        "REPROLAB_PORTABLE": os.environ.get("REPROLAB_PORTABLE", ""),
    }


def machine() -> dict[str, Any]:
    """Everything above, with the platform and versions (run.json's ``machine``)."""
    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu": cpu(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "kernels": kernels(),
    }


def tags() -> dict[str, str]:
    """The same as MLflow tags (``reprolab.machine.*``)."""
    m = machine()
    return {
        "reprolab.machine.cpu": m["cpu"]["model"],
        "reprolab.machine.vector_extensions": " ".join(m["cpu"]["vector_extensions"]),
        "reprolab.machine.torch": m["torch"],
        **{f"reprolab.machine.{k}": str(v) for k, v in m["kernels"].items() if v != ""},
    }
