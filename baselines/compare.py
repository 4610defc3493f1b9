"""The comparison runner: ``python -m baselines.compare --sweep demo``.

A sweep is environments x routine lengths x methods x seeds (settings only, in
:data:`SWEEPS`; flags override them). Each run is one :func:`baselines.train.main` in its own
process (one torch thread each, ``--workers`` at a time). Every finished run is appended as one
JSON line to ``<out>/results.jsonl`` (flushed and fsynced), so a sweep killed halfway and started
again runs only what is missing, and never duplicates a run. A corrupt or partial line (a crash
mid-write) is reported, moved to ``results.rejected.jsonl`` and its run done again.

Then the analysis (:mod:`baselines.analysis`) writes, as CSV and PNG beside the results:
learning curves with bootstrap bands, steps to the target success per method and rho, the ratio
trajectory-level / turn-level per rho, and a bsuite-style summary score per method.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from baselines import analysis

SWEEPS: dict[str, dict[str, Any]] = {
    # A few minutes on 2 cores: the demo's comparison.
    "demo": {
        "routine_lengths": [2, 20],
        "methods": ["ppo", "trajectory_mc"],
        "seeds": [0, 1, 2],
        "budget_episodes": 1200,
        "min_budget_steps": 30_000,
        "eval_points": 15,
    },
    # The rho sweep of the paper's second figure (hours on 2 cores).
    "rho": {
        "routine_lengths": [0, 1, 3, 7, 15, 30, 50],
        "methods": ["ppo", "trajectory_mc", "rloo", "gigpo", "routine_masked", "oracle"],
        "seeds": list(range(8)),
        "budget_episodes": 4000,
        "eval_points": 40,
    },
}


@dataclass
class SweepArgs:
    """Settings of a sweep."""

    env_id: str = field(default="DilutedDoors-v0", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "fixed gym.make kwargs (JSON)"}
    )
    routine_lengths: list[int] = field(
        default_factory=lambda: [2, 20], metadata={"help": "routine lengths L to sweep"}
    )
    methods: list[str] = field(
        default_factory=lambda: ["ppo", "trajectory_mc"],
        metadata={"help": "'ppo' and/or estimator names"},
    )
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2], metadata={"help": "seeds"})
    budget_episodes: int = field(
        default=1200,
        metadata={"help": "training budget per run, in episodes of the longest episode length"},
    )
    min_budget_steps: int = field(
        default=0,
        metadata={
            "help": "lower bound of the budget in steps (short episodes need enough updates)"
        },
    )
    eval_points: int = field(default=12, metadata={"help": "evaluations per run"})
    target_success: float = field(default=0.9, metadata={"help": "target success rate"})
    out: Path = field(default=Path("results/compare/demo"), metadata={"help": "output folder"})
    workers: int = field(default=2, metadata={"help": "runs in parallel (processes)"})
    baseline: str = field(default="ppo", metadata={"help": "turn-level method for ratios"})
    statistic: str = field(default="iqm", metadata={"help": "'iqm' or 'mean' for curves"})


# ------------------------------------------------------------------------------ the jobs
def run_key(job: dict[str, Any]) -> str:
    """The identity of a run: env, its kwargs, method and seed."""
    return json.dumps(
        [job["env_id"], job["env_kwargs"], job["method"], job["seed"]], sort_keys=True
    )


def plan(args: SweepArgs) -> list[dict[str, Any]]:
    """Every run of the sweep, validated before any training starts."""
    import gymnasium as gym

    import routine_envs
    from baselines.config import known_methods, load_hyperparameters

    gym.register_envs(routine_envs)
    if args.env_id not in gym.registry:
        raise ValueError(f"unknown environment {args.env_id!r}")
    if args.statistic not in analysis.STATISTICS:
        raise ValueError(f"statistic must be one of {sorted(analysis.STATISTICS)}")
    for method in args.methods:
        if method not in known_methods():
            raise ValueError(f"unknown method {method!r}; known: {known_methods()}")
        load_hyperparameters(args.env_id, method)  # a bad YAML key fails here
    if args.budget_episodes < 1 or args.eval_points < 1 or args.workers < 1:
        raise ValueError("budget_episodes, eval_points and workers must be >= 1")
    from routine_envs.registration import entry

    density_kwarg = entry(args.env_id).density_kwarg
    if density_kwarg is None:
        raise ValueError(f"{args.env_id} has no keyword argument that sets its decision density")
    return make_jobs(args, density_kwarg)


def make_jobs(
    args: Any,
    density_kwarg: str,
    extra: Callable[[Any], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One job per routine length x method x seed of a sweep's settings ``args``; the env is
    built once per length (bad kwargs fail here). ``extra(env)`` adds fields to every job."""
    import gymnasium as gym

    jobs = []
    for length in args.routine_lengths:
        kwargs = {**args.env_kwargs, density_kwarg: length}
        env = gym.make(args.env_id, **kwargs).unwrapped
        episode_length = getattr(env, "max_episode_length", None) or env.spec.max_episode_steps
        budget = max(args.budget_episodes * int(episode_length), args.min_budget_steps)
        eval_every = max(1, budget // args.eval_points)
        fields = extra(env) if extra is not None else {}
        for method in args.methods:
            for seed in args.seeds:
                jobs.append(
                    {
                        "env_id": args.env_id,
                        "env_kwargs": kwargs,
                        "method": method,
                        "seed": seed,
                        "routine_length": length,
                        "rho": float(env.decision_density),
                        **fields,
                        "budget": eval_every * args.eval_points,
                        "eval_every": eval_every,
                        "target": args.target_success,
                    }
                )
    return jobs


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Train one run (in a worker process) and return its record."""
    import torch

    torch.set_num_threads(1)
    from baselines.train import TrainArgs, main

    result = main(
        TrainArgs(
            env_id=job["env_id"],
            env_kwargs=job["env_kwargs"],
            method=job["method"],
            seed=job["seed"],
            total_timesteps=job["budget"],
            eval_every=job["eval_every"],
            target_success=job["target"],
            progress=False,
        )
    )
    return {
        **job,
        "key": run_key(job),
        "timesteps": result.timesteps,
        "success": result.success,
        "steps_to_target": result.steps_to_target,
        "wall_time": result.wall_time,
        "hyperparameters": result.hyperparameters,
    }


# --------------------------------------------------------------------------- the results
REQUIRED = (
    "key",
    "method",
    "seed",
    "routine_length",
    "rho",
    "timesteps",
    "success",
    "budget",
    "target",
)


class ResultsFile:
    """An append-only JSON-lines file of run records that survives interruptions."""

    def __init__(self, path: Path, required: tuple[str, ...] = REQUIRED) -> None:
        self.path = path
        self.required = required
        self.rejected = path.with_name(path.stem + ".rejected.jsonl")

    def load(self, report: Any = print) -> list[dict[str, Any]]:
        """The good records. Corrupt, partial or duplicate lines are reported, moved to
        ``*.rejected.jsonl`` and removed from the file (rewritten atomically)."""
        if not self.path.exists():
            return []
        good, bad, seen = [], [], set()
        lines = self.path.read_bytes().split(b"\n")
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
                missing = [k for k in self.required if k not in record]
                if missing:
                    raise ValueError(f"missing fields {missing}")
            except ValueError as err:
                last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
                kind = "partial last line" if last else "corrupt line"
                report(f"{self.path}: {kind} {number} ({err}); moved to {self.rejected.name}")
                bad.append(raw)
                continue
            if record["key"] in seen:
                report(
                    f"{self.path}: duplicate run on line {number}; moved to {self.rejected.name}"
                )
                bad.append(raw)
                continue
            seen.add(record["key"])
            good.append(record)
        if bad or (lines and lines[-1] != b""):
            with self.rejected.open("ab") as f:
                for raw in bad:
                    f.write(raw + b"\n")
            tmp = self.path.with_name(self.path.name + ".tmp")
            with tmp.open("wb") as f:
                for record in good:
                    f.write(json.dumps(record).encode() + b"\n")
                f.flush()
                os.fsync(f.fileno())
            tmp.replace(self.path)
        return good

    def append(self, record: dict[str, Any]) -> None:
        """Append one record as one line, flushed to disk before returning."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as f:
            f.write(json.dumps(record).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())


# --------------------------------------------------------------------------------- sweep
def run_resumable(
    jobs: list[dict[str, Any]],
    key: Callable[[dict[str, Any]], str],
    worker: Callable[[dict[str, Any]], dict[str, Any]],
    path: Path,
    workers: int,
    required: tuple[str, ...] = REQUIRED,
    progress: bool = True,
    unit: str = "run",
) -> list[dict[str, Any]]:
    """Run the jobs whose ``key`` is not yet in the results file at ``path`` with ``worker``
    (``workers`` spawned processes, or in this process for 1), appending each record as soon as
    it is done; return the records of all ``jobs`` in order. ``worker`` must be importable by
    name (spawned processes look it up)."""
    from tqdm import tqdm

    store = ResultsFile(path, required)
    done = {r["key"]: r for r in store.load()}
    todo = [j for j in jobs if key(j) not in done]
    print(
        f"{len(jobs)} {unit}s, {len(jobs) - len(todo)} already in {store.path}, "
        f"{len(todo)} to do on {workers} worker(s)",
        flush=True,
    )
    bar = tqdm(
        total=len(jobs),
        initial=len(jobs) - len(todo),
        unit=unit,
        disable=not progress,
        dynamic_ncols=True,
    )
    pool = None
    try:
        if workers > 1 and len(todo) > 1:
            pool = mp.get_context("spawn").Pool(min(workers, len(todo)))
            results = pool.imap_unordered(worker, todo)
        else:
            results = map(worker, todo)
        for record in results:
            record["key"] = key(record)
            store.append(record)
            done[record["key"]] = record
            bar.update()
    finally:
        if pool is not None:
            pool.terminate()
        bar.close()
    return [done[key(j)] for j in jobs]


def run_sweep(args: SweepArgs, progress: bool = True) -> list[dict[str, Any]]:
    """Run what is missing of the sweep; return every record of it."""
    return run_resumable(
        plan(args), run_key, run_job, args.out / "results.jsonl", args.workers, progress=progress
    )


def analyse(
    records: list[dict[str, Any]], out: Path, baseline: str = "ppo", statistic: str = "iqm"
) -> dict[str, list[dict[str, Any]]]:
    """Write the tables (CSV) and plots (PNG) of a sweep into ``out``; return the tables."""
    tables = {
        "learning_curves": analysis.learning_curves(records, statistic),
        "steps_to_target": analysis.steps_to_target_table(records),
        "ratio_to_turn_level": analysis.ratio_table(records, baseline),
        "summary_scores": analysis.summary_scores(records),
    }
    for name, rows in tables.items():
        analysis.write_csv(out / f"{name}.csv", rows)
    analysis.plot_learning_curves(tables["learning_curves"], out / "learning_curves.png", statistic)
    analysis.plot_steps_to_target(
        tables["steps_to_target"], tables["ratio_to_turn_level"], out / "steps_to_target.png"
    )
    analysis.plot_summary(tables["summary_scores"], out / "summary_scores.png")
    return tables


def report(tables: dict[str, list[dict[str, Any]]], records: list[dict[str, Any]]) -> None:
    hyper = records[0]["hyperparameters"] if records else {}
    print(
        f"\nsettings: {records[0]['env_id'] if records else ''} "
        f"seeds={sorted({r['seed'] for r in records})} hyperparameters={hyper}"
    )
    print(
        "\nsteps to target success (mean over seeds; censored = seeds that never reached it, "
        "counted at the budget):"
    )
    print(
        analysis.format_table(
            tables["steps_to_target"],
            [
                "routine_length",
                "rho",
                "method",
                "seeds",
                "reached",
                "mean_steps",
                "low",
                "high",
                "budget",
            ],
        )
    )
    print("\nratio of steps to target, method / turn-level baseline:")
    print(analysis.format_table(tables["ratio_to_turn_level"]))
    print("\nsummary score per method:")
    print(analysis.format_table(tables["summary_scores"]))


def main(args: SweepArgs) -> dict[str, list[dict[str, Any]]]:
    records = run_sweep(args)
    tables = analyse(records, args.out, args.baseline, args.statistic)
    report(tables, records)
    print(
        f"\nwrote {args.out}/: results.jsonl, learning_curves.csv/.png, steps_to_target.csv/"
        ".png, ratio_to_turn_level.csv, summary_scores.csv/.png"
    )
    return tables


def add_sweep_flags(parser: argparse.ArgumentParser, defaults: Any) -> None:
    """One flag per field of a sweep-settings dataclass (default ``None``: not given)."""
    for name, f in defaults.__dataclass_fields__.items():
        flag = "--" + name.replace("_", "-")
        help_text = f.metadata.get("help")
        if name == "env_kwargs":
            parser.add_argument(flag, type=json.loads, default=None, help=help_text)
        elif name in ("routine_lengths", "seeds"):
            parser.add_argument(flag, type=int, nargs="+", default=None, help=help_text)
        elif name == "methods":
            parser.add_argument(flag, nargs="+", default=None, help=help_text)
        else:
            kind = type(getattr(defaults, name))
            kind = Path if issubclass(kind, Path) else kind
            parser.add_argument(flag, type=kind, default=None, help=help_text)


def parse_args(argv: list[str] | None = None) -> SweepArgs:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sweep",
        choices=sorted(SWEEPS),
        default=None,
        help="a named sweep; other flags override its settings",
    )
    defaults = SweepArgs()
    add_sweep_flags(parser, defaults)
    ns = vars(parser.parse_args(argv))
    sweep = ns.pop("sweep")
    settings: dict[str, Any] = dict(SWEEPS[sweep]) if sweep else {}
    if sweep and ns.get("out") is None:
        settings["out"] = Path("results/compare") / sweep
    settings.update({k: v for k, v in ns.items() if v is not None})
    return replace(defaults, **settings)


if __name__ == "__main__":
    try:
        main(parse_args())
    except ValueError as err:
        sys.exit(f"error: {err}")
