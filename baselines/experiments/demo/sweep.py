"""The main job on its embedded defaults: ``make demo`` (``python -m baselines demo``).

1. A rendered Diluted Doors episode (text on stdout, a PNG of the last frame).
2. The measured decision density for several routine lengths beside ``1 / (1 + L)``.
3. The oracle's advantages under the uniform policy: exactly zero on every routine state.
4. The rho law: gradient SNR of the perfect critic over the trajectory advantage against rho,
   its log-log fit beside the closed form (``python -m baselines snr_lab rho-law`` on 20,000
   episodes per setting; ``results/demo/snr/rho_law``).
5. A short training comparison: SB3 PPO vs TrajectoryAdvantagePPO (trajectory_mc) at two
   routine lengths, 3 seeds (``python -m baselines compare --sweep demo``; tables and PNGs in
   ``results/demo/compare``).

Writes ``rho_by_routine_length.csv``, ``oracle_advantages.csv`` and ``episode.png`` into
``--out`` (default ``results/demo``). The demo's own analysis is the rho table
(:mod:`baselines.experiments.demo.analysis`); the rho law and the comparison are analysed by
their experiments.
"""

from __future__ import annotations

import contextlib
import csv
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np

import routine_envs
from baselines.experiments.demo import analysis
from baselines.lib import cli
from baselines.lib.backend import BackendArgs, backend_fields
from baselines.lib.tables import write_csv
from routine_envs.envs.diluted_doors_v1 import DilutedDoorsV1Env

gym.register_envs(routine_envs)


@dataclass
class DemoArgs(BackendArgs):
    """Settings of the demo (the backend is that of its rho law and comparison)."""

    out: Path = field(default=Path("results/demo"), metadata={"help": "output folder"})
    episodes: int = field(default=300, metadata={"help": "episodes per routine length"})
    routine_lengths: tuple[int, ...] = field(
        default=(0, 1, 3, 10, 30, 50), metadata={"help": "routine lengths L to measure"}
    )
    seed: int = field(default=0, metadata={"help": "seed of the episodes and the policy"})
    compare: bool = field(default=True, metadata={"help": "run the short training comparison"})
    snr_episodes: int = field(default=20_000, metadata={"help": "episodes per rho-law setting"})
    workers: int = field(
        default=2,
        metadata={"help": "processes of the rho law and of the comparison's runs", "min": 1},
    )


def show_episode(out: Path, seed: int) -> dict[str, float]:
    """Play a short episode with a random policy, printing the text rendering at each door.

    The picture's title shows the configured rho ``1 / (1 + L)``; the episode-end info's
    ``decision_density`` is the share of critical steps this episode visited, lower after a wrong
    door under the success reward (the later doors are routine then). Both are printed, named,
    with the reason they differ. Returns ``{"configured_rho", "visited_rho", "doors",
    "routine_doors"}``.
    """
    env = gym.make("DilutedDoors-v1", routine_length=3, render_mode="ansi")
    rgb = gym.make("DilutedDoors-v1", routine_length=3, render_mode="rgb_array")
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    rgb.reset(seed=seed)
    frames = [rgb.render()]  # one frame at each door, and the last one
    configured = env.unwrapped.decision_density
    print("== 1. A Diluted Doors episode (3 floors, 3 doors, L = 3; uniform random policy)")
    print(
        f"The picture's rho={configured:.4f} is the configured rho 1/(1+L), every door critical;"
        f"\nthe episode-end decision_density is the share of critical steps this episode visited:"
        f"\nunder the success reward, doors after a wrong one are routine (the episode has failed"
        f"\nwhatever they choose), so it is lower after a mistake."
    )
    print(ANSI_LEGEND)
    print(env.render())
    captions = ["step 0: at floor 1's doors (a decision)"]
    done, step, doors, routine_doors = False, 0, 0, 0
    while not done:
        action = int(rng.integers(env.action_space.n))
        kind = "critical" if info["critical"] else "routine "
        at_door = env.unwrapped.state.position == 0
        doors += at_door
        routine_doors += at_door and not info["critical"]
        _, reward, terminated, truncated, info = env.step(action)
        rgb.step(action)
        step += 1
        here = rgb.unwrapped.state
        if here.position == 0:
            frames.append(rgb.render())
            if terminated or truncated:
                captions.append(f"step {step}: the episode is over")
            else:
                what = "a decision" if info["critical"] else "routine: the episode has failed"
                captions.append(f"step {step}: at floor {here.floor + 1}'s doors ({what})")
        note = "  (a door after a wrong one)" if at_door and kind == "routine " else ""
        print(f"step {step:>2}  {kind} state  action {action}  reward {reward}{note}")
        done = terminated or truncated
    print(env.render())
    end = {k: info[k] for k in routine_envs.annotations.EPISODE_END_KEYS}
    print(f"episode-end info: {end}")
    visited = info["decision_density"]
    why = (
        f"{routine_doors} of the {doors} doors came after a wrong one and "
        f"{'was' if routine_doors == 1 else 'were'} routine"
        if routine_doors
        else "no door came after a wrong one"
    )
    relation = "=" if math.isclose(visited, configured) else "<"
    print(
        f"visited rho = {info['num_critical']} critical / {info['episode_length']} steps = "
        f"{visited:.4f} {relation} configured rho 1/(1+L) = {configured:.4f}: {why}\n"
    )
    unwrapped = env.unwrapped
    title = (
        f"A Diluted Doors episode: {unwrapped.num_floors} floors of {unwrapped.num_doors} doors, "
        f"L = {unwrapped.routine_length} routine corridor steps after each door, "
        "uniform random policy\n"
        f"configured rho = 1/(1+L) = {configured:.3f} (every door a decision); this episode "
        f"visited {info['num_critical']} critical of {info['episode_length']} steps: "
        f"rho = {visited:.3f}"
    )
    episode_figure(frames, captions, title, out / "episode.png")
    return {
        "configured_rho": configured,
        "visited_rho": visited,
        "doors": doors,
        "routine_doors": routine_doors,
    }


ANSI_LEGEND = (
    "Legend: one line per floor, the doors then the corridor they open. [k]+ door k chosen, "
    "right;\n[k]x door k chosen, wrong; @ the agent (@! at the doors: a critical state, a "
    "decision);\n= corridor walked, . corridor ahead (routine steps: any action walks on); ? "
    "a corridor not yet opened."
)
"""What the terminal picture's marks mean (printed once above it)."""

EPISODE_LEGEND = (
    ("door", "a door, not chosen"),
    ("correct", "the door chosen: right"),
    ("wrong", "the door chosen: wrong"),
    ("agent", "the agent"),
    ("critical", "yellow frame: the agent's state is critical (a decision)"),
    ("corridor", "corridor step ahead (routine)"),
    ("walked", "corridor step walked (routine)"),
)
"""The picture's colours (:data:`routine_envs.rendering.doors.COLORS`) and what each means."""


def episode_figure(frames: list[np.ndarray], captions: list[str], title: str, path: Path) -> None:
    """The episode's frames (one at each floor's doors and the last), one panel each with its
    caption, under ``title``, with a key to every colour, written to ``path`` (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:  # pragma: no cover - matplotlib is part of the baselines extra
        print("(matplotlib not installed: episode.png not written)")
        return
    from routine_envs.rendering.doors import COLORS

    height, width = frames[0].shape[:2]
    panel = 3.0  # inches per frame's width
    fig, axes = plt.subplots(
        1, len(frames), figsize=(panel * len(frames), panel * height / width + 1.9),
        squeeze=False, layout="constrained",
    )  # fmt: skip
    for ax, frame, caption in zip(axes[0], frames, captions, strict=True):
        ax.imshow(frame, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(caption.replace(" (", "\n("), fontsize=9)
        ax.set_xlabel("doors | the corridor it opens", fontsize=8)
    axes[0, 0].set_ylabel("floor 1 (top) to the last", fontsize=8)
    handles = [
        Patch(facecolor=np.array(COLORS[key]) / 255, edgecolor="0.4", label=text)
        for key, text in EPISODE_LEGEND
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def count_critical(args: DemoArgs) -> list[dict[str, int]]:
    """Critical steps and steps of ``args.episodes`` episodes of the uniform policy, per
    routine length and reward (fraction, success), with the env's doors and floors."""
    counts = []
    for length in args.routine_lengths:
        for reward in ("fraction", "success"):
            env = DilutedDoorsV1Env(routine_length=length, reward=reward)
            rng = np.random.default_rng(args.seed)
            critical = steps = 0
            for ep in range(args.episodes):
                env.reset(seed=args.seed + ep)
                done = False
                while not done:
                    _, _, done, _, info = env.step(int(rng.integers(env.num_doors)))
                critical += info["num_critical"]
                steps += info["episode_length"]
            counts.append(
                {
                    "routine_length": length,
                    "reward": reward,
                    "critical": critical,
                    "steps": steps,
                    "num_doors": env.num_doors,
                    "num_floors": env.num_floors,
                }
            )
    return counts


def measure_rho(args: DemoArgs) -> list[dict[str, float]]:
    """Share of critical steps per routine length, fraction and success rewards, uniform policy
    (:func:`count_critical`, :func:`baselines.experiments.demo.analysis.rho_table`)."""
    return analysis.rho_table(count_critical(args))


def oracle_advantages() -> list[dict[str, float]]:
    """Largest |A^pi(s, a)| of the uniform policy over critical and over routine states."""
    rows = []
    for reward in ("success", "fraction"):
        env = DilutedDoorsV1Env(routine_length=10, reward=reward)
        values = env.oracle(np.full((env.num_states, env.num_doors), 1 / env.num_doors))
        model = env.model()
        decide = np.flatnonzero(model.decision_states)
        critical = env.dynamics.critical_table()[decide]
        adv = np.abs(values.advantage[decide]).max(axis=1)
        rows.append(
            {
                "reward": reward,
                "critical_states": int(critical.sum()),
                "routine_states": int((~critical).sum()),
                "max_abs_advantage_critical": float(adv[critical].max()),
                "max_abs_advantage_routine": float(adv[~critical].max()),
            }
        )
    return rows


def print_table(rows: list[dict]) -> None:
    widths = [max(len(c), 10) for c in rows[0]]
    print("  ".join(f"{c:>{w}}" for c, w in zip(rows[0], widths, strict=True)))
    for row in rows:
        cells = [
            f"{v:>{w}.5f}" if isinstance(v, float) else f"{v!s:>{w}}"
            for v, w in zip(row.values(), widths, strict=True)
        ]
        print("  ".join(cells))


def main(args: DemoArgs) -> None:
    cli.check_output_folder(args.out)  # before any work
    show_episode(args.out, args.seed)

    print(f"== 2. Decision density rho, {args.episodes} episodes per L (uniform random policy)")
    print(
        "rho is the share of steps that are decisions. With the fraction reward every door\n"
        "counts, so the measured share should equal 1/(1+L); with the success reward the doors\n"
        "after a wrong one are routine, so it is lower, as the last column predicts."
    )
    rho_rows = measure_rho(args)
    print_table(rho_rows)
    worst = max(abs(r["measured_rho_fraction"] / r["theory_1_over_1_plus_L"] - 1) for r in rho_rows)
    print(f"fraction reward: measured rho within {worst:.1%} of 1/(1+L) at every L")
    write_csv(args.out / "rho_by_routine_length.csv", rho_rows)
    print()

    print("== 3. Oracle advantages A^pi(s, a) of the uniform policy (L = 10): zero on routine")
    adv_rows = oracle_advantages()
    print_table(adv_rows)
    write_csv(args.out / "oracle_advantages.csv", adv_rows)
    print(f"\nwrote {args.out}/rho_by_routine_length.csv, oracle_advantages.csv, episode.png")

    print("\n== 4. The rho law: SNR(perfect critic) / SNR(trajectory advantage) against rho")
    # the other experiments' entry functions, imported here: parsing the demo's flags (which
    # loads this module) stays as light as the demo's own imports
    from baselines.experiments.snr_lab import sweep as snr_lab
    from baselines.lib.lab import PAPER, fit_text

    lab = cli.settings_from(
        snr_lab.LabCommand,
        {
            "experiment": "rho-law",
            "out": args.out / "snr",
            "episodes": args.snr_episodes,
            "workers": args.workers,
            **backend_fields(args),
        },
    )
    from baselines.experiments.snr_lab.analysis import PARAM_WORDS

    print(
        "How much cleaner is the gradient with a perfect critic? The ratio of gradient SNRs\n"
        "(perfect critic over the trajectory advantage, the uniform policy, the exact model)\n"
        "at each rho, measured on sampled episodes and beside its closed form; the paper\n"
        "predicts a slope of -1/2 on log-log axes."
    )
    start = time.perf_counter()
    summary = snr_lab.EXPERIMENTS["rho-law"](lab)  # its summary is told below, not dumped
    print_table(analysis.rho_law_rows(read_csv(lab.out / "rho_law" / "rho_law.csv")))
    print("(ratio [ratio_low, ratio_high]: measured with a 95% interval; ratio_is: importance-")
    print(" sampled; theory_ratio: the closed form)")
    for param, fit in summary["fits"].items():
        print(
            f"- {PARAM_WORDS.get(param, param)}: {fit_text(fit)}; the closed form lies within "
            f"the 95% interval at {fit['within_ci']} of {fit['settings']} densities"
        )
    print(
        f"- the closed form's own fit: {fit_text(summary['theory_fit'])}\n"
        f"- the paper: slope {PAPER['slope']}, R^2 {PAPER['r2']}\n"
        f"({args.snr_episodes} episodes per density, {time.perf_counter() - start:.0f} s; "
        f"plot: {lab.out / 'rho_law' / 'rho_law.png'})"
    )

    if args.compare:
        print("\n== 5. PPO (turn-level, learned critic) vs TrajectoryAdvantagePPO (trajectory_mc)")
        from baselines.experiments.compare import sweep as compare

        settings = {
            "out": args.out / "compare",
            "workers": args.workers,
            **backend_fields(args),
        }
        named = compare.named_sweep({"sweep": "demo"})
        tables = compare.main(cli.settings_from(compare.CompareCommand, settings, named))
        ratios = tables.get("ratio_to_turn_level", []) if isinstance(tables, dict) else []
    else:
        ratios = []
    print("\n== What this showed")
    per_state = summary["fits"].get("per_state", {})
    print(
        f"- rho is the share of decisions: 1/(1+L) by construction, lower under the success "
        f"reward once a door is wrong.\n"
        f"- Routine states carry no advantage (exactly 0), so a critic-free method's signal "
        f"is diluted:\n  the perfect critic's SNR gain grows like rho^(-1/2) (measured slope "
        f"{per_state.get('slope', float('nan')):.3f}; the paper {PAPER['slope']})."
    )
    from baselines.lib.curves import shown

    for row in ratios:
        if row.get("ratio") is not None:
            print(
                f"- at rho {row['rho']:.3g} the trajectory advantage needed "
                f"{shown(row['ratio'], row['ratio_is'])}x [{row['low']:.2f}, {row['high']:.2f}] "
                "the steps of PPO's learned critic (3 seeds: a demo, not a benchmark; the "
                "benchmark: docs/benchmark.md)."
            )
    print(f"Files: {args.out}/ (episode.png, the CSVs), {args.out}/snr/, {args.out}/compare/")


def read_csv(path: Path) -> list[dict]:
    """A CSV written by the lab, numbers parsed."""
    with path.open() as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for key, value in row.items():
            with contextlib.suppress(ValueError):
                row[key] = float(value)
                row[key] = int(value)
    return rows
