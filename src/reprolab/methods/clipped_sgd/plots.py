"""Clipped SGD figures: error vs iterations per beta and method (log-log), and the
plateau against beta next to PCSGD's predicted floor."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.core.plots import mean_ci, plt, save_figure

COLORS = {"pcsgd": "tab:red", "dicesgd": "tab:blue", "nonbinding": "tab:green"}
# DiceSGD and the control often coincide: dashes keep both visible.
STYLES = {"pcsgd": "-", "dicesgd": "--", "nonbinding": ":"}
TITLES = {"quad": "quadratic model", "strat": "strategic classification"}


def error_curves(histories: dict, table: pd.DataFrame, family: str, path: Path) -> Path:
    """One panel per (setting, beta): mean over seeds of the mean squared error to
    theta_PS against the iteration, one line per method; dashed: PCSGD's predicted floor."""
    rows = []
    for unit, history in histories.items():
        setting = unit.param
        if setting["family"] != family:
            continue
        beta, c, sigma = setting["beta"], setting["c"], setting["sigma"]
        for h in history:
            rows.append(
                {
                    "setting": f"c={c:g}, sigma={sigma:g}",
                    "beta": beta,
                    "task": unit.task,
                    "variant": unit.variant,
                    "step": h["step"],
                    "mse": h["mse"],
                }
            )
    curves = pd.DataFrame(rows)
    settings = sorted(curves.setting.unique())
    betas = sorted(curves.beta.unique())
    floors = (
        table[(table.metric == "predicted_floor") & (table.precision == "fp32")]
        .groupby("task")
        .value.first()
    )
    fig, axes = plt.subplots(
        len(settings),
        len(betas),
        figsize=(3.2 * len(betas), 2.6 * len(settings)),
        squeeze=False,
        sharex=True,
    )
    for i, setting in enumerate(settings):
        for j, beta in enumerate(betas):
            ax = axes[i][j]
            panel = curves[(curves.setting == setting) & (curves.beta == beta)]
            for variant, rows_v in panel.groupby("variant"):
                mean = rows_v.groupby("step").mse.mean()
                ax.loglog(
                    mean.index,
                    mean.to_numpy(),
                    color=COLORS.get(variant),
                    ls=STYLES.get(variant, "-"),
                    label=variant,
                )
            if not panel.empty and panel.task.iloc[0] in floors.index:
                floor = floors[panel.task.iloc[0]]
                if floor > 0:
                    ax.axhline(floor, color="k", ls="--", lw=0.8, label="PCSGD floor (theory)")
            ax.set_title(f"beta={beta:g}, {setting}", fontsize=8)
            if j == 0:
                ax.set_ylabel("E ||theta_t - theta_PS||^2")
            if i == len(settings) - 1:
                ax.set_xlabel("iteration t")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Error vs iterations ({TITLES[family]}; mean over seeds)")
    return save_figure(fig, path, dpi=100)


def plateau_vs_beta(table: pd.DataFrame, family: str, path: Path) -> Path:
    """Plateau (mean over seeds, 95% CI) against beta per method and setting."""
    rows = table[
        (table.precision == "fp32") & (table.metric.isin(["plateau_mse", "predicted_floor"]))
    ]
    rows = rows[rows.family == family]
    rows = rows.assign(
        beta=rows.beta.astype(float),
        setting=[f"c={c:g}, sigma={s:g}" for c, s in zip(rows.c, rows.sigma, strict=True)],
    )
    settings = sorted(rows.setting.unique())
    fig, axes = plt.subplots(1, len(settings), figsize=(4 * len(settings), 3.4), squeeze=False)
    for ax, setting in zip(axes[0], settings, strict=True):
        sub = rows[rows.setting == setting]
        plateau = sub[sub.metric == "plateau_mse"]
        for variant, rows_v in plateau.groupby("variant"):
            betas, means, errs = [], [], []
            for beta, vals in rows_v.groupby("beta"):
                mean, err = mean_ci(vals.value)
                betas.append(beta)
                means.append(mean)
                errs.append(err)
            ax.errorbar(
                betas,
                means,
                yerr=errs,
                marker="o",
                capsize=2,
                color=COLORS.get(variant),
                ls=STYLES.get(variant, "-"),
                label=variant,
            )
        floor = sub[sub.metric == "predicted_floor"].groupby("beta").value.first()
        ax.plot(floor.index, floor.to_numpy(), "k--", lw=0.8, label="PCSGD floor (theory)")
        ax.set(yscale="log", xlabel="sensitivity beta")
        ax.set_title(setting, fontsize=9)
    axes[0][0].set_ylabel("plateau mse (last 20% of iterations)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Plateau vs beta ({TITLES[family]})")
    return save_figure(fig, path, dpi=100)
