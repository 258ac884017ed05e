"""What portable kernels cost: the smoke pipeline with the CPU's own kernels and with
``REPROLAB_PORTABLE=1`` (``src/reprolab/ops/portable.py``: ATen at AVX2, oneDNN capped
at AVX2, MKL's COMPATIBLE reproducibility branch, numpy's OpenBLAS at its Haswell kernels).

1. **Smoke ``dvc repro``**, as ``make run`` runs it (the preloaded stage worker started
   first), on a fresh copy of the project per run (no ``data/``, no ``dvc.lock``, a fresh
   MLflow store), ``params.yaml`` as committed. The two modes alternate for ``--rounds``
   rounds (default, portable, default, portable, ...), so load drift hits both; the cost
   is the ratio of the median wall times. Target for making portable the default:
   < 1.15x.
2. **Outputs**: every output hash in the two modes' ``dvc.lock`` files: how many differ
   between the modes (the kernels change the bits), and whether each mode gives the same
   hashes in every round (the pins keep a run deterministic on one machine).
3. **Kernels**: a 512x512 float32 matmul (MKL), a 3x3 convolution (oneDNN), an
   element-wise exp + sin + sum (ATen) and numpy's 512x512 float32 matmul (OpenBLAS), one
   thread, each variable alone and all of them: which pin changes which kernel's bits,
   and its time. ``--kernels-only`` runs this part alone (seconds) and writes
   ``bench/results/portable-kernels.{json,md}``.

Pinning the bench (``taskset -c 1``) pins the pipeline too (its stages use the cores
they may run on). Run it on an otherwise idle core:

    taskset -c 1 python bench/bench_portable.py [--rounds 1] [--out bench/results/portable.json]
    taskset -c 1 python bench/bench_portable.py --kernels-only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))

from bench_pipeline import copy_project, load_average, log, machine_info, timed, tool_env  # noqa: E402

from reprolab.ops.portable import ENV, PINS  # noqa: E402

TARGET = 1.15
MODES = {"default": {ENV: "0"}, "portable": {ENV: "1"}}

KERNELS = r"""
import hashlib, json, time, numpy as np, torch
torch.set_num_threads(1)
rn = np.random.default_rng(0)
an, bn = (rn.standard_normal((512, 512), dtype=np.float32) for _ in range(2))
g = torch.Generator().manual_seed(0)
a, b = torch.randn(512, 512, generator=g), torch.randn(512, 512, generator=g)
x, w = torch.randn(8, 16, 32, 32, generator=g), torch.randn(32, 16, 3, 3, generator=g)
s = torch.randn(1_000_000, generator=g)
def timed(f, n=30):
    f(); f()
    t = time.perf_counter()
    for _ in range(n):
        out = f()
    return (time.perf_counter() - t) / n * 1e3, hashlib.sha256(out.numpy().tobytes()).hexdigest()[:12]
res = {"capability": torch.backends.cpu.get_cpu_capability()}
for name, f in (("matmul", lambda: a @ b), ("conv2d", lambda: torch.nn.functional.conv2d(x, w)),
                ("exp_sin_sum", lambda: (s.exp() + s.sin()).sum()),
                ("numpy_matmul", lambda: torch.from_numpy(an @ bn))):
    ms, digest = timed(f)
    res[name] = {"ms": ms, "sha256": digest}
print(json.dumps(res))
"""


def lock_outputs(project: Path) -> dict[str, str]:
    """Every output of ``dvc.lock``: path -> md5."""
    lock = yaml.safe_load((project / "dvc.lock").read_text())
    return {
        out["path"]: out.get("md5", "")
        for stage in lock["stages"].values()
        for out in stage.get("outs", [])
    }


def smoke(workdir: Path, mode: str, round_: int) -> dict:
    project = copy_project(workdir / f"{mode}-{round_}")
    # the copy's own code, not the editable install's (which may change meanwhile)
    env = tool_env({"PYTHONPATH": str(project / "src"), **MODES[mode]})
    log(f"round {round_}, {mode}: starting the stage worker ...")
    timed([sys.executable, "-m", "reprolab", "worker", "start"], project, env)
    load_before = load_average()
    try:
        log(f"round {round_}, {mode}: dvc repro ...")
        wall, _, _ = timed(["dvc", "repro"], project, env, workdir / f"{mode}-{round_}.log")
    finally:
        subprocess.run(
            [sys.executable, "-m", "reprolab", "worker", "stop"],
            cwd=project,
            env=env,
            capture_output=True,
        )
    machine = subprocess.run(
        [sys.executable, "-m", "reprolab", "machine"],
        cwd=project,
        env={**env, "REPROLAB_WORKER": "off"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    log(f"round {round_}, {mode}: {wall:.1f} s")
    return {
        "mode": mode,
        "round": round_,
        "wall_s": wall,
        "load_before": load_before,
        "load_after": load_average(),
        "kernels": json.loads(machine)["kernels"],
        "outputs": lock_outputs(project),
    }


def kernels() -> list[dict]:
    settings = [("CPU's own", {})]
    settings += [(f"{k}={v}", {k: v}) for k, v in PINS.items()]
    settings.append(("portable (all of them)", dict(PINS)))
    rows = []
    for label, extra in settings:
        env = {k: v for k, v in os.environ.items() if k not in PINS and k != ENV}
        out = subprocess.run(
            [sys.executable, "-c", KERNELS],
            env={**env, "OPENBLAS_NUM_THREADS": "1", **extra},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows.append({"setting": label, **json.loads(out)})
    return rows


def summarise(runs: list[dict]) -> dict:
    by_mode = {m: [r for r in runs if r["mode"] == m] for m in MODES}
    median = {m: statistics.median(r["wall_s"] for r in rs) for m, rs in by_mode.items()}
    first = {m: rs[0]["outputs"] for m, rs in by_mode.items()}
    paths = sorted(set(first["default"]) | set(first["portable"]))
    differ = [p for p in paths if first["default"].get(p) != first["portable"].get(p)]
    stable = {m: all(r["outputs"] == rs[0]["outputs"] for r in rs) for m, rs in by_mode.items()}
    ratio = median["portable"] / median["default"]
    return {
        "median_wall_s": median,
        "cost_ratio": ratio,
        "target": TARGET,
        "default_worthy": ratio < TARGET,
        "outputs": len(paths),
        "outputs_differing_between_modes": len(differ),
        "differing": differ,
        "same_hashes_every_round": stable,
    }


def markdown(result: dict) -> str:
    s, m = result["summary"], result["machine"]
    lines = [
        f"# Portable kernels: what they cost ({result['date']})",
        "",
        f"{m['cpu_model']}, {m['cpus_usable']} usable core(s) of {m['cpu_count']}, torch "
        f"{m['torch']}; {result['rounds']} round(s) per mode, alternating; bench runtime "
        f"{result['runtime_s']:.0f} s.",
        "",
        "| run | mode | wall s | load before / after (1 min) | torch capability |",
        "|---|---|---:|---|---|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['round']} | {r['mode']} | {r['wall_s']:.1f} | "
            f"{r['load_before']['1min']:.2f} / {r['load_after']['1min']:.2f} | "
            f"{r['kernels']['torch_cpu_capability']} |"
        )
    verdict = "PASS" if s["default_worthy"] else "FAIL: not made the default"
    lines += [
        "",
        f"- Smoke `dvc repro` (with the stage worker), median: CPU's own kernels "
        f"{s['median_wall_s']['default']:.1f} s, portable {s['median_wall_s']['portable']:.1f} s: "
        f"**{s['cost_ratio']:.2f}x** (target < {TARGET}x to be the default: {verdict}).",
        f"- Outputs in `dvc.lock`: {s['outputs_differing_between_modes']} of {s['outputs']} "
        "hash differently between the modes; same hashes in every round of a mode: "
        + ", ".join(f"{k} {v}" for k, v in s["same_hashes_every_round"].items())
        + ".",
        "",
    ]
    return "\n".join(lines) + "\n" + kernels_markdown(result["kernels"])


def kernels_markdown(rows: list[dict]) -> str:
    lines = [
        "## Kernels (one thread): which pin changes which kernel",
        "",
        "| setting | ATen capability | matmul ms | matmul bits | conv2d ms | conv2d bits | "
        "exp+sin+sum ms | bits | numpy matmul ms | bits |",
        "|---|---|---:|---|---:|---|---:|---|---:|---|",
    ]
    for k in rows:
        np_mm = k.get("numpy_matmul", {"ms": float("nan"), "sha256": "-"})
        lines.append(
            f"| {k['setting']} | {k['capability']} | {k['matmul']['ms']:.2f} | "
            f"`{k['matmul']['sha256']}` | {k['conv2d']['ms']:.2f} | `{k['conv2d']['sha256']}` | "
            f"{k['exp_sin_sum']['ms']:.2f} | `{k['exp_sin_sum']['sha256']}` | "
            f"{np_mm['ms']:.2f} | `{np_mm['sha256']}` |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/portable.json")
    parser.add_argument("--kernels-only", action="store_true", help="part 3 alone (seconds)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    t0 = time.perf_counter()
    log("kernels ...")
    kernel_rows = kernels()
    if args.kernels_only:
        m = machine_info(1, None)
        out = ROOT / "bench/results/portable-kernels.json"
        out.write_text(
            json.dumps(
                {
                    "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "machine": m,
                    "kernels": kernel_rows,
                },
                indent=2,
            )
            + "\n"
        )
        text = (
            f"# Portable kernels, per kernel ({time.strftime('%Y-%m-%d')})\n\n"
            f"{m['cpu_model']}, torch {m['torch']}.\n\n" + kernels_markdown(kernel_rows)
        )
        out.with_suffix(".md").write_text(text)
        print(text)
        return 0
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-portable-") as tmp:
        for round_ in range(1, args.rounds + 1):
            for mode in MODES:
                runs.append(smoke(Path(tmp), mode, round_))
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "rounds": args.rounds,
        "machine": machine_info(1, None),
        "runs": runs,
        "kernels": kernel_rows,
        "summary": summarise(runs),
        "runtime_s": time.perf_counter() - t0,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result)
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
