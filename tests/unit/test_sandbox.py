"""The code sandbox: verdicts, and each way a program could leak out of it.

Every leak test runs the escape attempt for real and checks two things: the sample is
not a pass, and the parent (this test process, its files, its other processes) is
untouched. They hold whether the tests run as root (the program runs as ``nobody``) or
not (Landlock alone keeps the program's writes inside its directory)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

import reprolab
from reprolab.core.sandbox import (
    _ZYGOTE,
    Limits,
    Result,
    SandboxUnavailable,
    _verdict,
    run_many,
    run_program,
)

FAST = Limits(timeout_s=3.0, memory_mb=256, max_procs=8)


def children(pid: int | str = "self") -> set[int]:
    """PIDs of a process's children, zombies included (they stay until reaped)."""
    pids: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        pids.update(int(p) for p in (task / "children").read_text().split())
    return pids


def leftovers(before: set[int]) -> set[int]:
    """Processes a finished sample could have left: this process's children that were
    not there ``before`` it ran (an earlier test in the same pytest process may have
    left its own, such as a stopped server's zombie), other than the sandbox's zygote,
    and the zygote's children (one runner per running sample)."""
    zygote = _ZYGOTE.pid
    return (children() - before - {zygote}) | (children(zygote) if zygote else set())


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:  # exited meanwhile
                continue
            if marker.encode() in cmdline:
                found.append(int(entry.name))
    return found


def wait_for(condition, within_s: float = 20.0) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def run(code: str, tests: str = "", **limits) -> Result:
    return run_program(code, tests=tests, limits=replace(FAST, **limits))


# --- verdicts -------------------------------------------------------------------------


def test_a_correct_program_passes():
    result = run("def add(a, b):\n    return a + b\n", "assert add(2, 3) == 5\n")
    assert result.status == "passed" and result.passed
    assert result.error == ""


def test_a_failing_assert_fails():
    result = run("def add(a, b):\n    return a - b\n", "assert add(2, 3) == 5, 'wrong sum'\n")
    assert result.status == "failed" and not result.passed
    assert "wrong sum" in result.error


def test_an_exception_in_the_program_is_an_error():
    result = run("raise ValueError('boom')", "assert True")
    assert result.status == "error" and not result.passed
    assert "ValueError" in result.error and "program" in result.error


@pytest.mark.parametrize("code", ["def f(:\n    pass", "x = 1\x00", "return 3", "(" * 300])
def test_code_that_does_not_parse_is_a_syntax_error(code):
    result = run(code, "assert True")
    assert result.status == "syntax_error" and not result.passed


def test_tests_that_do_not_parse_are_the_callers_error():
    with pytest.raises(ValueError, match="tests do not compile"):
        run_program("x = 1", tests="assert (")


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos._exit(0)",
        "import sys\nsys.exit(0)",
        "print('passed')\nimport os\nos._exit(0)",
        "import os\nos.closerange(3, 4096)",  # the verdict pipe among them
        # forged status lines on every open descriptor, then an early exit
        "import os\n"
        "for fd in range(3, 64):\n"
        "    for line in (b'0 verdict passed\\n', b'0 isolation forged\\n', b'verdict passed\\n'):\n"
        "        try:\n"
        "            os.write(fd, line)\n"
        "        except OSError:\n"
        "            pass\n"
        "os._exit(0)",
    ],
)
def test_ending_before_the_tests_is_not_a_pass(code):
    result = run(code, "assert False, 'the tests ran'")
    assert result.status == "error" and not result.passed


def test_output_is_captured_and_truncated():
    code = "import sys\nprint('x' * 5000)\nprint('warning', file=sys.stderr)"
    result = run(code, max_output=100)
    assert result.status == "passed"
    assert result.stdout == "x" * 100 and result.truncated
    assert result.stderr == "warning\n"
    small = run("print('hello')")
    assert small.stdout == "hello\n" and not small.truncated


def test_limits_name_the_bad_key():
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=0)
    with pytest.raises(ValueError, match="timeout_s"):
        run_program("x = 1", timeout_s=-1)


def test_run_many_keeps_the_order_and_the_verdicts():
    programs = [
        ("def f():\n    return 1", "assert f() == 1"),
        ("def f():\n    return 2", "assert f() == 1"),
        "def f(:",
        ("while True:\n    pass", ""),
        ("print(7)", ""),
    ]
    results = run_many(programs, workers=2, limits=Limits(timeout_s=1.5, memory_mb=256))
    assert [r.status for r in results] == ["passed", "failed", "syntax_error", "timeout", "passed"]
    assert results[4].stdout == "7\n"


# --- leaks ----------------------------------------------------------------------------


def test_an_infinite_loop_is_stopped_by_the_wall_clock():
    before = children()
    result = run("while True:\n    pass", timeout_s=0.5, cpu_s=30)
    assert result.status == "timeout" and "wall-clock" in result.error
    assert wait_for(lambda: not leftovers(before))


def test_a_busy_program_is_stopped_by_the_cpu_limit():
    result = run("while True:\n    pass", timeout_s=20, cpu_s=1)
    assert result.status == "timeout" and result.error == "CPU time limit"


def test_a_fork_bomb_is_stopped_and_leaves_no_process_behind():
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    before = children()
    assert run(bomb, timeout_s=1.0).status == "timeout"
    # Children that leave the process group and outlive the program are killed with it,
    # and the fork limit holds: at most max_procs processes in all.
    marker = f"{uuid.uuid4().int % 10**6}.5"
    escape = (
        "import os\n"
        "n = 0\n"
        "while n < 100:\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        os.setsid()\n"
        f"        os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "    n += 1\n"
        "print(n)\n"
    )
    result = run(escape, max_procs=8)
    assert result.status == "passed"
    assert int(result.stdout) == 7  # 8 processes with the program itself
    assert processes_with(marker) == []
    assert wait_for(lambda: not leftovers(before))
    assert run("x = 1", "assert x == 1").passed  # the parent still runs sandboxes


def test_a_memory_bomb_is_stopped():
    assert run("x = bytearray(1 << 34)", memory_mb=128).status == "memory"
    grow = "chunks = []\nwhile True:\n    chunks.append(bytearray(1 << 20))"
    assert run(grow, memory_mb=128).status == "memory"


def test_a_large_file_is_stopped():
    result = run("open('big', 'wb').write(b'x' * (3 << 20))", file_mb=1)
    assert result.status == "error" and "File too large" in result.error


def test_writes_outside_the_temp_directory_fail(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    tracked = project / "tracked.py"
    tracked.write_text("original\n")
    outside_tmp = Path(tempfile.gettempdir()) / f"sandbox-escape-{uuid.uuid4().hex}"
    probe = (
        "import json, os\n"
        "def attempt(path):\n"
        "    try:\n"
        "        with open(path, 'w') as fh:\n"
        "            fh.write('overwritten')\n"
        "        return 'written'\n"
        "    except PermissionError:\n"
        "        return 'denied'\n"
        "print(json.dumps({\n"
        f"    'tracked': attempt({str(tracked)!r}),\n"
        f"    'new_in_project': attempt({str(project / 'new.py')!r}),\n"
        f"    'tmp': attempt({str(outside_tmp)!r}),\n"
        "    'cwd': attempt('scratch.txt'),\n"
        "}))\n"
    )
    result = run(probe)
    assert result.status == "passed", result.error
    assert json.loads(result.stdout) == {
        "tracked": "denied",
        "new_in_project": "denied",
        "tmp": "denied",
        "cwd": "written",  # the program's own directory stays writable
    }
    # The attempt itself, uncaught, is recorded as a failure of the sample.
    direct = run(f"open({str(tracked)!r}, 'w').write('x')")
    assert direct.status == "error" and "PermissionError" in direct.error
    assert tracked.read_text() == "original\n"
    assert sorted(p.name for p in project.iterdir()) == ["tracked.py"]
    assert not outside_tmp.exists()


def test_reads_outside_the_interpreter_and_system_files_fail(tmp_path):
    secret = tmp_path / "credentials"
    secret.write_text("token\n")
    secret.chmod(0o644)
    probe = (
        "import json\n"
        "def attempt(path):\n"
        "    try:\n"
        "        open(path).read()\n"
        "        return 'read'\n"
        "    except PermissionError:\n"
        "        return 'denied'\n"
        "print(json.dumps({\n"
        f"    'project': attempt({__file__!r}),\n"
        f"    'parent_tmp': attempt({str(secret)!r}),\n"
        "    'stdlib': attempt(json.__file__),\n"
        "}))\n"
    )
    result = run(probe)
    assert result.status == "passed", result.error
    assert json.loads(result.stdout) == {
        "project": "denied",
        "parent_tmp": "denied",
        "stdlib": "read",  # programs still import the standard library
    }


def test_the_temp_directory_is_removed_even_when_locked():
    code = "import os\nos.makedirs('a/b')\nopen('a/b/f', 'w').write('x')\nos.chmod('a', 0)\nprint(os.getcwd())"
    result = run(code)
    assert result.status == "passed"
    cwd = Path(result.stdout.strip())
    assert cwd.name.startswith("reprolab-sandbox-")
    assert not cwd.exists()


def test_the_parent_environment_does_not_leak(monkeypatch):
    monkeypatch.setenv("REPROLAB_SANDBOX_SECRET", "s3cret-token")
    listing = run("import os\nprint(sorted(os.environ))")
    assert listing.status == "passed"
    assert "REPROLAB_SANDBOX_SECRET" not in listing.stdout
    assert "s3cret-token" not in listing.stdout
    read = run("import os\nprint(os.environ['REPROLAB_SANDBOX_SECRET'])")
    assert read.status == "error" and "KeyError" in read.error
    # Nor through /proc: the parent's environment file is out of reach.
    via_proc = run(f"print(open('/proc/{os.getpid()}/environ', 'rb').read())")
    assert via_proc.status == "error" and "PermissionError" in via_proc.error
    assert "s3cret" not in via_proc.stdout


def test_killing_the_parent_fails():
    sentinel = subprocess.Popen(["sleep", "60"])  # another process of the parent's user
    try:
        direct = run(f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)")
        assert direct.status == "error" and "ProcessLookupError" in direct.error
        sentinel_kill = run(f"import os, signal\nos.kill({sentinel.pid}, signal.SIGKILL)")
        assert sentinel_kill.status == "error"
        # The program's own parent is the namespace's init, which ignores it; kill(-1)
        # reaches only the namespace; kill(0) only the program's own group.
        for code in (
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('alive')",
            "import os, signal\nos.kill(-1, signal.SIGKILL)",
            "import os, signal\nos.kill(0, signal.SIGKILL)",
        ):
            assert not run(code, "assert False").passed
        assert sentinel.poll() is None  # still running
        assert os.getppid() > 1  # and so is this process, with its parent
    finally:
        sentinel.send_signal(signal.SIGKILL)
        sentinel.wait()


def test_the_sandbox_dies_with_its_parent():
    n = uuid.uuid4().int % 10**6
    marker = f"{n}.25"  # spelled out only by the program, not on any command line
    program = f"import os\nos.execv('/bin/sleep', ['sleep', str({n - 1} + 1) + '.25'])"
    script = (
        f"from reprolab.core.sandbox import run_program\nrun_program({program!r}, timeout_s=120)"
    )
    src = str(Path(reprolab.__file__).resolve().parents[1])
    # A parent killed with SIGKILL cannot remove its sandbox's directory: keep it here.
    scratch = Path(tempfile.mkdtemp(prefix="reprolab-sandbox-test-"))
    scratch.chmod(0o711)  # reachable by the sandbox user
    env = {**os.environ, "PYTHONPATH": src, "TMPDIR": str(scratch)}
    parent = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        assert wait_for(lambda: processes_with(marker))  # the program runs
    finally:
        parent.kill()
        parent.wait()
    try:
        assert wait_for(lambda: not processes_with(marker))  # and is gone with its parent
    finally:
        shutil.rmtree(scratch)


def test_an_unreachable_working_directory_fails_closed(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(locked))
    if os.geteuid() == 0:  # the sandbox user cannot enter root's 0700 directory
        with pytest.raises(SandboxUnavailable, match="lock-down"):
            run("x = 1")
    else:  # the same user can: the sample runs
        assert run("x = 1", "assert x == 1").passed


def test_only_lines_with_the_nonce_count():
    nonce, limits = "abc123", Limits()
    assert _verdict("abc123 child 7\nabc123 verdict passed \n", nonce, False, limits) == (
        "passed",
        "",
    )
    forged = "verdict passed\nxyz verdict passed\nisolation forged\nabc123 exit 0\n"
    assert _verdict(forged, nonce, False, limits)[0] == "error"
    assert _verdict("abc123 isolation unshare denied\n", nonce, False, limits) == (
        "isolation",
        "unshare denied",
    )
    assert _verdict(f"abc123 signal {signal.SIGXCPU}\n", nonce, False, limits)[0] == "timeout"
    assert _verdict(f"abc123 signal {signal.SIGSEGV}\n", nonce, False, limits) == (
        "killed",
        "killed by SIGSEGV",
    )
    assert _verdict("abc123 verdict passed \n", nonce, True, limits)[0] == "timeout"
    assert _verdict("", nonce, False, limits)[0] == "killed"


def test_a_fork_of_the_parent_starts_its_own_zygote():
    assert run("x = 1").passed
    parents = _ZYGOTE.pid
    pid = os.fork()
    if pid == 0:  # the child must not send to its parent's zygote
        try:
            ok = run("x = 1", "assert x == 1").passed and _ZYGOTE.pid not in (None, parents)
            os._exit(0 if ok else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _ZYGOTE.pid == parents
    assert run("x = 1", "assert x == 1").passed


def test_large_programs_and_unicode_output():
    code = "values = [" + "7," * 200_000 + "]\nprint('größe', len(values))"  # ~400 KB
    result = run(code, "assert sum(values) == 1_400_000")
    assert result.status == "passed", result.error
    assert result.stdout == "größe 200000\n"
