"""Detectors scored against the truth: ``python -m baselines detectors score --env-id ...``.

For every value of the env's density keyword and every policy, batches of episodes are sampled
from the exact model (their steps annotated), every detector is run on them in order (fitted on
earlier batches only; the first ``--warmup`` batches are not scored) and scored against
``info["critical"]``: ROC AUC, average precision and the rho its labels imply against the
annotated rho, with percentile bootstrap intervals over episodes
(:mod:`routine_envs.detectors.scoring`), and its cost in environment steps. Policies:

- ``uniform`` (over the valid actions);
- ``mixture{"eps": 0.3}``: ``(1 - eps) optimal + eps uniform``, a stand-in for a partly trained
  policy (``optimal`` greedy in the exact ``Q*``);
- ``random{"seed": 0, "scale": 1.0}`` and a ``.npy`` probability table, as in the SNR lab.

One job per (density value, policy); results go to ``<out>/results.jsonl`` (resumable), then
``detectors.csv``, ``detectors.md`` and ``summary.json``, tables of the records
(:mod:`baselines.experiments.detectors.analysis`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

import routine_envs
from baselines.experiments.detectors import analysis
from baselines.lib import cli, provenance
from baselines.lib.experiment import Experiment
from baselines.lib.experiment import main as experiment_main
from baselines.lib.lab import policy_table
from baselines.lib.records import Record
from baselines.lib.specs import parse_detector
from routine_envs import credit, detectors
from routine_envs.detectors import scoring
from routine_envs.policy_specs import parse_policy
from routine_envs.sampler import ModelSampler

gym.register_envs(routine_envs)

SCORER_SOURCE = "the detector scorer (episodes sampled from the exact model)"


@dataclass
class ScoreArgs:
    """Criticality detectors scored against the annotations (AUC, AP, implied rho, cost)."""

    env_id: str = field(
        default="DilutedDoors-v1", metadata={"help": "registered env id with an exact model"}
    )
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "fixed gym.make keyword arguments (JSON)"}
    )
    routine_lengths: list[int] = field(
        default_factory=lambda: [3, 10],
        metadata={
            "help": "values of the env's density keyword (routine_length for Diluted Doors and "
            "CodeFix, corridor_length for RoutineGrid)",
            "min": 0,
        },
    )
    detectors: list[str] = field(
        default_factory=lambda: [
            "annotations",
            "random",
            "entropy",
            "group_variance",
            "critic",
            "branching",
            "mc_spread",
            "classifier",
        ],
        metadata={
            "help": "detector names or import paths 'package.module:Name', each optionally "
            "with JSON arguments (see docs/detectors.md)"
        },
    )
    policies: list[str] = field(
        default_factory=lambda: ["uniform", 'mixture{"eps": 0.3}'],
        metadata={
            "help": "policies to sample under: 'uniform', 'mixture{\"eps\": E}' ((1 - E) "
            'optimal + E uniform), \'random{"seed": S, "scale": C}\' or a .npy table'
        },
    )
    batches: int = field(default=3, metadata={"help": "batches per setting", "min": 1})
    warmup: int = field(
        default=1, metadata={"help": "first batches only fitted on, not scored", "min": 0}
    )
    groups: int = field(default=48, metadata={"help": "groups per batch", "min": 1})
    group_size: int = field(default=8, metadata={"help": "episodes per group", "min": 1})
    resamples: int = field(
        default=300, metadata={"help": "bootstrap resamples of the episodes", "min": 10}
    )
    seed: int = field(default=0, metadata={"help": "seed of the episodes and detectors", "min": 0})
    workers: int = field(default=1, metadata={"help": "settings scored in parallel", "min": 1})
    out: Path = field(default=Path("results/detectors/score"), metadata={"help": "output folder"})


# ------------------------------------------------------------------------------- policies
def policy_identity(text: str) -> dict[str, Any]:
    """What the policy spec ``text`` stands for in a run key (the spec, a file's hash, outside
    code's fingerprint: :func:`routine_envs.policy_specs.parse_policy`)."""
    return parse_policy(text, "--policies").identity


def make_env(setting: dict[str, Any]) -> Any:
    """The setting's environment, unwrapped."""
    kwargs = {**setting["env_kwargs"], setting["density_kwarg"]: setting["density_value"]}
    return gym.make(setting["env_id"], **kwargs).unwrapped


def context_of(env: Any, table: np.ndarray, sampler: ModelSampler, seed: int) -> Any:
    """What the scorer offers a detector: the env, the policy table, the sampler, a seed."""
    return credit.EstimatorContext(
        env=env, policy_table=table, sampler=sampler, gamma=1.0, seed=seed
    )


# ------------------------------------------------------------------------------- a setting
def score_setting(setting: dict[str, Any]) -> dict[str, Any]:
    """One (density value, policy): every detector on the same batches."""
    start = time.perf_counter()
    env = make_env(setting)
    table = policy_table(env, setting["policy"]["spec"])
    sampler = ModelSampler(env)
    seed = setting["seed"]
    built = {
        spec: detectors.build_detector(spec, context_of(env, table, sampler, seed + 1))
        for spec in setting["detectors"]
    }
    observations = any("observations" in d.requires for d in built.values())
    rng = np.random.default_rng([seed, setting["density_value"]])
    batches = [
        sampler.sample(table, setting["groups"], setting["group_size"], rng, observations)
        for _ in range(setting["batches"])
    ]
    rows = []
    for spec, detector in built.items():
        began = time.perf_counter()
        result = scoring.score_detector(
            detector,
            batches,
            warmup=setting["warmup"],
            num_resamples=setting["resamples"],
            seed=seed,
        )
        rows.append({"detector": spec, **result.as_row(), "seconds": time.perf_counter() - began})
    return {
        **setting,
        "rho": float(env.decision_density),
        "success_probability": float(env.success_probability(table)),
        "results": rows,
        "seconds": time.perf_counter() - start,
    }


KEY_FIELDS = (
    "env_id",
    "env_kwargs",
    "density_kwarg",
    "density_value",
    "policy",
    "detectors",
    "batches",
    "warmup",
    "groups",
    "group_size",
    "resamples",
    "seed",
    "code",
    "versions",
)
"""What a score depends on: the env and its density value, the policy (spec and file hash),
the detectors (specs and code), the sample, the bootstrap, the seed and the versions."""


def setting_key(setting: dict[str, Any]) -> str:
    """The identity of a setting: every field of :data:`KEY_FIELDS`, as canonical JSON."""
    return json.dumps({k: setting[k] for k in KEY_FIELDS}, sort_keys=True)


@dataclass
class DetectorRecord(Record):
    """One (density value, policy): every detector's scores on the same batches (``results``),
    the policy's exact success probability; the setting's other fields in ``extra``."""

    env_id: str
    detectors: list[Any]
    results: list[Any]
    success_probability: float
    extra: dict[str, Any] = field(default_factory=dict)

    unit: ClassVar[str] = "setting"

    @staticmethod
    def check(record: dict[str, Any]) -> None:
        """One result per detector, each with its numbers."""
        check_record(record)


REQUIRED = {"key": "str", **DetectorRecord.schema()}
SCORE_COLUMNS = ("auc", "ap", "rho", "rho_implied", "rho_error", "cost_per_step")


def check_record(record: dict[str, Any]) -> None:
    """One result per detector, each with its numbers."""
    names = [r.get("detector") for r in record["results"]]
    if names != record["detectors"]:
        raise ValueError(f"results for {names}, detectors {record['detectors']}")
    for r in record["results"]:
        for key in SCORE_COLUMNS:
            if not isinstance(r.get(key), (int, float)):
                raise ValueError(f"result {r.get('detector')!r} has no number {key!r}")


def detector_code(spec: str) -> str:
    """The fingerprint of a detector's code: its module's whole source (helpers included),
    with the scoring module's and the sampler's (:func:`~baselines.lib.specs.parse_detector`,
    parsed once)."""
    return parse_detector(spec).code


def plan(args: ScoreArgs) -> list[dict[str, Any]]:
    """Every setting, validated before any work (``ValueError`` naming the flag)."""
    from routine_envs.registration import entry

    for name in ("routine_lengths", "detectors", "policies"):
        if not getattr(args, name):
            raise ValueError(f"--{name.replace('_', '-')} must not be empty")
        cli.check_unique(name, getattr(args, name))
    if args.warmup >= args.batches:
        raise ValueError(f"--warmup ({args.warmup}) must be below --batches ({args.batches})")
    try:
        density_kwarg = entry(args.env_id).density_kwarg
    except (KeyError, ValueError):
        raise ValueError(f"--env-id {args.env_id!r} is not a registered id of the suite") from None
    if density_kwarg is None:
        raise ValueError(f"--env-id {args.env_id}: no keyword argument sets its decision density")
    if density_kwarg in args.env_kwargs:
        raise ValueError(f"--env-kwargs sets {density_kwarg}, which --routine-lengths sweeps")
    policies = [policy_identity(p) for p in args.policies]
    probe = {
        "env_id": args.env_id,
        "env_kwargs": args.env_kwargs,
        "density_kwarg": density_kwarg,
        "density_value": args.routine_lengths[0],
    }
    try:
        env = make_env(probe)
    except (TypeError, ValueError) as err:
        raise ValueError(f"--env-kwargs {args.env_kwargs}: {err}") from None
    sampler = ModelSampler(env)
    for text in args.policies:  # a bad policy fails here
        table = policy_table(env, text)
    for spec in args.detectors:  # unknown names, failed imports, missing fields fail here
        detector = detectors.build_detector(spec, context_of(env, table, sampler, args.seed))
        detectors.check_detector_provides(detector, ModelSampler.PROVIDES, SCORER_SOURCE)
    code = {spec: detector_code(spec) for spec in args.detectors}
    code["score_setting"] = provenance.code_fingerprint(score_setting)
    versions = provenance.versions()
    return [
        {
            **probe,
            "density_value": int(value),
            "policy": policy,
            "detectors": list(args.detectors),
            "batches": args.batches,
            "warmup": args.warmup,
            "groups": args.groups,
            "group_size": args.group_size,
            "resamples": args.resamples,
            "seed": args.seed,
            "code": code,
            "versions": versions,
        }
        for value in args.routine_lengths
        for policy in policies
    ]


def main(args: ScoreArgs) -> dict[str, Any]:
    """Score what is missing, write the tables and the summary; return them."""
    return experiment_main(EXPERIMENT, args)


EXPERIMENT = Experiment(
    "detectors score", plan, setting_key, score_setting, DetectorRecord, analysis.analyse
)
"""Detectors scored against the annotations (the analysis:
:mod:`baselines.experiments.detectors.analysis`)."""
