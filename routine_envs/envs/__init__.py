"""Single-agent environments, one module each, on the shared base :class:`RoutineEnv`."""

from routine_envs.envs.base import InvalidActionError, RoutineEnv
from routine_envs.envs.code_fix import CodeFixEnv, CodeState
from routine_envs.envs.diluted_doors import DilutedDoorsEnv, DoorsState
from routine_envs.envs.routine_grid import RoutineGridEnv

__all__ = [
    "CodeFixEnv",
    "CodeState",
    "DilutedDoorsEnv",
    "DoorsState",
    "InvalidActionError",
    "RoutineEnv",
    "RoutineGridEnv",
]
