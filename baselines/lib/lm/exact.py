"""The exact objective and gradient of an LM policy, through its table of canonical replies.

With ``window=1`` the model reads only the current observation's text, a function of the
state, so its probabilities of the canonical replies at every reachable state form a policy
table ``pi(a|s) = softmax_a log p(reply_a | s)`` (the model restricted to well-formed replies;
:func:`~baselines.lib.lm.policy.canonical_mass` says how much of its probability that is). On
the exact model (``dynamics.model()``) the objective ``J = E[R]`` is a differentiable function
of that table (:func:`exact_objective`: a linear solve), so autograd gives ``grad J`` with
respect to the table's logits and to the model's parameters, and the Jacobian of the logits
gives the metric in which :func:`routine_envs.snr.measure_snr` reports the SNR of the model's
gradient (``g_theta = J^T g_logits``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from baselines.lib.lm.policy import LMPolicy
from routine_envs.text import TextEnv


def exact_objective(model: object, logits: torch.Tensor) -> torch.Tensor:
    """``J = mu^T (I - P_pi)^-1 r_pi`` (undiscounted expected return) of the softmax policy of
    ``logits`` (shape ``(num_states, num_actions)``, float64) on the exact tabular ``model``
    (a :class:`routine_envs.oracle.TabularModel`), differentiable in ``logits``."""
    pi = torch.softmax(logits, dim=1)
    n = model.num_states  # type: ignore[attr-defined]
    state = torch.as_tensor(model.state)  # type: ignore[attr-defined]
    action = torch.as_tensor(model.action)  # type: ignore[attr-defined]
    nxt = torch.as_tensor(model.next_state)  # type: ignore[attr-defined]
    prob = torch.as_tensor(model.prob, dtype=torch.float64)  # type: ignore[attr-defined]
    reward = torch.as_tensor(model.reward, dtype=torch.float64)  # type: ignore[attr-defined]
    alive = torch.as_tensor(~model.terminated, dtype=torch.float64)  # type: ignore[attr-defined]
    weight = prob * pi[state, action]
    r_pi = torch.zeros(n, dtype=torch.float64).index_add(0, state, weight * reward)
    p_pi = torch.zeros(n, n, dtype=torch.float64).index_put(
        (state, nxt), weight * alive, accumulate=True
    )
    values = torch.linalg.solve(torch.eye(n, dtype=torch.float64) - p_pi, r_pi)
    return torch.as_tensor(model.initial, dtype=torch.float64) @ values  # type: ignore[attr-defined]


@dataclass
class PolicyGradient:
    """The LM policy as a table and its exact gradient.

    Attributes:
        log_probs: ``log p(reply_a | s)`` of every ``state_id`` (0 where no action is taken),
            shape ``(num_states, num_actions)``: the table's logits.
        jacobian: ``d log_probs / d theta``, shape ``(num_states * num_actions, P)``.
        objective: exact ``J``.
        logit_gradient: exact ``dJ / d log_probs`` (autograd through the model), flat
            ``(num_states * num_actions,)``.
        parameter_gradient: exact ``dJ / d theta`` (autograd through the LM), ``(P,)``.
        canonical_mass: the model's probability of a canonical reply, per decision state.
    """

    log_probs: np.ndarray
    jacobian: np.ndarray
    objective: float
    logit_gradient: np.ndarray
    parameter_gradient: np.ndarray
    canonical_mass: np.ndarray


def policy_gradient(policy: LMPolicy, env: TextEnv) -> PolicyGradient:
    """The table of ``policy`` on ``env``'s exact model, its Jacobian with respect to the LM's
    parameters and the exact ``J``, ``dJ/dlogits`` and ``dJ/dtheta`` by autograd."""
    base = env.unwrapped
    model = base.model()
    params = [p for p in policy.model.parameters() if p.requires_grad]
    ids, rows = policy.canonical_logits(env)
    num_actions = rows.shape[1]
    full = torch.zeros(base.num_states, num_actions, dtype=torch.float64)
    full = full.index_put((torch.as_tensor(ids),), rows.double())
    table = full.detach().requires_grad_(True)
    objective = exact_objective(model, table)
    (logit_grad,) = torch.autograd.grad(objective, table)
    # end to end: J as a function of the LM's parameters, differentiated by autograd
    param_grad = torch.autograd.grad(exact_objective(model, full), params, retain_graph=True)
    jac = np.zeros((base.num_states * num_actions, sum(p.numel() for p in params)))
    for k, sid in enumerate(ids.tolist()):
        for a in range(num_actions):
            grads = torch.autograd.grad(rows[k, a], params, retain_graph=True, allow_unused=True)
            jac[sid * num_actions + a] = np.concatenate(
                [
                    (g if g is not None else torch.zeros_like(p)).reshape(-1).double().numpy()
                    for g, p in zip(grads, params, strict=True)
                ]
            )
    values = rows.detach().double().numpy()
    return PolicyGradient(
        log_probs=full.detach().numpy(),
        jacobian=jac,
        objective=float(objective.detach()),
        logit_gradient=logit_grad.numpy().ravel(),
        parameter_gradient=np.concatenate([g.reshape(-1).double().numpy() for g in param_grad]),
        canonical_mass=np.exp(values).sum(axis=1),
    )
