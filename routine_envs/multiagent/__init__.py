"""PettingZoo versions of the suite's environments: teams on a shared reward, with per-agent
annotations (needs the ``multiagent`` extra: ``pip install routine-envs[multiagent]``).

Versioned modules, PettingZoo's convention: each has ``parallel_env(**kwargs)`` (the native
``ParallelEnv``), ``env(**kwargs)`` (the AEC version, derived with ``parallel_to_aec`` and wrapped
as PettingZoo wraps its own environments) and ``raw_env(**kwargs)`` (AEC, unwrapped), and
``turn_based_env(**kwargs)`` (the registered single-agent view, ``TeamDilutedDoors-v1`` etc.).

The classes are named by version (``TeamDilutedDoorsV0Env``, ``TeamDilutedDoorsV1Env``, ...);
the plain names ``TeamDilutedDoorsEnv`` and ``TeamRoutineGridEnv`` are the current versions (v1).

    from routine_envs.multiagent import diluted_doors_v1, routine_grid_v1

    env = diluted_doors_v1.parallel_env(num_agents=2, routine_length=10)
    observations, infos = env.reset(seed=0)
    infos["agent_0"]["critical"], infos["agent_0"]["state_id"]

``import routine_envs`` does not import this package (nor PettingZoo).
"""

from routine_envs.multiagent import (
    diluted_doors_v0,
    diluted_doors_v1,
    routine_grid_v0,
    routine_grid_v1,
)
from routine_envs.multiagent.base import TeamEnv, TeamPolicy
from routine_envs.multiagent.team_doors import TeamDilutedDoorsV0Env
from routine_envs.multiagent.team_doors_v1 import TeamDilutedDoorsV1Env
from routine_envs.multiagent.team_grid import TeamRoutineGridV0Env
from routine_envs.multiagent.team_grid_v1 import TeamRoutineGridV1Env

#: the current versions under their plain names
TeamDilutedDoorsEnv = TeamDilutedDoorsV1Env
TeamRoutineGridEnv = TeamRoutineGridV1Env

MODULES = {
    "diluted_doors_v0": diluted_doors_v0,
    "diluted_doors_v1": diluted_doors_v1,
    "routine_grid_v0": routine_grid_v0,
    "routine_grid_v1": routine_grid_v1,
}
"""Every versioned module, by name (``metadata["name"]`` of its environment)."""

__all__ = [
    "MODULES",
    "TeamDilutedDoorsEnv",
    "TeamDilutedDoorsV0Env",
    "TeamDilutedDoorsV1Env",
    "TeamEnv",
    "TeamPolicy",
    "TeamRoutineGridEnv",
    "TeamRoutineGridV0Env",
    "TeamRoutineGridV1Env",
    "diluted_doors_v0",
    "diluted_doors_v1",
    "routine_grid_v0",
    "routine_grid_v1",
]
