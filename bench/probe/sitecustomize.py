"""Timing probe for the stage processes of a benchmarked ``dvc repro`` (bench only).

``bench/bench_pipeline.py`` puts this folder on ``PYTHONPATH`` and sets
``REPROLAB_BENCH_PROBE=<file>`` for the ``dvc repro`` it times. Python imports
``sitecustomize`` at start-up, so every process DVC starts loads this file; it does
nothing unless the process is ``python -m reprolab ...`` (DVC's own process, git, etc.
are left alone). In a stage process it attributes every moment of wall time, from
the process's birth (read from /proc) to its last atexit handler, to exactly one of:

- ``interpreter``: fork/exec and Python start-up, up to this file;
- ``import``: loading modules (a hook on ``importlib._bootstrap._find_and_load``;
  an import inside a stage function counts as import, and each module's own load
  time is labelled with its top-level package, nested loads of other packages
  going to those);
- ``tracking``: MLflow calls made through ``reprolab.core.tracking`` (open_tracker,
  Tracker.start/finish/log_*/set_tags, unit_run enter and exit);
- ``checks``: params/slug validation (``_common.context``), input checksum
  verification (``PreparedData``) and the resume fingerprint (``code_digest``);
- ``compute``: the stage's real work: the method hooks (prepare, train_unit, restore,
  evaluate_unit, example_input, calibration_inputs, plots, runtime_plots, units),
  quantization with its calibration and per-layer error and coverage measurements
  (core.quant), claims and
  summaries (evaluate), the report builders, and reading/writing stage data
  (core.io save/load/write, torch.save/torch.load);
- ``glue``: everything else in the process (argument parsing, output folder moves,
  stderr progress lines, other atexit handlers).

Attribution is exclusive and innermost-wins (a stack), so nested wrapped calls are
never counted twice. At exit one JSON line per process is appended to the probe file.
Nothing in ``src/`` is changed: functions are wrapped in this process only, as their
modules finish loading. The wrappers cost two ``perf_counter`` calls per call.

With the preloaded worker (``reprolab.ops.worker``), the ``python -m reprolab`` process DVC
starts is a thin client and the stage runs in a process forked from the worker. The
client is probed as above (``role: client``; its time is interpreter, the client's
imports and glue: waiting for the stage). The worker process itself is not probed, but
its stage children are: the worker calls ``reprolab_stage_child(argv)`` from this module
right after the fork (with the client's environment in place), which installs the same
probe there (``role: worker_child``; born at the fork, no interpreter start-up;
modules the worker preloaded are patched directly, since they are not imported again).
"""

from __future__ import annotations

import os
import sys

_OUT = os.environ.get("REPROLAB_BENCH_PROBE")
_ARGV = list(getattr(sys, "orig_argv", []))


def _is_stage_process() -> bool:
    if not _OUT or "-m" not in _ARGV:
        return False
    i = _ARGV.index("-m")
    return i + 1 < len(_ARGV) and _ARGV[i + 1] == "reprolab" and _ARGV[i + 2 : i + 3] != ["worker"]


def reprolab_stage_child(argv: list[str]) -> None:
    """Called by the worker in a freshly forked stage process (see the docstring)."""
    global _OUT
    _OUT = os.environ.get("REPROLAB_BENCH_PROBE")
    if _OUT:
        _install(child_argv=argv)


def _install(child_argv: list[str] | None = None) -> None:
    import _frozen_importlib as bootstrap
    import atexit
    import functools
    import json
    import threading
    import time
    from collections import defaultdict
    from contextlib import contextmanager

    perf = time.perf_counter
    main_thread = threading.get_ident()
    totals: dict[str, float] = defaultdict(float)
    labels: dict[str, float] = defaultdict(float)
    stack: list[tuple[str, str]] = [("glue", "glue")]
    state = {"last": perf(), "imports": 0, "run_stage": None}

    def proc_start_epoch() -> float:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
        return time.time() - (time.clock_gettime(time.CLOCK_BOOTTIME) - started)

    born = time.time() if child_argv is not None else proc_start_epoch()
    site_epoch = time.time()
    argv = child_argv if child_argv is not None else _ARGV[_ARGV.index("-m") + 2 :]
    role = "worker_child" if child_argv is not None else "process"

    def switch() -> None:
        now = perf()
        cat, label = stack[-1]
        totals[cat] += now - state["last"]
        labels[f"{cat}:{label}"] += now - state["last"]
        state["last"] = now

    def push(cat: str, label: str) -> None:
        switch()
        stack.append((cat, label))

    def pop() -> None:
        switch()
        stack.pop()

    def wrap(fn, cat: str, label: str):
        if getattr(fn, "_bench_wrapped", False):
            return fn

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if threading.get_ident() != main_thread:
                return fn(*args, **kwargs)
            push(cat, label)
            try:
                return fn(*args, **kwargs)
            finally:
                pop()

        wrapper._bench_wrapped = True
        return wrapper

    def patch(obj, names, cat: str, prefix: str) -> None:
        for name in names:
            fn = getattr(obj, name, None)
            if callable(fn):
                setattr(obj, name, wrap(fn, cat, f"{prefix}.{name}"))

    def patch_tracking(mod) -> None:
        patch(mod, ["open_tracker"], "tracking", "tracking")
        tracker = mod.Tracker
        patch(
            tracker,
            ["start", "finish", "log_params", "log_metrics", "log_history", "set_tags"],
            "tracking",
            "Tracker",
        )
        patch(tracker, ["log_artifact"], "tracking", "Tracker")
        original = tracker.unit_run

        @contextmanager
        def unit_run(self, *args, **kwargs):
            cm = original(self, *args, **kwargs)
            push("tracking", "Tracker.unit_run")
            try:
                run_id = cm.__enter__()
            finally:
                pop()
            try:
                yield run_id
            except BaseException:
                push("tracking", "Tracker.unit_run")
                try:
                    if not cm.__exit__(*sys.exc_info()):
                        raise
                finally:
                    pop()
            else:
                push("tracking", "Tracker.unit_run")
                try:
                    cm.__exit__(None, None, None)
                finally:
                    pop()

        tracker.unit_run = unit_run

    def patch_run_stage(mod) -> None:
        original = mod.run_stage

        @functools.wraps(original)
        def run_stage(stage, slug, root):
            state["stage"] = stage if slug is None else f"{stage}@{slug}"
            t0 = perf()
            try:
                return original(stage, slug, root)
            finally:
                state["run_stage"] = perf() - t0

        mod.run_stage = run_stage

    hook_names = [
        "prepare",
        "units",
        "train_unit",
        "restore",
        "evaluate_unit",
        "example_input",
        "calibration_inputs",
        "plots",
        "runtime_plots",
    ]
    patches = {
        "torch": lambda m: patch(m, ["save", "load"], "compute", "torch"),
        "reprolab.stages": patch_run_stage,
        "reprolab.core.tracking": patch_tracking,
        "reprolab.core.io": lambda m: (
            patch(
                m,
                ["save_arrays", "write_manifest", "write_json", "write_text", "load_arrays"],
                "compute",
                "io",
            ),
            patch(m, ["verify_folder"], "checks", "io"),
        ),
        "reprolab.core.quant": lambda m: patch(
            m,
            [
                "quantize",
                "restore_quantized",
                "calibrate_thresholds",
                "layer_errors",
                "coverage",
                "effective_bytes",
                "state_bytes",
                "latency_ms",
            ],
            "compute",
            "quant",
        ),
        "reprolab.evidence.judging.claims": lambda m: patch(
            m.Claim, ["evaluate"], "compute", "Claim"
        ),
        "reprolab.stages._common": lambda m: (
            patch(m, ["context", "code_digest"], "checks", "_common"),
            patch(m.PreparedData, ["__init__"], "checks", "PreparedData"),
        ),
        "reprolab.stages.evaluate": lambda m: patch(
            m, ["_measure", "_summary"], "compute", "evaluate"
        ),
        "reprolab.stages.report": lambda m: patch(
            m, ["collect", "to_markdown", "to_html"], "compute", "report"
        ),
        "reprolab.stages.train": lambda m: patch(m, ["_fingerprint"], "checks", "train"),
    }

    original_find_and_load = bootstrap._find_and_load

    def find_and_load(name, import_):
        if threading.get_ident() != main_thread:
            return original_find_and_load(name, import_)
        push("import", name.split(".")[0])
        try:
            module = original_find_and_load(name, import_)
        finally:
            pop()
        state["imports"] += 1
        fix = patches.get(name)
        if fix is None and name.startswith("reprolab.methods.") and name.endswith(".method"):
            fix = lambda m: patch(m, hook_names, "compute", "hooks")  # noqa: E731
        if fix is not None:
            fix(module)
        return module

    bootstrap._find_and_load = find_and_load
    if child_argv is not None:  # preloaded by the worker: patch what is already there
        for name, fix in patches.items():
            if name in sys.modules:
                fix(sys.modules[name])

    def report() -> None:
        switch()
        exit_epoch = time.time()
        record = {
            "argv": argv,
            "role": role if state["run_stage"] is not None or role != "process" else "client",
            "stage": state.get("stage"),
            "pid": os.getpid(),
            "born": born,
            "site": site_epoch,
            "exit": exit_epoch,
            "run_stage_s": state["run_stage"],
            "modules_loaded": state["imports"],
            "cpu_s": sum(os.times()[:2]),
            "seconds": {"interpreter": site_epoch - born, **totals},
            "labels": dict(labels),
        }
        with open(_OUT, "a") as fh:
            fh.write(json.dumps(record) + "\n")

    atexit.register(report)  # registered first, so it runs after every other handler

    # `python -m reprolab` ends with os._exit (it skips interpreter teardown), which runs
    # no atexit handler: record the process there too, exactly once.
    real_exit = os._exit
    reported = []

    def exit_with_report(code: int) -> None:
        if not reported:
            reported.append(True)
            atexit.unregister(report)
            report()
        real_exit(code)

    os._exit = exit_with_report


if _is_stage_process():
    _install()
