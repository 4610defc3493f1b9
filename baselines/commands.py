"""Every command of the project in one tree: ``python -m baselines COMMAND`` and the
``routine-envs`` console script (``routine-envs benchmark run ...``, ``routine-envs train ...``,
``routine-envs diagnose ...``). ``--help`` lists them, one line each.

Each command is a row: its settings dataclass and the function that runs it, as
``"module:name"`` strings, loaded only when the command runs (so the listing, and ``diagnose``,
import neither torch nor SB3). Flags come from the settings' fields through the one generator,
:mod:`routine_envs.cli`; ``python -m baselines.<script>`` runs the same rows
(:func:`script`).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from routine_envs import commands as core
from routine_envs.cli import Command, Group, arguments, parse
from routine_envs.cli import main as run_tree

BACKEND_FIELDS = ("backend", "address", "max_in_flight", "retries")
REFERENCES_FIELDS = ("protocol", "tier", "out", "references_dir", "unverified_references")
_BENCH = "baselines.experiments.benchmark.command"
_LAB = "baselines.experiments.snr_lab.sweep"


def _benchmark(name: str, summary: str, *fields: str) -> Command:
    """A subcommand of ``benchmark``: the fields of ``BenchmarkArgs`` it reads."""
    return Command(
        name,
        summary,
        f"{_BENCH}:BenchmarkArgs",
        f"{_BENCH}:main",
        include=(*fields, *REFERENCES_FIELDS),
        fixed={"command": name},
        description=f"{summary[0].upper()}{summary[1:]} (docs/benchmark.md).",
    )


def _lab(name: str, summary: str, description: str) -> Command:
    """One of the SNR lab's experiments (``all``: every one)."""
    return Command(
        name,
        summary,
        f"{_LAB}:LabCommand",
        f"{_LAB}:main",
        fixed={"experiment": name},
        check=f"{_LAB}:check_command",
        description=f"{description} Diluted Doors (success reward, 3 floors, 3 doors) at every "
        "routine length, the uniform policy; results.jsonl (resumable), tables (CSV), figures "
        "(PNG) and summary.json under --out (docs/reproducing.md).",
    )


BENCHMARK = Group(
    "benchmark",
    "score a credit-assignment method on a versioned protocol against the references",
    (
        _benchmark(
            "run",
            "every run of a tier for a method (resumable), then its report card",
            "method",
            "env_id",
            "workers",
            "lab",
            "progress",
            "trainer",
            *BACKEND_FIELDS,
        ),
        _benchmark(
            "report",
            "the report card from the runs done so far",
            "method",
            "env_id",
            "lab",
            "trainer",
        ),
        _benchmark(
            "references",
            "what ships (verified) and its leaderboard; --compute runs the reference methods",
            "compute",
            "methods",
            "write_manifest",
            "env_id",
            "workers",
            "progress",
            "trainer",
            *BACKEND_FIELDS,
        ),
        _benchmark("leaderboard", "write the references' leaderboard to <out>/<version>/<tier>/"),
        _benchmark(
            "plan",
            "what a tier costs (runs, steps, CPU time) and its wall time on N cores",
            "method",
            "env_id",
            "cores",
            "trainer",
        ),
        _benchmark(
            "submit",
            "the report card, then one file with it, the scored rows, the drops manifest and "
            "the method's source",
            "method",
            "env_id",
            "lab",
            "trainer",
            "partial",
        ),
        _benchmark(
            "verify-submission",
            "check a submission file as data: its plan, its card and manifest rebuilt from its "
            "rows; --rerun K trains K of its runs again (running its code)",
            "bundle",
            "rerun",
            "rerun_seed",
        ),
    ),
    description="Score a credit-assignment method on a versioned protocol against the shipped "
    "references (docs/benchmark.md).",
)
SNR_LAB = Group(
    "snr_lab",
    "gradient SNR experiments of the paper, and the open lab (measure)",
    (
        _lab(
            "rho-law",
            "the rho law: perfect critic over the trajectory advantage against rho",
            "The rho law: gradient SNR of the perfect critic over that of the trajectory "
            "advantage against rho, its log-log fit beside the closed form, for one logit vector "
            "per state and per floor.",
        ),
        _lab(
            "critic",
            "noisy and Monte-Carlo critics against rho",
            "Imperfect critics: the oracle with noise (sigma a multiple of std(R)) and the "
            "Monte-Carlo critic with k rollouts, their SNR ratio to the trajectory advantage.",
        ),
        _lab(
            "beyond",
            "trajectory_mc, rloo, gigpo, routine_masked, mc_rollout and the oracle",
            "Beyond the paper: trajectory_mc, rloo, gigpo, routine_masked, mc_rollout and the "
            "oracle on the same axes, with the environment steps each estimate costs.",
        ),
        _lab("all", "rho-law, critic and beyond", "The rho law, the critics and beyond, in turn."),
        Command(
            "measure",
            "SNR, exact bias, cosine and MSE of any estimators on any environment and policy",
            "baselines.experiments.snr_lab.measure:MeasureArgs",
            "baselines.experiments.snr_lab.measure:main",
        ),
        Command(
            "turn-bias",
            "the exact bias of per-turn-index normalisation on SearchOrAnswer-v0",
            "baselines.experiments.snr_lab.turn_bias:TurnBiasSettings",
            "baselines.experiments.snr_lab.turn_bias:run",
        ),
    ),
    default="all",
    description='Reproducing "Drowning in Routine" (docs/reproducing.md), and the open lab.',
)
DETECTORS = Group(
    "detectors",
    "criticality detectors scored against the annotations; a policy to score under",
    (
        Command(
            "score",
            "detectors scored against the annotations (AUC, AP, implied rho, cost)",
            "baselines.experiments.detectors.score:ScoreArgs",
            "baselines.experiments.detectors.score:main",
        ),
        Command(
            "policy",
            "a short training run's policy table as .npy, to score detectors under",
            "baselines.experiments.detectors.trained_policy:PolicyArgs",
            "baselines.experiments.detectors.trained_policy:main",
        ),
    ),
)
LM = Group(
    "lm",
    "a tiny causal language model trained by GRPO on the text envs (docs/llm.md)",
    (
        Command(
            "train",
            "GRPO on a text env, from chance to the target success",
            "baselines.experiments.lm.train:TrainSettings",
            "baselines.experiments.lm.train:main",
        ),
        Command(
            "dilution",
            "token-level dilution: steps to target against rho per estimator",
            "baselines.experiments.lm.dilution:DilutionSettings",
            "baselines.experiments.lm.dilution:main",
        ),
        Command(
            "snr",
            "the exact gradient SNR and bias of the LM policy at initialisation against rho",
            "baselines.experiments.lm.exact_snr:SNRSettings",
            "baselines.experiments.lm.exact_snr:main",
        ),
    ),
)
BASELINES: tuple[Command | Group, ...] = (
    Command(
        "demo",
        "the main job (make demo): an episode, rho vs 1/(1+L), the rho law, a comparison",
        "baselines.experiments.demo.sweep:DemoArgs",
        "baselines.experiments.demo.sweep:main",
        description="The main job (make demo): a rendered Diluted Doors episode, the measured "
        "rho against 1/(1+L), the oracle's advantages under the uniform policy (zero on routine "
        "states), the rho law of gradient SNR with its fit, and a short PPO vs "
        "TrajectoryAdvantagePPO comparison; tables (CSV) and plots (PNG) under --out.",
    ),
    Command(
        "train",
        "one training run: PPO, or TrajectoryAdvantagePPO with an estimator",
        "baselines.experiments.train.command:TrainArgs",
        "baselines.experiments.train.command:main",
        description="One training run: SB3's PPO ('ppo', MaskablePPO where the env has action "
        "masks) or TrajectoryAdvantagePPO with any estimator (a name or 'package.module:Name', "
        "with JSON arguments), on the env's hyperparameters (baselines/configs/<env id>.yml); "
        "the success rate at every evaluation (exact where the env has a model) goes to "
        "<out>/success.csv (docs/baselines.md).",
    ),
    Command(
        "compare",
        "a comparison sweep: density values x methods x seeds, with curves and ratios",
        "baselines.experiments.compare.sweep:CompareCommand",
        "baselines.experiments.compare.sweep:main",
        base="baselines.experiments.compare.sweep:named_sweep",
    ),
    Command(
        "turn_methods",
        "short batched runs of the turn-level methods beside ppo and trajectory_mc",
        "baselines.experiments.compare.turn_methods:TurnMethodsSettings",
        "baselines.experiments.compare.turn_methods:run",
    ),
    Command(
        "multiagent",
        "parameter-shared training on the team environments, PPO beside trajectory methods",
        "baselines.experiments.multiagent.sweep:TeamSweepArgs",
        "baselines.experiments.multiagent.sweep:main",
        description="Parameter-shared training on a team environment through the turn-based "
        "adapter: PPO beside TrajectoryAdvantagePPO at several routine lengths and seeds, "
        "resumable, with the comparison's tables and plots (docs/multiagent.md).",
    ),
    BENCHMARK,
    SNR_LAB,
    Command(
        "snr_network",
        "gradient SNR of a neural policy (SB3's MlpPolicy at initialization)",
        "baselines.experiments.snr_network.sweep:NetworkArgs",
        "baselines.experiments.snr_network.sweep:main",
    ),
    DETECTORS,
    Command(
        "bench_training",
        "CPU per env step of SB3 PPO, TrajectoryAdvantagePPO and the batched trainer",
        "baselines.experiments.bench_training.sweep:BenchArgs",
        "baselines.experiments.bench_training.sweep:main",
    ),
    Command(
        "equivalence",
        "the batched trainer against SB3 on a protocol's reference runs, cell by cell",
        "baselines.experiments.benchmark.equivalence:EquivalenceArgs",
        "baselines.experiments.benchmark.equivalence:main",
        description="The batched trainer against SB3 on the lite references' settings (ppo, "
        "trajectory_mc, oracle): the trainer that did not make a protocol's references trains "
        "their runs (rb1: batched against SB3's references; rb2: SB3 against the batched ones), "
        "steps to target per cell with a two-sample bootstrap ratio, learning curves side by "
        "side (docs/batched.md).",
    ),
    LM,
    Command(
        "bench_backends",
        "one sweep on the process pool and on Ray, timed",
        "baselines.experiments.bench_backends.sweep:BenchArgs",
        "baselines.experiments.bench_backends.sweep:main",
    ),
)
"""The baselines' commands, in the order ``--help`` lists them."""


def tree(prog: str = "python -m baselines") -> Group:
    """The whole tree: the baselines' commands, then the core package's (``diagnose``,
    ``bench``)."""
    return Group(
        prog,
        "routine-envs: environments, baselines, experiments and the benchmark",
        (*BASELINES, *core.COMMANDS),
        description="Every command of routine-envs (docs/cli.md lists every flag).",
    )


def find(path: str) -> Command:
    """The command ``path`` (``"snr_lab rho-law"``) of the tree; ``KeyError`` when none is."""
    found = {name: command for name, command in tree().walk()}
    if path not in found:
        raise KeyError(f"no command {path!r}; commands: {sorted(found)}")
    return found[path]


def run_command(path: str, settings: Any) -> Any:
    """Run the command ``path`` with ``settings`` (an instance of its settings class, with its
    ``fixed`` fields set), without a command line: how one experiment runs another by name (the
    demo runs the rho law and the comparison), never importing it."""
    from routine_envs.cli import load

    command = find(path)
    settings = dataclasses.replace(settings, **command.fixed) if command.fixed else settings
    return load(command.run)(settings)


def settings_class(path: str) -> type:
    """The settings dataclass of the command ``path``."""
    from routine_envs.cli import load

    return load(find(path).settings)


def settings_of(path: str, argv: Sequence[str] | None = None) -> Any:
    """The settings the command ``path`` (``"benchmark run"``) parses from ``argv``."""
    return parse(tree(), [*path.split(), *arguments(argv)])[1]


def script(path: str) -> Callable[[Sequence[str] | None], Any]:
    """``main(argv)`` of ``python -m baselines.<script>``: the command ``path`` of the tree
    (a group: its subcommand is the first word of ``argv``)."""

    def main(argv: Sequence[str] | None = None) -> Any:
        return run_tree(tree(), [*path.split(), *arguments(argv)])

    main.__doc__ = f"Parse ``argv`` and run ``python -m baselines {path}``."
    return main


def main(argv: Sequence[str] | None = None) -> Any:
    """The ``routine-envs`` console script and ``python -m baselines``: parse ``argv`` and run
    the command it names; its result."""
    prog = "routine-envs" if Path(sys.argv[0]).name == "routine-envs" else "python -m baselines"
    return run_tree(tree(prog), argv)


def console() -> None:
    """The ``routine-envs`` console script: exit status of the command (0 unless it returns an
    ``int``)."""
    result = main()
    sys.exit(result if isinstance(result, int) else 0)
