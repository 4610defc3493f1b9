"""Team Routine Grid, version 0 (PettingZoo naming): ``env``, ``parallel_env``, ``raw_env``.

from routine_envs.multiagent import routine_grid_v0

par = routine_grid_v0.parallel_env(num_agents=2, corridor_length=5)
aec = routine_grid_v0.env(num_agents=2, corridor_length=5)
"""

from routine_envs.multiagent.team_grid import TeamRoutineGridEnv, env, parallel_env, raw_env

__all__ = ["TeamRoutineGridEnv", "env", "parallel_env", "raw_env"]
