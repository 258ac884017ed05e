# reprolab: `make run` (whole pipeline, smoke profile) and `make test` are all a fresh
# machine needs; both create .venv and install the pinned dependencies first.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# No network beyond package registries: every tool's telemetry is off.
export DVC_NO_ANALYTICS := 1
export DO_NOT_TRACK := 1
export MLFLOW_DISABLE_TELEMETRY := true
export PREFECT_SERVER_ANALYTICS_ENABLED := false
# Ephemeral Prefect (flows run without a server, the tests) needs no dashboard.
export PREFECT_UI_ENABLED ?= false
export PATH := $(CURDIR)/$(BIN):$(PATH)
# Bytecode is cached: an environment that turns it off would recompile every import of
# every stage process (the venv is installed without precompiled files, see below).
unexport PYTHONDONTWRITEBYTECODE
# What `make venv` imports once so that its bytecode is written: the stage worker's
# preload, the test tools, and the modules every `dvc repro` imports lazily.
export WARM_IMPORTS := from reprolab.ops import worker; worker.preload(); import dvc.cli, dvc.repo, dvc.daemon, dvc.info, dulwich.porcelain, prefect, prefect.flows, pytest, xdist, art, mapie, rdkit.Chem

.PHONY: help venv run test test-slow bench ui data lint format prefect-server serve paper probe trigger mlflow-server

venv: $(STAMP)
$(STAMP): requirements.lock requirements-nodeps.lock pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# torch==2.13.0 is pinned in the lock, so pip takes the CPU build.
	# --no-compile: byte-compiling every installed file costs ~70 s of the install; the
	# import below compiles what the pipeline and the tests really import (~20 s).
	$(BIN)/pip install --disable-pip-version-check -q --no-compile -r requirements.lock
	$(BIN)/pip install --disable-pip-version-check -q --no-compile --no-deps -r requirements-nodeps.lock
	$(BIN)/pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	$(BIN)/python -c "$$WARM_IMPORTS"
	# every module `dvc` can import, so a `dvc repro` typed in a shell that sets
	# PYTHONDONTWRITEBYTECODE does not compile DVC from source each time (~8 s once)
	$(BIN)/python scripts/compile_bytecode.py dvc
	touch $(STAMP)

# `make help`: the targets below whose line ends in a `## ` comment, with that comment.
# Not the default goal (that stays venv, the first target above).
help: ## this list
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / {printf "  make %-15s %s\n", $$1, $$2}' $(firstword $(MAKEFILE_LIST))

# The preloaded stage worker (src/reprolab/ops/worker.py) imports torch, Lightning, MLflow ...
# once, so each stage process DVC starts skips ~2-6 s of imports; it is stopped when
# dvc repro ends, whatever the outcome (and exits by itself after 10 idle minutes).
# A dvc.lock left modified is explained (scripts/dvc_lock_note.py): on another CPU the
# outputs' hashes differ in their last bits, and committing it is not needed.
run: venv ## the whole pipeline (dvc repro, smoke profile) with the stage worker
	$(BIN)/python -m reprolab worker start || echo "no stage worker: stages run in-process"
	trap '$(BIN)/python -m reprolab worker stop' EXIT; $(BIN)/dvc repro
	@$(BIN)/python scripts/dvc_lock_note.py || true
	@echo "claims: data/reports/claims.md  |  MLflow UI: make ui"

# Two pytest workers (pytest-xdist), one test module at a time (module fixtures such as
# the MLflow server start once); tests that read the session's reproduced project
# share one copy of it (tests/conftest.py), the rest spread over both cores. Modules are
# handed out in collection order (--no-loadscope-reorder; xdist would otherwise sort
# them by test count), which tests/conftest.py sets: the long pipeline modules first.
TEST_WORKERS ?= 2
test: venv ## the fast tests (not slow) on TEST_WORKERS=2 pytest workers
	bash scripts/system_deps.sh
	$(BIN)/python -m pytest -m "not slow" -q --durations=15 -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

test-slow: venv ## the slow tests (pytest -m slow; some need a browser, installed first)
	bash scripts/system_deps.sh
	bash scripts/system_deps.sh --browser
	$(BIN)/python -m pytest -m slow -q --durations=15

bench: venv ## every benchmark, results into bench/results/
	$(BIN)/python bench/bench_pipeline.py --out bench/results/latest.json
	$(BIN)/python bench/bench_quant.py --out bench/results/quant.json
	# the no-op is timed on this project, brought up to date first
	$(BIN)/dvc repro -q && $(BIN)/python bench/bench_noop.py --profile --out bench/results/noop.json
	$(BIN)/python bench/bench_grokformer.py --out bench/results/grokformer.json
	$(BIN)/python bench/bench_semiclipped.py --out bench/results/semiclipped.json
	$(BIN)/python bench/bench_bdia.py --out bench/results/bdia.json
	$(BIN)/python bench/bench_lift_gs.py
	$(BIN)/python bench/bench_sandbox.py --out bench/results/sandbox.json
	$(BIN)/python bench/bench_executor.py --out bench/results/executor.json
	$(BIN)/python bench/bench_crane.py --out bench/results/crane.json
	$(BIN)/python bench/bench_lm.py --out bench/results/lm.json
	$(BIN)/python bench/bench_transformer.py --out bench/results/transformer.json
	$(BIN)/python bench/bench_bit_dgdm_memory.py --out bench/results/bit_dgdm_memory.json

# MLflow UI over the store named in mlflow.env, on loopback only. The committed paper
# results (docs/results) are imported into the store first, those it lacks only
# (python -m reprolab mlflow import-results; a store that has them all is left as it is).
ui: venv ## MLflow UI over mlflow.env's store (127.0.0.1:5000; REPROLAB_UI_PORT)
	$(BIN)/python -m reprolab mlflow import-results --quiet || echo "the committed results were not imported (above); the UI starts without them"
	@echo "MLflow UI: http://127.0.0.1:$${REPROLAB_UI_PORT:-5000}/#/experiments?workflowType=machine_learning"
	set -a; source mlflow.env; set +a; \
	$(BIN)/mlflow ui --backend-store-uri "$$MLFLOW_TRACKING_URI" --host 127.0.0.1 --port $${REPROLAB_UI_PORT:-5000} --workers 1

# MLflow tracking server on PostgreSQL (loopback; src/reprolab/ops/mlflow_server.py). Point
# mlflow.env at it: MLFLOW_TRACKING_URI=http://127.0.0.1:5001
mlflow-server: venv ## MLflow tracking server on PostgreSQL (127.0.0.1:5001)
	$(BIN)/python -m reprolab mlflow-server --port $${REPROLAB_MLFLOW_PORT:-5001} --pg-port $${REPROLAB_PG_PORT:-5433}

# Local Prefect server (loopback) and the scheduled deployments.
# The dashboard is on (loopback only): REPROLAB_PREFECT_UI=false turns it off.
prefect-server: venv ## local Prefect server and dashboard (127.0.0.1:4200)
	PREFECT_UI_ENABLED=$${REPROLAB_PREFECT_UI:-true} $(BIN)/prefect server start --host 127.0.0.1 --port 4200

serve: venv ## serve the Prefect deployments (nightly, reproduce-method/on-demand; needs prefect-server)
	PREFECT_API_URL=http://127.0.0.1:4200/api $(BIN)/python -m flows.serve

# Trigger a served deployment by hand; says within seconds when no server answers or the
# deployment does not exist (exit 1), and warns when no `make serve` process serves it
# (`prefect deployment run` alone waits and then reports the deployment as not found).
# One method: DEPLOYMENT=reproduce-method/on-demand PARAMS='{"slug": "desk_reject"}'
DEPLOYMENT ?= reproduce-all/nightly
PREFECT_API_URL ?= http://127.0.0.1:4200/api
trigger: venv ## run a served deployment now: [DEPLOYMENT=reproduce-all/nightly] [PARAMS=json]
	@$(BIN)/python scripts/prefect_up.py "$(PREFECT_API_URL)" "$(DEPLOYMENT)"
	PREFECT_API_URL=$(PREFECT_API_URL) $(BIN)/prefect deployment run $(DEPLOYMENT) $(if $(PARAMS),--params '$(PARAMS)') --watch

# The paper profile of some methods in a fresh copy, in sequential rounds of seeds until
# each claim is decided or the method's evidence budget is spent (src/reprolab/evidence/running/paper.py);
# results (report, claims, metrics, figures, run.json with date, commit, machine, rounds,
# seeds) into docs/results/<slug>/, then the scoreboard docs/results/README.md. The
# preregistration ledger (docs/results/ledger/) is written first: a claim changed after
# its results needs AMEND="why". SEEDS=100,101,102 runs a held-out block compared with the
# pooled run; REPLAY=1 reruns run.json's last round once; LEDGER_ONLY=1 records the
# ledger entries (AMEND="why") and runs nothing.
METHODS ?=
SEEDS ?=
AMEND ?=
REPLAY ?=
CONFIRM ?=
LEDGER_ONLY ?=
paper: venv ## paper-profile rounds into docs/results/: METHODS="a b" [SEEDS=] [AMEND=] [REPLAY=1] [CONFIRM=1]
	@test -n "$(METHODS)" || (echo 'usage: make paper METHODS="ensloss cplearn" [SEEDS=100,101,102] [AMEND="why"] [REPLAY=1] [CONFIRM=1] [RESUME=<copy>]'; exit 2)
	bash scripts/system_deps.sh --paper
	$(BIN)/python -m reprolab paper $(METHODS) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(AMEND),--amend "$(AMEND)") $(if $(REPLAY),--replay) $(if $(CONFIRM),--confirm) $(if $(LEDGER_ONLY),--ledger-only) $(if $(RESUME),--resume $(RESUME))

# A candidate paper-profile setting's training signals (no evaluate): before the ledger
probe: venv ## a candidate paper setting's training signals: METHOD= NAME= [SET=] [SEEDS=]
	@test -n "$(METHOD)" -a -n "$(NAME)" || (echo 'usage: make probe METHOD=grokformer NAME=regime [SET="epochs=2000 patience=200"] [SEEDS=100]'; exit 2)
	bash scripts/system_deps.sh --paper
	$(BIN)/python -m reprolab probe $(METHOD) --name $(NAME) $(if $(SET),--set $(SET)) $(if $(SEEDS),--seeds $(SEEDS))

# Fashion-MNIST for the paper profile, without root: apt-get download + dpkg -x.
data: ## Fashion-MNIST for the paper profile into data/raw/fashion-mnist/
	mkdir -p data/raw/fashion-mnist data/raw/.deb
	cd data/raw/.deb && (apt-get download dataset-fashion-mnist || (apt-get update -qq && apt-get download dataset-fashion-mnist))
	dpkg -x data/raw/.deb/dataset-fashion-mnist_*.deb data/raw/.deb/root
	cp data/raw/.deb/root/usr/share/datasets/fashion-mnist/*.gz data/raw/fashion-mnist/
	rm -rf data/raw/.deb
	ls -l data/raw/fashion-mnist

lint: venv ## ruff format --check and ruff check
	$(BIN)/ruff format --check . && $(BIN)/ruff check .

format: venv ## ruff format and ruff check --fix
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .
