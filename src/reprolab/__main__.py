"""``python -m reprolab <command> ...``: what every DVC stage runs, and the one router
of the operations commands that must not load the rest of reprolab.

Two kinds of commands, routed in one place each:

- the **operations commands** (``reprolab.ops.COMMANDS``: ``worker
  start|stop|status|serve``, ``mlflow-server``, ``mlflow import-results`` and ``status``)
  are routed here first, before
  anything else of reprolab is imported: the stage worker's server must stay free of
  the stages, core and methods (each stage forked from it imports them afresh), and the
  MLflow server needs none of them;
- every other command is a **stage command** (the stages, ``asset``, ``report``,
  ``check``, ``list``, ``scoreboard``), routed by :func:`reprolab.cli.main`. Before
  importing anything heavy, :func:`reprolab.ops.worker.delegate` (stdlib only) hands it
  to the project's preloaded worker if one is running (see :mod:`reprolab.ops.worker`),
  whose stage process calls the same ``cli.main``; otherwise it runs here, in-process,
  exactly as without a worker.

``--version`` is answered by the stage router at once, without a worker.
"""

import os
import sys

from reprolab.ops import portable, run_command


def _run(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:  # no worker, no portable settings, no registry
        from reprolab.cli import main

        return main(argv)  # prints the version and exits 0
    try:  # before torch is imported, here or in the worker's preload
        portable.apply()
    except portable.PortableError as exc:
        print(f"reprolab: {exc}", file=sys.stderr)
        return 2
    code = run_command(argv)  # worker, mlflow-server: nothing else of reprolab loads
    if code is not None:
        return code
    from reprolab.ops.worker import delegate

    code = delegate(argv)
    if code is not None:
        return code
    from reprolab.cli import main

    return main(argv)


code = _run(sys.argv[1:])
# A stage process has written and closed all its outputs (atomically) and committed
# its tracking by now; skipping interpreter teardown (~1 s of freeing torch/Lightning
# state per process) keeps orchestration overhead down.
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
