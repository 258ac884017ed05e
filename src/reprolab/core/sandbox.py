"""A sandbox for model-written Python: run a program, then its tests, in a locked-down process.

``run_program(code, tests=...)`` scores one sample (pass@1): the program and then the
tests run in one fresh process, and the sample passes only if the tests run to the end.
``run_many`` runs a batch on a thread pool, one sandboxed process tree per sample.

Processes: each parent process starts one **zygote** (``python -I -S``: no
site-packages, no ``PYTHON*`` variables, no user site; environment ``PATH`` and ``LANG``
only, so nothing the parent holds in its environment, tokens or keys, reaches a
program). Per sample the zygote forks a **runner**, which locks itself down and forks
the program's process; forking costs ~1 ms where starting an interpreter costs ~15 ms.
Each sample gets, stdlib only (``ctypes`` for the Linux system calls):

- **a fresh temporary working directory** (mode 0700), removed afterwards;
- **an unprivileged user** when the parent runs as root (``nobody``, no supplementary
  groups), so files of the project, owned by root, cannot be written;
- **new user and PID namespaces**: the program runs in a PID namespace of its own, so
  it cannot address (signal) any process outside it, the parent included, and when the
  sample ends or is killed the kernel kills every process it left behind (no orphans,
  whatever ``setsid``/double-fork tricks it plays). ``RLIMIT_NPROC`` is counted per user
  namespace, so a fork bomb meets its limit however many processes the user already has;
- **Landlock** (Linux >= 5.13): writes only inside the temporary directory (and
  ``/dev/null``); reads only of the interpreter's files and the system's programs and
  libraries (not the project, ``/etc``, ``/proc``, ``/home``, ``/root`` or ``/tmp``); no
  mounts, no ptrace or ``/proc/<pid>/environ`` of processes outside the sandbox; where
  the kernel supports it, no TCP bind/connect (ABI >= 4) and no signals or abstract unix
  sockets to the outside (ABI >= 6);
- **rlimits** on CPU time, address space, file size, open files and processes, no core
  files; a **wall-clock timeout** enforced by the parent, which then kills the namespace
  (and, should the parent die, by the runner itself, which also dies with the zygote,
  which exits when its parent does).

Verdicts (``Result.status``): ``passed``, ``failed`` (an ``AssertionError``), ``error``
(any other exception, or the process ended before the tests finished, e.g. ``sys.exit``
or ``os._exit`` in the program), ``syntax_error`` (the program does not compile),
``timeout`` (wall clock or CPU limit), ``memory`` (``MemoryError`` under the address-space
limit) and ``killed`` (ended by a signal, e.g. a segfault). Only ``passed`` is a pass.
The verdict travels on a private pipe, every line tagged with a random nonce, so a
program that prints "passed", writes to the pipe or exits with status 0 early is not a
pass. The nonce lives in the interpreter that runs the program, so this guards against
accidents and reward hacks such as an early exit, not against a program that searches
the interpreter's memory for it. Output is captured up to ``max_output`` bytes per
stream (the rest is read and dropped, so a chatty program neither blocks nor fills the
parent's memory). Programs share the zygote's hash seed (``set`` order is the same from
sample to sample).

The sandbox fails closed: if the kernel refuses the namespaces or Landlock (for example
under a seccomp profile that blocks ``unshare``), or the sandbox user cannot reach the
temporary directory, ``run_program`` raises ``SandboxUnavailable`` instead of running
code with weaker isolation.

Throughput: ``bench/bench_sandbox.py`` measures programs per second, sequential and with
workers (``bench/results/sandbox.md``).
"""

from __future__ import annotations

import contextlib
import functools
import marshal
import math
import os
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Literal

Status = Literal["passed", "failed", "error", "syntax_error", "timeout", "memory", "killed"]

# The unprivileged account the program runs as when the parent is root.
SANDBOX_UID = 65534
SANDBOX_GID = 65534
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


class SandboxUnavailable(RuntimeError):
    """The kernel refused an isolation layer (namespaces, Landlock, the user switch)."""


@dataclass(frozen=True)
class Limits:
    """Per-sample limits. ``cpu_s`` defaults to the wall-clock timeout."""

    timeout_s: float = 5.0
    cpu_s: float | None = None
    memory_mb: int = 512
    file_mb: int = 16
    max_procs: int = 16
    max_files: int = 64
    max_output: int = 8192

    def __post_init__(self) -> None:
        for name in ("timeout_s", "memory_mb", "file_mb", "max_procs", "max_files"):
            if getattr(self, name) <= 0:
                raise ValueError(f"sandbox limit {name} must be > 0, got {getattr(self, name)}")
        if self.cpu_s is not None and self.cpu_s <= 0:
            raise ValueError(f"sandbox limit cpu_s must be > 0, got {self.cpu_s}")
        if self.max_output < 0:
            raise ValueError(f"sandbox limit max_output must be >= 0, got {self.max_output}")


@dataclass(frozen=True)
class Result:
    status: Status
    stdout: str
    stderr: str
    wall_s: float
    error: str = ""  # exception type and message, or how the process ended
    truncated: bool = False  # stdout or stderr was longer than max_output

    @property
    def passed(self) -> bool:
        return self.status == "passed"


# The trusted part of the sandboxed process. The zygote forks a runner per sample with
# fds 0-3 = request pipe, stdout, stderr, status pipe. The runner reads the request
# (marshal), enters new user+PID namespaces and forks: the child, PID 1 of the
# namespace, locks itself down and forks the process that runs the program and the
# tests. The runner reports its own and the child's host PIDs (so the parent can kill
# them), PID 1 how the program's process ended, and that process the verdict.
RUNNER = r"""
import marshal, os, resource, sys
chunks = []
while chunk := os.read(0, 1 << 20):
    chunks.append(chunk)
req = marshal.loads(b"".join(chunks))
del chunks
nonce = req.pop("nonce")
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
status_fd = 3
os.setsid()  # a session of its own, away from the zygote's
os.chdir(req["cwd"])
os.umask(0o077)

def report(*words):  # every line carries the nonce: the program cannot forge one
    line = " ".join(str(w).replace("\\", "\\\\").replace("\n", "\\n") for w in words)
    os.write(status_fd, (nonce + " " + line + "\n").encode("utf-8", "replace"))

import ctypes
libc = ctypes.CDLL(None, use_errno=True)

def check(ret, what):
    if ret < 0:
        report("isolation", what, os.strerror(ctypes.get_errno()))
        os._exit(3)
    return ret

# New PID and user namespaces. As root, the PID namespace comes first (root needs no
# user namespace for it, where some kernels deny namespaces to unprivileged users), then
# the switch to the sandbox user for good, then the user namespace, which gives the
# sample a process count of its own.
CLONE_NEWUSER, CLONE_NEWPID = 0x10000000, 0x20000000
if req["uid"] is not None:
    check(libc.unshare(CLONE_NEWPID), "unshare(pid)")
    os.setgroups([])
    os.setgid(req["gid"])
    os.setuid(req["uid"])
    check(libc.unshare(CLONE_NEWUSER), "unshare(user)")
else:
    check(libc.unshare(CLONE_NEWUSER | CLONE_NEWPID), "unshare(user, pid)")

# Without the zygote nobody enforces the wall clock: die with it (PDEATHSIG, set after
# the user switch, which clears it), and in any case soon after the deadline (SIGALRM's
# default action); init dies with the runner.
libc.prctl(1, 9)  # PR_SET_PDEATHSIG = SIGKILL
if os.getppid() != zygote:
    os._exit(4)
report("runner", os.getpid())
import _signal
_signal.setitimer(_signal.ITIMER_REAL, req["deadline_s"])

pid = os.fork()
if pid:
    report("child", pid)
    os.waitpid(pid, 0)
    os._exit(0)

# --- PID 1 of the new namespace: lock down, then run the program in a child of its own.
# (Not the program itself as PID 1: the kernel drops signals with default action to a
# namespace's init, so SIGXCPU from the CPU limit would not stop it.)
libc.prctl(1, 9)  # PR_SET_PDEATHSIG = SIGKILL: die with the runner

def lock_down():
    lim = req["limits"]
    for res, soft, hard in (
        (resource.RLIMIT_CPU, lim["cpu"], lim["cpu"] + 1),
        (resource.RLIMIT_AS, lim["as"], lim["as"]),
        (resource.RLIMIT_FSIZE, lim["fsize"], lim["fsize"]),
        (resource.RLIMIT_NOFILE, lim["nofile"], lim["nofile"]),
        (resource.RLIMIT_NPROC, lim["nproc"], lim["nproc"]),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        resource.setrlimit(res, (soft, hard))

    # Landlock: handle every access right the kernel knows, then allow everything in the
    # working directory, reading/writing /dev/null, and reading and executing only the
    # interpreter's own files and the system's programs and libraries (not /etc, /proc,
    # /home, /root, /tmp or the project).
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, VERSION)
    if abi < 1:
        report("isolation", "landlock", os.strerror(ctypes.get_errno()))
        os._exit(3)
    fs_bits = {1: 13, 2: 14, 3: 15, 4: 15}.get(abi, 16)
    handled_fs = (1 << fs_bits) - 1
    handled_net = 3 if abi >= 4 else 0  # BIND_TCP | CONNECT_TCP, with no rule allowing any
    scoped = 3 if abi >= 6 else 0  # ABSTRACT_UNIX_SOCKET | SIGNAL
    attr = (ctypes.c_uint64 * 3)(handled_fs, handled_net, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = check(libc.syscall(444, ctypes.byref(attr), size, 0), "landlock_ruleset")

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    READ = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE | READ_FILE | READ_DIR
    FILE_RW = (1 << 1) | (1 << 2) | ((1 << 14) if abi >= 3 else 0)  # WRITE, READ, TRUNCATE
    READ_FILE = (1 << 2)
    system = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin")
    exe = sys.executable
    python = (*sys.path, os.path.dirname(exe), os.path.dirname(os.path.realpath(exe)))
    rules = [(p, READ) for p in dict.fromkeys(system + python) if p and os.path.isdir(p)]
    rules += [(req["cwd"], handled_fs), (os.devnull, FILE_RW), ("/dev/urandom", READ_FILE)]
    for path, allowed in rules:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = PathBeneath(allowed & handled_fs, fd)
        check(libc.syscall(445, ruleset, 1, ctypes.byref(rule), 0), "landlock_add_rule " + path)
        os.close(fd)
    check(libc.prctl(38, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    check(libc.syscall(446, ruleset, 0), "landlock_restrict_self")
    os.close(ruleset)


try:
    lock_down()
except Exception as exc:  # e.g. a working directory the sandbox user cannot reach
    report("isolation", "lock-down:", type(exc).__name__ + ": " + str(exc))
    os._exit(3)
del libc, ctypes

_signal.signal(2, _signal.SIG_DFL)  # init ignores signals it does not handle, SIGINT too
pid = os.fork()
if pid:
    while True:
        try:
            _, wstatus = os.waitpid(pid, 0)
            break
        except InterruptedError:
            pass
    if os.WIFSIGNALED(wstatus):
        report("signal", os.WTERMSIG(wstatus))
    else:
        report("exit", os.WEXITSTATUS(wstatus))
    os._exit(0)

# --- the program's process ---
_signal.signal(2, _signal.default_int_handler)
os.setsid()  # its own session and group inside the namespace

code, tests = req["code"], req["tests"]
del req
try:
    program = compile(code, "<program>", "exec")
except BaseException as exc:  # SyntaxError, ValueError (NUL bytes), RecursionError ...
    report("verdict", "syntax_error", type(exc).__name__ + ": " + str(exc))
    os._exit(0)
checks = compile(tests, "<tests>", "exec")
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
phase = "program"
try:
    exec(program, namespace)
    phase = "tests"
    exec(checks, namespace)
    verdict, message = "passed", ""
except MemoryError as exc:
    verdict, message = "memory", "MemoryError in " + phase
except AssertionError as exc:
    verdict, message = "failed", "AssertionError in " + phase + ": " + str(exc)[:500]
except SystemExit as exc:
    verdict, message = "error", "SystemExit(" + repr(exc.code)[:100] + ") in " + phase
except BaseException as exc:
    verdict, message = "error", type(exc).__name__ + " in " + phase + ": " + str(exc)[:500]
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BaseException:
    pass
report("verdict", verdict, message)
os._exit(0)
"""

# The zygote: one interpreter per parent process, started once, with what the runner
# imports already loaded. Forking it costs ~1 ms where starting an interpreter costs
# ~15 ms. It stays root when the parent is root (each runner switches user), takes
# requests only on its socket to the parent, and exits when the parent closes it.
ZYGOTE = (
    f"RUNNER = {RUNNER!r}\n"
    + r"""
import ctypes, marshal, os, resource, socket, sys, _signal
runner = compile(RUNNER, "<runner>", "exec")
sock = socket.socket(fileno=int(sys.argv[1]))
_signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)  # the kernel reaps finished runners
zygote = os.getpid()
while True:
    try:
        msg, fds, _, _ = socket.recv_fds(sock, 1, 4)
    except InterruptedError:
        continue
    if not msg:  # the parent is gone
        break
    if len(fds) != 4:
        for fd in fds:
            os.close(fd)
        continue
    if os.fork() == 0:
        try:
            sock.close()
            for target, fd in enumerate(fds):  # received fds are >= 3: no clobbering
                os.dup2(fd, target)
            os.closerange(4, 1 << 16)
            _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
            exec(runner, {"__name__": "__runner__", "__builtins__": __builtins__, "zygote": zygote})
        finally:
            os._exit(0)
    for fd in fds:
        os.close(fd)
"""
)


class _Zygote:
    """The parent's handle on its zygote: started on first use, again if it died or the
    interpreter changes. A fork of the parent forgets it and starts its own."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._forget)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._python = ""

    def _forget(self) -> None:
        if self._sock is not None:
            self._sock.close()  # only this copy: the parent's stays open
        self._reset()

    @property
    def pid(self) -> int | None:
        """The zygote's PID, if this process has started one."""
        alive = self._proc is not None and self._proc.poll() is None
        return self._proc.pid if alive else None

    def _start(self, python: str) -> None:
        if self._sock is not None:
            self._sock.close()  # the old zygote exits when its socket closes
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        ours, theirs = socket.socketpair()
        try:
            self._proc = subprocess.Popen(
                [python, "-I", "-S", "-c", ZYGOTE, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env=SANDBOX_ENV,
                start_new_session=True,
            )
        finally:
            theirs.close()
        self._sock, self._python = ours, python

    def send(self, python: str, fds: Sequence[int]) -> None:
        with self._lock:
            for _ in range(2):
                if self._proc is None or self._proc.poll() is not None or self._python != python:
                    self._start(python)
                try:
                    socket.send_fds(self._sock, [b"r"], list(fds))
                    return
                except OSError:
                    self._proc.kill()
                    self._proc.wait()
            raise SandboxUnavailable(f"the sandbox zygote ({python}) does not take requests")


_ZYGOTE = _Zygote()


def _python_ok(python: str, user: dict) -> bool:
    try:
        proc = subprocess.run(
            [python, "-I", "-S", "-c", "import ctypes, marshal, resource, socket"],
            env=SANDBOX_ENV,
            cwd="/",
            capture_output=True,
            timeout=30,
            **user,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


@functools.cache
def sandbox_python() -> str:
    """The interpreter the sandbox runs: this one, unless the sandbox user cannot run it
    (as root, a Python under /root is out of reach of ``nobody``); then the system's."""
    user = _user_args()
    candidates = [sys.executable, os.path.realpath(sys.executable)]
    candidates += [shutil.which("python3", path=p) or "" for p in ("/usr/local/bin", "/usr/bin")]
    for python in dict.fromkeys(c for c in candidates if c):
        if _python_ok(python, user):
            return python
    raise SandboxUnavailable(f"no Python interpreter runs as uid {SANDBOX_UID}: {candidates}")


def _user_args() -> dict:
    if os.geteuid() != 0:
        return {}
    return {"user": SANDBOX_UID, "group": SANDBOX_GID, "extra_groups": []}


def _remove_tree(path: str) -> None:
    try:
        shutil.rmtree(path)
    except PermissionError:  # the program removed the bits of its own directories
        _unlock(path)
        shutil.rmtree(path)


def _unlock(path: str) -> None:
    os.chmod(path, 0o700)
    with os.scandir(path) as entries:
        subdirs = [e.path for e in entries if e.is_dir(follow_symlinks=False)]
    for sub in subdirs:
        _unlock(sub)


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append("\n" if text[i + 1] == "n" else text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def run_program(
    code: str,
    *,
    tests: str = "",
    limits: Limits | None = None,
    timeout_s: float | None = None,
    memory_mb: int | None = None,
    python: str | None = None,
) -> Result:
    """Run ``code`` and then ``tests`` in the sandbox; see the module docstring.

    ``tests`` come from the benchmark, not the model: if they do not compile, that is
    the caller's error (``ValueError``), not a failed sample. ``timeout_s`` and
    ``memory_mb`` override the fields of ``limits``."""
    overrides = {"timeout_s": timeout_s, "memory_mb": memory_mb}
    limits = replace(limits or Limits(), **{k: v for k, v in overrides.items() if v is not None})
    try:
        compile(tests, "<tests>", "exec")
    except SyntaxError as exc:
        raise ValueError(f"the tests do not compile: {exc}") from exc
    python = python or sandbox_python()
    switch = os.geteuid() == 0
    cwd = tempfile.mkdtemp(prefix="reprolab-sandbox-")
    try:
        if switch:
            os.chown(cwd, SANDBOX_UID, SANDBOX_GID)
        return _run(code, tests, limits, python, switch, cwd)
    finally:
        _remove_tree(cwd)


def _run(code: str, tests: str, limits: Limits, python: str, switch: bool, cwd: str) -> Result:
    nonce = secrets.token_hex(16)
    cpu = math.ceil(limits.cpu_s if limits.cpu_s is not None else limits.timeout_s)
    request = {
        "nonce": nonce,
        "code": code,
        "tests": tests,
        "cwd": cwd,
        "deadline_s": limits.timeout_s + 1.0,
        "uid": SANDBOX_UID if switch else None,
        "gid": SANDBOX_GID if switch else None,
        "limits": {
            "cpu": cpu,
            "as": limits.memory_mb << 20,
            "fsize": limits.file_mb << 20,
            "nofile": limits.max_files,
            # the runner and the namespace's init count too
            "nproc": limits.max_procs + 2,
        },
    }
    pipes = [os.pipe() for _ in range(4)]  # request, stdout, stderr, status
    request_w, ours = pipes[0][1], [pipes[1][0], pipes[2][0], pipes[3][0]]
    theirs = [pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1]]
    t0 = time.perf_counter()
    try:
        try:
            _ZYGOTE.send(python, theirs)
        finally:
            for fd in theirs:
                os.close(fd)
        # The runner reads the whole request before anything else; if it is gone, its
        # status (or its absence) says why.
        with contextlib.suppress(BrokenPipeError), open(request_w, "wb") as fh:
            fh.write(marshal.dumps(request))
        deadline = t0 + limits.timeout_s
        out, err, status, dropped, timed_out = _collect(ours, request, deadline, limits.max_output)
    finally:
        for fd in ours:
            os.close(fd)
    wall = time.perf_counter() - t0
    verdict, error = _verdict(status, nonce, timed_out, limits)
    if verdict == "isolation":
        raise SandboxUnavailable(f"the kernel refused {error}")
    return Result(verdict, out, err, wall, error, truncated=dropped > 0)


def _collect(
    fds: Sequence[int], request: dict, deadline: float, max_output: int
) -> tuple[str, str, str, int, bool]:
    """Read stdout, stderr and the status pipe until all close (the
    runner and everything in its namespace are gone) or the deadline passes (then kill
    them). Output past ``max_output`` is read and dropped, so the program never blocks
    on a full pipe."""
    out_r, err_r, status_r = fds
    streams = {out_r: bytearray(), err_r: bytearray()}
    status = bytearray()
    dropped, timed_out = 0, False
    with selectors.DefaultSelector() as sel:
        for fd in (out_r, err_r, status_r):
            sel.register(fd, selectors.EVENT_READ)
        open_fds = 3
        while open_fds:
            left = deadline - time.perf_counter()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(timeout=left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    open_fds -= 1
                elif key.fd == status_r:
                    status += chunk
                else:
                    buf = streams[key.fd]
                    keep = max(0, max_output - len(buf))
                    buf += chunk[:keep]
                    dropped += len(chunk) - keep
    if timed_out:
        # The child is PID 1 of its namespace: killing it takes every process in it.
        tag = request["nonce"].encode()
        for line in bytes(status).splitlines():
            words = line.split()
            if words[:1] == [tag] and len(words) == 3 and words[1] in (b"child", b"runner"):
                _kill(int(words[2]))
    out, err = (bytes(b).decode("utf-8", "replace") for b in streams.values())
    return out, err, status.decode("utf-8", "replace"), dropped, timed_out


def _verdict(status_text: str, nonce: str, timed_out: bool, limits: Limits) -> tuple[str, str]:
    """The sample's status and message from the status pipe's lines. Only lines tagged
    with the nonce count; the verdict line is written after the tests ran to the end."""
    verdict = end = None
    for line in status_text.splitlines():
        tag, _, rest = line.partition(" ")
        if tag != nonce:
            continue
        kind, _, rest = rest.partition(" ")
        if kind == "isolation":
            return "isolation", _unescape(rest)
        if kind == "verdict" and verdict is None:
            status, _, message = rest.partition(" ")
            verdict = (status, _unescape(message))
        elif kind in ("signal", "exit"):
            end = (kind, int(rest))
    if timed_out:
        return "timeout", f"wall-clock timeout after {limits.timeout_s:g} s"
    if verdict is not None:
        return verdict
    if end is None:
        return "killed", "the sandbox process ended without a report"
    if end[0] == "signal":
        if end[1] == signal.SIGXCPU:
            return "timeout", "CPU time limit"
        try:
            name = signal.Signals(end[1]).name
        except ValueError:
            name = f"signal {end[1]}"
        return "killed", f"killed by {name}"
    return "error", f"exited with status {end[1]} before the tests finished"


def run_many(
    programs: Iterable[str | tuple[str, str]],
    *,
    workers: int = 2,
    limits: Limits | None = None,
) -> list[Result]:
    """Run many samples, ``workers`` sandboxes at a time; results in input order. Each
    item is a program or a ``(program, tests)`` pair."""
    items: Sequence[tuple[str, str]] = [
        (p, "") if isinstance(p, str) else (p[0], p[1]) for p in programs
    ]
    sandbox_python()  # probe once, not in every thread
    if workers <= 1:
        return [run_program(c, tests=t, limits=limits) for c, t in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda ct: run_program(ct[0], tests=ct[1], limits=limits), items))
