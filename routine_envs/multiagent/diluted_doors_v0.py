"""Team Diluted Doors, version 0 (PettingZoo naming): ``env``, ``parallel_env``, ``raw_env``.

from routine_envs.multiagent import diluted_doors_v0

par = diluted_doors_v0.parallel_env(num_agents=2, routine_length=10)
aec = diluted_doors_v0.env(num_agents=2, routine_length=10)
"""

from routine_envs.multiagent.team_doors import TeamDilutedDoorsEnv, env, parallel_env, raw_env

__all__ = ["TeamDilutedDoorsEnv", "env", "parallel_env", "raw_env"]
