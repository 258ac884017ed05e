"""Operations: running, distributing and re-verifying the pipeline, never computing a
result. What a stage computes lives in the core, the methods and the stages; these
modules only decide where and how that code runs and check what it produced:

- ``worker``: the preloaded stage worker (``python -m reprolab worker ...``);
- ``executor``: where a stage's independent units run (``REPROLAB_EXECUTOR``: in the
  stage process or on Dask);
- ``mlflow_server``: a shared MLflow tracking server (``python -m reprolab
  mlflow-server``);
- ``results_import``: the committed results as MLflow runs (``python -m reprolab mlflow
  import-results``);
- ``dvcstate``: what DVC knows about the stages, for the Prefect entry points and
  ``python -m reprolab status`` (what a ``dvc repro`` would run now);
- ``scratch``: a scratch copy of the project (paper rounds, re-verification);
- ``reverify``: comparing every verdict of a run with the last re-verification's.

Layering: ops modules may import the stages, the registry, the config and the core;
none of those imports ops, with one exception: the train stage asks
:mod:`reprolab.ops.executor` where its units run and for a Dask client. That module
imports nothing of reprolab (a leaf), so the edge adds no cycle and loads no other ops
module; this package's ``__init__`` imports nothing either (its command table names
modules, imported on use), for the same reason and so that the worker's server, which
imports ``reprolab.ops.worker``, stays free of the rest of reprolab.
"""

from __future__ import annotations

#: The operations commands: name -> (module, function called with the rest of argv and
#: returning an exit code, help). ``python -m reprolab`` (``reprolab.__main__``) routes
#: them before anything else of reprolab is imported; the stage router ``reprolab.cli``
#: lists them and forwards to the same function (for entry points that call it directly).
COMMANDS = {
    "worker": (
        "reprolab.ops.worker",
        "command",
        "the preloaded stage worker of this project: start|stop|status|serve [--idle S]",
    ),
    "mlflow-server": (
        "reprolab.ops.mlflow_server",
        "main",
        "MLflow tracking server on PostgreSQL (loopback): "
        "[--port 5001] [--pg-port 5433] [--folder .mlflow/server]",
    ),
    "status": (
        "reprolab.ops.dvcstate",
        "main",
        "which DVC stages a `dvc repro` would run now, per method: the changed ones and "
        "everything downstream that the change reaches [--json]",
    ),
    "mlflow": (
        "reprolab.ops.results_import",
        "main",
        "the project's MLflow store: import-results loads the committed docs/results "
        "into it (one run per results folder; a second call adds nothing)",
    ),
}


#: What the stage worker's forked stage process runs, as ``python -m reprolab`` would:
#: the stage router (module, function), named here and imported on use, so that the
#: worker, an operations module, does not import the command line above it.
STAGE_ROUTER = ("reprolab.cli", "main")


def run_command(argv: list[str]) -> int | None:
    """Run ``argv`` if it names an operations command and return its exit code; None if
    it does not. Imports only the command's module."""
    if not argv or argv[0] not in COMMANDS:
        return None
    import importlib

    module, function, _ = COMMANDS[argv[0]]
    return getattr(importlib.import_module(module), function)(list(argv[1:]))
