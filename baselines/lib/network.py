"""An SB3 policy network as the SNR lab sees it: the logits of every state of an environment's
exact model and their Jacobian with respect to the actor's parameters (``torch.func``), so a
network's gradient SNR is the tabular one in the metric ``M = J J^T``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy
from torch.func import functional_call, jacrev


def network_policy(env: Any, net_arch: list[int], seed: int) -> ActorCriticPolicy:
    """SB3's actor-critic MLP policy for ``env`` at initialization (seeded); torch on one thread
    from here on (small networks; worker processes share the CPUs)."""
    th.set_num_threads(1)
    th.manual_seed(seed)
    return ActorCriticPolicy(
        env.observation_space, env.action_space, lambda _: 3e-4, net_arch=net_arch
    )


class Actor(th.nn.Module):
    """The actor path of an SB3 ``ActorCriticPolicy``: observation -> logits."""

    def __init__(self, policy: ActorCriticPolicy) -> None:
        super().__init__()
        self.features = policy.pi_features_extractor
        self.body = policy.mlp_extractor.policy_net
        self.head = policy.action_net

    def forward(self, obs: th.Tensor) -> th.Tensor:
        return self.head(self.body(self.features(obs)))


def logits_and_jacobian(policy: ActorCriticPolicy, env: Any) -> tuple[np.ndarray, np.ndarray]:
    """The logits of every ``state_id`` of ``env`` (an env of the suite: ``env.unwrapped`` has
    ``decision_observations()``), shape ``(S, A)``, and their Jacobian with respect to the
    actor's parameters, flattened to ``(S * A, P)``; unreachable and terminal ids: zeros."""
    env = env.unwrapped
    ids, observations = env.decision_observations()
    obs = th.as_tensor(observations, dtype=th.float32)
    actor = Actor(policy)
    params = {k: v.detach() for k, v in actor.named_parameters()}
    with th.no_grad():
        values = actor(obs).numpy().astype(np.float64)
    jac = jacrev(lambda p: functional_call(actor, p, (obs,)))(params)
    a = int(env.action_space.n)
    flat = th.cat([j.reshape(len(ids) * a, -1) for j in jac.values()], dim=1).double().numpy()
    out_logits = np.zeros((env.num_states, a))
    out_logits[ids] = values
    full = np.zeros((env.num_states * a, flat.shape[1]))
    full[(ids[:, None] * a + np.arange(a)).ravel()] = flat
    return out_logits, full
