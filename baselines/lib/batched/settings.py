"""The batched trainer's settings from the protocol's (SB3 ``PPO``) hyperparameters.

Every key of a config is either used with SB3's meaning, accepted at SB3's default only, or
ignored because it changes only logging; anything else is refused with a ``ValueError`` naming
it, before any training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baselines.lib.batched.mlp import hidden_sizes

POLICIES = ("mlp", "transformer")
"""``policy`` hyperparameter values: SB3's MLP (default) or the causal Transformer."""
SB3_DEFAULTS: dict[str, Any] = {
    "learning_rate": 3e-4,
    "n_steps": 2048,
    "batch_size": 64,
    "n_epochs": 10,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_range": 0.2,
    "normalize_advantage": True,
    "ent_coef": 0.0,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
}
"""SB3 ``PPO``'s defaults of the keys the batched trainer uses."""
DEFAULT_ONLY: dict[str, Any] = {
    "clip_range_vf": None,
    "use_sde": False,
    "sde_sample_freq": -1,
    "rollout_buffer_class": None,
    "rollout_buffer_kwargs": None,
    "target_kl": None,
}
"""Keys accepted only at SB3's default (the batched trainer does not implement the others)."""
IGNORED = ("stats_window_size", "tensorboard_log", "verbose")
"""Keys that change only SB3's logging."""
POLICY_KWARGS = ("net_arch", "transformer")
"""``policy_kwargs`` keys the batched trainer reads (SB3's activation, initialisation and
optimiser defaults are the only ones it implements)."""


@dataclass(frozen=True)
class TrainerSettings:
    """The resolved settings of one batch (identical for all its runs)."""

    n_envs: int
    n_steps: int
    batch_size: int
    n_epochs: int
    learning_rate: float
    gamma: float
    gae_lambda: float
    clip_range: float
    normalize_advantage: bool
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    pi_arch: tuple[int, ...]
    vf_arch: tuple[int, ...]
    policy: str
    transformer: dict[str, Any]
    estimator_kwargs: dict[str, Any]

    @classmethod
    def from_hyperparameters(cls, hyper: dict[str, Any]) -> TrainerSettings:
        """``hyper`` as :func:`baselines.lib.config.load_hyperparameters` returns it."""
        params = dict(hyper)
        n_envs = params.pop("n_envs", 8)
        estimator_kwargs = dict(params.pop("estimator_kwargs", None) or {})
        policy = params.pop("policy", "mlp")
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        policy_kwargs = dict(params.pop("policy_kwargs", None) or {})
        unknown = sorted(set(policy_kwargs) - set(POLICY_KWARGS))
        if unknown:
            raise ValueError(
                f"policy_kwargs {unknown} are not supported by --trainer batched (it builds SB3's "
                f"default tanh MLP with orthogonal init; it reads {list(POLICY_KWARGS)})"
            )
        pi, vf = hidden_sizes(policy_kwargs.get("net_arch", [64, 64]))
        for key, default in DEFAULT_ONLY.items():
            if key in params and params.pop(key) != default:
                raise ValueError(
                    f"{key} is not supported by --trainer batched (only SB3's default {default!r})"
                )
        for key in IGNORED:
            params.pop(key, None)
        values = {**SB3_DEFAULTS}
        for key in list(params):
            if key in SB3_DEFAULTS:
                values[key] = params.pop(key)
        if params:
            raise ValueError(
                f"hyperparameters {sorted(params)} are not supported by --trainer batched"
            )
        for key in ("learning_rate", "clip_range"):
            if not isinstance(values[key], (int, float)) or isinstance(values[key], bool):
                raise ValueError(f"{key} must be a number for --trainer batched (no schedules)")
        for key in ("n_steps", "batch_size", "n_epochs"):
            if not isinstance(values[key], int) or values[key] < 1:
                raise ValueError(f"{key} must be an int >= 1, got {values[key]!r}")
        if not isinstance(n_envs, int) or n_envs < 1:
            raise ValueError(f"n_envs must be an int >= 1, got {n_envs!r}")
        return cls(
            n_envs=n_envs,
            n_steps=int(values["n_steps"]),
            batch_size=int(values["batch_size"]),
            n_epochs=int(values["n_epochs"]),
            learning_rate=float(values["learning_rate"]),
            gamma=float(values["gamma"]),
            gae_lambda=float(values["gae_lambda"]),
            clip_range=float(values["clip_range"]),
            normalize_advantage=bool(values["normalize_advantage"]),
            ent_coef=float(values["ent_coef"]),
            vf_coef=float(values["vf_coef"]),
            max_grad_norm=float(values["max_grad_norm"]),
            pi_arch=tuple(pi),
            vf_arch=tuple(vf),
            policy=policy,
            transformer=dict(policy_kwargs.get("transformer") or {}),
            estimator_kwargs=estimator_kwargs,
        )
