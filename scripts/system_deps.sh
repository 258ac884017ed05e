#!/usr/bin/env bash
# System programs the test suite starts for real: PostgreSQL (the MLflow-on-PostgreSQL
# test, `make mlflow-server`). Installed from Debian's packages when missing and this
# runs as root; otherwise it says what to install.
set -euo pipefail
if command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing PostgreSQL (apt-get install postgresql) for the MLflow server tests"
  apt-get install -y -q postgresql >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null; }
else
  echo "PostgreSQL is missing: install it (Debian: sudo apt-get install -y postgresql)" >&2
  exit 1
fi
