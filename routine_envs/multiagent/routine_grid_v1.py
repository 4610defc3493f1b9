"""Team Routine Grid, version 1 (PettingZoo naming): ``env``, ``parallel_env``, ``raw_env``.

from routine_envs.multiagent import routine_grid_v1

par = routine_grid_v1.parallel_env(num_agents=2)
aec = routine_grid_v1.env(num_agents=2)
"""

from routine_envs.multiagent.team_grid_v1 import TeamRoutineGridV1Env, env, parallel_env, raw_env

__all__ = ["TeamRoutineGridV1Env", "env", "parallel_env", "raw_env"]
