"""The network SNR: the Jacobian route gives the network's true policy gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from baselines.experiments.snr_network import sweep as snr_network
from baselines.lib import network
from routine_envs import snr
from routine_envs.envs import DilutedDoorsV0Env
from routine_envs.sampler import ModelSampler


def test_jacobian_route_equals_autograd_gradient():
    env = DilutedDoorsV0Env(routine_length=2)
    policy = network.network_policy(env, [16], seed=0)
    logits, jac = network.logits_and_jacobian(policy, env)
    log_probs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    tab = snr.TabularSoftmax.per_state(env.num_states, 3, logits=log_probs)
    batch = ModelSampler(env).sample(tab.probs(), 5, 1, np.random.default_rng(0))
    adv = np.random.default_rng(1).normal(size=batch.num_steps)
    scores = snr._BatchScores(batch, tab.probs(), tab, group_size=1)
    s_all, *_ = scores.moments(adv)
    via_jacobian = jac.T @ s_all  # sum over groups of J^T g_k
    actor = network.Actor(policy)
    obs = th.as_tensor(
        np.stack([env.dynamics.observe(env.model().states[int(s)]) for s in batch.state_ids]),
        dtype=th.float32,
    )
    logp = th.log_softmax(actor(obs), dim=1)[
        th.arange(batch.num_steps), th.as_tensor(batch.actions)
    ]
    (logp.double() * th.as_tensor(adv)).sum().backward()
    direct = th.cat([p.grad.reshape(-1) for p in actor.parameters()]).double().numpy()
    np.testing.assert_allclose(via_jacobian, direct, rtol=1e-4, atol=1e-6)


def test_network_measure_small():
    row = snr_network.measure(routine_length=3, episodes=800, group_size=8, net_arch=[16], seed=0)
    assert row["params"] == 8 * 16 + 16 + 16 * 3 + 3
    assert 1.0 < row["ratio"] < 10.0 and row["ratio_low"] <= row["ratio"] <= row["ratio_high"]
    assert row["J"] == pytest.approx(1 / 27, rel=0.5)
