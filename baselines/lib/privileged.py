"""The privileged batch fields a training run's method was given: ``privileged_fields`` of its
row (:data:`routine_envs.episodes.PRIVILEGED_FIELDS`, in that order).

A run records them (its estimator's :class:`~routine_envs.episodes.Declared` record: what its
batches held). For a row written before runs did, they are what its estimator declares, built
again as the run's trainer built it (the row's estimator name and arguments; the trainer's
context: the SB3 trainer offers a rollout policy, the batched one an exact-model sampler, which
decides where ``mc_rollout`` takes its rollouts from) and read once: :func:`row_privileged`;
:func:`builtin_privileged` does it for built-in methods only, for
:func:`~baselines.lib.records.upgrade` (which never imports outside code).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from baselines.lib.trainers import trainer_of, training_privileged

FIELD = "privileged_fields"
"""The row field: the privileged batch fields the run's estimator was given."""

Row = Mapping[str, Any]


def _no_rollouts(observations: Any, infos: Any) -> Any:
    """A rollout policy for building only: reading ``requires`` never calls it."""
    raise RuntimeError("an estimator built to read its requires is never run")


class _SamplerOnDemand:
    """The exact-model sampler of an env, built only if something uses it (reading ``requires``
    does not; building it can take a second on a large env)."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.sampler: Any = None

    def __getattr__(self, name: str) -> Any:
        if name in ("env", "sampler"):
            raise AttributeError(name)
        if self.sampler is None:
            from routine_envs.sampler import ModelSampler

            self.sampler = ModelSampler(self.env)
        return getattr(self.sampler, name)


def estimator_of(row: Row) -> tuple[str, dict[str, Any]]:
    """The estimator name (or import path) and arguments of a training row; ``ValueError`` when
    it names none."""
    estimator = row.get("estimator") or {}
    name = estimator.get("name", row.get("method")) if isinstance(estimator, Mapping) else None
    if not isinstance(name, str):
        raise ValueError(f"record of method {row.get('method')!r} names no estimator")
    kwargs = estimator.get("kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"record of method {row.get('method')!r}: bad estimator arguments")
    return name, dict(kwargs)


def build_privileged(row: Row) -> tuple[str, ...]:
    """The privileged fields the estimator of training row ``row`` declares, built as its trainer
    built it (see the module docstring; ``()`` for ``ppo``, SB3's own learned critic; outside
    code is imported); ``ValueError`` naming the method where it cannot be built."""
    import gymnasium as gym
    import numpy as np

    import routine_envs
    from baselines.lib.specs import parse_method
    from routine_envs import credit

    name, kwargs = estimator_of(row)
    if parse_method(name).turn_level:
        return ()
    gym.register_envs(routine_envs)
    env = gym.make(row["env_id"], **dict(row.get("env_kwargs") or {})).unwrapped
    table = np.full((env.num_states, env.num_actions), 1.0 / env.num_actions)
    hyper = row.get("hyperparameters") or {}
    batched = trainer_of(row) == "batched"
    context = credit.EstimatorContext(
        env=env,
        policy_table=table,
        gamma=hyper.get("gamma"),
        gae_lambda=hyper.get("gae_lambda"),
        rollout_policy=None if batched else _no_rollouts,
        sampler=_SamplerOnDemand(env) if batched else None,
        seed=int(row.get("seed", 0)),
    )
    try:
        built = credit.build_estimator(name, context, **kwargs)
    except ValueError as err:
        raise ValueError(f"method {row.get('method')!r}: {err}") from None
    # requires read once, as the trainers read it; values are the learner's in training
    return training_privileged(credit.declare(built))


def row_privileged(row: Row) -> tuple[str, ...]:
    """The privileged fields the run of ``row`` was given: its recorded :data:`FIELD`, else
    :func:`build_privileged` (outside code imported); in :data:`PRIVILEGED_FIELDS` order."""
    from routine_envs.episodes import PRIVILEGED_FIELDS

    recorded = row.get(FIELD)
    if recorded is None:
        return build_privileged(row)
    return tuple(f for f in PRIVILEGED_FIELDS if f in recorded)


def is_outside(name: str, kwargs: Mapping[str, Any]) -> bool:
    """Whether estimator ``name`` with ``kwargs`` is or names outside code (an import path, as
    the estimator or as a text argument: ``detector_masked``'s ``detector``)."""
    from routine_envs import plugins

    target = plugins.parse_spec(name, "estimator").target
    return any(map(plugins.is_import_path, [target, *plugins.strings_in(kwargs)]))


def builtin_privileged(row: Row) -> list[str] | None:
    """:data:`FIELD` of a training row written before runs recorded it, for a built-in method
    (``None`` for outside code, never imported here, and where the estimator cannot be built):
    a class's ``requires`` set on the class (the same for every instance), else
    :func:`build_privileged`, once per estimator, arguments, trainer and environment id."""
    try:
        name, kwargs = estimator_of(row)
        outside = is_outside(name, kwargs)
    except (ValueError, TypeError):
        return None
    if outside:
        return None
    key = json.dumps(
        [name, kwargs, trainer_of(row) == "batched", row.get("env_id")],
        sort_keys=True,
        default=str,
    )
    if key not in _KNOWN:
        try:
            _KNOWN[key] = _builtin_privileged(row)
        except Exception:  # an old row is read as it is where this cannot say
            _KNOWN[key] = None
    found = _KNOWN[key]
    return None if found is None else list(found)


_KNOWN: dict[str, tuple[str, ...] | None] = {}
""":func:`builtin_privileged` by estimator, arguments, trainer and env id (a built-in's
``requires`` does not depend on the env's other arguments: those of the first row build it)."""


def _builtin_privileged(row: Row) -> tuple[str, ...]:
    """:func:`builtin_privileged` without the cache (raises where it cannot say)."""
    import inspect

    from baselines.lib.specs import parse_method
    from routine_envs import credit
    from routine_envs.episodes import PRIVILEGED_FIELDS

    name, _ = estimator_of(row)
    spec = parse_method(name)
    if spec.turn_level:
        return ()
    static = inspect.getattr_static(credit.estimator_class(spec.target), "requires", None)
    if isinstance(static, (set, frozenset)):  # set on the class: every instance's
        return tuple(f for f in PRIVILEGED_FIELDS if f in static)
    return build_privileged(row)
