"""LIFT-GS: render-supervised distillation from 2D masks into a 3D point model.

Paper: "From Thousands to Billions: 3D Visual Language Grounding via Render-Supervised
Distillation from 2D VLMs" (arXiv 2502.20389, ICML 2025). No official code was
released; project page https://liftgs.github.io.
"""

from reprolab.contract import MethodSpec, Quantization, Variant
from reprolab.methods.lift_gs.claims import CLAIMS
from reprolab.methods.lift_gs.config import PROFILE_DEFAULTS, LiftGSConfig

SPEC = MethodSpec(
    slug="lift_gs",
    title="LIFT-GS: render-supervised distillation of 2D masks into 3D point masks",
    paper=(
        "Cao et al., From Thousands to Billions: 3D Visual Language Grounding via "
        "Render-Supervised Distillation from 2D VLMs (ICML 2025, PMLR 267:6505-6521, arXiv 2502.20389)"
    ),
    code="https://liftgs.github.io (no code released)",
    config_model=LiftGSConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "render",
            "render supervision: Gaussian-splatted query masks vs 2D teacher masks "
            "(Hungarian-matched BCE + dice)",
            is_method=True,
        ),
        Variant(
            "unproj",
            "unprojection of the 2D teacher masks to points: depth-aware (a z-buffer over the "
            "points) when unproj_depth_tolerance is set, else naive (no depth test)",
        ),
        Variant(
            "unproj_naive",
            "naive unprojection (no depth test), run next to unproj only when unproj has the "
            "depth test",
        ),
        Variant("sup3d", "3D-supervised on ground-truth point labels (upper bound)"),
        Variant(
            "ft_pre2x",
            "render-supervised pretraining on 2N unlabeled scenes, then 3D-supervised "
            "fine-tuning on n labeled scenes",
        ),
        Variant(
            "ft_pre1x",
            "render-supervised pretraining on N unlabeled scenes (same pretraining budget), "
            "then the same fine-tuning",
        ),
        Variant("ft_scratch", "the same fine-tuning on n labeled scenes, from scratch"),
        Variant(
            "ft_scratch_2lab",
            "fine-tuning on 2n labeled scenes from scratch (same budget in scene visits)",
        ),
    ),
    claims=CLAIMS,
    quantization=Quantization(schemes=("int8_dynamic", "rtn_w8a8", "rtn_w4a4")),
    metrics=("miou", "miou_occluded", "miou_visible", "final_train_loss"),
    test_overrides={
        "n_train": 4,
        "n_test": 4,
        "n_points": 64,
        "image_size": 12,
        "n_views": 4,
        "hidden": 8,
        "epochs": 1,
        "batch_size": 2,
        "scaling_scenes": [2],
        "n_train_meshes": 2,
        "n_test_meshes": 2,
        "pretrain_scenes": 1,
        "pretrain_epochs": 1,
        "finetune_scenes": 1,
        "finetune_epochs": 2,
        "quantization": ["int8_dynamic", "rtn_w4a4"],
        # the paper profile's paths: ray-cast teacher, depth-map unprojection next to the
        # naive one, validation scenes
        "teacher": "raycast",
        "unproj_depth": "sensor",
        "unproj_depth_tolerance": 0.05,
        "n_val": 2,
        # every code path at the fewest units: ft_pre1x runs render pretraining and
        # sup3d fine-tuning; the other ft_* variants differ from it in scene counts only
        "variants": ["render", "unproj", "unproj_naive", "ft_pre1x"],
    },
)
