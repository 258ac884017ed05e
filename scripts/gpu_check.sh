#!/usr/bin/env bash
# The paper profile of the neural methods on a CUDA GPU, timed next to their CPU runs.
#
#   bash scripts/gpu_check.sh                         # the default methods below
#   GPU_METHODS="ensloss lip_rcp" bash scripts/gpu_check.sh
#   GPU_CHECK_OUT=/some/folder GPU_CHECK_TIMEOUT=600 bash scripts/gpu_check.sh
#
# Without a CUDA GPU (torch.cuda.is_available() is False) it says so and exits 0: there
# is nothing to measure. With one, for each method it runs the project's own paper
# command (scripts/paper.py: a scratch copy, `dvc repro` at the paper profile) with
# `trainer.paper.accelerator: gpu` (a GPU the train stage cannot use is refused there,
# before any compute), each under a time limit (default 600 s), and writes
# gpu_check.json and gpu_check.md into GPU_CHECK_OUT (default bench/results/): the GPU
# wall time of each method's `dvc repro` beside the CPU wall time recorded for its
# paper profile (docs/results/<slug>/run.json, else the figure its README quotes).
# Each method's results (claims, metrics, run.json) land in GPU_CHECK_OUT/<slug>/, not
# in docs/results. Fashion-MNIST/MNIST methods (ensloss) need `make data` first.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
OUT=${GPU_CHECK_OUT:-$ROOT/bench/results}
LIMIT=${GPU_CHECK_TIMEOUT:-600}
# Neural methods (Lightning or torch training) whose paper profile takes 4-17 min on 2
# CPU cores: each should fit the limit on one GPU.
METHODS=${GPU_METHODS:-"lip_rcp ensloss cplearn bit_dgdm grokformer"}

set +e
"$PY" - <<'EOF'
import sys

import torch

if not torch.cuda.is_available():
    print(
        f"gpu_check: no CUDA GPU on this machine (torch {torch.__version__}: "
        "torch.cuda.is_available() is False); nothing to run, nothing written."
    )
    sys.exit(3)
print(f"gpu_check: {torch.cuda.get_device_name(0)} (torch {torch.__version__})")
EOF
status=$?
set -e
if [ "$status" -eq 3 ]; then
    exit 0
elif [ "$status" -ne 0 ]; then
    echo "gpu_check: could not ask torch about CUDA (exit $status)" >&2
    exit "$status"
fi

# A copy of the project with trainer.paper.accelerator: gpu; scripts/paper.py there
# copies it once more per method, at the paper profile.
SRC=$(mktemp -d "${TMPDIR:-/tmp}/reprolab-gpu-XXXXXX")
trap 'rm -rf "$SRC"' EXIT
git ls-files -co --exclude-standard -z | grep -zv '^data/' | xargs -0 cp --parents -t "$SRC"
[ -d data/raw ] && mkdir -p "$SRC/data" && ln -s "$ROOT/data/raw" "$SRC/data/raw"
"$PY" - "$SRC/params.yaml" <<'EOF'
import sys

import yaml

path = sys.argv[1]
params = yaml.safe_load(open(path))
trainer = params.setdefault("trainer", {}) or {}
params["trainer"] = trainer
trainer["paper"] = {**(trainer.get("paper") or {}), "accelerator": "gpu"}
open(path, "w").write(yaml.safe_dump(params, sort_keys=False))
EOF
git -C "$SRC" init -q
git -C "$SRC" add -A
git -C "$SRC" -c user.name=reprolab -c user.email=reprolab@localhost commit -qm "gpu check"

mkdir -p "$OUT"
TIMES="$OUT/gpu_check.times"
: >"$TIMES"
for slug in $METHODS; do
    echo "gpu_check: $slug at the paper profile (limit ${LIMIT} s)"
    start=$(date +%s.%N)
    set +e
    PYTHONPATH="$SRC/src" timeout "$LIMIT" "$PY" "$SRC/scripts/paper.py" "$slug" --out "$OUT/gpu"
    rc=$?
    set -e
    end=$(date +%s.%N)
    echo "$slug $rc $start $end" >>"$TIMES"
done

"$PY" - "$ROOT" "$OUT" "$LIMIT" <<'EOF'
import json
import sys
import time
from pathlib import Path

import torch

root, out, limit = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
# CPU wall time of each method's paper-profile `dvc repro` where no run.json holds it:
# the figure its README quotes (2 shared CPU cores).
README_CPU_S = {
    "ensloss": 396,
    "grokformer": 991,
    "cplearn": 819,
    "lip_rcp": 231,
    "bit_dgdm": 917,
    "lift_gs": 947,
    "bdia": 1600,
    "hyper_attention": 2151,
}


def cpu_seconds(slug: str) -> tuple[float | None, str]:
    run = root / "docs" / "results" / slug / "run.json"
    if run.is_file():
        info = json.loads(run.read_text())
        if info.get("methods_in_run") == [slug]:
            return info["dvc_repro_seconds_all_methods"], f"docs/results/{slug}/run.json"
    if slug in README_CPU_S:
        return README_CPU_S[slug], f"src/reprolab/methods/{slug}/README.md"
    return None, "not recorded"


rows = []
for line in (out / "gpu_check.times").read_text().splitlines():
    slug, rc, start, end = line.split()
    run = out / "gpu" / slug / "run.json"
    gpu = json.loads(run.read_text())["dvc_repro_seconds_all_methods"] if run.is_file() else None
    cpu, source = cpu_seconds(slug)
    rc = int(rc)
    rows.append(
        {
            "method": slug,
            "status": "ok" if rc == 0 else ("over the limit" if rc == 124 else f"failed ({rc})"),
            "gpu_seconds": gpu,
            "script_seconds": round(float(end) - float(start), 1),
            "cpu_seconds": cpu,
            "cpu_source": source,
            "speedup": round(cpu / gpu, 2) if cpu and gpu else None,
        }
    )
info = {
    "device": torch.cuda.get_device_name(0),
    "torch": torch.__version__,
    "limit_seconds": limit,
    "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    "methods": rows,
}
(out / "gpu_check.json").write_text(json.dumps(info, indent=2) + "\n")
fmt = lambda v: "-" if v is None else f"{v:.0f}"  # noqa: E731
lines = [
    "# Paper profile on a GPU vs 2 CPU cores",
    "",
    f"{info['device']}, torch {info['torch']}, {info['when']}; `trainer.paper.accelerator:"
    f" gpu`, each method's `dvc repro` in a scratch copy (scripts/paper.py), limit {limit} s."
    " CPU: the method's recorded paper-profile run on 2 shared CPU cores.",
    "",
    "| method | status | GPU s | CPU s | CPU / GPU | CPU figure from |",
    "|---|---|---|---|---|---|",
]
for r in rows:
    speed = "-" if r["speedup"] is None else f"{r['speedup']:.1f}x"
    lines.append(
        f"| {r['method']} | {r['status']} | {fmt(r['gpu_seconds'])} | {fmt(r['cpu_seconds'])}"
        f" | {speed} | {r['cpu_source']} |"
    )
(out / "gpu_check.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
rm -f "$TIMES"
