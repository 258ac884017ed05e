"""Prefect flows: reproduce one method, reproduce all, serve the scheduled deployment.

The flows' own process sets the portable kernel pins too (``reprolab.ops.portable``, on
by default), before anything imports torch: what it records (run.json's machine) and
what it computes in-process match the stages it starts.

It also sets, in this one place, how long a flow run without a server waits for
Prefect's temporary (ephemeral) API server to start: :data:`EPHEMERAL_STARTUP_SETTING`,
:data:`EPHEMERAL_STARTUP_S` seconds unless the environment sets it (Prefect's own default,
20 s, is short on a loaded machine: the server imports all of Prefect and migrates its
database first). The tests apply it too (tests/conftest.py imports this package). A run
that still cannot reach it ends with a one-line hint naming the setting
(:func:`ephemeral_hint`, printed after the traceback by the process's excepthook)."""

import os
import sys

from reprolab.ops import portable

#: Prefect's setting for the ephemeral server's start-up timeout, in seconds
EPHEMERAL_STARTUP_SETTING = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
#: the project's value for it (unless the environment sets one)
EPHEMERAL_STARTUP_S = 90
#: what Prefect's RuntimeError says when the ephemeral server did not answer in time
EPHEMERAL_TIMEOUT_MESSAGE = "Timed out while attempting to connect to ephemeral Prefect API server"

try:
    portable.apply()
except portable.PortableError as exc:  # a bad REPROLAB_PORTABLE: say so, no traceback
    raise SystemExit(f"reprolab flows: {exc}") from None


def apply_prefect_settings() -> None:
    """Set :data:`EPHEMERAL_STARTUP_SETTING` unless the environment has it. Prefect reads
    its settings when it is imported; if it already was, its settings are re-read."""
    if os.environ.get(EPHEMERAL_STARTUP_SETTING):
        return
    os.environ[EPHEMERAL_STARTUP_SETTING] = str(EPHEMERAL_STARTUP_S)
    context = sys.modules.get("prefect.context")
    refresh = getattr(context, "refresh_global_settings_context", None)
    if refresh is not None:
        refresh()


def ephemeral_hint(exc: BaseException | None) -> str | None:
    """One line saying what to do when ``exc`` (or an exception it was raised from) is
    Prefect's "Timed out while attempting to connect to ephemeral Prefect API server";
    else None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, RuntimeError) and EPHEMERAL_TIMEOUT_MESSAGE in str(exc):
            value = os.environ.get(EPHEMERAL_STARTUP_SETTING, "20")
            return (
                f"reprolab flows: Prefect's temporary API server did not start within "
                f"{EPHEMERAL_STARTUP_SETTING}={value} s: set it higher "
                f"({EPHEMERAL_STARTUP_SETTING}=300) on a loaded machine, or run against a "
                "server (`make prefect-server`, then PREFECT_API_URL=http://127.0.0.1:4200/api)"
            )
        exc = exc.__cause__ or exc.__context__
    return None


def _excepthook(kind, value, traceback) -> None:
    """The previous excepthook (the traceback), then :func:`ephemeral_hint`'s line."""
    _previous_excepthook(kind, value, traceback)
    hint = ephemeral_hint(value)
    if hint:
        print(hint, file=sys.stderr)


apply_prefect_settings()
if getattr(sys.excepthook, "__name__", "") != "_excepthook":  # once per process
    _previous_excepthook = sys.excepthook
    sys.excepthook = _excepthook
else:  # installed by an earlier import of this module (a reload)
    _previous_excepthook = sys.__excepthook__
