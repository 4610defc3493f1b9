"""Hyperparameters: one documented default config for every registered id, which a
per-environment file (``baselines/configs/<env id>.yml``) overrides; validated before any
training starts.

Both have the same shape: ``common`` (every method) and ``methods.<name>`` (one method's
overrides). The YAML's ``common`` keys replace the default's key by key, then the default's
``methods.<name>`` and the YAML's ``methods.<name>`` are applied in that order (a key's whole
value is replaced: ``policy_kwargs`` is not merged inside).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import yaml

from baselines.lib import data
from baselines.lib.specs import TURN_LEVEL_METHODS, MethodSpec, known_methods, parse_method
from routine_envs.plugins import Spec, brief, parse_spec

__all__ = [
    "CONFIG_DIR",
    "DEFAULT_CONFIG",
    "EXTRA_KEYS",
    "TURN_LEVEL_METHODS",
    "check_estimator_kwargs",
    "config_path",
    "known_methods",
    "load_hyperparameters",
    "method_spec",
]

CONFIG_DIR = data.CONFIGS
EXTRA_KEYS = {"n_envs", "estimator_kwargs", "policy"}
"""Keys that are not ``PPO.__init__`` arguments: the vector env size, estimator arguments and
the policy (``mlp``, SB3's, the default; ``transformer``: the batched trainer's only)."""


DEFAULT_CONFIG: dict[str, Any] = {
    "common": {
        "n_envs": 8,  # vector envs; for trajectory methods this is the group size
        "n_steps": 128,  # steps per env per rollout (about n_steps * n_envs per update)
        "batch_size": 256,
        "n_epochs": 4,
        "learning_rate": 1.0e-3,
        "gamma": 1.0,  # outcome rewards: discounting would shrink the decisions' signal
        "gae_lambda": 0.95,
        "ent_coef": 0.01,
        "clip_range": 0.2,
        "normalize_advantage": True,
        "policy_kwargs": {"net_arch": [64, 64]},
    },
    "methods": {"mc_rollout": {"estimator_kwargs": {"num_rollouts": 2}}},
}
"""The config of an id without a YAML file (and the base every YAML overrides): the settings of
``DilutedDoors-v0``, shared by every method for a fair comparison (docs/baselines.md)."""


def _ppo_keys() -> set[str]:
    from stable_baselines3 import PPO

    params = inspect.signature(PPO.__init__).parameters
    return set(params) - {"self", "policy", "env", "seed", "device", "_init_setup_model"}


def method_spec(method: str) -> Spec:
    """``method`` parsed: a built-in name or an import path, with optional JSON arguments
    (``'gigpo{"omega": 0.5}'``, ``'my_lab.est:Scaled{"scale": 0.7}'``)."""
    return parse_spec(method, "method")


def check_estimator_kwargs(method: str, kwargs: Any, where: str) -> None:
    """``ValueError`` unless ``kwargs`` (the ``estimator_kwargs`` a config gives ``method``,
    named ``where``) is a mapping of arguments that the method's estimator accepts, of their
    declared types (data: no argument the context fills)."""
    from routine_envs import credit

    if kwargs is None:
        return
    if not isinstance(kwargs, dict):
        raise ValueError(f"{where}: estimator_kwargs must be a mapping, got {brief(kwargs)}")
    spec = parse_method(method)
    if spec.target in TURN_LEVEL_METHODS:
        return
    found = spec.estimator
    label = f"bad arguments for method {spec.target!r} in the estimator_kwargs of {where}"
    credit.check_arguments(found, kwargs, label, from_data=True)


def config_path(env_id: str) -> Path:
    return CONFIG_DIR / f"{env_id}.yml"


def _sections(data: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """``{"common": ..., "methods.<name>": ...}`` of a config, every key checked."""
    unknown_top = set(data) - {"common", "methods"}
    if unknown_top:
        raise ValueError(
            f"{where}: unknown top-level keys {sorted(unknown_top)} "
            "(expected 'common' and 'methods')"
        )
    allowed = _ppo_keys() | EXTRA_KEYS
    sections = {"common": data.get("common") or {}}
    for name, section in (data.get("methods") or {}).items():
        try:
            target = parse_method(name).target
        except ValueError as err:
            raise ValueError(f"{where}: under 'methods': {err}") from None
        if target != name:
            raise ValueError(
                f"{where}: under 'methods', {name!r} has arguments: give them as "
                f"estimator_kwargs of {target!r}"
            )
        sections[f"methods.{name}"] = section or {}
    for key, section in sections.items():
        if not isinstance(section, dict):
            raise ValueError(f"{where}: {key} must be a mapping, got {section!r}")
        bad = sorted(set(section) - allowed)
        if bad:
            raise ValueError(f"{where}: unknown key(s) {bad} in {key}; allowed: {sorted(allowed)}")
    return sections


def load_hyperparameters(
    env_id: str, method: str | MethodSpec, path: Path | None = None
) -> dict[str, Any]:
    """The settings of ``method`` on ``env_id``: :data:`DEFAULT_CONFIG` overridden by the file
    at ``path`` (default: ``baselines/configs/<env_id>.yml`` when it exists). ``method`` may
    carry JSON arguments (:func:`method_spec`): its section is that of the name or import path
    before them, and the arguments override its ``estimator_kwargs`` key by key.

    Raises:
        ValueError: an unknown method, a ``path`` given that does not exist, or a key that is
            neither a ``PPO`` argument nor one of :data:`EXTRA_KEYS` (the file and key named).
    """
    spec = parse_method(method)
    method = spec.target
    layers = [_sections(DEFAULT_CONFIG, "the default config")]
    if path is not None and not path.exists():
        raise ValueError(f"--config {path}: no hyperparameter file there")
    path = path or config_path(env_id)
    if path.exists():
        layers.append(_sections(yaml.safe_load(path.read_text()) or {}, str(path)))
    merged: dict[str, Any] = {}
    for section in ("common", f"methods.{method}"):
        for layer, where in zip(layers, ["the default config", str(path)], strict=False):
            values = layer.get(section, {})
            if "estimator_kwargs" in values:
                check_estimator_kwargs(method, values["estimator_kwargs"], f"{where} ({section})")
            merged.update(values)
    if spec.kwargs:
        merged["estimator_kwargs"] = {**(merged.get("estimator_kwargs") or {}), **spec.kwargs}
    return merged
