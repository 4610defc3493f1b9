"""Team Routine Grid, version 0 (PettingZoo naming): ``env``, ``parallel_env``, ``raw_env``, and
``turn_based_env`` (the turn-based view registered as ``TeamRoutineGrid-v0``).

from routine_envs.multiagent import routine_grid_v0

par = routine_grid_v0.parallel_env(num_agents=2, corridor_length=5)
aec = routine_grid_v0.env(num_agents=2, corridor_length=5)
"""

from routine_envs.multiagent.base import constructors
from routine_envs.multiagent.team_grid import TeamRoutineGridV0Env
from routine_envs.multiagent.turn_based import turn_based_constructor

parallel_env, env, raw_env = constructors(TeamRoutineGridV0Env)
turn_based_env = turn_based_constructor(TeamRoutineGridV0Env)

__all__ = ["TeamRoutineGridV0Env", "env", "parallel_env", "raw_env", "turn_based_env"]
