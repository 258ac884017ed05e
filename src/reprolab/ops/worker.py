"""A preloaded stage worker: stage processes hand their work to it instead of importing
torch, Lightning, MLflow, scipy, pandas ... themselves.

Why: every ``python -m reprolab <stage> <slug>`` that DVC starts used to spend 1.5-6 s
importing third-party libraries before computing, for well under that in compute on
the smoke profile. A long-lived worker imports them once; for each stage it forks a
child that already has them, so a stage process costs an interpreter start, a socket
round trip and a fork.

How a stage runs through it
---------------------------
``python -m reprolab <command> ...`` (``__main__``) first calls :func:`delegate` for every
stage command (``__main__`` routes the operations commands, this module's ``worker
start|stop|status|serve`` among them, itself), which is stdlib-only and cheap. If a live worker answers on the project's socket
(``.reprolab/worker.sock``, git-ignored), the client sends its argv, cwd, environment,
umask, ``sys.path`` and its three standard file descriptors (``SCM_RIGHTS``), then
waits for the exit status and exits with it (a stage killed by a signal kills the
client with the same signal). SIGINT, SIGTERM and SIGHUP received by the client are
forwarded to the stage. If the client dies, the stage is terminated (SIGTERM, then
SIGKILL after a grace period). With no worker, a dead socket, or a worker that is
stale, refuses to fork or does not match this interpreter, the client runs the stage
in-process exactly as before: the worker is an accelerator, never a requirement.

Inside the worker
-----------------
The serving process imports only third-party libraries (:data:`PRELOAD`), never the
rest of reprolab beyond this module, its packages and the source normaliser it hashes
code with (``reprolab.core.fingerprint``), so edits to stages, core or methods take
effect in the next stage without a restart (only edits to the modules the server runs
itself need one; they are detected, see below). Per connection it reads the request
and forks a *handler*; the handler forks the *stage* process, which sets up the
client's environment, cwd, fds and ``sys.argv``, drops every reprolab module but this
one and its packages, runs the stage router ``reprolab.cli.main`` and ``os._exit``s
with its code; the handler relays
signals and the exit status. Because every connection gets its own processes, the
server keeps accepting while stages run: concurrent clients (Prefect, a user next to
DVC) are served concurrently. The server never starts a thread (``fork`` is only safe
in a single-threaded process) and never runs a torch op (torch's thread pools start
lazily, so each stage still gets a fresh pool sized by ``REPROLAB_THREADS``); both are
checked after preloading, and a worker that finds threads refuses to serve.

Staleness: the worker records its interpreter, ``sys.path`` and a digest
(:func:`staleness_digest`) of what a fork inherits instead of importing afresh: the
installed environment (``requirements.lock`` and ``requirements-nodeps.lock`` of its
project, byte for byte; ``pyvenv.cfg``; the names, hence versions, of the distributions
in site-packages) and the reprolab sources the server itself runs (:func:`server_sources`:
this file, ``__main__``, the packages' ``__init__`` and ``core/fingerprint.py``), each
without comments and blank lines (``code_text``). The digest is of contents, not mtimes:
an edit that keeps a file's mtime, or one inside a folder whose mtime does not move, is
seen; a comment edit or a ``touch`` is not a change. Every request recomputes it when a
``stat`` of its inputs moved (a few ``stat`` calls otherwise): if it changed, the client
is told to run in-process and the worker exits. A client whose interpreter, version or
``sys.path`` (beyond the script folder) differs from the worker's runs in-process too.

CUDA: a process forked from one that has initialised CUDA cannot use CUDA (torch
raises "Cannot re-initialize CUDA in forked subprocess"), and the server never runs a
torch op, so CUDA initialised in it is a bug (a preloaded module that touches the GPU
at import). The worker then refuses to fork: after preloading it does not serve at all,
and before every fork it checks again (``torch.cuda.is_initialized()``, only if the
server has torch loaded); a request it refuses is answered with the reason, which the
client prints before running the stage in-process, and the worker exits. The worker exits after
``REPROLAB_WORKER_IDLE`` seconds (default 600) without a request.

Who starts it
-------------
``make run`` starts it before ``dvc repro`` and stops it afterwards (``python -m
reprolab worker start|stop|status``). It is not started implicitly by default: an
auto-started worker would be left behind by every test and CI copy of the project
(about 600 MB resident each, until its idle timeout), and a plain ``dvc repro`` of one
stage gains nothing from paying the preload. ``REPROLAB_WORKER=auto`` opts into
auto-start (the first stage that finds no worker spawns one, detached, and runs
in-process itself; a file lock keeps it to one worker per project);
``REPROLAB_WORKER=off`` never uses a worker.

``REPROLAB_WORKER_SOCKET=<path>`` replaces the project's socket, for the server and its
clients alike: one worker then serves every checkout of the project that runs the same
interpreter (the test suite's many throw-away copies share one this way). The worker's
lock, pid file and log stay in the project it was started from.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Mapping

from reprolab.ops import portable

MODE_ENV = "REPROLAB_WORKER"  # "on" (default: use a running worker), "auto", "off"
IDLE_ENV = "REPROLAB_WORKER_IDLE"  # seconds without a request before the worker exits
SOCKET_ENV = "REPROLAB_WORKER_SOCKET"  # a socket path replacing the project's
PRELOAD_ENV = "REPROLAB_WORKER_PRELOAD"  # comma-separated modules replacing PRELOAD (tests)
DEFAULT_IDLE_S = 600.0
STATE_DIR = ".reprolab"
SOCKET_NAME = "worker.sock"
PROTOCOL = 1
TERM_GRACE_S = 5.0
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: signals a process cannot catch: a handler that died of one was killed from outside
UNCATCHABLE = (signal.SIGKILL, signal.SIGSTOP)

# Third-party modules imported once by the worker, measured on the smoke pipeline
# (seconds to import on 2 cores, 2026-12): lightning 4.1 (with torch 2.7), mlflow 2.1 +
# its SQLAlchemy store 1.4 (what open_tracker loads lazily), scipy.optimize 1.0,
# scipy.stats 0.8, dp_accounting 0.9, pandas 0.7, sklearn 0.9, matplotlib 0.7, networkx
# 0.3. What a stage does not find here it imports itself, as before. Nothing in this
# list may start a thread at import (checked after preloading).
PRELOAD = (
    "numpy",
    "torch",
    "torch.nn.functional",
    "torch.utils.data",
    "torch.ao.quantization",
    "pandas",
    "pydantic",
    "yaml",
    "dotenv",
    "scipy.optimize",
    "scipy.stats",
    "scipy.special",
    "scipy.sparse",
    "scipy.spatial.distance",
    "networkx",
    "sklearn.datasets",
    "sklearn.preprocessing",
    "sklearn.pipeline",
    "sklearn.metrics",
    "sklearn.linear_model",
    "sklearn.cluster",
    "matplotlib",
    "matplotlib.pyplot",
    "lightning.pytorch",
    "mlflow",
    "mlflow.entities",
    "mlflow.tracking",
    "mlflow.store.tracking.sqlalchemy_store",
    "mlflow.store.db.utils",
    "sqlalchemy.dialects.sqlite",
    "alembic",
    "mlxtend.data",
    "dp_accounting.pld",
)


class WorkerError(RuntimeError):
    """The worker cannot be started or reached as asked."""


# ---------------------------------------------------------------- shared helpers


def find_root(start: str | None = None) -> str | None:
    """The project root (params.yaml + dvc.yaml), as ``reprolab.paths.project_root``
    finds it, but without importing reprolab (the server must stay free of it)."""
    env = os.environ.get("REPROLAB_ROOT")
    if env:
        return os.path.realpath(env)
    here = os.path.realpath(start or os.getcwd())
    while True:
        if os.path.isfile(os.path.join(here, "params.yaml")) and os.path.isfile(
            os.path.join(here, "dvc.yaml")
        ):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def socket_path(root: str) -> str:
    """``<root>/.reprolab/worker.sock``; a Unix socket path must fit in 107 bytes, so a
    deep project gets one under the temp folder, named by a hash of its root.
    ``REPROLAB_WORKER_SOCKET``, when set, replaces it (a worker shared by checkouts)."""
    shared = os.environ.get(SOCKET_ENV, "").strip()
    if shared:
        return shared
    path = os.path.join(root, STATE_DIR, SOCKET_NAME)
    if len(path.encode()) <= 100:
        return path
    import hashlib
    import tempfile

    digest = hashlib.sha256(root.encode()).hexdigest()[:16]
    folder = os.path.join(tempfile.gettempdir(), f"reprolab-{os.getuid()}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, f"{digest}.sock")


def interpreter_identity() -> dict:
    """What must match between a client and the worker for a fork of the worker to be
    the same as running the client in-process. ``sys.path[0]`` (the script folder,
    i.e. the cwd for ``-m``) is left out: the stage process gets the client's."""
    return {
        "executable": os.path.realpath(sys.executable),
        "prefix": sys.prefix,
        "version": sys.version,
        "path": sys.path[1:],
        "flags": [
            sys.flags.optimize,
            sys.flags.dont_write_bytecode,
            sys.flags.isolated,
            sys.flags.safe_path,
        ],
        "warnoptions": list(sys.warnoptions),
        "xoptions": {k: str(v) for k, v in sys._xoptions.items()},
        # the kernels torch dispatches to are fixed when the server imports it
        "kernels": portable.kernel_env(),
    }


def _send(sock: socket.socket, msg: dict, fds: list[int] | None = None) -> None:
    body = json.dumps(msg).encode()
    head = struct.pack("!I", len(body))
    if fds:
        socket.send_fds(sock, [head], fds)
        sock.sendall(body)
    else:
        sock.sendall(head + body)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise EOFError("connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket, want_fds: int = 0) -> tuple[dict, list[int]]:
    fds: list[int] = []
    if want_fds:
        head, fds, _, _ = socket.recv_fds(sock, 4, want_fds)
        if not head:
            raise EOFError("connection closed")
        if len(head) < 4:
            head += _recv_exact(sock, 4 - len(head))
    else:
        head = _recv_exact(sock, 4)
    (n,) = struct.unpack("!I", head)
    return json.loads(_recv_exact(sock, n)), fds


def _connect(path: str, timeout: float) -> socket.socket | None:
    """A connection to a live worker, or None (no socket file, or nobody listening)."""
    if not os.path.exists(path):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


def _request(path: str, msg: dict, timeout: float = 5.0) -> dict | None:
    sock = _connect(path, timeout)
    if sock is None:
        return None
    try:
        _send(sock, msg)
        reply, _ = _recv(sock)
        return reply
    except (OSError, EOFError, ValueError):
        return None
    finally:
        sock.close()


# ---------------------------------------------------------------- client


def mode(environ: Mapping[str, str] = os.environ) -> str:
    """``REPROLAB_WORKER`` as set in ``environ``: "off" (never use a worker), "auto"
    (start one on first use) or "on" (the default: use a running one)."""
    value = environ.get(MODE_ENV, "on").strip().lower()
    return "off" if value in ("off", "0", "no", "false") else value


def delegate(argv: list[str]) -> int | None:
    """Run ``argv`` in the project's worker and return its exit code, or None when
    there is no usable worker (the caller then runs in-process). Only returns once the
    stage has finished; a stage killed by a forwarded signal kills this process the same
    way, and one whose handler was killed from outside (SIGKILL) runs again in-process."""
    how = mode()
    if how == "off":
        return None
    root = find_root()
    if root is None:
        return None
    path = socket_path(root)
    sock = _connect(path, timeout=2.0)
    if sock is None:
        if how == "auto":
            spawn(root)
        return None
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)  # a closed standard fd: run in-process, exactly as without
    except OSError:
        sock.close()
        return None
    request = {
        "op": "run",
        "protocol": PROTOCOL,
        "argv": list(argv),
        "sys_argv0": sys.argv[0],
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": _umask(),
        "path0": sys.path[0] if sys.path else "",
        "identity": interpreter_identity(),
        "stdio": _stdio_config(),
    }
    try:
        sock.settimeout(30.0)  # the server may be busy forking for another client
        _send(sock, request, fds=[0, 1, 2])
        reply, _ = _recv(sock)
    except (OSError, EOFError, ValueError):
        sock.close()
        return None
    if reply.get("op") != "started":
        sock.close()  # "fallback": stale worker, another interpreter or a refusal
        if reply.get("notice"):
            print(
                f"reprolab: the worker did not run this stage ({reply.get('reason')}); "
                "running it in-process",
                file=sys.stderr,
                flush=True,
            )
        return None
    try:
        _send(sock, {"op": "go"})  # from here on the stage runs in the worker, never here
    except OSError:
        sock.close()
        return None
    sock.settimeout(None)
    return _wait(sock, reply["pid"])


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _stdio_config() -> dict:
    out = {}
    for name in ("stdin", "stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or not hasattr(stream, "encoding"):
            continue
        out[name] = {
            "encoding": stream.encoding,
            "errors": stream.errors,
            "line_buffering": getattr(stream, "line_buffering", False),
            "write_through": getattr(stream, "write_through", False),
        }
    return out


def _wait(sock: socket.socket, pid: int) -> int | None:
    """Relay signals to the stage and return its exit code once it is done; None when
    its handler was killed from outside, so that the caller runs the stage itself."""

    def forward(signum, _frame):
        with contextlib.suppress(OSError):
            _send(sock, {"op": "signal", "signal": signum})

    previous = {s: signal.signal(s, forward) for s in FORWARDED_SIGNALS}
    try:
        while True:
            try:
                msg, _ = _recv(sock)
            except (OSError, EOFError, ValueError) as exc:
                print(
                    f"reprolab: lost the connection to the stage worker (handler {pid}: "
                    f"{exc}); the stage's exit status is unknown. Nothing it finished is "
                    "lost: run `dvc repro` again, or set REPROLAB_WORKER=off",
                    file=sys.stderr,
                )
                return 1
            if msg.get("op") == "exit":
                break
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sock.close()
    if msg.get("signal"):
        sig = int(msg["signal"])
        if sig in UNCATCHABLE:
            # not a signal forwarded from here (those can be caught): the handler was
            # killed from outside (kill -9, the OOM killer). The worker reaped it, so it
            # is gone: the stage runs again here, keeping what it finished (its outputs
            # are written whole, train keeps finished units in data/.partial)
            print(
                f"reprolab: the stage worker's handler {pid} was killed "
                f"({signal.Signals(sig).name}) before the stage finished; running the stage "
                "again in-process (REPROLAB_WORKER=off skips the worker)",
                file=sys.stderr,
                flush=True,
            )
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return int(msg.get("code", 1))


def spawn(root: str, idle_s: float | None = None):
    """Start a detached worker for ``root`` without waiting for it (auto-start, and the
    first step of :func:`start`); its output goes to ``.reprolab/worker.log``."""
    import subprocess

    argv = [sys.executable, "-m", "reprolab", "worker", "serve"]
    if idle_s is not None:
        argv += ["--idle", str(idle_s)]
    state = os.path.join(root, STATE_DIR)
    os.makedirs(state, exist_ok=True)
    with open(os.path.join(state, "worker.log"), "ab") as log:
        return subprocess.Popen(
            argv,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )


# ---------------------------------------------------------------- server


class _Stop(Exception):
    """Raised by the server's SIGTERM/SIGINT handler to leave the accept loop."""


#: the project's lock files, hashed byte for byte into the staleness digest
LOCK_FILES = ("requirements.lock", "requirements-nodeps.lock")


def server_sources() -> list[str]:
    """The reprolab source files this process has loaded (real paths, sorted): in the
    server, the code a stage forked from it inherits instead of importing afresh (the
    stage drops every other reprolab module). Imports the normaliser the digest uses
    first, so that it is among them."""
    import reprolab.core.fingerprint  # noqa: F401 - hashed: the digest runs its code_text

    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # .../reprolab
    found = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            path = os.path.realpath(path)
            if path.startswith(package + os.sep):
                found.add(path)
    return sorted(found)


def _site_dirs() -> list[str]:
    import sysconfig

    paths = sysconfig.get_paths()
    return sorted({paths["purelib"], paths["platlib"]})


def _inputs(root: str, sources: list[str]) -> list[tuple[str, str]]:
    """(kind, path) of everything the digest reads."""
    return [
        *(("raw", os.path.join(root, name)) for name in LOCK_FILES),
        ("raw", os.path.join(sys.prefix, "pyvenv.cfg")),
        *(("listing", d) for d in _site_dirs()),
        *(("code", path) for path in sources),
    ]


def _stat_key(path: str) -> tuple | None:
    """Changes whenever the file (or a folder's entry list) is written: ctime moves with
    any write or rename, even one that restores the mtime."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _content(kind: str, path: str) -> bytes | None:
    try:
        if kind == "listing":  # installed distributions: names carry their versions
            names = sorted(
                n for n in os.listdir(path) if n.endswith((".dist-info", ".egg-info", ".pth"))
            )
            return "\n".join(names).encode()
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if kind == "code":
        from reprolab.core.fingerprint import code_text

        return code_text(data)
    return data


_digest_cache: dict[tuple, str] = {}
#: seconds within which a file's stat cannot vouch for its content (see below)
RACY_S = 2.0


def staleness_digest(root: str, sources: list[str]) -> str:
    """A hash of what a stage forked from the worker inherits instead of reading afresh:
    the project's lock files (:data:`LOCK_FILES`) and ``pyvenv.cfg`` byte for byte, the
    distributions installed in site-packages (their names, hence versions) and
    ``sources`` without comments and blank lines (``reprolab.core.fingerprint.code_text``:
    a comment edit is not a change). Recomputed only when a ``stat`` of an input moved
    (a few stat calls per request otherwise: ctime moves with every write); a missing
    file hashes as missing."""
    import hashlib

    inputs = _inputs(root, sources)
    stats = [_stat_key(path) for _, path in inputs]
    key = tuple(zip(inputs, stats, strict=True))
    cached = _digest_cache.get(key)
    if cached is not None:
        return cached
    h = hashlib.sha256()
    for kind, path in inputs:
        data = _content(kind, path)
        h.update(f"{kind}\0{path}\0".encode())
        h.update(b"missing" if data is None else hashlib.sha256(data).digest())
    digest = h.hexdigest()
    # File times tick coarsely (a few ms): a file written within RACY_S of now may be
    # written again with the same stat, so a digest that read one is not cached.
    recent = time.time_ns() - int(RACY_S * 1e9)
    if all(st is None or st[3] < recent for st in stats):
        _digest_cache.clear()  # one entry: the inputs of the running server
        _digest_cache[key] = digest
    return digest


def cuda_refusal() -> str | None:
    """Why this process must not fork because of CUDA, or None: a child of a process that
    has initialised CUDA cannot use it. torch is only asked if already loaded here."""
    torch = sys.modules.get("torch")
    is_initialized = getattr(getattr(torch, "cuda", None), "is_initialized", None)
    if is_initialized is None:
        return None
    try:
        initialised = bool(is_initialized())
    except Exception:  # noqa: BLE001 - a torch that cannot answer has not initialised CUDA
        return None
    if initialised:
        return (
            "CUDA is initialised in the worker process, and a process forked from it "
            "cannot use CUDA; the worker refuses to fork"
        )
    return None


def preload(modules: tuple[str, ...] | None = None) -> dict[str, float]:
    """Import the heavy third-party modules; seconds per module (errors are skipped:
    a method whose optional library is missing imports it itself, and fails there).
    ``REPROLAB_WORKER_PRELOAD`` replaces the list (the tests preload almost nothing:
    what the worker preloads changes how fast a stage starts, not what it does)."""
    import importlib

    if modules is None:
        override = os.environ.get(PRELOAD_ENV)
        modules = PRELOAD if override is None else tuple(filter(None, override.split(",")))

    os.environ.setdefault("MPLBACKEND", "Agg")
    seconds: dict[str, float] = {}
    for name in modules:
        t0 = time.perf_counter()
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - optional libraries may be absent
            print(f"reprolab worker: not preloaded {name}: {exc}", file=sys.stderr)
            continue
        seconds[name] = time.perf_counter() - t0
    return seconds


def _fork_safe() -> str | None:
    """Why forking this process would be unsafe, or None.

    No Python thread may run. OS threads are allowed only where the library that owns
    them handles fork itself: OpenBLAS's workers (numpy's and scipy's, started when the
    library loads; OpenBLAS shuts them down around fork via pthread_atfork and starts
    them again in the child) and jemalloc's background thread (pyarrow's allocator; its
    fork handlers reset it). torch's OpenMP pool must not be started at all."""
    import threading

    cuda = cuda_refusal()
    if cuda:
        return cuda
    if threading.active_count() != 1:
        names = ", ".join(t.name for t in threading.enumerate())
        return f"{threading.active_count()} Python threads are running ({names})"
    known = 0
    try:
        from threadpoolctl import threadpool_info

        for pool in threadpool_info():
            if pool.get("internal_api") == "openblas":
                known += max(0, int(pool.get("num_threads") or 1) - 1)
    except Exception:  # noqa: BLE001 - without threadpoolctl no OpenBLAS thread is allowed
        pass
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    names = []
    for task in tasks:
        with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/comm") as fh:
            names.append(fh.read().strip())
    known += names.count("jemalloc_bg_thd")
    unknown = len(names) - 1 - known
    if unknown > 0:
        return (
            f"{len(names)} OS threads ({', '.join(sorted(names))}), {unknown} more than the "
            "OpenBLAS and jemalloc threads known to be fork-safe"
        )
    return None


def serve(root: str, idle_s: float, ready_fd: int | None = None) -> int:
    """Preload, then accept stage requests on the project's socket until stopped, idle
    for ``idle_s`` seconds or stale. Only one server runs per project (file lock)."""
    import fcntl
    import select

    state = os.path.join(root, STATE_DIR)
    os.makedirs(state, exist_ok=True)
    lock = open(os.path.join(state, "worker.lock"), "w")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print("reprolab worker: another worker holds the lock; not starting", file=sys.stderr)
        return 0
    t0 = time.perf_counter()
    seconds = preload()
    preload_s = time.perf_counter() - t0
    unsafe = _fork_safe()
    if unsafe:
        print(f"reprolab worker: cannot fork safely after preloading: {unsafe}", file=sys.stderr)
        return 1
    identity = interpreter_identity()
    sources = server_sources()
    digest = staleness_digest(root, sources)
    path = socket_path(root)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a dead worker's socket: we hold the lock, so nobody serves it
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    bound_ino = os.stat(path).st_ino
    server.listen(64)
    pid_file = os.path.join(state, "worker.pid")
    with open(pid_file, "w") as fh:
        fh.write(f"{os.getpid()}\n")
    started = time.time()
    info = {
        "pid": os.getpid(),
        "root": root,
        "python": sys.executable,
        "started": started,
        "preload_s": round(preload_s, 3),
        "modules": len(sys.modules),
        "idle_timeout_s": idle_s,
    }
    print(
        f"reprolab worker {os.getpid()}: {len(seconds)} modules preloaded in {preload_s:.1f} s, "
        f"serving {path} (idle timeout {idle_s:.0f} s)",
        file=sys.stderr,
        flush=True,
    )

    def stop(_signum, _frame):
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    handlers: set[int] = set()
    requests = 0
    last = time.monotonic()
    reason = "stopped"

    def reap() -> None:
        nonlocal last
        while handlers:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                handlers.clear()
                return
            if pid == 0:
                return
            handlers.discard(pid)
            last = time.monotonic()

    try:
        while True:
            reap()
            idle_left = idle_s - (time.monotonic() - last)
            if not handlers and idle_left <= 0:
                reason = f"idle for {idle_s:.0f} s"
                break
            ready, _, _ = select.select([server], [], [], max(0.05, min(1.0, idle_left)))
            if not ready:
                continue
            conn, _ = server.accept()
            last = time.monotonic()
            fds: list[int] = []
            try:
                conn.settimeout(5.0)
                msg, fds = _recv(conn, want_fds=3)
                op = msg.get("op")
                if op == "ping":
                    reap()
                    _send(conn, {"op": "pong", **info, "requests": requests, "busy": len(handlers)})
                    continue
                if op == "stop":
                    _send(conn, {"op": "stopping", "pid": os.getpid()})
                    reason = "asked to stop"
                    break
                if op != "run" or len(fds) != 3:
                    _send(conn, {"op": "fallback", "reason": f"bad request {op!r}"})
                    continue
                if staleness_digest(root, sources) != digest:
                    _send(conn, {"op": "fallback", "reason": "stale worker"})
                    reason = "environment or worker code changed"
                    break
                if msg.get("identity") != identity or msg.get("protocol") != PROTOCOL:
                    _send(conn, {"op": "fallback", "reason": "another interpreter"})
                    continue
                refusal = cuda_refusal()
                if refusal:  # every later fork would be refused too: stop serving
                    _send(conn, {"op": "fallback", "reason": refusal, "notice": True})
                    reason = refusal
                    break
                requests += 1
                _flush()
                pid = os.fork()
                if pid == 0:  # the handler: never returns
                    try:
                        server.close()
                        lock.close()
                        _handle(conn, msg, fds)
                    finally:
                        os._exit(1)
                handlers.add(pid)
            except (OSError, EOFError, ValueError) as exc:
                print(f"reprolab worker: bad connection: {exc}", file=sys.stderr, flush=True)
            finally:
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                conn.close()
    except _Stop:
        reason = "signalled"
    finally:
        if os.getpid() != info["pid"]:
            os._exit(1)  # a forked handler must never run the server's clean-up
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == bound_ino:  # not a newer worker's socket
                os.unlink(path)
        server.close()
        with contextlib.suppress(OSError):
            os.unlink(pid_file)
        print(
            f"reprolab worker {os.getpid()}: exiting ({reason}) after {requests} requests",
            file=sys.stderr,
            flush=True,
        )
    return 0


def _handle(conn: socket.socket, msg: dict, fds: list[int]) -> None:
    """The handler process of one request: fork the stage, relay signals from the
    client to it, report its exit status; if the client goes away, end the stage.

    Hand-shake: the handler says "started" and forks the stage only once the client
    has answered "go". A client that times out before "go" runs in-process instead,
    and a stage never runs twice."""
    import select

    code = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        conn.settimeout(30.0)
        _send(conn, {"op": "started", "pid": os.getpid()})
        go, _ = _recv(conn)
        if go.get("op") != "go":
            os._exit(1)
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _stage(msg, fds)  # never returns
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)  # also done by the child: no race with killpg below
        for fd in fds:
            os.close(fd)  # the client's pipes must see EOF when the stage exits
        pidfd = os.pidfd_open(pid)
        client_gone = False
        while True:
            ready, _, _ = select.select([conn, pidfd], [], [])
            if pidfd in ready:
                break
            try:
                sig_msg, _ = _recv(conn)
            except (OSError, EOFError, ValueError):
                client_gone = True
                break
            if sig_msg.get("op") == "signal":
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, int(sig_msg["signal"]))
        if client_gone:
            _terminate(pid, pidfd)
        _, status = os.waitpid(pid, 0)
        if not client_gone:
            if os.WIFSIGNALED(status):
                _send(conn, {"op": "exit", "signal": os.WTERMSIG(status)})
            else:
                _send(conn, {"op": "exit", "code": os.waitstatus_to_exitcode(status)})
        code = 0
    except BaseException as exc:  # noqa: BLE001 - a handler must never return
        with contextlib.suppress(Exception):
            print(f"reprolab worker handler: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        os._exit(code)


def _terminate(pid: int, pidfd: int) -> None:
    import select

    for sig, wait in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        ready, _, _ = select.select([pidfd], [], [], wait)
        if ready:
            return


def _stage(msg: dict, fds: list[int]) -> None:
    """The stage process: become the client (environment, cwd, fds, argv) and run the
    CLI as ``python -m reprolab`` would, then ``os._exit`` with its code."""
    code = 1
    try:
        os.setpgid(0, 0)  # its own group, so signals and clean-up reach its children
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.environ.clear()
        os.environ.update(msg["env"])
        os.chdir(msg["cwd"])
        os.umask(int(msg["umask"]))
        sys.argv = [msg.get("sys_argv0") or "reprolab", *msg["argv"]]
        if sys.path:
            sys.path[0] = msg.get("path0", sys.path[0])
        for name, cfg in msg.get("stdio", {}).items():
            stream = getattr(sys, name, None)
            if stream is not None and hasattr(stream, "reconfigure"):
                with contextlib.suppress(Exception):
                    stream.reconfigure(**cfg)
        # Nothing of reprolab but this module, its packages and the code normaliser is
        # loaded in the server; drop any other so the stage imports the code as it is on
        # disk now (what is kept is in the staleness digest).
        kept = {__name__, *(__name__.rsplit(".", n)[0] for n in range(1, __name__.count(".") + 1))}
        for name in [n for n in sys.modules if n.startswith("reprolab.") or n == "reprolab"]:
            if name not in kept:
                del sys.modules[name]
        hook = getattr(sys.modules.get("sitecustomize"), "reprolab_stage_child", None)
        if hook is not None:  # bench/probe: time this stage like a stage process
            hook(list(msg["argv"]))
        # the stage router, as in `python -m reprolab`, named by the ops package (an
        # entry point, not an import of the layer above: the server never loads it)
        import importlib

        from reprolab.ops import STAGE_ROUTER

        module, function = STAGE_ROUTER
        code = getattr(importlib.import_module(module), function)(list(msg["argv"]))
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # noqa: BLE001 - reported like an uncaught exception
        sys.excepthook(*sys.exc_info())
        code = 1
    _flush()
    os._exit(code if isinstance(code, int) else 1)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


# ---------------------------------------------------------------- commands


def status(root: str) -> dict | None:
    """The running worker's self-description, or None."""
    return _request(socket_path(root), {"op": "ping"})


def start(root: str, idle_s: float, wait_s: float = 180.0) -> int:
    """Start a detached worker and wait until it serves (preloading takes ~10-20 s)."""
    info = status(root)
    if info:
        print(f"reprolab worker already running: pid {info['pid']}")
        return 0
    log_path = os.path.join(root, STATE_DIR, "worker.log")
    proc = spawn(root, idle_s)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        info = status(root)
        if info:
            print(
                f"reprolab worker started: pid {info['pid']}, {info['modules']} modules "
                f"preloaded in {info['preload_s']:.1f} s, idle timeout {idle_s:.0f} s"
            )
            return 0
        if proc.poll() is not None:
            info = status(root)  # lost the lock race to another worker that serves
            if info:
                print(f"reprolab worker already running: pid {info['pid']}")
                return 0
            tail = _tail(log_path)
            raise WorkerError(f"the worker exited with {proc.returncode}; {log_path}:\n{tail}")
        time.sleep(0.1)
    raise WorkerError(f"the worker did not answer within {wait_s:.0f} s; see {log_path}")


def stop(root: str, wait_s: float = 10.0) -> int:
    reply = _request(socket_path(root), {"op": "stop"})
    if reply is None:
        print("reprolab worker: none running")
        return 0
    pid = int(reply["pid"])
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise WorkerError(f"worker {pid} did not exit within {wait_s:.0f} s")
    print(f"reprolab worker stopped: pid {pid}")
    return 0


def _tail(path: str, lines: int = 20) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return ""


def command(argv: list[str]) -> int:
    """``python -m reprolab worker start|stop|status|serve [--idle S]``. ``status`` exits
    0 whether a worker runs or not (it prints "not running" when none answers); 2 outside
    a project, 1 when a worker cannot be started or stopped."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="reprolab worker", description="the preloaded stage worker of this project"
    )
    parser.add_argument("action", choices=("start", "stop", "status", "serve"))
    parser.add_argument(
        "--idle",
        type=float,
        default=float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_S)),
        help=f"exit after this many seconds without a request (default ${IDLE_ENV} or "
        f"{DEFAULT_IDLE_S:.0f})",
    )
    args = parser.parse_args(argv)
    root = find_root()
    if root is None:
        print(
            "error: no reprolab project (params.yaml + dvc.yaml) at or above "
            f"{os.getcwd()}; run from the project root or set REPROLAB_ROOT",
            file=sys.stderr,
        )
        return 2
    try:
        if args.action == "serve":
            return serve(root, args.idle)
        if args.action == "start":
            return start(root, args.idle)
        if args.action == "stop":
            return stop(root)
        info = status(root)
        if info is None:  # a state, not a failure: exit 0, as with a worker running
            print(f"reprolab worker: not running for {root}")
            return 0
        up = time.time() - info["started"]
        print(
            f"reprolab worker running: pid {info['pid']}, up {up:.0f} s, "
            f"{info['requests']} requests, {info['busy']} running, {info['modules']} modules "
            f"preloaded in {info['preload_s']:.1f} s, idle timeout {info['idle_timeout_s']:.0f} s, "
            f"python {info['python']}"
        )
        return 0
    except WorkerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
