"""A real DVC remote over WebDAV (dvc-webdav) against a WebDAV server on loopback
(WsgiDAV, basic auth, a throw-away password): push EnsLoss's chain from one clone, pull
it into a second clone that has only the code and dvc.lock, and `dvc repro` there
recomputes nothing."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import BIN, run, tool_env
from tests.smoke.test_mlflow_server import _free_port

pytestmark = pytest.mark.pipeline

CHAIN = ["evaluate@ensloss", "--with-deps"]


@pytest.fixture
def webdav(tmp_path):
    store = tmp_path / "dav"
    (store / "dvcstore").mkdir(parents=True)  # the remote's folder exists on the server
    # token_urlsafe may start with "-", which a command line would read as an option
    port, password = _free_port(), "pw" + secrets.token_urlsafe(16)
    config = {
        "host": "127.0.0.1",
        "port": port,
        "provider_mapping": {"/": str(store)},
        "http_authenticator": {
            "domain_controller": None,
            "accept_basic": True,
            "accept_digest": False,
            "default_to_digest": False,
        },
        "simple_dc": {"user_mapping": {"*": {"dvc": {"password": password}}}},
        "verbose": 1,
    }
    (tmp_path / "wsgidav.yaml").write_text(yaml.safe_dump(config))
    log = open(tmp_path / "wsgidav.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(BIN / "wsgidav"), "-c", str(tmp_path / "wsgidav.yaml")],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=tool_env(),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
            except urllib.error.HTTPError as err:  # 401: up, wants the password
                if err.code == 401:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, (
                tmp_path / "wsgidav.log"
            ).read_text()
            time.sleep(0.2)
        yield f"webdav://127.0.0.1:{port}/dvcstore", password, store
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def _use_remote(root: Path, url: str, password: str) -> None:
    run(["dvc", "remote", "add", "-f", "team", url], root)
    # credentials in .dvc/config.local (git-ignored), never in .dvc/config
    run(["dvc", "remote", "modify", "--local", "team", "user", "dvc"], root)
    run(["dvc", "remote", "modify", "--local", "team", "password", password], root)


def test_push_to_webdav_and_pull_into_a_fresh_clone(reproduced, tmp_path, webdav):
    url, password, store = webdav
    first = tmp_path / "first"
    shutil.copytree(reproduced, first, symlinks=True)
    _use_remote(first, url, password)
    run(["dvc", "push", "-r", "team", *CHAIN], first)
    assert any(p.is_file() for p in store.rglob("*")), "nothing reached the WebDAV store"
    assert password not in (first / ".dvc" / "config").read_text()

    # a second clone: the committed files and dvc.lock, no data/, no cache
    second = tmp_path / "second"
    second.mkdir()
    files = run(["git", "ls-files", "-z"], first).stdout.split("\0")
    for rel in filter(None, files):
        target = second / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(first / rel, target)
    shutil.copy2(first / "dvc.lock", second / "dvc.lock")
    run(["git", "init", "-q"], second)
    _use_remote(second, url, password)
    run(["dvc", "pull", "-r", "team", *CHAIN], second)
    repro = run(["dvc", "repro", "evaluate@ensloss"], second).stdout
    assert "Running stage" not in repro, repro
    for stage in ("prepare@ensloss", "train@ensloss", "quantize@ensloss", "evaluate@ensloss"):
        assert f"Stage '{stage}' didn't change, skipping" in repro, repro
    assert (second / "data/eval/ensloss/claims.json").read_bytes() == (
        first / "data/eval/ensloss/claims.json"
    ).read_bytes()
