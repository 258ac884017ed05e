"""Compare sequential rules for replicating a claim until it is decided.

A simulated paper run of one claim: replicates with mean ``mu`` (the bound is 0) and
standard deviation 1, looked at after every round of the plan (5, 10, 15, 20 seeds),
stopped at the first interval that excludes the bound. Per rule: the share of runs that
end decisive when the true effect is exactly at the bound (the error; at most alpha = 0.05
is allowed), the share decided 'reproduced' when the effect is the claim's smallest effect
that matters (the power within the budget), and the seeds used on average.

    python bench/bench_sequential.py --out bench/results/sequential.json

Writes the JSON and a Markdown table next to it (``sequential.md``). The test
``tests/unit/test_sequential.py`` asserts the chosen rule's error and its power ranking.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from reprolab.core.sequential import RULES, Plan, simulate  # noqa: E402

EFFECTS = (0.0, 0.3, 0.5, 0.8, 1.2)  # in standard deviations of one replicate
PLANS = {"5/10/15/20": Plan(5, 5, 20), "5/10": Plan(5, 5, 10), "3/8/12": Plan(3, 5, 12)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "sequential.json")
    parser.add_argument("--runs", type=int, default=20000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = []
    for plan_name, plan in PLANS.items():
        for noise in ("normal", "t3"):
            for rule in RULES:
                for mu in EFFECTS:
                    r = simulate(rule, plan, mu, args.runs, np.random.default_rng(17), noise=noise)
                    rows.append(
                        {
                            "plan": plan_name,
                            "noise": noise,
                            "rule": rule,
                            "effect_sd": mu,
                            "reproduced": r.reproduced,
                            "not_reproduced": r.not_reproduced,
                            "mean_seeds": r.mean_seeds,
                        }
                    )
    seconds = time.perf_counter() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": args.runs, "seconds": seconds, "rows": rows}, indent=1))
    se = math.sqrt(0.05 * 0.95 / args.runs)
    lines = [
        "# Sequential rules: error at the bound, power at the claim's effect",
        "",
        f"`python bench/bench_sequential.py` ({args.runs} simulated runs per cell, "
        f"{seconds:.0f} s; Monte Carlo standard error of an error rate of 0.05: {se:.4f}). "
        "Replicates have sd 1; the effect is in sd units; every run looks at each of the "
        "plan's seed counts and stops at the first interval that excludes the bound. "
        "*error*: share of runs that end decisive with the effect at the bound (alpha = "
        "0.05); *power at d*: share that end reproduced with effect d; *seeds*: mean seeds "
        "used at d = 0.5. `naive_t` is the fixed-n 95% t-interval read at every look: "
        "shown to say why a rule is needed, not a candidate.",
        "",
    ]
    for plan_name in PLANS:
        for noise in ("normal", "t3"):
            lines += [
                f"## plan {plan_name} seeds, {noise} replicates",
                "",
                "| rule | error | power at 0.3 | at 0.5 | at 0.8 | at 1.2 | seeds at 0.5 |",
                "|---|---|---|---|---|---|---|",
            ]
            for rule in RULES:
                cell = {
                    r["effect_sd"]: r
                    for r in rows
                    if r["plan"] == plan_name and r["noise"] == noise and r["rule"] == rule
                }
                err = cell[0.0]["reproduced"] + cell[0.0]["not_reproduced"]
                lines.append(
                    f"| {rule} | {err:.4f} | "
                    + " | ".join(f"{cell[d]['reproduced']:.3f}" for d in (0.3, 0.5, 0.8, 1.2))
                    + f" | {cell[0.5]['mean_seeds']:.1f} |"
                )
            lines.append("")
    args.out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
