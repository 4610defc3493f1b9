"""Single-agent environments, one module each, on the shared base :class:`RoutineEnv`.

Classes with two versions are named by version (``DilutedDoorsV0Env``, ``DilutedDoorsV1Env``,
``RoutineGridV0Env``, ``RoutineGridV1Env``); the plain names ``DilutedDoorsEnv`` and
``RoutineGridEnv`` are the current versions (v1).
"""

from routine_envs.envs.base import InvalidActionError, RoutineEnv
from routine_envs.envs.code_fix import CodeFixEnv, CodeState
from routine_envs.envs.diluted_doors import DilutedDoorsV0Env, DoorsState
from routine_envs.envs.diluted_doors_v1 import DilutedDoorsV1Env
from routine_envs.envs.routine_grid import RoutineGridV0Env
from routine_envs.envs.routine_grid_v1 import RoutineGridV1Env

#: the current versions under their plain names
DilutedDoorsEnv = DilutedDoorsV1Env
RoutineGridEnv = RoutineGridV1Env

__all__ = [
    "CodeFixEnv",
    "CodeState",
    "DilutedDoorsEnv",
    "DilutedDoorsV0Env",
    "DilutedDoorsV1Env",
    "DoorsState",
    "InvalidActionError",
    "RoutineEnv",
    "RoutineGridEnv",
    "RoutineGridV0Env",
    "RoutineGridV1Env",
]
