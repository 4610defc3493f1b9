"""The commands of ``python -m routine_envs`` (each generated from its settings dataclass by
:mod:`routine_envs.cli`; loaded only when run, so the listing imports nothing heavy). The
``routine-envs`` console script and ``python -m baselines`` list them beside the baselines'."""

from __future__ import annotations

from routine_envs.cli import Command, Group

DIAGNOSE = Command(
    "diagnose",
    "estimate the decision density rho of any branchable Gymnasium environment",
    "routine_envs.diagnose.cli:DiagnoseSettings",
    "routine_envs.diagnose.cli:run",
)
BENCH = Command(
    "bench",
    "the environments' speed beside Gymnasium's FrozenLake-v1 and CartPole-v1",
    "routine_envs.bench:BenchSettings",
    "routine_envs.bench:run",
)
COMMANDS: tuple[Command, ...] = (DIAGNOSE, BENCH)
"""The commands of the core package (add a row to add one)."""


def tree(prog: str = "python -m routine_envs") -> Group:
    """The command tree of ``python -m routine_envs``."""
    import routine_envs

    return Group(prog, f"routine-envs {routine_envs.__version__}", COMMANDS)
