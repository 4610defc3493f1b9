"""What the gradient-SNR experiments share (the paper's lab, the open lab, the detectors and the
benchmark's report): the lab's estimator labels, the policies they measure under, and how a
fit is told.

Lab labels ``kind[:arg]`` extend the estimator specs of :mod:`routine_envs.credit`:
``oracle:C`` (noise ``sigma = C std(R)``), ``trajectory_exact`` (the exact baseline ``J``) and
``mc_rollout:K`` (``K`` simulated rollouts); any other label is a spec (a name or
``package.module:Name``, with JSON arguments). Policies are the one policy grammar
(:mod:`routine_envs.policy_specs`), an SB3 ``.zip`` measured through its logits' Jacobian.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from baselines.lib.specs import parse_method
from routine_envs import credit, plugins, snr
from routine_envs.plugins import code_fingerprint
from routine_envs.policy_specs import parse_policy

PAPER = {"slope": -0.5084, "r2": 0.9994, "rho_range": "1 .. 1/51"}
"""The paper's fit of the rho law (SNR ratio against rho, log-log)."""

LAB_ESTIMATORS: dict[str, Callable[[str, dict[str, float]], tuple[Any, dict[str, Any]]]] = {
    "oracle": lambda arg, ctx: ("oracle", {"sigma": float(arg or 0) * ctx["std_R"]}),
    "trajectory_exact": lambda arg, ctx: ("trajectory_mc", {"baseline": ctx["J"]}),
    "mc_rollout": lambda arg, ctx: ("mc_rollout", {"num_rollouts": int(arg)}),
}
"""Lab labels ``kind[:arg]`` that are not plain registry names: ``(arg, {"J", "std_R"}) ->
(estimator spec, constructor kwargs)``."""
SEED_OFFSETS = {"oracle": 1, "mc_rollout": 2}
"""Each randomized estimator's seed is the setting's seed plus its offset."""


def lab_estimator(
    label: str, context: credit.EstimatorContext, exact: dict[str, float]
) -> credit.AdvantageEstimator:
    """The estimator a lab label names (see :data:`LAB_ESTIMATORS`), else any spec that
    :func:`routine_envs.credit.build_estimator` accepts, built from ``context``; ``exact`` holds
    ``J`` and ``std_R`` of the setting."""
    kind, _, arg = label.partition(":")
    if kind in LAB_ESTIMATORS:
        spec, kwargs = LAB_ESTIMATORS[kind](arg, exact)
    else:
        spec, kwargs, kind = label, {}, plugins.parse_spec(label, "estimator").target
    if kind in SEED_OFFSETS and context.seed is not None:
        kwargs["seed"] = context.seed + SEED_OFFSETS[kind]
    return credit.build_estimator(spec, context, **kwargs)


def closed_form_bias(
    estimator: Any, env: Any, policy: snr.TabularSoftmax, group_size: int
) -> dict[str, float] | None:
    """The exact relative bias ``||E g - grad J|| / ||grad J||`` and cosine of ``E g`` and
    ``grad J`` where ``estimator`` has a closed form of its expected gradient (an
    ``expected_gradient(env, policy, group_size)`` method, e.g.
    :class:`routine_envs.turn_level.TurnIndexNorm`), else ``None``: what the lab prints beside
    its estimates (batches of one group of ``group_size``, tabular parameters)."""
    hook = getattr(estimator, "expected_gradient", None)
    expected = None if hook is None else hook(env, policy, group_size)
    if expected is None:
        return None
    target = snr.exact_policy_gradient(env, policy)
    norm, mean_norm = float(np.linalg.norm(target)), float(np.linalg.norm(expected))
    if norm == 0.0 or mean_norm == 0.0:
        return None
    return {
        "relative_bias_closed_form": float(np.linalg.norm(expected - target)) / norm,
        "cosine_closed_form": float(expected @ target) / (norm * mean_norm),
    }


def estimator_code(label: str) -> str:
    """The fingerprint of the code a lab label builds (outside code: its whole module, as the
    parsed method spec knows it: :meth:`~baselines.lib.specs.MethodSpec.code`)."""
    kind, _, arg = label.partition(":")
    if kind in LAB_ESTIMATORS:
        spec = LAB_ESTIMATORS[kind](arg or "1", {"J": 0.5, "std_R": 0.5})[0]
        return code_fingerprint(credit.estimator_class(spec))
    method = parse_method(label)
    return method.code(method.kwargs)


def lab_policy(env: Any, text: str) -> tuple[snr.TabularSoftmax, np.ndarray | None]:
    """The per-state softmax policy the spec ``text`` names on ``env`` and, for an SB3 network
    (``.zip``), the metric ``J J^T`` of its logits' Jacobian (``None`` otherwise)."""
    spec = parse_policy(text)
    num_states, num_actions = env.num_states, env.num_actions
    if spec.kind != "model":
        return snr.TabularSoftmax.per_state(num_states, num_actions, spec.logits(env)), None
    path = spec.path
    if env.has_action_masks:
        raise ValueError(
            f"--policy {path}: an SB3 network policy is measured through its logits' Jacobian, "
            f"which assumes no action masks; {env.spec.id if env.spec else env} has them "
            "(save its probability table as .npy instead)"
        )
    from stable_baselines3 import PPO

    from baselines.lib.network import logits_and_jacobian

    model = PPO.load(path, device="cpu")
    logits, jac = logits_and_jacobian(model.policy, env)
    log_probs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    return snr.TabularSoftmax.per_state(num_states, num_actions, log_probs), jac @ jac.T


def policy_table(env: Any, text: str, what: str = "--policies") -> np.ndarray:
    """The probability table ``(num_states, num_actions)`` the spec ``text`` names (an SB3
    network through its probabilities on every state)."""
    spec = parse_policy(text, what)
    if spec.kind == "model":
        return lab_policy(env, text)[0].probs()
    return spec.table(env)


def fit_text(f: dict[str, Any]) -> str:
    """``slope -0.508, R^2 0.9994``, or why the fit is not available."""
    if f.get("slope") is None:
        return f.get("note", "fit not available")
    return f"slope {f['slope']:.3f}, R^2 {f['r2']:.4f}"
