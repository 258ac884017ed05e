"""A shared MLflow tracking server on PostgreSQL, on loopback: ``make mlflow-server``.

Starts PostgreSQL (the system binaries: ``apt-get install postgresql`` on Debian) with its
data under ``.mlflow/server/pg`` and ``mlflow server`` with it as the backend store and an
artifact root it proxies (``.mlflow/server/artifacts``), both on 127.0.0.1. Pointing
``mlflow.env`` at it (``MLFLOW_TRACKING_URI=http://127.0.0.1:5001``) is all a user changes;
stage runs, the report and the UI then go through the server, and several stage
processes (or machines on a tunnel) can log at once.

The database is created on first start with a random password kept in
``<folder>/pg/.password`` (mode 0600; it never leaves the server's side: clients speak
HTTP to MLflow). PostgreSQL refuses to run as root, so under root its processes run as
``nobody`` (its data folder then lives where ``nobody`` can reach it: under
``/var/tmp/reprolab-pg/`` if the project folder is closed to other users).

    python -m reprolab mlflow-server [--port 5001] [--pg-port 5433] [--folder .mlflow/server]
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from reprolab.ops.children import stop_group

STARTUP_S = 120
#: where Debian installs PostgreSQL's server binaries (not on PATH)
PG_LIB = Path("/usr/lib/postgresql")


class ServerError(RuntimeError):
    """A server could not be started (named, with the fix)."""


def pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for folder in sorted(PG_LIB.glob("*/bin"), reverse=True):
        if (folder / name).is_file():
            return str(folder / name)
    raise ServerError(
        f"PostgreSQL's {name} was not found: install PostgreSQL (Debian: "
        "`apt-get install -y postgresql`) or put its bin folder on PATH"
    )


def _as_pg_user() -> list[str]:
    """Prefix that runs a command as the PostgreSQL user (``nobody`` under root)."""
    return ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []


def _reachable_by_nobody(path: Path) -> bool:
    probe = subprocess.run(
        [*_as_pg_user(), "test", "-x", str(path)], capture_output=True, check=False
    )
    return probe.returncode == 0


def data_folder(folder: Path) -> Path:
    pg = folder / "pg"
    if os.geteuid() != 0:
        return pg
    pg.parent.mkdir(parents=True, exist_ok=True)
    if _reachable_by_nobody(pg.parent):
        return pg
    key = hashlib.sha256(str(pg.resolve()).encode()).hexdigest()[:12]
    return Path("/var/tmp/reprolab-pg") / key


@dataclass
class Servers:
    pg_data: Path
    pg_port: int
    mlflow: subprocess.Popen
    url: str

    def stop(self) -> None:
        if self.mlflow.poll() is None:
            stop_group(self.mlflow, grace=20)
        stop_postgres(self.pg_data)


def start_postgres(pg_data: Path, port: int) -> str:
    """Initialise (first time) and start PostgreSQL on 127.0.0.1:``port``; return the
    SQLAlchemy URI of the ``mlflow`` database."""
    user = _as_pg_user()
    password_file = pg_data / ".password"
    if not (pg_data / "PG_VERSION").is_file():
        pg_data.mkdir(parents=True, exist_ok=True)
        os.chmod(pg_data, 0o700)
        if os.geteuid() == 0:
            shutil.chown(pg_data, "nobody", "nogroup")
        password = secrets.token_urlsafe(24)
        pwfile = pg_data.parent / f".{pg_data.name}.pw"
        pwfile.write_text(password + "\n")
        if os.geteuid() == 0:
            shutil.chown(pwfile, "nobody", "nogroup")
        try:
            _run(
                [
                    *user,
                    pg_bin("initdb"),
                    "-D",
                    str(pg_data),
                    "-U",
                    "mlflow",
                    "--auth=scram-sha-256",
                    f"--pwfile={pwfile}",
                    "-E",
                    "UTF8",
                ],
                "initdb",
            )
        finally:
            pwfile.unlink(missing_ok=True)
        password_file.write_text(password + "\n")
        os.chmod(password_file, 0o600)
        fresh = True
    else:
        fresh = False
    password = password_file.read_text().strip()
    log_file = pg_data / "server.log"
    _run(
        [
            *user,
            pg_bin("pg_ctl"),
            "-D",
            str(pg_data),
            "-l",
            str(log_file),
            "-w",
            "-t",
            "60",
            "-o",
            f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories=''",
            "start",
        ],
        "pg_ctl start",
        log_file,
    )
    env = {**os.environ, "PGPASSWORD": password}
    if fresh:
        _run(
            [pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "mlflow", "mlflow"],
            "createdb",
            env=env,
        )
    return f"postgresql+psycopg2://mlflow:{password}@127.0.0.1:{port}/mlflow"


def stop_postgres(pg_data: Path) -> None:
    if (pg_data / "postmaster.pid").is_file():
        subprocess.run(
            [*_as_pg_user(), pg_bin("pg_ctl"), "-D", str(pg_data), "-m", "fast", "-w", "stop"],
            capture_output=True,
            check=False,
        )


def _run(cmd: list[str], what: str, log_file: Path | None = None, env=None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        tail = log_file.read_text()[-2000:] if log_file and log_file.is_file() else ""
        raise ServerError(f"{what} failed ({proc.returncode}): {proc.stderr.strip()}\n{tail}")


def start(folder: Path, port: int, pg_port: int) -> Servers:
    """PostgreSQL, then ``mlflow server`` on it; returns once MLflow answers /health.
    A failure stops whatever was started."""
    folder.mkdir(parents=True, exist_ok=True)
    pg_data = data_folder(folder)
    uri = start_postgres(pg_data, pg_port)
    artifacts = folder / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    log = open(folder / "mlflow-server.log", "ab")  # noqa: SIM115 - owned by the process
    # the URI holds the database password: in the environment, not on the command
    # line where every local user's `ps` would show it
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "MLFLOW_BACKEND_STORE_URI": uri}
    mlflow = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "mlflow"),
            "server",
            "--artifacts-destination",
            str(artifacts.resolve()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    servers = Servers(pg_data, pg_port, mlflow, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + STARTUP_S
    while True:
        if mlflow.poll() is not None:
            servers.stop()
            tail = (folder / "mlflow-server.log").read_text(errors="replace")[-3000:]
            raise ServerError(f"mlflow server exited ({mlflow.returncode}):\n{tail}")
        try:
            with urllib.request.urlopen(f"{servers.url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return servers
        except OSError:
            pass
        if time.monotonic() > deadline:
            servers.stop()
            raise ServerError(f"mlflow server did not answer on {servers.url} in {STARTUP_S} s")
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="reprolab mlflow-server", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--port", type=int, default=5001)
    parser.add_argument("--pg-port", type=int, default=5433)
    parser.add_argument("--folder", type=Path, default=Path(".mlflow/server"))
    args = parser.parse_args(argv)
    servers = start(args.folder, args.port, args.pg_port)
    print(
        f"MLflow on PostgreSQL: {servers.url} (database 127.0.0.1:{args.pg_port}, data "
        f"{servers.pg_data}). Set MLFLOW_TRACKING_URI={servers.url} in mlflow.env. Ctrl-C stops both.",
        flush=True,
    )
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    try:
        while not stop["now"] and servers.mlflow.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        servers.stop()
    return 0
