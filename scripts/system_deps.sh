#!/usr/bin/env bash
# System packages the project uses, from Debian's packages, installed when missing and
# this runs as root; otherwise the script says what to install:
# - postgresql: the MLflow-on-PostgreSQL test, `make mlflow-server` (required: exits 1);
# - with --paper (what `make paper` runs) only dataset-fashion-mnist: Fashion-MNIST
#   for the paper profile, read from /usr/share/datasets/fashion-mnist/ (optional: a
#   warning; `make data` fetches it without root). The tests do not need it;
# - chromium: the headless browser that renders the claims report (the fast tier's
#   tests/real) and screenshots the MLflow and Prefect UIs (`make test-slow`); required
#   by both (exits 1); `--browser` checks it alone.
set -euo pipefail

have_postgres() {
  command -v initdb >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}

have_fashion_mnist() {
  local d=/usr/share/datasets/fashion-mnist f
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    [ -f "$d/$f.gz" ] || return 1
  done
}

# install <package> <what it is for>: 0 when installed now, 1 when it cannot be
apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing $1 (apt-get install $1) for $2"
    apt-get install -y -q "$1" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q "$1" >/dev/null; }
  else
    return 1
  fi
}

if [ "${1:-}" = "--paper" ]; then
  if ! have_fashion_mnist && ! apt_install dataset-fashion-mnist "the paper profile's Fashion-MNIST"; then
    echo "warning: Fashion-MNIST (paper profile) is missing: install it (Debian: sudo apt-get install -y dataset-fashion-mnist), or run \`make data\` without root" >&2
  fi
  exit 0
fi
if [ "${1:-}" = "--browser" ]; then
  if ! command -v chromium >/dev/null 2>&1 && ! apt_install chromium "the headless-browser tests"; then
    echo "chromium is missing: install it (Debian: sudo apt-get install -y chromium)" >&2
    exit 1
  fi
  exit 0
fi
if ! have_postgres && ! apt_install postgresql "the MLflow server tests"; then
  echo "PostgreSQL is missing: install it (Debian: sudo apt-get install -y postgresql)" >&2
  exit 1
fi
if ! command -v chromium >/dev/null 2>&1 && ! apt_install chromium "the headless-browser tests"; then
  echo "chromium is missing: install it (Debian: sudo apt-get install -y chromium)" >&2
  exit 1
fi
exit 0
