"""Prefect flows over the same stage functions DVC runs.

- ``reproduce_method(slug)``: the stages of one method as dvc.yaml declares them
  (prepare -> train -> quantize -> evaluate), each a visible task, inside one MLflow
  chain run tagged with the flow-run id; publishes that method's claims only.
- ``reproduce_all(methods, executor=None)``: every method, then the stages shared by all
  methods (the report), then the claims of the methods it ran (not the report's other
  methods) published as Prefect markdown + table artifacts. ``executor`` (default
  ``REPROLAB_EXECUTOR``, else ``pool``) is the unit executor's setting: ``pool`` and
  ``local`` run the methods one after another (a subflow each); ``dask`` (a local cluster) or a
  scheduler address runs them concurrently through prefect-dask's ``DaskTaskRunner``
  (``reproduce_methods``): the setup stages once, then every method's stages as tasks
  on the cluster, each after the one before it.

DVC allows one writer per repository: every stage task waits for DVC's repository lock
for its `dvc status` and `dvc commit` (``reprolab.ops.dvcstate``), so stages of different
methods compute at the same time and are recorded in dvc.lock one at a time; each
stage's deps are the outputs of the stages before it in its own chain, which are final
when it starts, so what `dvc commit` records is exactly what it computed from.

Both compute in ``root`` (default: the project around the working directory). Runs
without a server (ephemeral Prefect) or against one (``flows/serve.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from reprolab import config, registry
from reprolab.core import tracking
from reprolab.ops import dvcstate
from reprolab.ops import executor as unit_executor
from reprolab.paths import project_root
from tasks.stages import environ, outcome, publish_claims, publish_method_claims, stage_task

_environ = environ  # (flows.reverify sets the MLflow store for the stages with it)


def _root(root: str | None) -> Path:
    return Path(root).resolve() if root else project_root()


#: the workspaces this process holds (``_workspace``)
_HELD: set[Path] = set()


@contextmanager
def _workspace(project: Path, holder: str, log) -> Iterator[None]:
    """Hold the workspace of ``project`` for one flow run at a time
    (``dvcstate.workspace_lock``: a second run waits and says for whom), once per
    process: ``reproduce-method`` inside ``reproduce-all``, which holds it, goes on."""
    key = Path(project).resolve()
    if key in _HELD:
        yield
        return
    with dvcstate.workspace_lock(project, holder, log):
        _HELD.add(key)
        try:
            yield
        finally:
            _HELD.discard(key)


def _chain_run(project: Path, slug: str, profile: str) -> tuple[tracking.Tracker, str]:
    """The MLflow chain run of ``slug`` in this flow run (its stages' runs are children)."""
    run_id = str(flow_run.id)
    cfg = config.load(project / "params.yaml")
    tracker = tracking.open_tracker(project, slug, "chain", profile)
    parent = tracker.client.create_run(
        tracker.experiment_id,
        # the method, profile and seeds; the flow run is in the tag prefect.flow_run_id
        run_name=tracking.run_name(
            slug, "chain", profile, cfg.method(slug).evidence.seeds(cfg.seeds)
        ),
        tags={
            **tracking.git_state(project),
            **tracking.machine_tags(),
            **tracking.profile_tags(profile),
            "reprolab.kind": "chain",
            "reprolab.entry": "prefect",
            "reprolab.profile": profile,
            "reprolab.slug": slug,
            "prefect.flow_run_id": run_id,
            "prefect.root_flow_run_id": str(flow_run.root_flow_run_id or run_id),
        },
    ).info.run_id
    tracker.log_params(  # the setting, so chains of different settings can be compared
        parent,
        {
            "profile": cfg.profile,
            "seeds": list(cfg.seeds),
            "method": cfg.method(slug).model_dump(mode="json"),
        },
    )
    return tracker, parent


def _profile(root: str | None) -> str:
    """The profile params.yaml sets (for run names; "?" when it cannot be read)."""
    import yaml

    try:
        raw = yaml.safe_load((_root(root) / "params.yaml").read_text())
        return str(raw.get("profile", "?"))
    except Exception:
        return "?"


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _method_run_name() -> str:
    params = flow_run.parameters
    return f"{params['slug']} ({_profile(params.get('root'))}) {_stamp()}"


def _all_run_name() -> str:
    params = flow_run.parameters
    methods = params.get("methods")
    what = ", ".join(methods) if methods and len(methods) <= 3 else "all methods"
    return f"reproduce-all: {what} ({_profile(params.get('root'))}) {_stamp()}"


@flow(name="reproduce-method", flow_run_name=_method_run_name)
def reproduce_method(slug: str, root: str | None = None) -> list[dict]:
    project = _root(root)
    registry.check_slug(slug)
    cfg = config.load(project / "params.yaml")  # bad params fail here, before compute
    reads = set(registry.get(slug).assets)
    stages = [  # the shared assets this method reads, not every one
        n
        for n in dvcstate.chain(project, slug)
        if dvcstate.split_name(n)[0] != "assets" or dvcstate.split_name(n)[1] in reads
    ]
    logger = get_run_logger()
    logger.info("%s in %s: %s (%s profile)", slug, project, " -> ".join(stages), cfg.profile)

    run_id = str(flow_run.id)
    # run on its own (reproduce-method/on-demand, by hand) it holds the workspace as
    # reproduce-all does; inside reproduce-all, that run already holds it
    with _workspace(project, f"reproduce-method flow run {run_id}", logger.info):
        tracker, parent = _chain_run(project, slug, cfg.profile)
        ok, results = False, []
        try:
            # The stages' MLflow runs become children of this chain run (tracking.Tracker).
            with _environ(**{tracking.PARENT_ENV: parent, tracking.FLOW_RUN_ENV: run_id}):
                results = [outcome(name, stage_task(name, str(project))) for name in stages]
            publish_method_claims(slug, str(project))
            ok = True
            return results
        finally:
            if ok and all(r.get("skipped") for r in results):
                tracker.client.delete_run(parent)  # nothing ran: no empty chain in MLflow
            else:
                tracker.client.set_terminated(parent, "FINISHED" if ok else "FAILED")


@flow(name="reproduce-methods", flow_run_name="concurrently: {methods}")
def reproduce_methods(methods: list[str], root: str) -> dict[str, list[dict]]:
    """The methods' chains concurrently, on the task runner this flow is given
    (``reproduce_all`` gives it a ``DaskTaskRunner``): the setup stages (validate, the
    shared assets) first, here, one at a time; then each method's stages as tasks on
    the runner, each waiting for the one before it in its chain. Each method has its
    MLflow chain run, created here; the stages on the workers are its children.
    Returns the stages' results: the setup stages under ``""``, then each method's."""
    project = Path(root)
    cfg = config.load(project / "params.yaml")
    logger = get_run_logger()
    setup = dvcstate.setup(project)
    env = {
        unit_executor.ENV: "local",  # a method's units run in its worker process
        tracking.FLOW_RUN_ENV: str(flow_run.id),
    }
    with _environ(**{tracking.FLOW_RUN_ENV: env[tracking.FLOW_RUN_ENV]}):
        done = [outcome(name, stage_task(name, root)) for name in setup]
    chains: dict[str, tuple[tracking.Tracker, str, list]] = {}
    for slug in methods:
        stages = [n for n in dvcstate.chain(project, slug) if n not in setup]
        tracker, parent = _chain_run(project, slug, cfg.profile)
        stage_env = {
            **env,
            tracking.PARENT_ENV: parent,
            "MLFLOW_TRACKING_URI": os.environ["MLFLOW_TRACKING_URI"],  # set by _chain_run
        }
        futures: list = []
        for name in stages:
            futures.append(stage_task.submit(name, root, stage_env, wait_for=futures[-1:] or None))
        chains[slug] = (tracker, parent, futures)
        logger.info("%s submitted: %s", slug, " -> ".join(stages))
    results: dict[str, list[dict]] = {"": done}
    failed: dict[str, Exception] = {}
    for slug, (tracker, parent, futures) in chains.items():
        stages = [n for n in dvcstate.chain(project, slug) if n not in setup]
        try:
            results[slug] = [
                outcome(n, future.result()) for n, future in zip(stages, futures, strict=True)
            ]
        except Exception as exc:  # the first failed stage of this chain
            failed[slug] = exc
        tracker.client.set_terminated(parent, "FAILED" if slug in failed else "FINISHED")
    if failed:
        first = next(iter(failed.values()))
        raise RuntimeError(f"{len(failed)} method(s) failed: {', '.join(failed)}") from first
    return results


def task_runner(choice: str, methods: int):
    """prefect-dask's task runner for the executor ``choice`` (``dask``: a local cluster
    of single-threaded workers, at most one per method; else a scheduler address)."""
    from prefect_dask import DaskTaskRunner

    if choice == "dask":
        workers = max(1, min(unit_executor.local_workers(), methods))
        return DaskTaskRunner(
            cluster_class="distributed.LocalCluster",
            cluster_kwargs=unit_executor.local_cluster_kwargs(workers),
        )
    return DaskTaskRunner(
        address=choice, client_kwargs={"timeout": unit_executor.CONNECT_TIMEOUT_S}
    )


@flow(name="reproduce-all", flow_run_name=_all_run_name)
def reproduce_all(
    methods: list[str] | None = None, root: str | None = None, executor: str | None = None
) -> dict:
    project = _root(root)
    configured = config.load(project / "params.yaml")
    chosen = list(methods or configured.slugs)
    for slug in chosen:
        configured.method(slug)  # unknown or not configured: named before any compute
    choice = unit_executor.choice(executor)  # a bad value is named before any compute
    run_id = str(flow_run.id)
    logger = get_run_logger()
    # one run at a time on this workspace: a second (overlapping schedule, a run by
    # hand, another server) waits, and says for whom
    with _workspace(project, f"reproduce-all flow run {run_id}", logger.info):
        if choice in ("local", "pool") or len(chosen) < 2:  # one after another (units: on `choice`)
            with _environ(**{unit_executor.ENV: choice}):
                chains = {slug: reproduce_method(slug, str(project)) for slug in chosen}
        else:
            logger.info("%d methods concurrently on %s", len(chosen), choice)
            concurrent = reproduce_methods.with_options(
                task_runner=task_runner(choice, len(chosen))
            )
            chains = concurrent(chosen, str(project))
        with _environ(**{tracking.FLOW_RUN_ENV: run_id}):
            shared = [outcome(n, stage_task(n, str(project))) for n in dvcstate.shared(project)]
        published = publish_claims(str(project), chosen)  # the methods it ran, only
    return {
        "flow_run_id": run_id,
        "root": str(project),
        "methods": chosen,
        "executor": choice,
        "stages": [*(r for rs in chains.values() for r in rs), *shared],
        "artifacts": published,
    }
