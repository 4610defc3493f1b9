"""Analysis of the network SNR: the figure of the ratio against rho."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib.tables import pyplot


def plot_network(rows: list[dict[str, Any]], summary: dict[str, Any], path: Path) -> None:
    """The measured SNR ratio (perfect critic over trajectory) against rho with its 95% interval,
    beside the closed form of the uniform tabular policy."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    rho = np.array([r["rho"] for r in rows])
    y = np.array([r["ratio"] for r in rows])
    err = [y - [r["ratio_low"] for r in rows], [r["ratio_high"] for r in rows] - y]
    ax.errorbar(
        rho,
        y,
        yerr=err,
        marker="o",
        linestyle="none",
        capsize=3,
        label=(
            f"MLP {summary['net_arch']} at init (slope {summary['slope']:.3f}, "
            f"R^2 {summary['r2']:.4f})"
        ),
    )
    ax.plot(
        rho,
        [r["theory_ratio_uniform_tabular"] for r in rows],
        "k-",
        lw=1,
        label="closed form, uniform tabular policy",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("decision density rho")
    ax.set_ylabel("SNR(perfect critic) / SNR(trajectory)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
