"""Per-environment hyperparameter files (``baselines/configs/<env id>.yml``), validated before
any training starts."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import yaml

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
TURN_LEVEL_METHODS = ("ppo",)
"""Methods trained by SB3's own PPO (MaskablePPO where the env has action masks)."""
EXTRA_KEYS = {"n_envs", "estimator_kwargs"}
"""Keys that are not ``PPO.__init__`` arguments: the vector env size and estimator arguments."""


def _ppo_keys() -> set[str]:
    from stable_baselines3 import PPO

    params = inspect.signature(PPO.__init__).parameters
    return set(params) - {"self", "policy", "env", "seed", "device", "_init_setup_model"}


def known_methods() -> list[str]:
    """``ppo`` plus every estimator name (trained by ``TrajectoryAdvantagePPO``)."""
    from routine_envs.credit import ESTIMATORS

    return [*TURN_LEVEL_METHODS, *sorted(ESTIMATORS)]


def config_path(env_id: str) -> Path:
    return CONFIG_DIR / f"{env_id}.yml"


def load_hyperparameters(env_id: str, method: str, path: Path | None = None) -> dict[str, Any]:
    """The merged ``common`` + ``methods.<method>`` settings for ``env_id``.

    Raises:
        ValueError: no config for the env, an unknown method, or a key that is neither a
            ``PPO`` argument nor one of :data:`EXTRA_KEYS` (the file and key are named).
    """
    if method not in known_methods():
        raise ValueError(f"unknown method {method!r}; known: {known_methods()}")
    path = path or config_path(env_id)
    if not path.exists():
        available = sorted(p.stem for p in CONFIG_DIR.glob("*.yml"))
        raise ValueError(f"no hyperparameter file for {env_id!r} at {path}; available: {available}")
    data = yaml.safe_load(path.read_text()) or {}
    unknown_top = set(data) - {"common", "methods"}
    if unknown_top:
        raise ValueError(
            f"{path}: unknown top-level keys {sorted(unknown_top)} "
            "(expected 'common' and 'methods')"
        )
    allowed = _ppo_keys() | EXTRA_KEYS
    sections = {"common": data.get("common") or {}}
    for name, section in (data.get("methods") or {}).items():
        if name not in known_methods():
            raise ValueError(
                f"{path}: unknown method {name!r} under 'methods'; known: {known_methods()}"
            )
        sections[f"methods.{name}"] = section or {}
    for where, section in sections.items():
        if not isinstance(section, dict):
            raise ValueError(f"{path}: {where} must be a mapping, got {section!r}")
        bad = sorted(set(section) - allowed)
        if bad:
            raise ValueError(f"{path}: unknown key(s) {bad} in {where}; allowed: {sorted(allowed)}")
    merged = dict(sections["common"])
    merged.update(sections.get(f"methods.{method}", {}))
    return merged
