"""LIFT-GS hooks for the pipeline stages (see reprolab.contract.MethodHooks).

Three training signals for one point encoder with K mask queries:

- ``render`` (the method): the predicted per-point mask probabilities are the features of
  fixed Gaussians at the points; the differentiable splatting renderer draws them into
  training views, and the rendered query masks are Hungarian-matched to the view's 2D
  teacher masks (BCE + dice). No 3D labels.
- ``unproj``: naive unprojection: every point that projects into a view's teacher mask
  takes that mask's label (occluded points too: no depth test); the point masks of the
  queries are Hungarian-matched to these unprojected masks with the same loss.
- ``sup3d``: the same loss on the ground-truth 3D object masks (an upper bound).

All three run on procedural scenes and on scenes of offline meshes (unit parameter
``scenes``). Pretrain-then-finetune (``ft_*``, procedural scenes): render-supervised
pretraining on N or 2N unlabeled scenes, or none, then the same 3D-supervised
fine-tuning on n labeled scenes (2n for one from-scratch baseline), at equal budgets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, TrainedUnits, TrainerConfig, Unit
from reprolab.methods.lift_gs.config import FINETUNE, LiftGSConfig

if TYPE_CHECKING:
    import pandas as pd
    import torch


def task_name(n_scenes: int, scenes: str = "procedural") -> str:
    """A readable task name (never parsed: ``n_scenes`` and ``scenes`` are the unit's
    parameters)."""
    return f"{'meshes' if scenes == 'meshes' else 'scenes'}_n{n_scenes}"


OPACITY = 0.9  # the Gaussians' opacity (teacher masks and render supervision alike)


def scene_params(cfg: LiftGSConfig):
    from reprolab.methods.lift_gs.scenes import SceneParams

    return SceneParams(
        n_points=cfg.n_points,
        min_objects=cfg.min_objects,
        max_objects=cfg.max_objects,
        n_views=cfg.n_views,
        image_size=cfg.image_size,
        spread=cfg.spread,
        min_size=cfg.object_size[0],
        max_size=cfg.object_size[1],
        cam_height=tuple(cfg.cam_height),
        allow_overlap=cfg.allow_overlap,
        gap=cfg.gap,
        opacity=OPACITY,
    )


# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    from reprolab.methods.lift_gs.scenes import make_scene

    cfg = run.cfg
    p = scene_params(cfg)
    seed = cfg.data_seed * 2
    arrays, meta = _setting(
        cfg, p, cfg.n_train, cfg.n_test, seed, make_scene, "procedural", n_val=cfg.n_val
    )
    # one task per training-set size: the first n training scenes, the same test scenes
    tasks = {}
    for n in sorted({cfg.n_train, *cfg.scaling_scenes}):
        tasks[task_name(n)] = {
            k: (v[:n] if k.startswith("train_") else v) for k, v in arrays.items()
        }
    if cfg.n_train_meshes:
        from reprolab.methods.lift_gs.meshes import catalogue, make_mesh_scene

        meshes = catalogue()  # a missing package is named here, before any scene is drawn

        def make(rng, p):
            return make_mesh_scene(rng, p, meshes)

        n, seed = cfg.n_train_meshes, 1000 + cfg.data_seed * 2  # other seeds: other scenes
        arrays, mesh_meta = _setting(cfg, p, n, cfg.n_test_meshes, seed, make, "meshes")
        tasks[task_name(n, "meshes")] = arrays
        meta |= {f"meshes_{k}": v for k, v in mesh_meta.items()}
        meta["meshes_catalogue"] = [name for name, _, _ in meshes]
    return tasks, meta


#: relative depth tolerances of the z-buffered unprojection that prepare measures on the
#: training scenes (``train_unprojection``), to choose ``unproj_depth_tolerance`` from
DEPTH_TOLERANCES = (0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)


def _setting(
    cfg: LiftGSConfig, p, n_train: int, n_test: int, seed: int, make, what: str, n_val: int = 0
):
    """Training and held-out scenes of one scene setting as the arrays of a task (and
    ``n_val`` validation scenes with 3D labels), and their metadata."""
    from reprolab.methods.lift_gs.scenes import build_split, intrinsics

    noise = (cfg.teacher_drop, cfg.teacher_edge_noise)
    kw = {"make": make, "teacher": cfg.teacher}
    train = build_split(n_train, p, seed + 1, *noise, with_occlusion=False, **kw)
    test = build_split(n_test, p, seed + 2, *noise, with_occlusion=True, **kw)
    arrays = {f"train_{k}": v for k, v in train.items() if k != "labels"}
    arrays |= {f"test_{k}": v for k, v in test.items() if k != "depth"}
    if n_val:  # only the 3D labels: validation scenes are never trained on
        val = build_split(n_val, p, seed + 3, *noise, with_occlusion=False, **kw)
        arrays |= {f"val_{k}": val[k] for k in ("points", "ids", "n_objects")}
    arrays["test_occluded"] = (test["occlusion"] >= cfg.occlusion_threshold).astype(np.int8)
    arrays["intrinsics"] = np.asarray(intrinsics(p), np.float64)
    arrays["opacity"] = np.asarray([p.opacity], np.float32)
    n_obj = int(test["n_objects"].sum())
    n_occ = int(arrays["test_occluded"].sum())
    if n_occ == 0 or n_occ == n_obj:
        raise ValueError(
            f"occlusion_threshold={cfg.occlusion_threshold}: {n_occ} of {n_obj} held-out "
            f"objects of the {what} scenes are occluded; the occlusion split needs both kinds"
        )
    return arrays, {
        "unprojection_label_accuracy": unprojection_accuracy(
            test, p, cfg.unproj_depth_tolerance, cfg.unproj_depth
        ),
        # the training scenes' diagnostic that the depth tolerance is chosen from: per
        # depth source and tolerance (naive: no depth test), the share of labelled points
        # that get their own object's label from noise-free masks, and the share of
        # in-frame points labelled
        "train_unprojection": _unprojection_grid(train, p, cfg.teacher),
        "test_objects": n_obj,
        "test_occluded_objects": n_occ,
        "mean_teacher_masks_per_view": float(train["mask_count"].mean()),
        "mean_objects_per_scene": float(train["n_objects"].mean()),
    }


def _unprojection_grid(train: dict, p, teacher: str) -> dict:
    def stats(tol, source):
        acc, lab = unprojection_stats(train, p, tol, source)
        return {"accuracy": acc, "labelled": lab}

    out = {"naive": stats(None, "points")}
    for source in ("points", "sensor") if teacher == "raycast" else ("points",):
        out |= {f"{source}_{tol}": stats(tol, source) for tol in DEPTH_TOLERANCES}
    return out


def unprojection_accuracy(
    split: dict, p, depth_tolerance: float | None = None, source: str = "points"
) -> float:
    """Share of labelled points whose unprojected label (from the noise-free
    visible-object image of a view) is their own object, over scenes and views: how much
    occlusion alone corrupts unprojected labels (naive), or what a depth test leaves of
    it (``unproj_depth_tolerance``, against ``source``: see ``unproj_depth``)."""
    return unprojection_stats(split, p, depth_tolerance, source)[0]


def unprojection_stats(
    split: dict, p, depth_tolerance: float | None = None, source: str = "points"
) -> tuple[float, float]:
    """(accuracy, labelled): the share of labelled points whose unprojected label (from
    the noise-free visible-object images) is their own object, and the share of
    in-frame points that the depth test keeps labelled (1 when naive), over scenes and
    views. ``source``: the depth test's reference (``unproj_depth``)."""
    import torch

    from reprolab.methods.lift_gs.module import unprojected_targets
    from reprolab.methods.lift_gs.scenes import intrinsics

    hits, total, in_frame = 0, 0, 0
    for i in range(len(split["points"])):
        n = int(split["n_objects"][i])
        points = torch.from_numpy(split["points"][i])
        for v in range(split["R"].shape[1]):
            labels = torch.from_numpy(split["labels"][i, v].astype(np.int64))
            masks = torch.stack([labels == o for o in range(n)]).to(torch.uint8)
            cam = (torch.from_numpy(split["R"][i, v]), torch.from_numpy(split["t"][i, v]))
            in_frame += int(unprojected_targets(points, *cam, masks, intrinsics(p))[0].sum())
            depth = torch.from_numpy(split["depth"][i, v]) if source == "sensor" else None
            inside, target = unprojected_targets(
                points, *cam, masks, intrinsics(p), depth_tolerance, depth
            )
            got = np.where(target.numpy().any(0), target.numpy().argmax(0), -1)
            hits += int((got == split["ids"][i][inside.numpy()]).sum())
            total += int(inside.sum())
    return hits / max(total, 1), total / max(in_frame, 1)


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Per seed: every signal on all training scenes (render also on fewer), on the mesh
    scenes, and the pretrain-then-finetune arms; only units of the given tasks.
    ``unproj_naive`` (no depth test) runs next to ``unproj`` only when ``unproj`` has
    the depth test (``unproj_depth_tolerance`` set)."""
    cfg, seeds, variants = run.cfg, run.seeds, run.variants
    signals = [v for v in variants if v not in FINETUNE]
    if cfg.unproj_depth_tolerance is None:  # unproj is the naive one itself
        signals = [v for v in signals if v != "unproj_naive"]
    proc = {"scenes": "procedural"}
    out = []
    for s in seeds:  # every signal on all training scenes; render also on fewer
        full = {"n_scenes": cfg.n_train, **proc}
        out += [Unit(task_name(cfg.n_train), v, s, full) for v in signals]
        if "render" in variants:
            out += [
                Unit(task_name(n), "render", s, {"n_scenes": n, **proc}) for n in cfg.scaling_scenes
            ]
        if cfg.n_train_meshes:
            n = cfg.n_train_meshes
            mesh = {"n_scenes": n, "scenes": "meshes"}
            out += [Unit(task_name(n, "meshes"), v, s, mesh) for v in signals]
        if cfg.pretrain_scenes:
            ft = {"n_labeled": cfg.finetune_scenes, **proc}
            out += [Unit(task_name(cfg.n_train), v, s, ft) for v in variants if v in FINETUNE]
    known = set(tasks)
    return [u for u in out if u.task in known]


def build_net(cfg: LiftGSConfig):
    from reprolab.methods.lift_gs.net import PointQueryNet

    return PointQueryNet(cfg.queries, cfg.hidden, cfg.knn, cfg.rounds)


#: the draw of the labelled scenes per seed (``finetune_draw: per_seed``) reads its own
#: stream: the key keeps it apart from every other use of the unit's seed
FINETUNE_DRAW_KEY = 4601


def labelled_scenes(cfg: LiftGSConfig, seed: int | None = None) -> np.ndarray:
    """The 2n training scenes of the fine-tuning arms, in draw order: the first n are the
    labelled scenes of every arm, all 2n those of the 2n-scene baseline. ``last``: the
    last 2n training scenes (the same for every seed); ``per_seed``: 2n distinct scenes
    drawn uniformly from the ``n_train - 2N`` training scenes that no pretraining set
    holds, from the unit's ``seed`` (the same seed draws the same scenes)."""
    n2 = 2 * cfg.finetune_scenes
    if cfg.finetune_draw == "last":
        n = cfg.finetune_scenes
        return np.concatenate(
            [np.arange(cfg.n_train - n, cfg.n_train), np.arange(cfg.n_train - n2, cfg.n_train - n)]
        )
    if seed is None:
        raise ValueError("finetune_draw: per_seed needs the unit's seed")
    first = 2 * cfg.pretrain_scenes  # scenes [0, 2N) are pretraining scenes
    rng = np.random.default_rng([FINETUNE_DRAW_KEY, int(seed)])
    return first + rng.permutation(cfg.n_train - first)[:n2]


def finetune_plan(
    variant: str, cfg: LiftGSConfig, seed: int | None = None
) -> dict[str, np.ndarray | int]:
    """Scenes and epochs of a pretrain-then-finetune variant. Pretraining reads the first
    N or 2N training scenes for the same number of scene visits (``pretrain_epochs`` x
    2N), so the arms differ in distinct unlabeled scenes, not in compute; fine-tuning
    reads n (or 2n) training scenes disjoint from every pretraining set
    (:func:`labelled_scenes`: the last ones, or drawn per ``seed``), for
    ``finetune_epochs`` x n scene visits."""
    k_pre, k_ft = FINETUNE[variant]
    n = cfg.finetune_scenes
    return {
        "pretrain": np.arange(k_pre * cfg.pretrain_scenes),
        "pretrain_epochs": cfg.pretrain_epochs * 2 // k_pre if k_pre else 0,
        "finetune": np.sort(labelled_scenes(cfg, seed)[: k_ft * n]),
        "finetune_epochs": cfg.finetune_epochs // k_ft,
    }


def _fit(
    net,
    signal: str,
    data: dict,
    scenes,
    epochs: int,
    cfg,
    seed: int,
    resume_dir: Path,
    trainer: TrainerConfig,
):
    import torch
    from torch.utils.data import DataLoader

    from reprolab.core.training import EpochBatchSampler, TensorBatches, fit_resumable
    from reprolab.methods.lift_gs.module import LiftModule

    module = LiftModule(net, signal, data, np.asarray(scenes), cfg, seed)
    sampler = EpochBatchSampler(len(scenes), cfg.batch_size, seed)
    loader = DataLoader(TensorBatches(torch.arange(len(scenes))), sampler=sampler, batch_size=None)
    fit_resumable(module, loader, None, epochs, resume_dir, trainer=trainer)
    return module


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import torch

    cfg = run.cfg
    torch.manual_seed(unit.seed)  # same initial weights for every signal under a seed
    net = build_net(cfg)
    if unit.variant not in FINETUNE:
        scenes = np.arange(int(unit.param["n_scenes"]))
        module = _fit(
            net, unit.variant, data, scenes, cfg.epochs, cfg, unit.seed, resume_dir, run.trainer
        )
        return TrainedUnit(
            state=net.state_dict(), history=module.history, signals=val_signals(net, data)
        )
    plan = finetune_plan(unit.variant, cfg, unit.seed)
    history = []
    if len(plan["pretrain"]):
        pre = _fit(
            net,
            "render",
            data,
            plan["pretrain"],
            plan["pretrain_epochs"],
            cfg,
            unit.seed,
            resume_dir / "pretrain",
            run.trainer,
        )
        history = [{"epoch": h["epoch"], "pretrain_loss": h["train_loss"]} for h in pre.history]
        progress(f"pretrained on {len(plan['pretrain'])} unlabeled scenes")
    ft = _fit(
        net,
        "sup3d",
        data,
        plan["finetune"],
        plan["finetune_epochs"],
        cfg,
        unit.seed,
        resume_dir / "finetune",
        run.trainer,
    )
    offset = len(history)
    history += [{**h, "epoch": h["epoch"] + offset} for h in ft.history]
    # which training scene the seed labels (the first of the draw): a fact of the data
    signals = {"labelled_scene": float(labelled_scenes(cfg, unit.seed)[0])}
    return TrainedUnit(
        state=net.state_dict(), history=history, signals={**signals, **val_signals(net, data)}
    )


def val_signals(net, data: dict) -> dict[str, float]:
    """The trained network's 3D IoU on the validation scenes (``n_val``; none: no
    signal): the check that 3D labels are scarce (fine-tuning from scratch on the
    labelled scenes against the 3D-supervised model on all training scenes) reads it,
    on scenes that are neither trained on nor held out for the claims."""
    if "val_points" not in data:
        return {}
    return {"val_miou": split_miou(net, data, "val")}


def split_miou(model, data: dict, split: str) -> float:
    """Mean Hungarian-matched 3D IoU over the objects of a split's scenes."""
    import torch

    from reprolab.methods.lift_gs.net import instance_ious

    points = torch.from_numpy(np.asarray(data[f"{split}_points"], np.float32))
    with torch.inference_mode():
        logits = torch.cat([model(points[i : i + 8]) for i in range(0, len(points), 8)]).numpy()
    ids, n_obj = np.asarray(data[f"{split}_ids"]), np.asarray(data[f"{split}_n_objects"])
    ious = [instance_ious(logits[i], ids[i], int(n_obj[i])) for i in range(len(logits))]
    return float(np.mean(np.concatenate(ious)))


def preview(data: dict, scene: int = 0) -> dict[str, np.ndarray]:
    """One held-out scene (points, cameras, teacher masks, labels) for the plots."""
    keys = ("points", "ids", "n_objects", "sigma", "R", "t", "masks", "mask_count", "labels")
    out = {k: np.asarray(data[f"test_{k}"])[scene] for k in keys}
    out["intrinsics"] = np.asarray(data["intrinsics"])
    return out


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    net = restore_module(build_net(run.cfg), state)
    net.preview = preview(data)  # a held-out scene to draw (plain attribute, not state)
    return net


# ---------------------------------------------------------------- evaluate


def test_logits(model, data: dict, batch: int = 8) -> np.ndarray:
    import torch

    points = torch.from_numpy(np.asarray(data["test_points"], np.float32))
    with torch.inference_mode():
        return torch.cat([model(points[i : i + batch]) for i in range(0, len(points), batch)])


def evaluate_unit(
    run: Run, model: torch.nn.Module, unit: Unit, data: dict, history: list[dict]
) -> dict[str, float]:
    from reprolab.methods.lift_gs.net import instance_ious

    logits = test_logits(model, data).numpy()
    ids, n_obj = np.asarray(data["test_ids"]), np.asarray(data["test_n_objects"])
    occluded = np.asarray(data["test_occluded"]).astype(bool)
    all_iou, occ_iou, vis_iou = [], [], []
    for i in range(len(logits)):
        ious = instance_ious(logits[i], ids[i], int(n_obj[i]))
        all_iou += list(ious)
        occ_iou += list(ious[occluded[i, : n_obj[i]]])
        vis_iou += list(ious[~occluded[i, : n_obj[i]]])
    return {
        "miou": float(np.mean(all_iou)),
        "miou_occluded": float(np.mean(occ_iou)),
        "miou_visible": float(np.mean(vis_iou)),
        "final_train_loss": float(history[-1]["train_loss"]) if history else float("nan"),
    }


def example_input(run: Run, unit: Unit, data: dict) -> torch.Tensor:
    import torch

    return torch.from_numpy(np.asarray(data["test_points"], np.float32)[:4])


def calibration_inputs(run: Run, unit: Unit, data: dict, model) -> list:
    """Training scenes (never held-out ones) calibrate the quantizers."""
    import torch

    return [torch.from_numpy(np.asarray(data["train_points"], np.float32)[:8])]


def plots(run: Run, table: pd.DataFrame, out_dir: Path, trained: TrainedUnits) -> list[Path]:
    from reprolab.methods.lift_gs import plots as figs

    out = [
        figs.miou_by_variant(table, out_dir / "miou_by_variant.png"),
        figs.scaling_curve(table, out_dir / "render_scaling.png"),
        figs.rendered_vs_teacher(trained, out_dir / "rendered_vs_teacher.png"),
        figs.loss_curves(trained, out_dir / "train_loss_by_epoch.png"),
    ]
    if "meshes" in set(table.scenes):
        out.append(figs.miou_by_variant(table, out_dir / "miou_by_variant_meshes.png", "meshes"))
    if table.variant.isin(list(figs.FINETUNE)).any():
        out.append(figs.finetune_bars(table, out_dir / "pretrain_finetune.png"))
    return out
