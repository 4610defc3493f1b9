"""The records of the LM experiments: one GRPO run (``train`` and ``dilution``,
:class:`LMRunRecord`) and one density value of the SNR (``snr``, :class:`SNRRecord`;
exact gradient; sampled noise, exact for the ratio's two estimators).

Both name the env's density by its keyword and value (``density_kwarg``, ``density_value``: the
keyword of the env id's registry entry, ``routine_length`` for Diluted Doors) as every record of
the suite does. Rows written before (a run's density only inside ``env_kwargs``; the SNR's as a
top-level ``routine_length``) are read through :func:`upgrade`, the files unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from baselines.lib import records
from baselines.lib.records import Record


def density_of(env_id: str, env_kwargs: dict[str, Any]) -> tuple[str, int]:
    """The keyword that sets ``env_id``'s decision density (its registry entry's) and its value
    under ``env_kwargs`` (else the entry's default).

    Raises:
        ValueError: an id outside the suite, one without a density keyword, or no value.
    """
    from routine_envs.registration import entry

    kwarg = records.density_kwarg_of(env_id)
    if kwarg is None:
        raise ValueError(f"--env-id {env_id}: no keyword argument sets its decision density")
    value = env_kwargs.get(kwarg, entry(env_id).kwargs.get(kwarg))
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"--env-kwargs: {kwarg} of {env_id} must be an integer, got {value!r}")
    return kwarg, value


#: settings added to runs after rows were written, with the value every earlier run had: an
#: old run row gets them (and its ``key`` with them), so re-running its command finds it done.
ADDED_SETTINGS: dict[str, Any] = {
    "init_std": 0.02,
    "warm_start_target": "every_reply",
    "decoding": "free",
}


def _with_added_settings(row: dict[str, Any]) -> dict[str, Any]:
    """A run row (a ``curve`` and a JSON ``key``) with :data:`ADDED_SETTINGS` it lacks."""
    missing = {k: v for k, v in ADDED_SETTINGS.items() if k not in row}
    if not missing or "curve" not in row or not isinstance(row.get("key"), str):
        return row
    try:
        job = json.loads(row["key"])
    except ValueError:
        return row
    if not isinstance(job, dict):
        return row
    job = {**job, **{k: v for k, v in missing.items() if k not in job}}
    return {**row, **missing, "key": json.dumps(job, sort_keys=True)}


def upgrade(row: Any) -> Any:
    """``row`` with the current fields: an old SNR row's ``routine_length`` becomes
    ``density_value`` (:func:`baselines.lib.records.upgrade`); an old run row gets the
    settings added since (:data:`ADDED_SETTINGS`, in its ``key`` too) and, when its density
    was only in ``env_kwargs``, ``density_kwarg`` and ``density_value`` from its env id and
    ``env_kwargs`` (:func:`density_of`). Anything else is returned as it is (the results file
    then checks it)."""
    row = records.upgrade(row)
    if isinstance(row, dict):
        row = _with_added_settings(row)
    if not isinstance(row, dict) or "density_kwarg" in row:
        return row
    env_id, env_kwargs = row.get("env_id"), row.get("env_kwargs")
    if not isinstance(env_id, str) or not isinstance(env_kwargs, dict):
        return row
    try:
        kwarg, value = density_of(env_id, env_kwargs)
    except (KeyError, ValueError):
        return row
    return {**row, "density_kwarg": kwarg, "density_value": value}


@dataclass
class _FlatRecord(Record):
    """A record whose row is flat: the declared fields, then :attr:`extra`'s (every other field
    of the job and of the result, kept as they are)."""

    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Any:
        """The record of a results-file row (old rows upgraded: :func:`upgrade`); the fields
        the class does not declare go to :attr:`extra`."""
        row = upgrade(row)
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in row.items() if k in names}
        return cls(**known, extra={k: v for k, v in row.items() if k not in names})

    def row(self) -> dict[str, Any]:
        """The flat row: the declared fields, then :attr:`extra`'s."""
        declared = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        extra = declared.pop("extra")
        return {**declared, **extra}


@dataclass(kw_only=True)
class LMRunRecord(_FlatRecord):
    """One GRPO run of an LM policy (``lm train``, ``lm dilution``).

    Attributes:
        env_id, env_kwargs, estimator, seed: what was trained (``env_kwargs`` includes the
            density keyword's value).
        steps, target: most GRPO steps, target exact success probability.
        parameters: the model's parameters.
        steps_run: GRPO steps run (``len(curve)``; fewer than ``steps`` when the target was
            reached).
        steps_to_target: the first step whose exact success reached ``target`` (``None``: not
            reached within ``steps``, a censored run).
        initial_exact_success, final_exact_success: exact success probability after the warm
            start and after the last step (``None``: the env has no exact model).
        cpu_seconds, warm_start_cpu_seconds: CPU time of the run, of its warm start.
        curve: one row per step (:class:`~baselines.lib.lm.GRPOTrainer`'s).
        extra: the job's other settings (model, warm start, GRPO) and the run's other results.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    estimator: str
    seed: int
    steps: int
    target: float
    parameters: int
    steps_run: int
    cpu_seconds: float
    warm_start_cpu_seconds: float
    curve: list[Any]
    steps_to_target: int | None = None
    initial_exact_success: float | None = None
    final_exact_success: float | None = None

    unit: ClassVar[str] = "run"

    @staticmethod
    def check(row: dict[str, Any]) -> None:
        """One curve row per step run, no more than ``steps``; a target reached within them."""
        if not 0 <= row["steps_run"] <= row["steps"] or len(row["curve"]) != row["steps_run"]:
            raise ValueError(
                f"{len(row['curve'])} curve rows, steps_run {row['steps_run']}, steps "
                f"{row['steps']}"
            )
        reached = row.get("steps_to_target")
        if reached is not None and not 0 < reached <= row["steps_run"]:
            raise ValueError(f"steps_to_target {reached} outside 1..{row['steps_run']}")


ESTIMATE_FIELDS = ("snr_{}", "snr_{}_low", "snr_{}_high", "{}_relative_bias", "{}_cosine")
"""The columns of each estimator in an SNR row (its SNR with its interval, relative bias and
cosine to the exact gradient), ``{}`` the estimator's name."""


@dataclass(kw_only=True)
class SNRRecord(_FlatRecord):
    """One density value of the SNR of an LM policy at initialisation (``lm snr``): exact
    gradient, noise sampled from ``episodes`` episodes.

    Attributes:
        env_id, env_kwargs, estimators, episodes, group_size, warm_start_steps, dim,
            num_layers, seed: the measurement's settings.
        parameters: the model's parameters; ``J``: its exact success probability.
        ratio, ratio_low, ratio_high: SNR of the perfect critic over the trajectory advantage's
            (exact baseline), with its interval; ``tabular_ratio``: the uniform tabular
            policy's closed form at the same density.
        logit_gradient_error, parameter_gradient_error: the exactness checks of the gradient.
        extra: per estimator the columns of :data:`ESTIMATE_FIELDS`, and the other results
            (canonical mass, gradient norm).
    """

    env_id: str
    env_kwargs: dict[str, Any]
    estimators: list[str]
    episodes: int
    group_size: int
    warm_start_steps: int
    dim: int
    num_layers: int
    seed: int
    parameters: int
    J: float
    ratio: float
    ratio_low: float
    ratio_high: float
    tabular_ratio: float
    logit_gradient_error: float
    parameter_gradient_error: float
    cpu_seconds: float

    unit: ClassVar[str] = "length"

    @staticmethod
    def check(row: dict[str, Any]) -> None:
        """Every estimator's columns (:data:`ESTIMATE_FIELDS`) are numbers."""
        for name in row["estimators"]:
            for column in (f.format(name) for f in ESTIMATE_FIELDS):
                value = row.get(column)
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    raise ValueError(f"estimator {name!r} has no number {column!r}")
