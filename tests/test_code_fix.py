"""Code Fix: dynamics, annotations against independent oracles, masks, text mode, rho,
determinism, bad input, and a MaskablePPO smoke run."""

from __future__ import annotations

import copy
import inspect
import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import annotations as keys
from routine_envs.annotations import ACTION_MASK, INVALID_ACTION
from routine_envs.envs import CodeFixEnv, CodeState, InvalidActionError
from routine_envs.envs.code_fix import CodeFixDynamics
from routine_envs.rendering.code_fix import EXAMPLE_KWARGS, example_transcript
from routine_envs.rendering.code_fix_text import (
    DONE,
    MODULE_NAMES,
    NAVIGATE,
    PATCH,
    PATCHED,
    READ_LOG,
    REVERT,
    RUN_RELATED,
    RUN_TESTS,
    SUBMIT,
    SYMPTOMS,
    TESTED,
    TRIAGE,
)
from tests.strategies import code_fix_configs
from tests.utils import continue_episode, run_episode, sample_states, tabular_sampler


def masked_uniform(env: CodeFixEnv):
    """A test policy ``(state_id, rng) -> action``: uniform over the valid actions."""

    def act(sid, rng):
        valid = np.flatnonzero(env.action_masks_of(sid))
        return int(valid[rng.integers(len(valid))])

    return act


def fix_calls(env: CodeFixEnv, read_log: bool, module: int | None = None) -> list[int]:
    """The actions of a fix of ``module`` (default: the buggy one) with the right patch."""
    s = env.state
    m = s.bug if module is None else module
    apply = 7 + env.num_modules + m * env.num_patches + env.correct_patch[s.symptom]
    nav = [1, 2] * env.num_sections
    return [READ_LOG] * read_log + [7 + m, *nav[: env.num_sections], apply, RUN_TESTS, SUBMIT]


def play(env: CodeFixEnv, actions: list[int]) -> tuple[list[bool], list[float], dict]:
    """Step ``actions`` from the current state; the critical flag of each state, the rewards and
    the last info."""
    flags, rewards, info = [], [], {}
    for a in actions:
        flags.append(env.critical)
        _, reward, terminated, truncated, info = env.step(a)
        rewards.append(reward)
        if terminated or truncated:
            break
    return flags, rewards, info


def seed_where(env: CodeFixEnv, correct_report: bool) -> int:
    for seed in range(1000):
        env.reset(seed=seed)
        if (env.state.pointer == env.state.bug) == correct_report:
            return seed
    raise AssertionError("no such seed")


# --------------------------------------------------------------------------- dynamics, rho
def test_defaults_and_clean_episode():
    env = gym.make("CodeFix-v0")
    u = env.unwrapped
    assert (u.num_modules, u.num_patches, u.routine_length, u.signal_noise) == (4, 3, 10, 0.05)
    assert (u.max_attempts, u.step_cost, u.obs_mode, u.max_steps) == (1, 0.0, "vector", 52)
    assert u.action_space.n == 7 + 4 + 4 * 3 and u.observation_space.shape == (3 * 4 + 3 + 11,)
    assert u.decision_density == pytest.approx(2 / 12, abs=1e-15)
    assert u.module_names == MODULE_NAMES[:4]
    env.reset(seed=seed_where(u, correct_report=True))
    flags, rewards, end = play(u, fix_calls(u, read_log=False))
    assert flags == [True] + [False] * 8 + [True, False, False]
    assert rewards == [0.0] * 11 + [1.0]
    assert end == {**end, "success": True, "num_critical": 2, "episode_length": 12}
    assert end["decision_density"] == pytest.approx(2 / 12)
    keys.check_episode_end_info(end)
    env.reset(seed=seed_where(u, correct_report=False))
    flags, rewards, end = play(u, fix_calls(u, read_log=True))  # the log finds the real bug
    assert flags == [True, True] + [False] * 8 + [True, False, False]
    assert rewards[-1] == 1.0 and end["decision_density"] == pytest.approx(3 / 13)


def test_trusting_a_wrong_report_fails_and_everything_after_is_routine():
    env = CodeFixEnv(routine_length=5)
    env.reset(seed=seed_where(env, correct_report=False))
    flags, rewards, end = play(env, fix_calls(env, read_log=False, module=env.state.pointer))
    assert flags == [True] + [False] * 6 and rewards == [0.0] * 7
    assert end["success"] is False and end["num_critical"] == 1
    assert end["decision_density"] == pytest.approx(1 / 7)


def test_wrong_patch_in_the_buggy_module_fails():
    env = CodeFixEnv(routine_length=3)
    env.reset(seed=0)
    calls = fix_calls(env, read_log=True)
    calls[-3] = (
        calls[-3]
        - env.correct_patch[env.state.symptom]
        + ((env.correct_patch[env.state.symptom] + 1) % env.num_patches)
    )
    flags, rewards, end = play(env, calls)
    assert flags == [True, True, False, True, False, False]
    assert rewards[-1] == 0.0 and not end["success"] and env.state.fixed == 0


def test_retries_with_a_step_cost():
    """max_attempts=2: revert after a failed test; the submit of attempt 1 is a decision."""
    env = CodeFixEnv(routine_length=4, max_attempts=2, step_cost=0.01)
    assert env.decision_density == pytest.approx(3 / 6)
    env.reset(seed=seed_where(env, correct_report=False))
    wrong = env.state.pointer
    first = fix_calls(env, read_log=False, module=wrong)[:-1]  # up to the (failing) tests
    flags, rewards, _ = play(env, [*first, REVERT, *fix_calls(env, read_log=False)])
    # open, 2 nav, apply (wrong module: routine), test | revert decision | open, 2 nav, apply, ...
    assert flags == [True, False, False, False, False, True, True, False, False, True, False, False]
    assert env.state.phase == DONE and env.state.attempt == 1
    assert sum(rewards) == pytest.approx(1 - 0.01 * 12)
    assert rewards[-1] == pytest.approx(0.99)
    with pytest.raises(ValueError, match="max_attempts=2 needs step_cost > 0"):
        CodeFixEnv(max_attempts=2)


def test_hidden_state_distribution_is_exact_and_sampled_on_np_random():
    env = CodeFixEnv(num_modules=3, num_patches=2, signal_noise=0.3)
    initial = env.unwrapped.dynamics.initial_outcomes()
    assert sum(p for p, _ in initial) == pytest.approx(1.0, abs=1e-15)
    assert sum(p for p, s in initial if s.pointer == s.bug) == pytest.approx(0.7)
    assert all(p == pytest.approx(0.3 / 2 / 6) for p, s in initial if s.pointer != s.bug)
    hits = []
    for seed in range(3000):
        env.reset(seed=seed)
        hits.append(env.state.pointer == env.state.bug)
    assert abs(np.mean(hits) - 0.7) < 4 * math.sqrt(0.21 / 3000)
    assert len(CodeFixDynamics(signal_noise=0.0).initial_outcomes()) == 4 * 3  # no zero-prob


def test_vector_observation_layout():
    env = CodeFixEnv(num_modules=3, num_patches=2, routine_length=4, max_attempts=3, step_cost=0.01)
    M, P = 3, 2
    obs, _ = env.reset(seed=seed_where(env, correct_report=False))
    s = env.state
    assert obs[s.pointer] == 1 and obs[:M].sum() == 1 and obs[M + s.symptom] == 1
    assert obs[M + P] == 0 and obs[M + P + 1 + s.pointer] == 1  # suspect: the report's module
    assert obs[2 * M + P + 1 + TRIAGE] == 1 and obs[3 * M + P + 10] == 1.0  # 2 attempts left
    obs, *_ = env.step(READ_LOG)
    assert (
        obs[M + P] == 1
        and obs[M + P + 1 + s.bug] == 1
        and obs[M + P + 1 : 2 * M + P + 1].sum() == 1
    )
    obs, *_ = env.step(7 + s.bug)
    assert obs[2 * M + P + 1 + NAVIGATE] == 1 and obs[2 * M + P + 7 + s.bug] == 1
    assert obs[3 * M + P + 7] == 0.0
    obs, *_ = env.step(1)
    assert obs[3 * M + P + 7] == 0.5
    obs, *_ = env.step(2)
    assert obs[2 * M + P + 1 + PATCH] == 1 and obs[3 * M + P + 7] == 1.0
    obs, *_ = env.step(7 + M + s.bug * P + env.correct_patch[s.symptom])
    assert obs[2 * M + P + 1 + PATCHED] == 1 and obs[3 * M + P + 8 :].tolist() == [0, 0, 1]
    obs, *_ = env.step(RUN_RELATED)
    assert obs[2 * M + P + 1 + TESTED] == 1 and obs[3 * M + P + 8 : 3 * M + P + 10].tolist() == [
        1,
        0,
    ]
    obs, *_ = env.step(REVERT)
    assert obs[2 * M + P + 1 + TRIAGE] == 1 and obs[3 * M + P + 10] == 0.5
    assert obs[2 * M + P + 7 : 3 * M + P + 7].sum() == 0  # no module open in triage


def test_decision_states_are_the_unfinished_phases():
    """Every reachable state is a decision until the submission (the round trip of every id is
    the contract's)."""
    env = CodeFixEnv(num_modules=3, num_patches=2, routine_length=4, max_attempts=2, step_cost=0.01)
    model = env.model()
    for sid in np.flatnonzero(model.reachable):  # every reachable state is reached by its id
        assert model.decision_states[sid] == (env.describe_state(int(sid)).phase != DONE)


# ------------------------------------------------------------------------------ annotations
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"routine_length": 2, "signal_noise": 0.0},
        {"num_modules": 2, "num_patches": 4, "signal_noise": 1.0, "routine_length": 3},
        {"routine_length": 4, "step_cost": 0.02},
        {"num_modules": 3, "routine_length": 3, "max_attempts": 3, "step_cost": 0.01},
    ],
)
def test_annotation_is_the_optimal_action_gap_over_valid_actions(kwargs):
    env = CodeFixEnv(**kwargs)
    model, opt = env.model(), env.optimal()
    gap = env.valid_action_gap(opt)
    decide = np.flatnonzero(model.decision_states)
    critical = np.array([env.dynamics.is_critical(env.describe_state(int(s))) for s in decide])
    np.testing.assert_array_equal(gap[decide] > 1e-12, critical)
    assert critical.any() and not critical.all()
    assert np.all(gap[decide][~critical] == 0.0)  # exactly zero on routine states
    assert not any(
        env.dynamics.is_critical(env.describe_state(int(s))) for s in np.flatnonzero(model.terminal)
    )
    if env.step_cost == 0.0:  # an invalid no-op has Q* = V*: the full gap is the valid gap
        np.testing.assert_array_equal(opt.action_gap, gap)
    else:  # the masked self-loop costs a step: the full gap is positive on routine states too
        assert np.all(opt.action_gap[decide][~critical] == pytest.approx(env.step_cost))
    # the clairvoyant optimum fixes the bug on the first attempt, in the shortest episode
    clean = env.routine_length + 2
    assert model.initial @ opt.v == pytest.approx(1 - env.step_cost * clean, abs=1e-12)


def test_dynamics_are_immutable_and_shared():
    env = CodeFixEnv(num_modules=3, routine_length=3)
    dyn = env.unwrapped.dynamics
    assert isinstance(dyn, CodeFixDynamics) and dyn.has_action_masks
    with pytest.raises(AttributeError):
        dyn.num_modules = 5
    assert copy.deepcopy(env).dynamics is dyn
    assert dyn == CodeFixDynamics(num_modules=3, routine_length=3)
    assert env.num_modules == dyn.num_modules and env.tool_calls is dyn.tool_calls
    assert env.parse_action("open codegen") == dyn.parse_action("open codegen") == 9
    env.reset(seed=0)
    assert env.valid_actions() == np.flatnonzero(dyn.action_mask(env.state)).tolist()
    with pytest.raises(ValueError, match="max_attempts=2 needs step_cost > 0"):
        CodeFixDynamics(max_attempts=2)


def test_describe_tells_what_the_agent_knows_and_nothing_hidden():
    """On every reachable state the description is a function of the (vector) observation, so it
    reveals neither the buggy module before the log is read nor an untested patch's effect, and
    it tells apart every two observations."""
    dyn = CodeFixDynamics(
        num_modules=3, num_patches=2, routine_length=4, max_attempts=2, step_cost=0.01
    )
    model = dyn.model()
    by_observation: dict[bytes, set[str]] = {}
    for sid in np.flatnonzero(model.reachable):
        state = model.states[int(sid)]
        by_observation.setdefault(dyn.observe(state).tobytes(), set()).add(dyn.describe(state))
    assert all(len(texts) == 1 for texts in by_observation.values())
    assert len(set().union(*by_observation.values())) == len(by_observation)
    start = CodeState(
        bug=1,
        pointer=0,
        symptom=0,
        log_read=0,
        attempt=0,
        phase=TRIAGE,
        module=0,
        progress=0,
        fixed=0,
    )
    assert "optimizer" not in dyn.describe(start) and "parser" in dyn.describe(start)
    assert "optimizer" in dyn.describe(start._replace(log_read=1))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"routine_length": 4},
        {"num_modules": 3, "routine_length": 3, "max_attempts": 2, "step_cost": 0.02},
    ],
)
def test_annotation_truth_by_counterfactual_branching(kwargs):
    """Independent of the model: branch sampled states into each *valid* action.

    With the same random continuation of a masked uniform policy, routine states give identical
    returns path by path. With the hand-written clairvoyant continuation (optimal, as it sees the
    hidden state; dynamics are deterministic after reset, so one rollout is exact) the returns
    are ``Q*(s, a)``: they differ exactly on critical states and match ``env.optimal()``."""
    env = gym.make("CodeFix-v0", **kwargs)
    u = env.unwrapped
    policy, optimal = masked_uniform(u), clairvoyant(u)
    q_star = u.optimal().q
    states = sample_states(env, policy, num_states=45, seed=3)
    assert sum(info["critical"] for _, info in states) >= 5
    assert sum(not info["critical"] for _, info in states) >= 20
    for branch, info in states:
        valid = np.flatnonzero(info[ACTION_MASK])
        best = np.array([branch_return(branch, a, optimal, None) for a in valid])
        np.testing.assert_allclose(best, q_star[info["state_id"], valid], atol=1e-12)
        assert (best.max() - best.min() > 1e-9) == info["critical"], (info["state_id"], best)
        if not info["critical"]:
            for i in range(40):
                returns = [branch_return(branch, a, policy, [11, i]) for a in valid]
                assert returns == [returns[0]] * len(valid)


def clairvoyant(env: CodeFixEnv):
    """The optimal policy written by hand from the hidden state: open the buggy module, scroll,
    apply the right patch, run the tests, submit when fixed or out of attempts, else revert."""

    def act(sid, _rng):
        s = env.describe_state(sid)
        if s.phase == TRIAGE:
            return 7 + s.bug
        if s.phase == NAVIGATE:
            return 1
        if s.phase == PATCH:
            j = env.correct_patch[s.symptom] if s.module == s.bug else 0
            return 7 + env.num_modules + s.module * env.num_patches + j
        if s.phase == PATCHED:
            return RUN_TESTS
        return SUBMIT if s.fixed or s.attempt + 1 == env.max_attempts else REVERT

    return act


def branch_return(env: gym.Env, action: int, policy, seed) -> float:
    """Return of ``action`` then ``policy`` from a deep copy of ``env``."""
    twin = copy.deepcopy(env)
    _, reward, terminated, truncated, info = twin.step(int(action))
    if not (terminated or truncated):
        reward += continue_episode(twin, policy, np.random.default_rng(seed), info)
    return reward


def test_exact_oracle_agrees_with_monte_carlo_rollouts():
    env = gym.make("CodeFix-v0", num_modules=3, routine_length=3)
    u = env.unwrapped
    mask = u.mask_table()
    rng = np.random.default_rng(0)
    table = rng.dirichlet(np.ones(u.action_space.n), size=u.num_states) * mask
    table = np.where(mask.any(axis=1, keepdims=True), table, 1.0)  # rows never consulted
    table /= table.sum(axis=1, keepdims=True)
    values = u.oracle(table)
    policy = tabular_sampler(table)
    checked = 0
    for branch, info in sample_states(env, policy, num_states=10, seed=5):
        sid = info["state_id"]
        for a in np.flatnonzero(info[ACTION_MASK]):
            returns = []
            for i in range(300):
                twin = copy.deepcopy(branch)
                _, reward, terminated, _, nxt = twin.step(int(a))
                if not terminated:
                    reward += continue_episode(twin, policy, np.random.default_rng([sid, i]), nxt)
                returns.append(reward)
            se = np.std(returns) / math.sqrt(len(returns))
            assert abs(np.mean(returns) - values.q[sid, a]) <= 4.5 * se + 1e-9, (sid, a)
        checked += 1
    assert checked == 10


def test_oracle_closed_forms():
    """Masked uniform policy: V(start) = 1 / (M P) (the log read or not, the opened module is
    uniform, then the patch); A = 0 exactly on routine states. Uniform over *all* actions (invalid
    ones are no-ops) gives the same values."""
    env = CodeFixEnv(num_modules=3, num_patches=2, routine_length=4)
    values = env.oracle(env.masked_uniform_policy())
    model = env.model()
    assert model.initial @ values.v == pytest.approx(1 / 6, abs=1e-14)
    decide = np.flatnonzero(model.decision_states)
    routine = [s for s in decide if not env.dynamics.is_critical(env.describe_state(int(s)))]
    mask = env.mask_table()
    assert np.abs(np.where(mask, values.advantage, 0.0)[routine]).max() == 0.0
    everything = env.oracle(np.full((env.num_states, env.action_space.n), 1 / env.action_space.n))
    assert model.initial @ everything.v == pytest.approx(1 / 6, abs=1e-9)


# ------------------------------------------------------------------- masks and invalid actions
def test_masks_are_consistent_with_transitions():
    """Every masked-in action changes the state, every masked-out one is a self-loop, in every
    reachable state of the model; only ``submit`` ends an episode."""
    env = CodeFixEnv(num_modules=3, num_patches=2, routine_length=3, max_attempts=2, step_cost=0.01)
    model = env.model()
    for sid in np.flatnonzero(model.reachable):
        state = env.describe_state(int(sid))
        mask = env.action_masks_of(int(sid))
        assert mask.shape == (env.action_space.n,) and mask.dtype == bool
        if model.terminal[sid]:
            assert not mask.any()
            continue
        assert mask.any()
        for a in range(env.action_space.n):
            ((prob, nxt, reward, done),) = env.dynamics.outcomes(state, a)
            assert prob == 1.0
            assert (nxt != state) == mask[a], (state, a)
            assert done == (mask[a] and a == SUBMIT)
            if not mask[a]:
                assert reward == -env.step_cost
    table = env.mask_table()
    assert table[model.terminal].sum() == 0 and table[~model.reachable].sum() == 0


def test_invalid_actions_are_flagged_no_ops():
    env = gym.make("CodeFix-v0", routine_length=4, step_cost=0.01, obs_mode="text")
    u = env.unwrapped
    checked = 0
    for branch, info in sample_states(env, masked_uniform(u), num_states=15, seed=1):
        assert info[ACTION_MASK].tolist() == branch.unwrapped.action_masks().tolist()
        for a in np.flatnonzero(~info[ACTION_MASK]):
            twin = copy.deepcopy(branch)
            t = twin.unwrapped
            before, length = t.state, len(t.history.actions)
            obs, reward, terminated, _, nxt = twin.step(int(a))
            assert t.state == before and len(t.history.actions) == length + 1
            assert reward == -0.01 and not terminated and nxt[INVALID_ACTION] is True
            assert nxt["critical"] == info["critical"] and nxt["state_id"] == info["state_id"]
            assert obs.startswith(f"$ {u.tool_calls[a]}\nerror: ") and "nothing changed" in obs
            checked += 1
        for a in np.flatnonzero(info[ACTION_MASK]):
            twin = copy.deepcopy(branch)
            _, _, _, _, nxt = twin.step(int(a))
            assert nxt[INVALID_ACTION] is False and twin.unwrapped.state != branch.unwrapped.state
    assert checked > 100


def test_unmasked_agent_is_truncated_at_the_step_limit():
    env = gym.make("CodeFix-v0", max_steps=6)
    env.reset(seed=0)
    for _ in range(5):
        _, _, terminated, truncated, info = env.step(SUBMIT)  # never valid in triage
        assert not (terminated or truncated) and info[INVALID_ACTION]
    _, reward, terminated, truncated, info = env.step(SUBMIT)
    assert (terminated, truncated, reward) == (False, True, 0.0)
    assert info["episode_length"] == 6 and info["num_critical"] == 6 and not info["success"]
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)


def test_action_masks_through_wrappers_and_vector_envs():
    from sb3_contrib.common.maskable.utils import get_action_masks

    env = gym.make("CodeFix-v0")
    _, info = env.reset(seed=0)
    masks = get_action_masks(env)
    np.testing.assert_array_equal(masks, info[ACTION_MASK])
    assert masks.tolist() == [True] + [False] * 6 + [True] * 4 + [False] * 12
    masks[:] = False  # a fresh copy: the env is not affected
    assert env.unwrapped.action_masks()[0]
    info[ACTION_MASK][:] = False  # the info's mask is its own copy too
    assert env.unwrapped.action_masks()[0]
    envs = gym.make_vec("CodeFix-v0", num_envs=2)
    _, infos = envs.reset(seed=0)
    assert infos[ACTION_MASK].shape == (2, 23)


# ------------------------------------------------------------------------------- text mode
def test_text_round_trip_of_every_action():
    env = CodeFixEnv(num_modules=5, num_patches=4)
    env.reset(seed=0)
    assert len(set(env.tool_calls)) == env.action_space.n
    for a in range(env.action_space.n):
        text = env.action_text(a)
        assert env.parse_action(text) == a
        assert env.parse_action("  " + text.upper().replace(" ", " \t ") + "\n") == a
    assert env.parse_action("apply_patch parser 2") == 7 + 5 + 2
    assert env.action_text(np.int64(0)) == "read_log"
    assert env.valid_tool_calls() == ["read_log"] + [f"open {m}" for m in MODULE_NAMES[:5]]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        ("", "empty tool call"),
        ("   ", "empty tool call"),
        ("rm -rf /", "unknown tool 'rm'"),
        ("scroll down", "scroll takes no arguments"),
        ("open", "open takes 1 argument"),
        ("open parser codegen", "open takes 1 argument"),
        ("open frontend", "unknown module 'frontend'"),
        ("apply_patch parser", "apply_patch takes 2 arguments"),
        ("apply_patch 2", "apply_patch takes 2 arguments"),
        ("apply_patch parser 3", r"patch index must be an integer in 0\.\.2"),
        ("apply_patch parser -1", "patch index"),
        ("apply_patch parser two", "patch index"),
        ("apply_patch linker 0", "unknown module 'linker'"),  # only 4 modules
        ("apply_patch(parser, 2)", "unknown tool"),
        (None, "must be a string"),
        (7, "must be a string"),
    ],
)
def test_malformed_tool_calls_are_rejected_clearly(call, match):
    env = CodeFixEnv()
    with pytest.raises(InvalidActionError, match=match) as err:
        env.parse_action(call)
    assert isinstance(err.value, ValueError)


def test_text_observations_fit_max_length_in_the_largest_configuration():
    """Every phase x open module x last call (valid or not), with the longest names and error."""
    env = CodeFixEnv(
        num_modules=10,
        num_patches=8,
        routine_length=3,
        max_attempts=2,
        step_cost=0.01,
        obs_mode="text",
    )
    assert isinstance(env.observation_space, gym.spaces.Text)
    longest_module = max(range(10), key=lambda m: len(MODULE_NAMES[m]))
    symptom = max(range(8), key=lambda k: len(SYMPTOMS[k][0]))
    longest = 0
    for phase in range(6):
        for m in range(10):
            state = CodeState(longest_module, longest_module, symptom, 0, 0, phase, m, 0, 0)
            if phase == TRIAGE and m:
                continue
            for a in range(env.action_space.n):
                for invalid in (False, True):
                    text = env.text_observation(state, a, invalid)
                    assert set(text) <= env.observation_space.character_set
                    longest = max(longest, len(text))
    assert longest <= env.max_text_length
    assert longest > env.max_text_length / 3  # the bound is not absurdly loose


def test_text_observation_content_follows_the_state():
    env = CodeFixEnv(routine_length=3, obs_mode="text")
    obs, _ = env.reset(seed=seed_where(env, correct_report=False))
    s = env.state
    report, buggy = MODULE_NAMES[s.pointer], MODULE_NAMES[s.bug]
    assert f"FAILED tests/test_{report}.py::test_main - {SYMPTOMS[s.symptom][0]}" in obs
    assert buggy not in obs.split("valid:")[0]  # the report does not name the real module
    obs, *_ = env.step(READ_LOG)
    assert f'File "src/{buggy}.py"' in obs and obs.endswith("open runtime\n")
    obs, *_ = env.step(7 + s.bug)
    assert obs.endswith("valid: scroll | read\n")
    obs, *_ = env.step(2)
    assert "Candidate patches" in obs and f"apply_patch {buggy} 2\n" in obs
    fix = env.correct_patch[s.symptom]
    assert f"  {fix}: {SYMPTOMS[s.symptom][1]}" in obs  # the right patch names the symptom's fix
    obs, *_ = env.step(env.parse_action(f"apply_patch {buggy} {fix}"))
    assert obs.startswith(f"$ apply_patch {buggy} {fix}\nApplied patch {fix}")
    whole, related = copy.deepcopy(env), copy.deepcopy(env)
    obs_whole, *_ = whole.step(RUN_TESTS)
    obs_related, *_ = related.step(RUN_RELATED)
    assert obs_whole != obs_related and "48 passed" in obs_whole and "12 passed" in obs_related
    assert whole.state == related.state  # the variant changes the wording, not the state
    obs, reward, terminated, _, _ = whole.step(SUBMIT)
    assert terminated and reward == 1.0 and "Hidden tests passed" in obs and "valid:" not in obs


# --------------------------------------------------------------------- determinism, branching
# ---------------------------------------------------------------------------- configuration
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"num_modules": 1}, "num_modules"),
        ({"num_modules": 11}, "num_modules"),
        ({"num_modules": 4.0}, "num_modules"),
        ({"num_patches": 1}, "num_patches"),
        ({"num_patches": 9}, "num_patches"),
        ({"num_patches": True}, "num_patches"),
        ({"routine_length": 1}, "routine_length"),
        ({"routine_length": "10"}, "routine_length"),
        ({"routine_length": (2, 4)}, "routine_length"),
        ({"signal_noise": -0.1}, "signal_noise"),
        ({"signal_noise": 1.5}, "signal_noise"),
        ({"signal_noise": float("nan")}, "signal_noise"),
        ({"signal_noise": "0.2"}, "signal_noise"),
        ({"signal_noise": True}, "signal_noise"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": 2}, "max_attempts"),  # needs a step cost
        ({"step_cost": -0.01}, "step_cost"),
        ({"step_cost": 0.1}, "step_cost"),  # >= 1/13: a success could return less than a failure
        ({"step_cost": float("nan")}, "step_cost"),
        ({"step_cost": None}, "step_cost"),
        ({"obs_mode": "image"}, "obs_mode"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_steps": 2.5}, "max_steps"),
        ({"layout_seed": -1}, "layout_seed"),
        ({"render_mode": "video"}, "render_mode"),
    ],
)
@pytest.mark.filterwarnings("ignore:.*render_mode")  # gym.make warns before the env raises
def test_invalid_configuration_raises_value_error_naming_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        gym.make("CodeFix-v0", **kwargs)


def test_numpy_numbers_are_accepted_as_configuration():
    env = CodeFixEnv(num_modules=np.int64(3), signal_noise=np.float32(0.5), step_cost=np.float64(0))
    assert env.num_modules == 3 and env.signal_noise == 0.5 and env.step_cost == 0.0


def test_layout_seed_sets_the_patch_order():
    orders = {CodeFixEnv(num_patches=4, layout_seed=s).patch_order for s in range(20)}
    assert len(orders) > 5
    env = CodeFixEnv(num_patches=4, layout_seed=3)
    assert sorted(env.patch_order) == [0, 1, 2, 3]
    assert all(env.patch_order[env.correct_patch[k]] == k for k in range(4))


# ---------------------------------------------------------------------- rendering and docs
def test_render_modes():
    env = gym.make("CodeFix-v0", routine_length=3, render_mode="ansi")
    env.reset(seed=0)
    s = env.unwrapped.state
    text = env.render()
    assert text.startswith("Code Fix  turn 0  attempt 1/1  phase triage  critical")
    assert f"hidden:  bug in {MODULE_NAMES[s.bug]}" in text and "$ pytest -q" in text
    env.step(7 + s.bug)
    assert f"[{MODULE_NAMES[s.bug]}]" in env.render() and "routine" in env.render()
    env = gym.make("CodeFix-v0", routine_length=3, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    yellow = np.all(frame == (250, 200, 0), axis=-1)
    assert yellow.sum() > 0  # triage is critical
    env.step(7)
    assert np.all(env.render() == (250, 200, 0), axis=-1).sum() == 0  # navigation: routine
    assert np.all(env.render() == (30, 80, 200), axis=-1).sum() > 0  # the open module
    env = CodeFixEnv(routine_length=3, render_mode="rgb_array")  # the applied patch, from history
    env.reset(seed=0)

    def green() -> int:
        return int(np.all(env.render() == (60, 170, 75), axis=-1).sum())

    *before, apply = fix_calls(env, read_log=False)[:-2]
    for a in before:
        env.step(a)
    assert green() == 0
    env.step(apply)  # the right patch in the buggy module
    assert green() > 0
    env.step(SUBMIT)  # invalid before the tests: a no-op that does not hide the patch
    env.step(RUN_TESTS)
    assert green() > 0


def test_docstring_example_episode_is_current():
    doc = inspect.cleandoc(CodeFixEnv.__doc__)
    transcript = example_transcript(CodeFixEnv(**EXAMPLE_KWARGS))
    assert transcript in doc
    assert "success True, rho 0.4286" in transcript  # 3 / (3 + 4): the log was read
    for section in ("## Action Space", "rho = 2 / (2 + routine_length)", "## Example Episode"):
        assert section in doc


# ------------------------------------------------------------------------------ learning
def test_sb3_check_env_and_maskable_ppo_smoke():
    pytest.importorskip("sb3_contrib")
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    torch.set_num_threads(1)
    env = gym.make("CodeFix-v0", routine_length=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(env, warn=True)
    assert not [str(w.message) for w in caught]
    model = MaskablePPO(
        "MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=2, seed=0, device="cpu"
    )
    model.learn(256)
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        action, _ = model.predict(obs, action_masks=env.unwrapped.action_masks())
        assert env.unwrapped.action_masks()[int(action)]  # masked actions are never chosen
        obs, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            obs, _ = env.reset()


# ---------------------------------------------------------------------------- properties
@settings(max_examples=30, deadline=None)
@given(code_fix_configs, st.integers(0, 2**16))
def test_property_rho_and_annotation_truth(kwargs, seed):
    """Masked random episodes: their length and critical count follow from their turns, the
    annotation is the model's valid-action gap, every mask matches the state's transitions."""
    env = CodeFixEnv(**kwargs)
    rec = run_episode(env, masked_uniform(env), np.random.default_rng(seed), seed=seed)
    end = rec["final_info"]
    keys.check_episode_end_info(end)
    L, A = env.routine_length, env.max_attempts
    reads = rec["actions"].count(READ_LOG)
    attempts = rec["actions"].count(REVERT) + 1
    assert end["episode_length"] == attempts * (L + 2) + reads == len(rec["actions"])
    states = [env.describe_state(s) for s in rec["state_ids"][:-1]]
    expected = [
        s.phase == TRIAGE
        or (s.phase == PATCH and s.module == s.bug)
        or (s.phase == TESTED and s.attempt + 1 < A)
        for s in states
    ]
    assert rec["critical"] == expected and end["num_critical"] == sum(expected)
    assert end["success"] == (rec["return"] > 0) == (env.state.fixed == 1)
    gap = env.valid_action_gap(env.optimal())
    for sid, flag, info in zip(rec["state_ids"], rec["critical"], rec["infos"], strict=False):
        assert (gap[sid] > 1e-12) == flag
        np.testing.assert_array_equal(info[ACTION_MASK], env.action_masks_of(sid))
    clean = [True] + [False] * (L - 2) + [True, False, A > 1]
    if reads == 0 and attempts == 1 and end["success"]:
        assert rec["critical"] == clean
        assert end["decision_density"] == pytest.approx(env.decision_density, rel=1e-15)
