"""Team Diluted Doors, version 0 (PettingZoo naming): ``env``, ``parallel_env``, ``raw_env``, and
``turn_based_env`` (the turn-based view registered as ``TeamDilutedDoors-v0``).

from routine_envs.multiagent import diluted_doors_v0

par = diluted_doors_v0.parallel_env(num_agents=2, routine_length=10)
aec = diluted_doors_v0.env(num_agents=2, routine_length=10)
"""

from routine_envs.multiagent.base import constructors
from routine_envs.multiagent.team_doors import TeamDilutedDoorsV0Env
from routine_envs.multiagent.turn_based import turn_based_constructor

parallel_env, env, raw_env = constructors(TeamDilutedDoorsV0Env)
turn_based_env = turn_based_constructor(TeamDilutedDoorsV0Env)

__all__ = ["TeamDilutedDoorsV0Env", "env", "parallel_env", "raw_env", "turn_based_env"]
