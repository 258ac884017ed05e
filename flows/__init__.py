"""Prefect flows: reproduce one method, reproduce all, serve the scheduled deployment.

The flows' own process sets the portable kernel pins too (``reprolab.ops.portable``, on
by default), before anything imports torch: what it records (run.json's machine) and
what it computes in-process match the stages it starts."""

from reprolab.ops import portable

try:
    portable.apply()
except portable.PortableError as exc:  # a bad REPROLAB_PORTABLE: say so, no traceback
    raise SystemExit(f"reprolab flows: {exc}") from None
