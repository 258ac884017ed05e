"""What every method's figures share: a headless backend and one way to save a figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # stage processes have no display
import matplotlib.pyplot as plt  # noqa: E402


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Lay out, write and close ``fig``; return ``path`` (the plots hook's contract)."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
