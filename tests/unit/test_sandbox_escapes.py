"""The sandbox's network, IPC, process and file-system defences, each tried for real
from inside a sample: TCP connect and bind to a loopback listener, an abstract unix
socket, ptrace of and /proc reads on the parent, a mount, reads of /etc, /root and
/home, the open-files limit. Where a defence needs a Landlock ABI the kernel may lack,
the test says what the kernel gives and checks that outcome, never skips.

The module runs as whoever runs pytest; when that is root, the last test runs the same
module again as an ordinary user (``nobody``, through ``setpriv``), so one CI run checks
both branches (as root the program runs as ``nobody``; as a user, Landlock alone)."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from dataclasses import replace
from pathlib import Path

from reprolab.core.sandbox import Limits, run_program

FAST = Limits(timeout_s=5.0, memory_mb=256, max_procs=8)
ROOT = Path(__file__).resolve().parents[2]


def landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(444, None, 0, 1))  # landlock_create_ruleset(NULL, 0, VERSION)


def attempt(body: str, **limits) -> dict:
    """Run ``body`` (which prints one JSON line) in the sandbox; its parsed output."""
    result = run_program(body, limits=replace(FAST, **limits))
    assert result.status == "passed", (result.status, result.error, result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


TRY = """
import json
def outcome(fn):
    try:
        fn()
        return "allowed"
    except PermissionError:
        return "denied"
    except OSError as exc:
        return f"oserror {exc.errno}"
"""


def test_no_tcp_connect_or_bind_to_the_loopback():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        got = attempt(
            TRY
            + f"""
import socket
def connect():
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
def bind():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
print(json.dumps({{"connect": outcome(connect), "bind": outcome(bind)}}))
"""
        )
        try:
            conn, _ = listener.accept()
            conn.close()
            reached = True
        except TimeoutError:
            reached = False
    finally:
        listener.close()
    if landlock_abi() >= 4:  # Landlock's network rules: no TCP at all
        assert got == {"connect": "denied", "bind": "denied"}
        assert not reached, "the sandboxed program reached the parent's listener"
    else:  # the kernel has no TCP rules: the docs promise none
        assert got["connect"] == "allowed" and reached


def test_no_abstract_unix_socket_to_the_outside():
    name = f"\0reprolab-test-{uuid.uuid4().hex}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(name)
    listener.listen(1)
    try:
        got = attempt(
            TRY
            + f"""
import socket
def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect({name!r})
print(json.dumps({{"connect": outcome(connect)}}))
"""
        )
    finally:
        listener.close()
    expected = "denied" if landlock_abi() >= 6 else "allowed"
    # a scoped connect fails with EPERM (PermissionError)
    assert got == {"connect": expected}


def test_no_ptrace_no_proc_reads_no_mount():
    parent = os.getpid()
    got = attempt(
        TRY
        + f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def ptrace():
    if libc.ptrace(16, {parent}, None, None) != 0:  # PTRACE_ATTACH
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
def environ():
    open("/proc/{parent}/environ", "rb").read()
def cmdline():
    open("/proc/{parent}/cmdline", "rb").read()
def mount():
    os.makedirs("m", exist_ok=True)
    if libc.mount(b"none", b"m", b"tmpfs", 0, None) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
print(json.dumps({{"ptrace": outcome(ptrace), "environ": outcome(environ),
                  "cmdline": outcome(cmdline), "mount": outcome(mount)}}))
"""
    )
    # ptrace: the parent is in no PID namespace the program can see (ESRCH) or it is
    # refused (EPERM); either way it never attaches
    assert got["ptrace"] in ("denied", "oserror 3", "oserror 1"), got
    assert got["environ"] == got["cmdline"] == "denied", got
    assert got["mount"] in ("denied", "oserror 1"), got


def test_no_reads_of_etc_root_home():
    got = attempt(
        TRY
        + """
import os
print(json.dumps({
    "etc": outcome(lambda: open("/etc/passwd").read()),
    "root": outcome(lambda: os.listdir("/root")),
    "home": outcome(lambda: os.listdir("/home")),
}))
"""
    )
    assert got == {"etc": "denied", "root": "denied", "home": "denied"}, got


def test_the_open_files_limit_holds():
    got = attempt(
        """
import json, os
files = []
try:
    while len(files) < 10_000:
        files.append(open(os.devnull))
    err = None
except OSError as exc:
    err = exc.errno
print(json.dumps({"opened": len(files), "errno": err}))
""",
        max_files=32,
    )
    assert got["errno"] == 24  # EMFILE
    assert got["opened"] <= 32


def test_as_an_ordinary_user_too():
    """As root, this module again as ``nobody`` (the non-root branch of the sandbox);
    as an ordinary user, the other tests above are that branch already."""
    if os.geteuid() != 0:
        assert landlock_abi() >= 1  # the branch this run checks: Landlock alone
        return
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to run the non-root branch"
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"sandbox-user-{uuid.uuid4().hex}"
    home.mkdir(mode=0o777)
    os.chmod(home, 0o777)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    cmd = [
        setpriv,
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        f"cache_dir={home}",
        "--rootdir",
        str(ROOT),
        "--basetemp",
        str(home / "pytest"),
        __file__,
        "-k",
        "not as_an_ordinary_user",
    ]
    proc = subprocess.run(cmd, cwd=home, env=env, capture_output=True, text=True, timeout=300)
    shutil.rmtree(home, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-1000:]
