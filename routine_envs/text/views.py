"""What a language-model agent is told: each environment's observation as text, its rules and
its actions as tools.

The view of an environment is its own, stated beside its dynamics: ``env.unwrapped.text_view()``
(a ``RoutineEnv`` returns its dynamics' :meth:`~routine_envs.dynamics.Dynamics.text_view`, a
turn-based team adapter its team dynamics'). Every dynamics object has one: the suite's
environments write theirs beside their renderers (Diluted Doors v0/v1 in each observation mode,
Routine Grid in its vector and image modes, CodeFix in its text mode, the team envs), any other
gets the default built from its ``describe()`` and ``action_names()``
(:func:`~routine_envs.rendering.text_view.describe_view`). An env without a view (not of the
suite) with a ``Discrete`` action space gets a generic view that prints the numbers.

The view classes (:class:`TextView`, :class:`Tool`, :class:`Param`, :data:`Call`) live in
:mod:`routine_envs.rendering.text_view`, a layer the environments may import; they are
re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from routine_envs.rendering.text_view import Call, Param, TextView, Tool, numbers_view


def view_for(env: gym.Env) -> TextView:
    """The :class:`TextView` of ``env`` (wrapped or not): its own ``text_view()``, else (an env
    not of the suite) its observation's numbers.

    Raises:
        ValueError: an env made without the keyword arguments its view needs (CodeFix not in
            ``obs_mode="text"``: make it with that mode, as ``make_text_env`` does), a
            ``describe()`` that tells apart equal observations (the default view), or an env
            without a ``Discrete`` action space.
    """
    hook = getattr(env.unwrapped, "text_view", None)
    if callable(hook):
        return hook()
    space = env.action_space
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(
            f"env must have a Discrete action space for a text view, got {space} "
            f"of {type(env.unwrapped).__name__}"
        )
    return numbers_view(int(space.n), type(env.unwrapped).__name__)


def text_kwargs(entry_point: str | Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments an id's env needs for its text view: the ``text_kwargs`` its
    dynamics class declares (CodeFix: ``obs_mode="text"``) unless given, then ``kwargs``.
    ``entry_point`` is the id's (``"module:Class"`` or a callable)."""
    creator = (
        gym.envs.registration.load_env_creator(entry_point)
        if isinstance(entry_point, str)
        else entry_point
    )
    dynamics = getattr(creator, "dynamics_class", None) or getattr(creator, "dynamics", None)
    declared = getattr(dynamics, "text_kwargs", None) or {}
    return {**declared, **kwargs}


__all__: Sequence[str] = ("Call", "Param", "TextView", "Tool", "text_kwargs", "view_for")
