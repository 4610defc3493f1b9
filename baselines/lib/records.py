"""Record dataclasses: what one run of an experiment writes as one line of its results file.

Every record names the environment's density by its keyword and value (``density_kwarg``,
``density_value``: ``routine_length`` for Diluted Doors and CodeFix, ``corridor_length`` for
RoutineGrid) and the density it gives (``rho``). A record class states its fields once, with
their types; :meth:`Record.schema` derives from them what the results file checks
(:class:`~baselines.lib.results.ResultsFile`), so no experiment writes its schema by hand.

Rows written before the density fields existed (``routine_length`` as every env's density
field, as the shipped references ``baselines/references/rb1`` have it beside the new fields),
and training rows written before runs recorded the privileged fields they were given, are read
through :func:`upgrade`, which never changes a file: the references stay byte-identical and
verified.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

from baselines.lib.results import Kind

OLD_DENSITY_FIELD = "routine_length"
"""The field old rows used for every environment's density value."""


def density_kwarg_of(env_id: str) -> str | None:
    """The keyword that sets ``env_id``'s decision density (the registration table's, or the
    team adapters'), ``None`` when it has none or is unknown."""
    from routine_envs.registration import entry

    try:
        return entry(env_id).density_kwarg
    except (KeyError, ValueError):
        pass
    try:
        from routine_envs.multiagent.turn_based import TEAM_ENVS
    except ImportError:  # pettingzoo not installed
        return None
    return TEAM_ENVS.get(env_id, {}).get("density_kwarg")


TRAINING_FIELDS = ("env_id", "method", "timesteps", "success")
"""Fields that make a row a training run's (a
:class:`~baselines.lib.training_runs.TrainingRecord`)."""


def upgrade(row: Any) -> Any:
    """``row`` with the fields of the current records: an old row's ``routine_length``
    becomes ``density_value`` (``density_kwarg`` from the row, else the env's registered
    keyword, else ``routine_length``) and is dropped; a training row without
    ``privileged_fields`` (written before runs recorded them) gets its built-in method's
    (:func:`baselines.lib.privileged.builtin_privileged`: from the method spec; a method of
    outside code is left without, never imported here). A new row, or anything that is not a
    mapping, is returned as it is (the results file then checks it)."""
    if not isinstance(row, dict):
        return row
    from baselines.lib.privileged import FIELD, builtin_privileged

    if FIELD not in row and all(k in row for k in TRAINING_FIELDS):
        found = builtin_privileged(row)
        if found is not None:
            row = {**row, FIELD: found}
    if OLD_DENSITY_FIELD not in row:
        return row
    new = {k: v for k, v in row.items() if k != OLD_DENSITY_FIELD}
    new.setdefault("density_value", row[OLD_DENSITY_FIELD])
    if "density_kwarg" not in new:
        env_id = row.get("env_id")
        found = density_kwarg_of(env_id) if isinstance(env_id, str) else None
        new["density_kwarg"] = found or OLD_DENSITY_FIELD
    return new


KINDS: dict[Any, Kind] = {str: "str", int: "int", float: "number", dict: "dict", list: "list"}


def kind_of(hint: Any) -> Kind | None:
    """The results-file kind of a field's type (``None``: not checked, e.g. ``X | None``)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return None
    origin = typing.get_origin(hint) or hint
    if origin is list and typing.get_args(hint) in ((float,), (int,)):
        return "numbers"
    return KINDS.get(origin, "any")


@dataclass
class Record:
    """The fields every record has: the density by keyword and value, and the rho it gives."""

    density_kwarg: str
    density_value: int
    rho: float

    unit: ClassVar[str] = "run"
    """What one record is (``run``, ``setting``), for the runner's messages."""

    @classmethod
    def schema(cls) -> dict[str, Kind]:
        """Every field without a default, with its kind (what the results file checks)."""
        hints = typing.get_type_hints(cls)
        found = {}
        for f in dataclasses.fields(cls):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            kind = kind_of(hints[f.name])
            if required and kind is not None:
                found[f.name] = kind
        return found

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Record:
        """The record of a results-file row (old rows upgraded; fields the class does not
        declare are left out)."""
        row = upgrade(row)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in row.items() if k in names})

    def row(self) -> dict[str, Any]:
        """The record as a results-file row (a JSON object)."""
        return dataclasses.asdict(self)
