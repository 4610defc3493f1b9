"""The versioned benchmark protocol: ``baselines/protocols/<version>.yaml`` read into frozen data.

A protocol fixes the environments, their densities, the seeds, the budgets in environment steps,
the evaluation schedule, the target and the hyperparameters (the same for every method on an
environment, with per-method exceptions listed in the file). A file says ``status: draft`` until
its references ship; a released file (``status: released``) is never edited: :data:`RELEASED`
pins each released version's SHA-256, and loading a file whose hash differs, or a file that
claims to be released without a pinned hash, is refused (a change makes a new version). Beside
it, :data:`REFERENCE_MANIFESTS` pins the SHA-256 of each tier's reference manifest, which lists
the SHA-256 of every shipped reference file (:mod:`~baselines.experiments.benchmark.manifest`).
A file that is not a well-formed protocol (malformed YAML, a list, a missing or mistyped
entry) is refused with one line naming the file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from baselines.lib import data
from baselines.lib.scoring import check_evaluation

PROTOCOL_DIR = data.PROTOCOLS
DEFAULT_VERSION = "rb2"
"""The protocol every command uses unless told (``--protocol``): the latest released version
whose every tier's references ship (rb3 becomes it when its full tier does)."""
RELEASED: dict[str, str] = {
    "rb1": "78ff4702607aa93005bddc3e7e2616e0ecd856587a26298c2b9c4ec1ec972a52",
    "rb2": "5779adced041a7378269a5a2bdd4b7e657822c04687baa48d260f20449618636",
    "rb3": "1017f54e71b575325de21adea2d22f7083e4699e623af3206223d1e98b4d891e",
}
"""SHA-256 of each released protocol file (checked on load): a released file is never edited,
a change is a new version."""
REFERENCE_MANIFESTS: dict[str, dict[str, str]] = {
    "rb1": {"lite": "bb7c4e8aca2cc47bb3dcef316d06f742890bcf392690194ac9f6ace75a1c85be"},
    "rb2": {
        "lite": "f105980ed027950fff43c14ff813d828854c42110f9489b584604eb587cec09e",
        "paper": "bf813407b751af314d28b6b7f6c8ee1ad752d20b50c5e3baa013b8d5010abf2b",
        "full": "f0828cd23888201670e82683ddd4edd14f26cb4f15469dd3f23addd2da45d732",
    },
    "rb3": {
        "lite": "767a33fff05bd88b3acdd691e67f535fa9d4918fdeb181922be0e984051dd03d",
        "paper": "1aa79c04a034d09546a1812c36271c790a2255a079119e99d369335467c0d6b1",
    },
}
"""SHA-256 of the manifest of each version's shipped reference tiers
(``baselines/references/<version>/<tier>/MANIFEST.sha256``, checked before any reference is
read): the references are read-only; shipping new ones is a new manifest and a new pin
(docs/benchmark.md)."""
ADDED_REFERENCES: dict[str, dict[str, tuple[str, ...]]] = {
    "rb3": {"lite": ("empg", "spa", "asymmetric_critic", "tree_grpo")},
}
"""Methods that became references of a released protocol's tier after its release, by tier:
their runs ship in the tier's folder under its re-pinned manifest
(:data:`REFERENCE_MANIFESTS`), and :meth:`Protocol.references_of` lists them after the file's.
A released file's ``reference_methods`` never change, and a reference is scored on its own
runs only, so adding one moves no other score and needs no new version (docs/benchmark.md,
"Adding a reference")."""
REPORT = {
    "leaderboard": "privileged_column",
    "reference_lab": "at_initialisation",
    "aggregates": "stratified_bootstrap",
}
"""How a protocol's report reads, unless its file says otherwise under ``report:``:
``leaderboard`` (``plain``: the methods ranked as one list; ``privileged_column``: a column of
the privileged fields each method reads, label-free methods ranked apart), ``reference_lab``
(``none``; ``at_initialisation``: the references' lab at initialisation, ``LAB.json``, is shipped
and written with the manifest) and ``aggregates`` (``none``; ``stratified_bootstrap``: the
leaderboard ends with rliable's aggregates across the tier's settings,
:mod:`baselines.experiments.benchmark.aggregates`)."""
REPORT_CHOICES = {
    "leaderboard": ("plain", "privileged_column"),
    "reference_lab": ("none", "at_initialisation"),
    "aggregates": ("none", "stratified_bootstrap"),
}
RELEASED_REPORT: dict[str, dict[str, str]] = {
    "rb1": {"leaderboard": "plain", "reference_lab": "none", "aggregates": "none"}
}
"""What a released file written before ``report:`` existed means by its absence (a released
file never changes, so what it cannot say is said here, once): rb1 shipped a plain leaderboard
and no lab, and stays so byte for byte."""
MAX_PROTOCOL_BYTES = 1_000_000
"""A protocol file larger than this is refused before it is parsed."""
TRAINER = "sb3"
"""The references' trainer of a protocol file that names none (rb1: SB3, one process per run)."""
REFERENCE_METHODS = (
    "ppo",
    "trajectory_mc",
    "rloo",
    "gigpo",
    "mc_rollout",
    "oracle",
    "routine_masked",
    'detector_masked{"detector": "critic"}',
)
"""The methods whose results ship as references for every tier but ``smoke``: ``ppo`` (learned
critic), ``trajectory_mc`` (GRPO-style), ``rloo``, ``gigpo`` (observation anchors),
``mc_rollout`` (k = 8, the paper's turn-level estimator), ``oracle`` (perfect critic, an upper
reference), ``routine_masked`` (the annotations, an upper reference) and ``detector_masked`` with
the learned-critic detector (routine masking with estimated labels, docs/detectors.md). rb1's:
a protocol file lists its own (``reference_methods``), a tier may override them."""


@dataclass(frozen=True)
class Setting:
    """One environment of a tier, at several densities.

    Attributes:
        env_id, env_kwargs: the environment and its fixed keyword arguments.
        density_kwarg: the keyword that sets its density (``routine_length``, ...).
        values: the density keyword's values.
        budget_episodes, min_budget_steps: the budget in environment steps is
            ``max(budget_episodes * longest episode, min_budget_steps)``.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    density_kwarg: str
    values: tuple[int, ...]
    budget_episodes: int
    min_budget_steps: int
    decisions_kwarg: str | None = None
    """The keyword that sets the number of critical decisions per episode (``num_floors``), when
    the setting is a point on that axis: settings of one :attr:`family` differing only in its
    value make the axis (docs/benchmark.md, "Two axes")."""
    hyperparameters: str | None = None
    """The section of the protocol's ``hyperparameters`` its runs use (default: ``env_id``)."""

    @property
    def name(self) -> str:
        """The setting as records name it: ``env_id`` then its keyword arguments as JSON."""
        return self.env_id + json.dumps(self.env_kwargs, sort_keys=True)

    @property
    def section(self) -> str:
        """The hyperparameter section of its runs."""
        return self.hyperparameters or self.env_id

    @property
    def decisions(self) -> int | None:
        """Its number of critical decisions per episode (the value of :attr:`decisions_kwarg`)."""
        if self.decisions_kwarg is None:
            return None
        return int(self.env_kwargs[self.decisions_kwarg])

    @property
    def family(self) -> str:
        """The settings of one decisions axis share this: the env id and every keyword argument
        but :attr:`decisions_kwarg` (``DilutedDoors-v1{}`` for ``num_floors`` 1, 2 and 4)."""
        rest = {k: v for k, v in self.env_kwargs.items() if k != self.decisions_kwarg}
        return self.env_id + json.dumps(rest, sort_keys=True)


@dataclass(frozen=True)
class SnrAtInit:
    """A tier's gradient SNR at initialisation (the paper tier): per density of each setting,
    ``episodes`` episodes in groups of ``group_size`` under the initial policy of the tier's
    network (seed ``seed``), the SNR of each estimator of ``estimators`` and their ratios to
    ``trajectory`` (docs/benchmark.md, "The paper tier")."""

    episodes: int
    group_size: int
    seed: int
    estimators: tuple[str, ...]
    trajectory: str
    seeds: tuple[int, ...] = ()
    """The network initialisations measured (``seeds:`` in the file, rb3: several, so the
    slope's interval covers them); ``(seed,)`` when the file names one ``seed`` (rb2)."""


@dataclass(frozen=True)
class Tier:
    """A tier: its seeds and settings; optionally its own reference methods (default: the
    protocol's) and a gradient SNR measurement at initialisation (:class:`SnrAtInit`)."""

    name: str
    seeds: tuple[int, ...]
    settings: tuple[Setting, ...]
    reference_methods: tuple[str, ...] | None = None
    snr: SnrAtInit | None = None

    @property
    def num_runs_per_method(self) -> int:
        return len(self.seeds) * sum(len(s.values) for s in self.settings)

    def axes(self) -> list[DecisionsAxis]:
        """The decisions axes of the tier: its settings with a ``decisions_kwarg``, grouped by
        :attr:`Setting.family`, each family with at least two numbers of decisions."""
        families: dict[tuple[str, str], dict[int, Setting]] = {}
        for s in self.settings:
            if s.decisions_kwarg is not None:
                families.setdefault((s.family, s.decisions_kwarg), {})[s.decisions] = s
        return [
            DecisionsAxis(family, kwarg, {d: members[d].name for d in sorted(members)})
            for (family, kwarg), members in families.items()
            if len(members) >= 2
        ]


@dataclass(frozen=True)
class DecisionsAxis:
    """Settings of one family at several numbers of critical decisions per episode.

    Attributes:
        family: what the settings share (:attr:`Setting.family`).
        kwarg: the keyword that sets the number of decisions (``num_floors``).
        settings: the setting names (:attr:`Setting.name`) by number of decisions.
    """

    family: str
    kwarg: str
    settings: dict[int, str]


TUNABLE = ("learning_rate", "ent_coef", "clip_range")
"""The hyperparameters a protocol's tuning grid may search (every reference has them: SB3 PPO's
step size, entropy bonus and clip range)."""
OBJECTIVES = ("auc",)
"""What tuning maximises: ``auc``, the mean over the family's tuning cells of the IQM over seeds
of the normalized AUC of the success curve (:func:`baselines.lib.scoring.normalized_auc`)."""


@dataclass(frozen=True)
class Tuning:
    """A protocol's tuned column (docs/benchmark.md, "rb3"): every combination of ``grid``
    trained on ``seeds`` (disjoint from every tier's scoring seeds) at each setting family's
    highest and lowest density, per reference method and family; the combination with the best
    ``objective`` is the method's tuned hyperparameters there."""

    seeds: tuple[int, ...]
    grid: dict[str, tuple[float, ...]]
    objective: str = "auc"

    def combinations(self) -> list[dict[str, float]]:
        """Every combination of the grid, in the grid's order (the first key slowest)."""
        import itertools

        names = list(self.grid)
        return [
            dict(zip(names, values, strict=True))
            for values in itertools.product(*(self.grid[n] for n in names))
        ]


@dataclass(frozen=True)
class Protocol:
    """A released protocol (see the module docstring and the YAML file's comments)."""

    version: str
    status: str
    target: float
    eval_points: int
    """Evaluations after the first under ``evaluation: schedule`` (0 under ``updates``)."""
    hyperparameters: dict[str, dict[str, Any]]
    tiers: dict[str, Tier]
    sha256: str
    path: Path
    trainer: str = TRAINER
    """What trained the references (``sb3`` or ``batched``): a method's runs on it are compared
    with them as they are; runs on the other trainer go to a folder of their own."""
    reference_methods: tuple[str, ...] = REFERENCE_METHODS
    report: dict[str, str] = field(default_factory=lambda: dict(REPORT))
    """How its report reads (:data:`REPORT`: ``leaderboard``, ``reference_lab``)."""
    evaluation: str = "schedule"
    """When its runs are evaluated and how steps to target are read
    (:data:`baselines.lib.scoring.EVALUATIONS`): ``schedule`` (rb1, rb2: ``eval_points``
    evaluations, interpolated), ``updates`` (rb3: after every update, no interpolation)."""
    per_decision_target: float | None = None
    """The per-decision target (rb3): on a setting with F decisions per episode, its steps to
    target are also read at the joint success ``per_decision_target ** F`` (``None``: none)."""
    tuning: Tuning | None = None
    """Its tuned column's search (``None``: the default hyperparameters only)."""
    added_references: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """References of a tier added after the protocol's release (:data:`ADDED_REFERENCES`), by
    tier name."""
    merged: dict[str, str] = field(default_factory=dict)
    """Methods not run as references because they are one algorithm with one that is
    (``{alias: reference}``, e.g. ``rloo: trajectory_mc``): the leaderboard shows them as
    aliases once the advantage probe confirms it on the tier's settings
    (:mod:`baselines.experiments.benchmark.merging`)."""

    def tier(self, name: str) -> Tier:
        """The tier ``name``; ``ValueError`` naming the known ones."""
        if name not in self.tiers:
            raise ValueError(f"--tier {name!r}: {self.version} has tiers {sorted(self.tiers)}")
        return self.tiers[name]

    def references_of(self, tier: str | Tier) -> tuple[str, ...]:
        """The reference methods of ``tier``: its own list, else the protocol's, then those
        added to it after the release (:attr:`added_references`)."""
        tier = self.tier(tier) if isinstance(tier, str) else tier
        listed = tier.reference_methods or self.reference_methods
        return (*listed, *self.added_references.get(tier.name, ()))

    def method_hyperparameters(self, section: str, target: str) -> dict[str, Any]:
        """The hyperparameters of method ``target`` (a name or import path) in ``section`` (an
        env id, or a setting's :attr:`Setting.section`): its ``common`` part, then the method's
        exception if the file lists one."""
        entry = self.hyperparameters[section]
        return {**entry["common"], **(entry.get("methods") or {}).get(target, {})}

    def config_text(self, section: str) -> str:
        """The hyperparameters of ``section`` as a YAML config for ``baselines.train``."""
        return yaml.safe_dump(self.hyperparameters[section], sort_keys=True)


def known_versions() -> list[str]:
    """The protocol versions this checkout has (a file each in ``baselines/protocols/``)."""
    return sorted(p.stem for p in PROTOCOL_DIR.glob("*.yaml"))


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_protocol(version: str = DEFAULT_VERSION, path: Path | None = None) -> Protocol:
    """The protocol ``version`` from ``baselines/protocols/<version>.yaml`` (or ``path``).

    Raises:
        ValueError: an unknown version, a released version whose file was changed, or a file
            that is not a well-formed protocol (one line naming the file).
    """
    path = path or PROTOCOL_DIR / f"{version}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in PROTOCOL_DIR.glob("*.yaml"))
        raise ValueError(f"--protocol {version!r}: no such protocol; known: {known}")
    if path.stat().st_size > MAX_PROTOCOL_BYTES:
        raise ValueError(f"{path}: {path.stat().st_size} bytes, more than a protocol holds")
    digest = file_sha256(path)
    if version in RELEASED and RELEASED[version] != digest:  # before parsing: never read it
        raise ValueError(
            f"{path} differs from released protocol {version} (sha256 {digest[:12]}..., "
            f"released {RELEASED[version][:12]}...): a released protocol never changes; write "
            "the change as a new version"
        )
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid YAML: {' '.join(str(err).split())[:300]}") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: a protocol is a YAML mapping (version, status, tiers, ...), "
            f"got a {type(data).__name__}"
        )
    status = data.get("status")
    if status not in ("draft", "released"):
        raise ValueError(f"{path}: status must be 'draft' or 'released', got {status!r}")
    if status == "released" and RELEASED.get(version) != digest:
        raise ValueError(
            f"{path} says it is released protocol {version}, whose hash is not pinned (sha256 "
            f"{digest[:12]}...): a released protocol never changes; write the change as a "
            "new version"
        )
    if data.get("version") != version:
        raise ValueError(f"{path} says version {data.get('version')!r}, expected {version!r}")
    try:
        return _parse_protocol(data, version, status, digest, path)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        what = f"missing entry {err}" if isinstance(err, KeyError) else str(err)
        raise ValueError(f"{path}: not a well-formed protocol: {what[:300]}") from None


def _parse_protocol(
    data: dict[str, Any], version: str, status: str, digest: str, path: Path
) -> Protocol:
    """The :class:`Protocol` of a parsed file (``KeyError``/``TypeError``/``ValueError`` where
    an entry is missing or of the wrong kind)."""
    hyperparameters = data["hyperparameters"]
    if not isinstance(hyperparameters, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("common"), dict) for v in hyperparameters.values()
    ):
        raise TypeError("hyperparameters must map each env id to a mapping with 'common'")
    tiers = {str(name): _parse_tier(str(name), tier) for name, tier in data["tiers"].items()}
    for tier in tiers.values():
        for setting in tier.settings:
            if setting.section not in hyperparameters:
                raise ValueError(
                    f"tier {tier.name}: {setting.env_id} uses hyperparameters "
                    f"{setting.section!r}, which the file does not define"
                )
            if setting.decisions_kwarg is not None and not isinstance(
                setting.env_kwargs.get(setting.decisions_kwarg), int
            ):
                raise ValueError(
                    f"tier {tier.name}: {setting.env_id}'s decisions_kwarg "
                    f"{setting.decisions_kwarg!r} needs an integer value in its env_kwargs"
                )
    trainer = str(data.get("trainer", TRAINER))
    if trainer not in ("sb3", "batched"):
        raise ValueError(f"trainer must be 'sb3' or 'batched', got {trainer!r}")
    merged = {str(k): str(v) for k, v in (data.get("merged") or {}).items()}
    references = _methods(data.get("reference_methods"), "reference_methods") or REFERENCE_METHODS
    for alias, method in merged.items():
        if method not in references or alias in references:
            raise ValueError(
                f"merged: {alias!r} -> {method!r} must map a method that is not a reference "
                "to one that is"
            )
    evaluation = str(data.get("evaluation", "schedule"))
    check_evaluation(evaluation)
    if evaluation == "schedule" and "eval_points" not in data:
        raise KeyError("eval_points")
    per_decision = data.get("per_decision_target")
    if per_decision is not None and not 0 < float(per_decision) <= 1:
        raise ValueError(f"per_decision_target must be in (0, 1], got {per_decision!r}")
    tuning = None if data.get("tuning") is None else _parse_tuning(data["tuning"], tiers)
    added = ADDED_REFERENCES.get(version, {})
    for name, methods in added.items():
        base = tiers[name].reference_methods or references  # KeyError: no such tier
        if set(methods) & {*base, *merged} or len(set(methods)) < len(methods):
            raise ValueError(f"tier {name}: an added reference {methods} is listed twice")
    report = {**REPORT, **RELEASED_REPORT.get(version, {}), **dict(data.get("report") or {})}
    for name, value in report.items():
        if value not in REPORT_CHOICES.get(name, ()):
            raise ValueError(f"report: {name}: {value!r} is not one of {REPORT_CHOICES.get(name)}")
    return Protocol(
        version=version,
        status=status,
        target=float(data["target"]),
        eval_points=int(data.get("eval_points", 0)),
        hyperparameters=hyperparameters,
        tiers=tiers,
        sha256=digest,
        path=path,
        trainer=trainer,
        reference_methods=references,
        report=report,
        added_references=dict(added),
        merged=merged,
        evaluation=evaluation,
        per_decision_target=None if per_decision is None else float(per_decision),
        tuning=tuning,
    )


def _parse_tuning(entry: dict[str, Any], tiers: dict[str, Tier]) -> Tuning:
    """The ``tuning`` entry (``TypeError``/``ValueError`` where it is malformed, names a
    hyperparameter outside :data:`TUNABLE`, or shares a seed with a tier)."""
    seeds = tuple(int(x) for x in entry["seeds"])
    grid = {str(k): tuple(float(v) for v in values) for k, values in entry["grid"].items()}
    unknown = sorted(set(grid) - set(TUNABLE))
    if unknown or not grid or not all(grid.values()):
        raise ValueError(f"tuning.grid searches {list(TUNABLE)}, each with values; got {grid}")
    objective = str(entry.get("objective", "auc"))
    if objective not in OBJECTIVES:
        raise ValueError(f"tuning.objective must be one of {list(OBJECTIVES)}, got {objective!r}")
    for tier in tiers.values():
        shared = sorted(set(seeds) & set(tier.seeds))
        if shared:
            raise ValueError(f"tuning.seeds {shared} are scoring seeds of tier {tier.name}")
    return Tuning(seeds, grid, objective)


def _methods(value: Any, what: str) -> tuple[str, ...] | None:
    """A list of method specs from the file (``None`` when absent)."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(m, str) for m in value):
        raise TypeError(f"{what} must be a non-empty list of method specs")
    return tuple(value)


def _parse_tier(name: str, tier: dict[str, Any]) -> Tier:
    """One tier of the file (``KeyError``/``TypeError``/``ValueError`` where an entry is missing
    or of the wrong kind)."""
    snr = tier.get("snr")
    return Tier(
        name=name,
        seeds=tuple(int(s) for s in tier["seeds"]),
        settings=tuple(
            Setting(
                env_id=str(s["env_id"]),
                env_kwargs=dict(s.get("env_kwargs") or {}),
                density_kwarg=str(s["density_kwarg"]),
                values=tuple(int(v) for v in s["values"]),
                budget_episodes=int(s["budget_episodes"]),
                min_budget_steps=int(s["min_budget_steps"]),
                decisions_kwarg=None
                if s.get("decisions_kwarg") is None
                else str(s["decisions_kwarg"]),
                hyperparameters=None
                if s.get("hyperparameters") is None
                else str(s["hyperparameters"]),
            )
            for s in tier["settings"]
        ),
        reference_methods=_methods(
            tier.get("reference_methods"), f"tier {name}'s reference_methods"
        ),
        snr=None
        if snr is None
        else SnrAtInit(
            episodes=int(snr["episodes"]),
            group_size=int(snr["group_size"]),
            seed=int(snr["seeds"][0] if "seeds" in snr else snr["seed"]),
            estimators=_methods(snr["estimators"], "snr.estimators") or (),
            trajectory=str(snr["trajectory"]),
            seeds=tuple(int(x) for x in snr.get("seeds") or [snr["seed"]]),
        ),
    )
