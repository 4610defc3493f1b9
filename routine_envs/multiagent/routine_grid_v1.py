"""Team Routine Grid, version 1 (PettingZoo naming): ``env``, ``parallel_env``, ``raw_env``, and
``turn_based_env`` (the turn-based view registered as ``TeamRoutineGrid-v1``).

from routine_envs.multiagent import routine_grid_v1

par = routine_grid_v1.parallel_env(num_agents=2)
aec = routine_grid_v1.env(num_agents=2)
"""

from routine_envs.multiagent.base import constructors
from routine_envs.multiagent.team_grid_v1 import TeamRoutineGridV1Env
from routine_envs.multiagent.turn_based import turn_based_constructor

parallel_env, env, raw_env = constructors(TeamRoutineGridV1Env)
turn_based_env = turn_based_constructor(TeamRoutineGridV1Env)

__all__ = ["TeamRoutineGridV1Env", "env", "parallel_env", "raw_env", "turn_based_env"]
