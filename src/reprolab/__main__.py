"""``python -m reprolab <command> ...``: what every DVC stage runs.

Kept cheap to import: before anything heavy, ``reprolab.worker.delegate`` (stdlib only)
hands the command to the project's preloaded worker if one is running (see
``reprolab.worker``); otherwise the command runs here, in-process, exactly as without a
worker. ``worker start|stop|status`` goes straight to the worker module, so the worker
process never loads the rest of reprolab.
"""

import os
import sys


def _run(argv: list[str]) -> int:
    if argv[:1] == ["worker"]:
        from reprolab.worker import command

        return command(argv[1:])
    if argv[:1] == ["mlflow-server"]:  # a long-running server, never a stage
        from reprolab.mlflow_server import main as serve

        return serve(argv[1:])
    from reprolab.worker import delegate

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
