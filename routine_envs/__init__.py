"""routine-envs: benchmark environments for credit assignment under signal dilution.

Importing this package registers every environment with Gymnasium (from the table in
:mod:`routine_envs.registration`); it imports neither torch nor PettingZoo and prints nothing.
An environment of your own is a dynamics class and one call, ``register_dynamics("My-v0",
MyDynamics)`` (``docs/contributing-an-env.md``).

    import gymnasium as gym
    import routine_envs

    gym.register_envs(routine_envs)
    env = gym.make("DilutedDoors-v1", routine_length=50)

Classes with two versions are named by version (``DilutedDoorsV0Env``, ``DilutedDoorsV1Env``);
the plain name ``DilutedDoorsEnv`` is the current version (v1).
"""

from routine_envs import annotations
from routine_envs.envs import (
    DilutedDoorsEnv,
    DilutedDoorsV0Env,
    DilutedDoorsV1Env,
    InvalidActionError,
    RoutineEnv,
)
from routine_envs.oracle import OracleValues, TabularModel
from routine_envs.registration import ENVIRONMENTS, register_all, register_dynamics

__version__ = "0.1.0"

register_all()

__all__ = [
    "ENVIRONMENTS",
    "DilutedDoorsEnv",
    "DilutedDoorsV0Env",
    "DilutedDoorsV1Env",
    "InvalidActionError",
    "OracleValues",
    "RoutineEnv",
    "TabularModel",
    "__version__",
    "annotations",
    "register_dynamics",
]
