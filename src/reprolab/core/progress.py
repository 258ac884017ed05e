"""A progress line at a fixed pace while a stage works through its units.

A stage logs each unit it finishes (``core.tracking.log``), but one unit can take
minutes (a diffusion model's sampling, an attack's queries), and a stage that logs every
25th unit can stay silent far longer. :class:`Progress` wraps such a loop: a background
timer prints, every ``every`` seconds (``REPROLAB_PROGRESS_SECONDS``, default 25), how
many units are done of how many, the time elapsed, an estimate of the time left at the
pace so far, and the unit being worked on::

    with Progress("evaluate@bit_dgdm", total=len(units)) as progress:
        for unit in units:
            progress.working_on(unit.id)
            ...
            progress.advance()

    [12:04:31] evaluate@bit_dgdm: 3/10 units, 2m05s elapsed, about 4m52s left; on ddpm_s2

Nothing is printed by a stage that ends within ``every`` seconds. The timer is a daemon
thread that only reads the counters; the loop never waits for it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

#: seconds between progress lines unless REPROLAB_PROGRESS_SECONDS says otherwise
DEFAULT_EVERY = 25.0
ENV = "REPROLAB_PROGRESS_SECONDS"


def duration(seconds: float) -> str:
    """42 -> '42s', 125 -> '2m05s', 3725 -> '1h02m'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def estimate(elapsed: float, done: int, total: int) -> float | None:
    """Seconds left when ``done`` of ``total`` units took ``elapsed`` seconds (None
    before the first unit ends)."""
    if done <= 0:
        return None
    return elapsed / done * max(0, total - done)


def _every() -> float:
    try:
        return float(os.environ.get(ENV, DEFAULT_EVERY))
    except ValueError:
        return DEFAULT_EVERY


class Progress:
    """Counts units done and, as a context manager, prints :meth:`line` every
    ``every`` seconds (0: never) through ``say`` (default ``core.tracking.log``).
    ``done`` counts units already done before the loop (resumed, reused): they show in
    the count, not in the pace."""

    def __init__(
        self,
        label: str,
        total: int,
        *,
        done: int = 0,
        what: str = "units",
        every: float | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        if say is None:
            from reprolab.core.tracking import log as say
        self.label, self.total, self.what = label, int(total), what
        self.every = _every() if every is None else float(every)
        self.say = say
        self._before = int(done)
        self._done = int(done)
        self._current = ""
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def done(self) -> int:
        return self._done

    def advance(self, n: int = 1) -> None:
        """``n`` more units are done."""
        with self._lock:
            self._done += n

    def working_on(self, name: str) -> None:
        """The unit (or step) the loop is on now, named in the progress line."""
        with self._lock:
            self._current = str(name)

    def line(self) -> str:
        """``<label>: 3/10 units, 2m05s elapsed, about 4m52s left; on <current>``."""
        with self._lock:
            done, current = self._done, self._current
        elapsed = time.monotonic() - self._started
        left = estimate(elapsed, done - self._before, self.total - self._before)
        text = f"{self.label}: {done}/{self.total} {self.what}, {duration(elapsed)} elapsed, "
        text += (
            f"about {duration(left)} left"
            if left is not None
            else "no estimate before the first one ends"
        )
        return text + (f"; on {current}" if current else "")

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.say(self.line())
            except Exception:  # a closed stream must never break the stage
                return

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        if self.every > 0 and self.total > 0:
            self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
