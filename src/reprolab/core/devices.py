"""Whether this machine has what params.yaml's ``trainer`` section asks for (torch only,
no Lightning import: the train stage checks it before any compute)."""

from __future__ import annotations

import os

from reprolab.contract import TrainerConfig


def check_device(trainer: TrainerConfig, where: str) -> None:
    """Fail before any compute when ``trainer`` asks for a device this machine lacks;
    ``where`` names the params keys to change."""
    import torch

    cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if trainer.accelerator in ("gpu", "cuda") and cuda == 0:
        raise ValueError(
            f"{where}: accelerator {trainer.accelerator!r}, but this machine has no CUDA GPU "
            f"(torch {torch.__version__}); use accelerator: auto or cpu"
        )
    if trainer.accelerator == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{where}: accelerator 'mps', but MPS is not available here")
    on_gpu = cuda > 0 and trainer.accelerator in ("auto", "gpu", "cuda")
    if trainer.precision == "16-mixed" and not on_gpu:
        raise ValueError(
            f"{where}: precision '16-mixed' needs a CUDA GPU; on the CPU use bf16-mixed or 32-true"
        )
    if isinstance(trainer.devices, int):
        have = cuda if on_gpu else (os.cpu_count() or 1)
        if trainer.devices > have:
            kind = "GPU(s)" if on_gpu else "CPU core(s)"
            raise ValueError(
                f"{where}: devices {trainer.devices}, but this machine has {have} {kind}"
            )
