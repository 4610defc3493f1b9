"""The exact bias of per-turn-index normalisation where the agent decides when to stop.

``python -m baselines snr_lab turn-bias [--episodes N] [--out DIR]`` measures, in
the open lab (:mod:`baselines.experiments.snr_lab.measure`), ``rloo``, ``turn_index_norm`` and
``turn_index_norm{"fix": true}`` on ``SearchOrAnswer-v0`` under two policies: the uniform one
and a *trained* one (:func:`train_by_exact_ascent`: exact policy-gradient ascent from uniform
over logits shared by equal observations, so it cannot read the hidden answer). Beside each
measured relative bias ``||E g - grad J|| / ||grad J||`` (jackknife 95% interval) it prints

- the closed form for the lab's groups (:func:`routine_envs.turn_bias.turn_index_norm_gradient`:
  ``rloo`` is unbiased, 0; the fix scales the gradient by ``(G - 1) / G``, so ``1 / G``);
- verl RFC #7244's closed form, the infinite-group limit, where the natural variant's ``E g``
  is the gradient of the return plus the accumulated group means of the intermediate rewards
  (here: a search bonus equal to its cost), and the fix is unbiased;

and whether the closed form lies inside the measured interval. Writes ``turn_bias.csv``,
``turn_bias.json`` and ``turn_bias.png`` in ``--out`` (the lab's own tables in its subfolders).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.experiments.snr_lab.measure import MeasureArgs
from baselines.experiments.snr_lab.measure import main as measure
from baselines.lib.tables import format_table, write_csv
from routine_envs import snr
from routine_envs.turn_bias import turn_index_norm_bias

ENV_ID = "SearchOrAnswer-v0"
ENV_KWARGS: dict[str, Any] = {"search_cost": 0.08, "find_probability": 0.7}
"""Searches are worth their cost (the agent's plan searches until it finds the answer)."""
READING_LENGTH = 1
ESTIMATORS = ("rloo", "turn_index_norm", 'turn_index_norm{"fix": true}')
GROUP_SIZE = 8
ASCENT_STEPS, ASCENT_RATE = 30, 30.0


def train_by_exact_ascent(env: Any, steps: int, rate: float) -> np.ndarray:
    """A policy trained by ``steps`` of exact policy-gradient ascent (step ``rate``) from
    uniform, its logits shared by states with equal observations (an agent's policy): the
    probability table ``(num_states, num_actions)``."""
    anchors = env.dynamics.anchors_of(np.arange(env.num_states))
    _, rows = np.unique(anchors, return_inverse=True)
    logits = np.zeros((int(rows.max()) + 1, env.num_actions))
    for _ in range(steps):
        policy = snr.TabularSoftmax(logits, rows)
        logits = logits + rate * snr.exact_policy_gradient(env, policy).reshape(logits.shape)
    return snr.TabularSoftmax(logits, rows).probs()


def closed_forms(env: Any, probs: np.ndarray, estimator: str) -> tuple[float, float]:
    """``(for groups of GROUP_SIZE, the RFC's infinite-group limit)`` of the relative bias of
    ``estimator`` under the policy ``probs`` (per-state logits, the lab's parameters)."""
    policy = snr.TabularSoftmax.per_state(env.num_states, env.num_actions, np.log(probs))
    if estimator == "rloo":  # leave-one-out: unbiased at every group size
        return 0.0, 0.0
    fix = "fix" in estimator
    finite = turn_index_norm_bias(env, policy, GROUP_SIZE, fix=fix)["relative_bias"]
    return finite, turn_index_norm_bias(env, policy, None, fix=fix)["relative_bias"]


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Measured relative bias (95% interval) beside both closed forms, and the SNR, per
    policy and estimator."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = list(dict.fromkeys(r["policy"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(ESTIMATORS)
    for k, name in enumerate(ESTIMATORS):
        mine = [
            next(r for r in rows if r["policy"] == p and r["estimator"] == name) for p in policies
        ]
        x = np.arange(len(policies)) + (k - (len(ESTIMATORS) - 1) / 2) * width
        bias = np.array([r["relative_bias"] for r in mine])
        err = np.array(
            [[r["relative_bias"] - r["relative_bias_low"] for r in mine],
             [r["relative_bias_high"] - r["relative_bias"] for r in mine]]
        )  # fmt: skip
        axes[0].bar(x, bias, width, yerr=err, capsize=3, label=f"{name}: measured", alpha=0.6)
        axes[0].scatter(x, [r["closed_form"] for r in mine], marker="_", s=400, color="k")
        axes[0].scatter(x, [r["rfc_limit"] for r in mine], marker="x", color="crimson")
        snr_err = np.array(
            [[r["snr"] - r["snr_low"] for r in mine], [r["snr_high"] - r["snr"] for r in mine]]
        )
        axes[1].bar(x, [r["snr"] for r in mine], width, yerr=snr_err, capsize=3, label=name)
    axes[0].scatter(
        [], [], marker="_", s=400, color="k", label=f"closed form, groups of {GROUP_SIZE}"
    )
    axes[0].scatter([], [], marker="x", color="crimson", label="RFC #7244 limit (infinite groups)")
    titles = ("relative bias ||E g - grad J|| / ||grad J||", "SNR per episode")
    for ax, title in zip(axes, titles, strict=True):
        ax.set_xticks(np.arange(len(policies)), policies)
        ax.set_title(title)
    top = max(max(r["relative_bias_high"], r["rfc_limit"]) for r in rows)
    axes[0].set_ylim(0, 1.6 * top)  # room for the legend above the bars
    axes[0].legend(fontsize=7, loc="upper left", ncol=2)
    axes[1].legend(fontsize=7)
    fig.suptitle(f"{ENV_ID}{json.dumps(ENV_KWARGS)}, reading_length {READING_LENGTH}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(episodes: int, out: Path, seed: int = 0) -> list[dict[str, Any]]:
    """Measure both policies, compare with the closed forms, write the table, JSON and PNG."""
    out.mkdir(parents=True, exist_ok=True)
    env = gym.make(ENV_ID, **ENV_KWARGS, reading_length=READING_LENGTH).unwrapped
    trained = train_by_exact_ascent(env, ASCENT_STEPS, ASCENT_RATE)
    np.save(out / "trained_policy.npy", trained)
    uniform = np.full((env.num_states, env.num_actions), 1.0 / env.num_actions)
    rows = []
    for name, spec, probs in (
        ("uniform", "uniform", uniform),
        ("trained", str(out / "trained_policy.npy"), trained),
    ):
        args = MeasureArgs(
            env_id=ENV_ID,
            env_kwargs=ENV_KWARGS,
            routine_lengths=[READING_LENGTH],
            estimators=list(ESTIMATORS),
            policy=spec,
            episodes=episodes,
            group_size=GROUP_SIZE,
            seed=seed,
            workers=1,
            out=out / name,
        )
        j = float(env.model().initial @ env.oracle(probs).v)
        for r in measure(args)["rows"]:
            finite, limit = closed_forms(env, probs, r["estimator"])
            inside = r["relative_bias_low"] <= finite <= r["relative_bias_high"]
            rows.append(
                {
                    "policy": name,
                    "J": j,
                    "estimator": r["estimator"],
                    "relative_bias": r["relative_bias"],
                    "relative_bias_low": r["relative_bias_low"],
                    "relative_bias_high": r["relative_bias_high"],
                    "closed_form": finite,
                    "rfc_limit": limit,
                    "closed_form_inside_interval": bool(inside),
                    "snr": r["snr"],
                    "snr_low": r["snr_low"],
                    "snr_high": r["snr_high"],
                    "episodes": episodes,
                    "group_size": GROUP_SIZE,
                }
            )
    write_csv(out / "turn_bias.csv", rows)
    setting = {"env_id": ENV_ID, "env_kwargs": ENV_KWARGS, "reading_length": READING_LENGTH}
    summary = {**setting, "ascent": [ASCENT_STEPS, ASCENT_RATE], "seed": seed, "rows": rows}
    (out / "turn_bias.json").write_text(json.dumps(summary, indent=2, allow_nan=False))
    plot(rows, out / "turn_bias.png")
    shown = [
        {
            "policy": f"{r['policy']} (J {r['J']:.3f})",
            "estimator": r["estimator"],
            "relative bias [95% CI]": f"{r['relative_bias']:.4f} [{r['relative_bias_low']:.4f}, "
            f"{r['relative_bias_high']:.4f}]",
            f"closed form (G={GROUP_SIZE})": f"{r['closed_form']:.4f}",
            "RFC limit (G=inf)": f"{r['rfc_limit']:.4f}",
            "inside": "yes" if r["closed_form_inside_interval"] else "NO",
            "SNR per episode [95% CI]": f"{r['snr']:.4f} [{r['snr_low']:.4f}, {r['snr_high']:.4f}]",
        }
        for r in rows
    ]
    print(format_table(shown))
    print(f"\nwrote {out}/: turn_bias.csv, turn_bias.json, turn_bias.png")
    return rows


@dataclass
class TurnBiasSettings:
    """The exact bias of per-turn-index normalisation on SearchOrAnswer-v0 (module docstring)."""

    episodes: int = field(
        default=400_000, metadata={"help": "episodes per policy", "min": GROUP_SIZE}
    )
    seed: int = field(default=0, metadata={"help": "seed of the episodes", "min": 0})
    out: Path = field(default=Path("results/snr/turn_bias"), metadata={"help": "output folder"})


def run(settings: TurnBiasSettings) -> list[dict[str, Any]]:
    """``python -m baselines snr_lab turn-bias``: :func:`main` of ``settings``."""
    return main(settings.episodes, settings.out, settings.seed)
