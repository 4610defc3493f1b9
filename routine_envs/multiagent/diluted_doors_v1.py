"""Team Diluted Doors, version 1 (PettingZoo naming): ``env``, ``parallel_env``, ``raw_env``, and
``turn_based_env`` (the turn-based view registered as ``TeamDilutedDoors-v1``).

from routine_envs.multiagent import diluted_doors_v1

par = diluted_doors_v1.parallel_env(num_agents=2)
aec = diluted_doors_v1.env(num_agents=2)
"""

from routine_envs.multiagent.base import constructors
from routine_envs.multiagent.team_doors_v1 import TeamDilutedDoorsV1Env
from routine_envs.multiagent.turn_based import turn_based_constructor

parallel_env, env, raw_env = constructors(TeamDilutedDoorsV1Env)
turn_based_env = turn_based_constructor(TeamDilutedDoorsV1Env)

__all__ = ["TeamDilutedDoorsV1Env", "env", "parallel_env", "raw_env", "turn_based_env"]
