"""Single-agent environments, one module each, on the shared base :class:`RoutineEnv`."""

from routine_envs.envs.base import InvalidActionError, RoutineEnv
from routine_envs.envs.diluted_doors import DilutedDoorsEnv, DoorsState

__all__ = ["DilutedDoorsEnv", "DoorsState", "InvalidActionError", "RoutineEnv"]
