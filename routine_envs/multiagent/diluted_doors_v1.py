"""Team Diluted Doors, version 1 (PettingZoo naming): ``env``, ``parallel_env``, ``raw_env``.

from routine_envs.multiagent import diluted_doors_v1

par = diluted_doors_v1.parallel_env(num_agents=2)
aec = diluted_doors_v1.env(num_agents=2)
"""

from routine_envs.multiagent.team_doors_v1 import TeamDilutedDoorsV1Env, env, parallel_env, raw_env

__all__ = ["TeamDilutedDoorsV1Env", "env", "parallel_env", "raw_env"]
