"""The Transformer policy's tree pass (baselines.lib.batched.transformer) against the path-based
pass it replaced (kept here as the reference), a run alone and inside batches of other tree
depths, and :func:`initial_policy` (its logits and its Jacobian)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from baselines.lib.batched import train as train_runs
from baselines.lib.batched.envs import EnvConfig
from baselines.lib.batched.transformer import (
    DEFAULTS,
    SUBSET_SAVING,
    HistoryTree,
    Network,
    TokenPlan,
    TransformerTrainer,
    initial_policy,
)
from tests.utils import run_spec

DOORS = "DilutedDoors-v1"
CONFIGS = [
    (DOORS, {"num_floors": 2, "routine_length": 3}),
    (DOORS, {"num_floors": 3, "num_doors": 3, "routine_length": 5}),
    ("RoutineGrid-v1", {}),
]
HYPER = {
    "policy": "transformer",
    "n_envs": 4,
    "n_steps": 32,
    "batch_size": 64,
    "n_epochs": 2,
    "learning_rate": 1e-3,
    "gamma": 1.0,
    "gae_lambda": 0.95,
    "ent_coef": 0.01,
    "clip_range": 0.2,
    "normalize_advantage": True,
}


@pytest.fixture(autouse=True)
def one_thread():
    """As the trainer runs (a shared machine's threads would wait on each other)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def path_pass(net: Network, theta: torch.Tensor, tree: HistoryTree):
    """The previous implementation: one causal pass over every root-to-leaf path (logits
    ``(R, num_states, A)`` and values ``(R, num_states)``, a state's from one of its paths)."""
    p, w, heads = net.params(theta), net.sizes["width"], net.sizes["heads"]
    runs, (num_paths, length) = theta.shape[0], tree.paths.shape
    x = torch.from_numpy(tree.observations[tree.paths.reshape(-1)]).to(theta.dtype)
    h = torch.matmul(x[None], p["embed_w"]) + p["embed_b"]
    h = h.view(runs, num_paths, length, w) + p["pos"][:, None, :length]
    causal = torch.ones(length, length, dtype=torch.bool).tril()

    def norm(t, g, b):
        return torch.nn.functional.layer_norm(t, (w,)) * p[g][:, None] + p[b][:, None]

    for b in range(net.sizes["blocks"]):
        a = norm(h, f"ln1_g{b}", f"ln1_b{b}").view(runs, -1, w)
        qkv = (torch.matmul(a, p[f"qkv_w{b}"]) + p[f"qkv_b{b}"]).view(
            runs, num_paths, length, 3, heads, w // heads
        )
        q, k, v = (t.transpose(2, 3) for t in qkv.unbind(3))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(w // heads)
        scores = scores.masked_fill(~causal, float("-inf"))
        att = torch.matmul(torch.softmax(scores, -1), v).transpose(2, 3).reshape(runs, -1, w)
        h = h + (torch.matmul(att, p[f"out_w{b}"]) + p[f"out_b{b}"]).view(h.shape)
        f = norm(h, f"ln2_g{b}", f"ln2_b{b}").view(runs, -1, w)
        f = torch.nn.functional.gelu(torch.matmul(f, p[f"ff1_w{b}"]) + p[f"ff1_b{b}"])
        h = h + (torch.matmul(f, p[f"ff2_w{b}"]) + p[f"ff2_b{b}"]).view(h.shape)
    h = norm(h, "lnf_g", "lnf_b").view(runs, -1, w)
    logits = torch.matmul(h, p["pi_w"]) + p["pi_b"]
    values = (h * p["vf_w"].transpose(1, 2)).sum(-1) + p["vf_b"][..., 0]
    where = tree.where
    index = torch.from_numpy(np.where(where[:, 0] >= 0, where[:, 0] * length + where[:, 1], 0))
    return logits.index_select(1, index), values.index_select(1, index)


def setup(env_id, kwargs, runs=2, dtype=torch.float32):
    config = EnvConfig(env_id, kwargs, 1, 1)
    tree = HistoryTree.of(config)
    plan = TokenPlan.of(tree)
    net = Network(config.obs_dim, config.num_actions, plan.length, dict(DEFAULTS))
    gen = torch.Generator().manual_seed(0)
    theta = torch.stack([net.init(gen, plan.length) for _ in range(runs)])
    theta = theta + 0.2 * torch.randn(theta.shape, generator=gen)  # logits far from uniform
    return tree, plan, net, theta.to(dtype)


def grads(theta, fn, weights):
    """``theta``'s gradient of ``sum(weights * outputs)`` through ``fn``."""
    theta = theta.clone().requires_grad_(True)
    outs = fn(theta)
    sum((o * w).sum() for o, w in zip(outs, weights, strict=True)).backward()
    return [o.detach() for o in outs], theta.grad


def close(actual, expected, dtype):
    """Equal to float32 rounding (float64: to 1e-10 of the scale)."""
    scale = float(expected.abs().max())
    tol = 1e-10 if dtype == torch.float64 else 2e-6
    torch.testing.assert_close(actual, expected, rtol=0, atol=tol * max(scale, 1.0))


# ------------------------------------------------------------------ the same function
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("env_id", "kwargs"), CONFIGS)
def test_the_tree_pass_equals_the_path_pass_and_its_gradients(env_id, kwargs, dtype):
    tree, plan, net, theta = setup(env_id, kwargs, dtype=dtype)
    on = torch.from_numpy(tree.where[:, 0] >= 0)
    gen = torch.Generator().manual_seed(1)
    shape = (theta.shape[0], len(tree.where))
    weights = [torch.randn(*shape, net.shapes["pi_w"][1], generator=gen, dtype=dtype)
               * on[:, None], torch.randn(*shape, generator=gen, dtype=dtype) * on]  # fmt: skip
    (ref_logits, ref_values), ref_grad = grads(theta, lambda t: path_pass(net, t, tree), weights)
    (logits, values), grad = grads(theta, lambda t: net.states(t, plan), weights)
    close(logits[:, on], ref_logits[:, on], dtype)
    close(values[:, on], ref_values[:, on], dtype)
    close(grad, ref_grad, dtype)


@pytest.mark.parametrize(("env_id", "kwargs"), CONFIGS)
def test_the_minibatch_passes_equal_the_path_pass_at_their_states(env_id, kwargs):
    """The update's passes: at given steps (repeats allowed), on the whole tree (runs stacked)
    and on the pieces a run's steps need (one run)."""
    tree, plan, net, theta = setup(env_id, kwargs)
    on = np.flatnonzero(tree.where[:, 0] >= 0)
    rng = np.random.default_rng(0)
    deep = on[tree.where[on, 1] == tree.where[on, 1].max()]
    for steps in (rng.choice(deep, 4), rng.choice(on, 30), rng.choice(on, 400)):
        ids = np.stack([steps, rng.permutation(steps)])
        tokens = plan.token_of_state[torch.from_numpy(ids)]
        gen = torch.Generator().manual_seed(2)
        weights = [torch.randn(*ids.shape, net.shapes["pi_w"][1], generator=gen),
                   torch.randn(*ids.shape, generator=gen)]  # fmt: skip

        def reference(t, ids=ids):
            logits, values = path_pass(net, t, tree)
            index = torch.from_numpy(ids[: t.shape[0]])
            return logits.gather(1, index[..., None].expand(-1, -1, logits.shape[-1])), (
                values.gather(1, index)
            )

        (ref_logits, ref_values), ref_grad = grads(theta, reference, weights)
        outs, grad = grads(theta, lambda t, k=tokens: net.forward(t, plan, rows=k), weights)
        close(outs[0], ref_logits, torch.float32)
        close(outs[1], ref_values, torch.float32)
        close(grad, ref_grad, torch.float32)
        sub, local = plan.subset(tokens[0].numpy())
        if len(steps) == 4:
            assert len(sub.slot) < len(plan.slot)  # the deepest states' paths only
        one = [w[:1] for w in weights]
        mine = torch.from_numpy(local)[None]
        outs, grad = grads(theta[:1], lambda t, s=sub, m=mine: net.forward(t, s, rows=m), one)
        (ref_logits, ref_values), ref_grad = grads(theta[:1], reference, one)
        close(outs[0], ref_logits[:1], torch.float32)
        close(outs[1], ref_values[:1], torch.float32)
        close(grad, ref_grad, torch.float32)


@pytest.mark.parametrize(("env_id", "kwargs"), CONFIGS)
def test_every_token_attends_exactly_to_its_ancestors_and_itself(env_id, kwargs):
    tree, plan, _, _ = setup(env_id, kwargs)
    states = np.flatnonzero(tree.where[:, 0] >= 0)
    state_of = np.empty(len(plan.slot), dtype=np.int64)
    state_of[plan.token_of_state.numpy()[states]] = states
    seen = {}
    for bucket in plan.buckets:
        visible = bucket.bias.numpy()[:, 0] == 0
        for g, row in np.argwhere(bucket.real):
            keys = state_of[bucket.keys[g][visible[g, row]]]
            seen[state_of[bucket.queries[g, row]]] = keys.tolist()
    for s in states.tolist():
        path = [s]
        while tree.parent[path[-1]] >= 0:
            path.append(int(tree.parent[path[-1]]))
        assert seen[s] == path[::-1]  # root first: the order of the path's positions


def test_a_stacked_run_computes_what_it_computes_alone():
    _, plan, net, theta = setup(DOORS, {"num_floors": 3, "num_doors": 3, "routine_length": 5}, 3)
    rows = torch.randint(0, len(plan.slot), (3, 20), generator=torch.Generator().manual_seed(0))
    for args in ({}, {"rows": rows}):
        weights = [torch.ones(1, 1, 1), torch.ones(1, 1)]
        outs, grad = grads(theta, lambda t, a=args: net.forward(t, plan, **a), weights)
        for k in range(3):
            mine = {"rows": rows[k : k + 1]} if args else {}
            alone, alone_grad = grads(
                theta[k : k + 1], lambda t, m=mine: net.forward(t, plan, **m), weights
            )
            assert torch.equal(alone[0][0], outs[0][k]) and torch.equal(alone[1][0], outs[1][k])
            assert torch.equal(alone_grad[0], grad[k])


# ------------------------------------------------------------------ training
def test_a_run_is_bit_identical_alone_and_among_runs_of_other_tree_depths(monkeypatch):
    """Trees of different depths in one batch (position tables of different lengths), the
    deeper one's minibatches on their own pieces."""
    savings = []
    subset = TokenPlan.subset

    def spy(self, rows):
        out = subset(self, rows)
        savings.append(len(self.slot) - len(out[0].slot))
        return out

    monkeypatch.setattr(TokenPlan, "subset", spy)
    specs = [
        run_spec(DOORS, {"num_floors": 3, "num_doors": 3, "routine_length": length}, "ppo", seed,
                600, 300, hyperparameters=HYPER)
        for seed, length in ((0, 15), (1, 1), (2, 15), (3, 1))
    ]  # fmt: skip
    batch = train_runs(specs)
    assert max(savings) >= SUBSET_SAVING
    for k in (1, 2):
        alone = train_runs([specs[k]])[0]
        assert alone.success == batch[k].success
    assert batch[0].success != batch[2].success


# ------------------------------------------------------------------ initial_policy
def test_initial_policy_is_what_the_runs_first_rollout_sees():
    kinds = [{"num_floors": 2, "routine_length": 3}, {"num_floors": 2, "routine_length": 0}]
    runs = [run_spec(DOORS, kinds[seed % 2], "ppo", seed, 600, 300, hyperparameters=HYPER)
            for seed in range(3)]  # fmt: skip
    trainer = TransformerTrainer(runs, HYPER)
    starts = {}
    for j, run in enumerate(trainer.runs):
        start = starts[run.seed] = initial_policy(DOORS, run.env_kwargs, HYPER, run.seed)
        c = trainer.config_of[j]
        with torch.no_grad():
            logits, _ = trainer.net.states(trainer.theta, trainer.plans[c])
        on = trainer.trees[c].where[:, 0] >= 0
        assert start.logits.dtype == np.float64 and start.logits.shape == (len(on), 3)
        np.testing.assert_array_equal(start.logits[on], logits[j].double().numpy()[on])
        assert not start.logits[~on].any()
        np.testing.assert_array_equal(
            start.parameters, trainer.theta[j, : trainer.ends[j]].double().numpy()
        )
    logits, jacobian = initial_policy(DOORS, kinds[0], HYPER, 0)  # unpacks
    np.testing.assert_array_equal(logits, starts[0].logits)
    assert callable(jacobian)


@pytest.mark.parametrize(("env_id", "kwargs"), [CONFIGS[0], ("RoutineGrid-v1", {})])
def test_the_jacobian_matches_finite_differences(env_id, kwargs):
    start = initial_policy(env_id, kwargs, HYPER, 3)
    jac = start.jacobian(chunk=7)  # several passes
    states, actions = start.logits.shape
    assert jac.shape == (states * actions, len(start.parameters)) and jac.dtype == np.float64
    on = np.repeat(start.tree.where[:, 0] >= 0, actions)
    assert not jac[~on].any()
    plan = TokenPlan.of(start.tree)

    def logits(theta):
        with torch.no_grad():
            return start.net.states(torch.from_numpy(theta)[None], plan)[0][0].numpy().ravel()

    rng = np.random.default_rng(0)
    eps = 1e-5
    directions = [rng.standard_normal(len(start.parameters)) for _ in range(3)]
    for k in rng.choice(len(start.parameters), 5):  # single parameters too
        directions.append(np.zeros(len(start.parameters)))
        directions[-1][k] = 1.0
    for u in directions:
        u = u / np.linalg.norm(u)
        numeric = (logits(start.parameters + eps * u) - logits(start.parameters - eps * u)) / (
            2 * eps
        )
        np.testing.assert_allclose(jac[on] @ u, numeric[on], rtol=1e-4, atol=1e-6)
