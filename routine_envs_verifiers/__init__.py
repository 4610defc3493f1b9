"""The verifiers taskset id ``routine-envs-verifiers`` (``verifiers>=0.4``).

verifiers loads a taskset by importing the top-level module its id names (dashes to
underscores) and taking the ``Taskset``, ``Harness`` and ``Env`` its ``__all__`` exports; this
package is that name, and :mod:`routine_envs.adapters.verifiers_v1` the code:

    vf-eval routine-envs-verifiers --env.taskset.env-id DilutedDoors-v1 ...
"""

from routine_envs.adapters.verifiers_v1 import RoutineChatHarness, RoutineEnv, RoutineTaskset

__all__ = ["RoutineChatHarness", "RoutineEnv", "RoutineTaskset"]
