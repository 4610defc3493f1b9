"""``python -m baselines.multiagent``: parameter-shared training on the team environments, PPO
beside ``TrajectoryAdvantagePPO`` (the experiment: :mod:`baselines.experiments.multiagent`).
Importing it registers ``TeamDilutedDoors-v0`` and ``TeamRoutineGrid-v0``."""

from baselines.experiments.multiagent.sweep import (
    TEAM_ENVS,
    TeamSweepArgs,
    TurnBasedTeamEnv,
    cli_main,
    main,
    parse_args,
    plan,
    run_sweep,
)

__all__ = [
    "TEAM_ENVS",
    "TeamSweepArgs",
    "TurnBasedTeamEnv",
    "main",
    "parse_args",
    "plan",
    "run_sweep",
]

if __name__ == "__main__":
    cli_main()
