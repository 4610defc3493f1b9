"""The contract every environment of the suite keeps, checked over *cases*: every registered id
with its default kwargs (from the registry: the rows of ``ENVIRONMENTS``, the turn-based team
adapters of ``TEAM_ADAPTERS`` and the ids outside code registers with ``register_dynamics``:
``tests/conftest.py`` imports ``tests/contributed/`` and the worked example of
docs/contributing-an-env.md), its small configuration (the registry's) and the extra
configurations of :data:`EXTRA_CONFIGS`. Cases are labelled by id and configuration, so a new id
(or a new configuration) is tested without a new test. The team adapters are adapters, not dynamics:
the checks of an env's dynamics object skip them (``tests/test_contract_team.py`` checks the
team envs' own dynamics); every other check runs on them too.

Per-environment test files keep only the behaviour specific to their environment.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import annotations as keys
from routine_envs.dynamics import Dynamics
from routine_envs.envs.base import InvalidActionError
from routine_envs.registration import TEAM_ADAPTERS
from tests.strategies import code_fix_configs, doors_configs, grid_configs
from tests.utils import (
    assert_oracle_matches_rollouts,
    counterfactual_returns,
    has_pettingzoo,
    registry_ids,
    run_episode,
    sample_states,
    small_config,
    tabular_sampler,
    uniform_policy,
)

# ------------------------------------------------------------------------------ the cases
#: the small configuration of every id (the registry's: its dynamics class's ``small_config``)
#: keeps the Monte-Carlo checks cheap.
SMALL_CONFIGS: dict[str, dict] = {env_id: small_config(env_id) for env_id in registry_ids()}
#: configurations checked beside each id's defaults: the small ones of the Monte-Carlo checks and
#: those the per-environment files used for generic checks (ranges of routine lengths, fraction
#: rewards, soft routine, image and text modes, retries, layout seeds).
EXTRA_CONFIGS: dict[str, list[dict]] = {
    "DilutedDoors-v0": [
        SMALL_CONFIGS["DilutedDoors-v0"],
        {"routine_length": 0},
        {"routine_length": (0, 5), "reward": "fraction"},
        {"num_floors": 1, "num_doors": 2, "routine_length": 50},
        {"num_floors": 6, "num_doors": 5, "layout_seed": 3},
        {"num_floors": 2, "routine_length": (0, 3)},
        {"num_floors": 3, "num_doors": 3, "routine_length": (0, 2)},
        {"num_floors": 3, "num_doors": 3, "routine_length": (0, 2), "reward": "fraction"},
        {"num_floors": 3, "num_doors": 2, "routine_length": (1, 3)},
        {"num_floors": 3, "num_doors": 2, "routine_length": (1, 3), "reward": "fraction"},
        {"num_floors": 3, "num_doors": 2, "routine_length": (0, 4), "reward": "fraction"},
        {"routine_length": (0, 5)},
        {"routine_length": (0, 6)},
        {"routine_length": (1, 4)},
        {"routine_length": (0, 20)},
    ],
    "DilutedDoors-v1": [
        {"observation": "position"},
        {"observation": "progress"},
        {"num_floors": 3, "num_doors": 2, "routine_length": (0, 3)},
    ],
    "RoutineGrid-v0": [
        SMALL_CONFIGS["RoutineGrid-v0"],
        {"branching": 2, "corridor_length": 0, "num_junctions": 5},
        {"corridor_length": (2, 6), "soft_routine": True, "layout_seed": 11},
        {"obs_mode": "image", "view_size": 3, "branching": 2, "corridor_length": 1},
        {"obs_mode": "image"},
        {"branching": 2, "corridor_length": (0, 4), "soft_routine": True},
        {"corridor_length": (2, 4)},
        {"num_junctions": 2, "branching": 3, "corridor_length": 2, "soft_routine": 0.1},
    ],
    "RoutineGridSoft-v0": [SMALL_CONFIGS["RoutineGridSoft-v0"]],
    "RoutineGrid-v1": [
        SMALL_CONFIGS["RoutineGrid-v1"],
        {"obs_mode": "image", "view_size": 3, "branching": 2, "corridor_length": 1},
        {"num_junctions": 3, "branching": 2, "corridor_length": (0, 3)},
        {"num_junctions": 2, "corridor_length": 1, "reward": "fraction", "layout_seed": 5},
    ],
    "CodeFix-v0": [
        SMALL_CONFIGS["CodeFix-v0"],
        {"routine_length": 2, "signal_noise": 0.0},
        {"num_modules": 2, "num_patches": 4, "signal_noise": 1.0, "routine_length": 3},
        {"routine_length": 4, "step_cost": 0.02},
        {"num_modules": 3, "routine_length": 3, "max_attempts": 3, "step_cost": 0.01},
        {
            "num_modules": 3,
            "num_patches": 2,
            "routine_length": 4,
            "max_attempts": 2,
            "step_cost": 0.01,
        },
        {"routine_length": 3},
        {"routine_length": 3, "obs_mode": "text"},
        {"obs_mode": "text"},
        {"obs_mode": "text", "routine_length": 3, "max_attempts": 2, "step_cost": 0.01},
    ],
    "CodeFix-v1": [SMALL_CONFIGS["CodeFix-v1"]],
    "TeamDilutedDoors-v0": [
        SMALL_CONFIGS["TeamDilutedDoors-v0"],
        {"num_agents": 3, "num_floors": 3, "routine_length": (0, 1), "reward": "fraction"},
    ],
    "TeamRoutineGrid-v0": [SMALL_CONFIGS["TeamRoutineGrid-v0"]],
    "TeamDilutedDoors-v1": [
        SMALL_CONFIGS["TeamDilutedDoors-v1"],
        {"num_agents": 3, "num_floors": 3, "routine_length": (0, 1), "reward": "fraction"},
    ],
    "TeamRoutineGrid-v1": [SMALL_CONFIGS["TeamRoutineGrid-v1"]],
    "ClueDoors-v0": [{"num_floors": 2, "num_doors": 2, "routine_length": 1, "note": "door"}],
}


def case_id(case: tuple[str, dict]) -> str:
    env_id, kwargs = case
    return env_id + "".join(f"-{k}={v}" for k, v in kwargs.items())


#: every registered id (defaults, outside code's included) and the extra configurations
CASES = [
    *[(env_id, {}) for env_id in registry_ids()],
    *[(env_id, kw) for env_id, configs in EXTRA_CONFIGS.items() for kw in configs],
]
LABELS = {case_id(case): case for case in CASES}
assert len(LABELS) == len(CASES), "a configuration is listed twice"

#: the small case of each id
SMALL = [(env_id, SMALL_CONFIGS.get(env_id, {})) for env_id, kwargs in CASES if not kwargs]

# The Monte-Carlo checks (oracle against rollouts, counterfactual branching, success probability
# of sampled episodes) are expensive: they run on the small case of every id and on the cases
# listed here, with their sample sizes; every other check runs on every case.
#: case label -> (states, rollouts per action) for the oracle; the default checks 6 x 150
ORACLE_MC = {
    "DilutedDoors-v0-num_floors=3-num_doors=3-routine_length=(0, 2)-reward=fraction": (12, 400),
    "RoutineGrid-v0-num_junctions=2-branching=3-corridor_length=2-soft_routine=0.1": (8, 300),
}
#: case label -> (states, rollouts, at least that many critical and routine states among them,
#: whether the critical states' Monte-Carlo means must differ); the default: (12, 4, 0, 0, False)
COUNTERFACTUAL = {
    "DilutedDoors-v0-num_floors=3-num_doors=2-routine_length=(1, 3)": (40, 200, 3, 20, True),
    "DilutedDoors-v0-num_floors=3-num_doors=2-routine_length=(1, 3)-reward=fraction": (
        40, 200, 3, 20, True,
    ),
}  # fmt: skip
assert set(ORACLE_MC) | set(COUNTERFACTUAL) <= set(LABELS)
ORACLE_CASES = [*SMALL, *(LABELS[label] for label in ORACLE_MC)]
COUNTERFACTUAL_CASES = [*SMALL, *(LABELS[label] for label in COUNTERFACTUAL)]

#: the keys an info dict may hold: the contract's, and the documented optional ones.
KNOWN_KEYS = set(keys.ALL_KEYS) | set(keys.OPTIONAL_KEYS)


def is_team_adapter(env_id: str) -> bool:
    """Whether ``env_id`` is a turn-based team adapter (no dynamics object of its own)."""
    return any(row.id == env_id for row in TEAM_ADAPTERS)


def make(case: tuple[str, dict], **more: object) -> gym.Env:
    env_id, kwargs = case
    if is_team_adapter(env_id) and not has_pettingzoo():
        pytest.skip("the team adapters need the multiagent extra (pettingzoo)")
    return gym.make(env_id, **kwargs, **more)


#: why the checks of an env's dynamics object skip the team adapters
NO_DYNAMICS = (
    "a team adapter has no dynamics of its own: tests/test_contract_team.py checks its team env's"
)


def dynamics_or_skip(env: gym.Env) -> Dynamics:
    """The env's dynamics; skipped for a team adapter (:data:`NO_DYNAMICS`)."""
    dynamics = getattr(env.unwrapped, "dynamics", None)
    if dynamics is None:
        pytest.skip(NO_DYNAMICS)
    return dynamics


def action_mask_of(env: gym.Env) -> np.ndarray | None:
    """The valid actions of the current state, ``None`` where the env has no masks."""
    dynamics = getattr(env.unwrapped, "dynamics", None)
    return None if dynamics is None else dynamics.action_mask(env.unwrapped.state)


@functools.cache
def _dynamics_of(label: str) -> Dynamics | None:
    return getattr(make(LABELS[label]).unwrapped, "dynamics", None)


def dynamics_of(label: str) -> Dynamics:
    """The dynamics of a case, made once: the checks that only read the (immutable) dynamics
    share its exact model (skipped for a team adapter: see :func:`dynamics_or_skip`)."""
    dynamics = _dynamics_of(label)
    if dynamics is None:
        pytest.skip(NO_DYNAMICS)
    return dynamics


@pytest.fixture(params=CASES, ids=case_id)
def case(request: pytest.FixtureRequest) -> tuple[str, dict]:
    return request.param


# --------------------------------------------------------------------------------- helpers
def actions_of(env: gym.Env, rng: np.random.Generator, explore: float = 0.2) -> int:
    """A valid action (respecting masks where the env has them), or, with probability
    ``explore``, any action of the space (an invalid one is a flagged no-op)."""
    n = int(env.action_space.n)
    mask = action_mask_of(env)
    if mask is None or rng.random() < explore or not mask.any():
        return int(rng.integers(n))
    return int(rng.choice(np.flatnonzero(mask)))


def flat(obs: object) -> object:
    return obs if isinstance(obs, str) else np.asarray(obs).tobytes()


def play(env: gym.Env, seed: int, steps: int) -> list[tuple]:
    """``steps`` steps from ``reset(seed)`` (then unseeded resets) with actions from a generator
    of the same seed; everything the env returned."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    out: list[tuple] = [(flat(obs), info)]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(actions_of(env, rng))
        out.append((flat(obs), reward, terminated, truncated, info))
        if terminated or truncated:
            obs, info = env.reset()
            out.append((flat(obs), info))
    return out


def same(a: object, b: object) -> bool:
    """Deep equality that understands numpy arrays inside infos."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def steps_of(env: gym.Env, actions: list[int]) -> list[tuple]:
    """Step ``actions`` (resetting, unseeded, when an episode ends); everything returned."""
    out = []
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        out.append((flat(obs), reward, terminated, truncated, info))
        if terminated or truncated:
            obs, info = env.reset()
            out.append((flat(obs), info))
    return out


# ------------------------------------------------------------------------------- checkers
def test_gymnasium_check_env(case):
    """Gymnasium's checker passes in every render mode the env has, without a warning."""
    for render_mode in (None, "ansi", "rgb_array", "human"):
        if render_mode is not None and render_mode not in make(case).metadata["render_modes"]:
            continue
        env = make(case, render_mode=render_mode)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(env.unwrapped, skip_render_check=render_mode is None)
        assert not [str(w.message) for w in caught], render_mode


def test_human_render_prints_the_ansi_picture(case, capsys):
    """``render_mode="human"`` prints the ``"ansi"`` picture at every reset and step (Gymnasium's
    convention) and ``render()`` returns None."""
    human, ansi = make(case, render_mode="human"), make(case, render_mode="ansi")
    assert "human" in human.metadata["render_modes"]
    rng = np.random.default_rng(0)
    human.reset(seed=3)
    ansi.reset(seed=3)
    expected = [ansi.render()]
    for _ in range(5):
        action = actions_of(ansi, rng)
        _, _, terminated, truncated, _ = ansi.step(action)
        human.step(action)
        expected.append(ansi.render())
        if terminated or truncated:
            break
    assert capsys.readouterr().out == "".join(f"{text}\n" for text in expected)
    assert human.render() is None
    assert capsys.readouterr().out == f"{expected[-1]}\n"


def test_sb3_check_env(case):
    """SB3's checker warns of nothing, but for image observations smaller than its CNN's 36x36
    (then that warning alone)."""
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    if case[1].get("obs_mode") == "text":
        pytest.skip("SB3 has no text observations (Gymnasium's checker covers this mode)")
    env = make(case)  # (v0 ids warn that a newer version exists: not SB3's)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_checker.check_env(env, warn=True)
    messages = [str(w.message) for w in caught]
    if case[1].get("obs_mode") == "image":
        assert len(messages) == 1 and "36x36" in messages[0], messages
    else:
        assert not messages, messages


# -------------------------------------------------------------------------- the dynamics
def test_dynamics_are_public_and_immutable(case):
    env = make(case)
    dynamics = dynamics_or_skip(env)
    assert isinstance(dynamics, Dynamics)
    with pytest.raises(AttributeError):
        dynamics.num_floors = 99  # frozen dataclass
    assert copy.deepcopy(env).unwrapped.dynamics is dynamics  # copies share their dynamics
    assert pickle.loads(pickle.dumps(dynamics)) == dynamics
    assert dynamics.num_states == env.unwrapped.num_states
    assert dynamics.num_actions == env.action_space.n
    assert 0 < dynamics.decision_density <= 1
    assert dynamics.max_episode_length >= 1


def test_state_id_round_trip_and_descriptions(case):
    """``state_from_id`` inverts ``state_id`` on every id (reachable or not) and every reachable
    state; ids outside ``0..num_states-1`` are refused, naming ``state_id``."""
    u = make(case).unwrapped
    dynamics = dynamics_of(case_id(case))
    model = dynamics.model()
    reachable = np.flatnonzero(model.reachable)
    assert reachable.max() < dynamics.num_states
    for sid in reachable:
        state = model.states[int(sid)]
        assert dynamics.state_id(state) == sid
        assert dynamics.state_from_id(int(sid)) == state
        text = dynamics.describe(state)
        assert isinstance(text, str) and text and "\n" not in text.strip()
    kind = type(dynamics.initial_outcomes()[0][1])  # every id is a state of one type
    for sid in range(dynamics.num_states):
        state = dynamics.state_from_id(sid)
        assert isinstance(state, kind) and dynamics.state_id(state) == sid
    for bad in (-1, dynamics.num_states):
        with pytest.raises(ValueError, match="state_id"):
            dynamics.state_from_id(bad)
    if hasattr(type(u), "describe_state"):
        with pytest.raises(ValueError, match="state_id"):
            u.describe_state(dynamics.num_states)


def test_critical_is_the_exact_action_gap_above_the_tolerance(case):
    """The env's own (cheap) ``is_critical`` and ``action_gap`` agree with the definitions on
    every reachable state: the exact optimal action gap over the valid actions (all of them
    where the env has no masks), from the model, above the tolerance; never on a terminal state;
    some states are critical and some are not."""
    dynamics = dynamics_of(case_id(case))
    model = dynamics.model()
    q = dynamics.optimal().q
    flags = []
    for sid in np.flatnonzero(model.reachable):
        state = model.states[int(sid)]
        mask = dynamics.action_mask(state)
        valid = q[sid] if mask is None else q[sid, mask]
        gap = float(valid.max() - valid.min()) if valid.size else 0.0
        assert dynamics.action_gap(state) == gap == Dynamics.action_gap(dynamics, state), sid
        by_definition = bool(Dynamics.is_critical(dynamics, state))
        assert by_definition == (gap > dynamics.critical_tolerance), sid
        own = dynamics.is_critical(state)
        assert type(own) is bool and own == by_definition, (sid, state)
        assert not (own and model.terminal[sid]), sid
        flags.append(own)
    assert any(flags) and not all(flags)
    assert not dynamics.critical_table()[model.terminal].any()


@pytest.mark.parametrize("case", COUNTERFACTUAL_CASES, ids=case_id)
def test_critical_by_counterfactual_branching(case):
    """Independent of the model: branch sampled states into every action with the same random
    continuation (uniform policy). Routine states give the same return path by path; critical
    ones have different exact Q* and, where the case asks, different Monte-Carlo means."""
    num_states, rollouts, min_critical, min_routine, means_differ = COUNTERFACTUAL.get(
        case_id(case), (12, 4, 0, 0, False)
    )
    env = make(case)
    dynamics = getattr(env.unwrapped, "dynamics", None)  # (a team adapter has none)
    n = int(env.action_space.n)
    q_star = None if dynamics is None else dynamics.optimal().q
    states = sample_states(env, uniform_policy(n), num_states=num_states, seed=3)
    assert sum(info["critical"] for _, info in states) >= min_critical
    assert sum(not info["critical"] for _, info in states) >= min_routine
    for branch, info in states:
        sid = info["state_id"]
        if dynamics is not None and (dynamics.approximate_routine or dynamics.has_action_masks):
            continue  # approximate routine / invalid no-ops: checked by the exact gap above
        returns = counterfactual_returns(branch, info, uniform_policy(n), rollouts, seed=sid)
        if not info["critical"]:
            assert np.ptp(returns, axis=0).max() == 0.0, sid
        elif q_star is not None:  # (a team agent's gap: tests/test_contract_team.py)
            assert np.ptp(q_star[sid]) > 0, sid
            if means_differ:
                means = returns.mean(axis=1)
                se = returns.std(axis=1).max() / math.sqrt(rollouts) + 1e-12
                assert means.max() - means.min() > 4 * se, (info, means)


@pytest.mark.parametrize("case", ORACLE_CASES, ids=case_id)
def test_oracle_against_monte_carlo_rollouts(case):
    """Every Q(s, a) and V(s) of a random (masked, where the env has masks) policy's oracle
    within 4.5 standard errors of rollouts branched from every sampled state."""
    num_states, rollouts = ORACLE_MC.get(case_id(case), (6, 150))
    env = make(case)
    dynamics = getattr(env.unwrapped, "dynamics", None)  # (a team adapter has none)
    rng = np.random.default_rng(0)
    table = rng.dirichlet(np.ones(int(env.action_space.n)), size=env.unwrapped.num_states)
    if dynamics is not None and dynamics.has_action_masks:  # act only validly, as masked
        mask_of = dynamics.action_mask
        model = dynamics.model()
        for sid in np.flatnonzero(model.decision_states):
            mask = mask_of(model.states[int(sid)])
            table[sid] = np.where(mask, table[sid], 0.0) / np.where(mask, table[sid], 0.0).sum()
    agents = env.unwrapped.num_agents if is_team_adapter(case[0]) else 1

    def first_turn(info: dict) -> bool:
        # a team adapter's values hold at a round's first turn: a later turn's are the
        # simultaneous game's (the earlier agents' choices averaged, not the ones pending)
        return info[keys.STATE_ID] % agents == 0

    checked = assert_oracle_matches_rollouts(env, table, num_states, rollouts, where=first_turn)
    assert checked == num_states if case_id(case) in ORACLE_MC else checked >= 3


@pytest.mark.parametrize("case", SMALL, ids=case_id)
def test_success_probability_matches_episodes(case):
    env = make(case)
    dynamics = getattr(env.unwrapped, "dynamics", None)  # (a team adapter has none)
    n = int(env.action_space.n)
    table = np.full((env.unwrapped.num_states, n), 1.0 / n)
    if dynamics is not None and dynamics.has_action_masks:
        model = dynamics.model()
        for sid in np.flatnonzero(model.decision_states):
            mask = dynamics.action_mask(model.states[int(sid)]).astype(float)
            table[sid] = mask / mask.sum()
    exact = env.unwrapped.success_probability(table)
    rng = np.random.default_rng(0)
    policy = tabular_sampler(table)
    wins = [run_episode(env, policy, rng, seed=i)["final_info"]["success"] for i in range(400)]
    se = max(np.sqrt(exact * (1 - exact) / 400), 1e-9)
    assert abs(np.mean(wins) - exact) <= 4.5 * se + 1e-9


# ------------------------------------------------------------------ branching, determinism
def test_deepcopy_branches_have_the_same_future_and_are_independent(case):
    """A deep copy (wrappers included) has the same future for the same actions, including its
    action space's generator, from generators of its own; stepping one branch moves no other."""
    env = make(case)
    rng = np.random.default_rng(1)
    env.reset(seed=11)
    env.action_space.seed(4)
    env.action_space.sample()
    for _ in range(3):
        _, _, terminated, truncated, _ = env.step(actions_of(env, rng))
        if terminated or truncated:
            env.reset(seed=12)
    clone = copy.deepcopy(env)
    assert clone.action_space is not env.action_space
    assert clone.action_space.np_random is not env.action_space.np_random
    assert clone.unwrapped.np_random is not env.unwrapped.np_random
    assert [clone.action_space.sample() for _ in range(20)] == [
        env.action_space.sample() for _ in range(20)
    ]
    assert clone.unwrapped.np_random.random() == env.unwrapped.np_random.random()
    actions = []
    for _ in range(300):  # the actions are drawn once: a branch must not depend on the other
        actions.append(actions_of(env, rng))
    a, b = steps_of(env, actions), steps_of(clone, actions)
    assert same(a, b)
    assert any(step[2] or step[3] for step in a if len(step) == 5)  # episodes ended, and went on
    b1, b2 = copy.deepcopy(env), copy.deepcopy(env)
    mask = action_mask_of(b1)
    b1.step(0 if mask is None else int(np.flatnonzero(mask)[0]))
    if hasattr(env.unwrapped, "dynamics"):  # (a team adapter holds its team env instead)
        assert b2.unwrapped.state == env.unwrapped.state != b1.unwrapped.state
        assert b2.unwrapped.history.actions == env.unwrapped.history.actions
        assert b1.unwrapped.dynamics is env.unwrapped.dynamics  # configuration shared
    more = [actions_of(env, rng) for _ in range(40)]  # b1 moved: neither b2 nor env did
    assert same(steps_of(b2, more), steps_of(env, more))


def test_pickle_mid_episode(case):
    """No cache is pickled (the bytes of dynamics whose model is built are fresh dynamics', and
    an env pickles as a fresh one); an env pickled mid-episode has the same state, dynamics and
    future (a team adapter: the same future; its team env's dynamics are checked by
    tests/test_contract_team.py)."""
    env, fresh = make(case), make(case)
    has_dynamics = hasattr(env.unwrapped, "dynamics")
    if has_dynamics:
        built = dynamics_of(case_id(case))  # (shared with the other read-only checks)
        built.model()
        assert pickle.dumps(built) == pickle.dumps(make(case).unwrapped.dynamics)
    env.reset(seed=4)
    fresh.reset(seed=4)
    assert pickle.dumps(env) == pickle.dumps(fresh)
    rng = np.random.default_rng(2)
    _, _, terminated, truncated, _ = env.step(actions_of(env, rng))
    if terminated or truncated:  # a one-step episode: pickle at the start of the next
        env.reset()
    restored = pickle.loads(pickle.dumps(env))
    if has_dynamics:
        assert restored.unwrapped.state == env.unwrapped.state
        assert restored.unwrapped.dynamics == env.unwrapped.dynamics
    actions = [actions_of(env, rng) for _ in range(40)]
    assert same(steps_of(env, actions), steps_of(restored, actions))
    if has_dynamics and env.unwrapped.num_states <= 1000:  # (a large model: slow to rebuild)
        assert restored.unwrapped.model().num_states == env.unwrapped.num_states


def test_seeding_is_reproducible_bit_for_bit(case):
    first = play(make(case), 3, 200)
    assert same(first, play(make(case), 3, 200))
    assert not same(first, play(make(case), 4, 200)) or case[0] in {
        "RoutineGrid-v0",
        "RoutineGridSoft-v0",  # deterministic dynamics: only the actions differ by seed
    }


#: configurations drawn by hypothesis, beside the fixed cases
DRAWN = {
    "DilutedDoors-v0": doors_configs,
    "RoutineGrid-v0": grid_configs,
    "CodeFix-v0": st.tuples(code_fix_configs, st.sampled_from(["vector", "text"])).map(
        lambda t: {**t[0], "obs_mode": t[1]}
    ),
}
#: hypothesis examples per case: the drawn configurations get as many as the per-environment
#: property tests drew; each fixed case (its configuration checked everywhere else) gets a few.
DRAWN_EXAMPLES, FIXED_EXAMPLES = 25, 3
PROPERTY_CASES = [*CASES, *[(env_id, "drawn") for env_id in DRAWN]]


@pytest.mark.parametrize(
    "case", PROPERTY_CASES, ids=lambda c: f"{c[0]}-drawn" if c[1] == "drawn" else case_id(c)
)
def test_property_determinism_and_branching(case):
    """For every seed and action sequence (invalid actions included), two envs reset with the
    same seed return the same, and a deep copy taken anywhere has the same future."""
    env_id, kwargs = case
    examples = DRAWN_EXAMPLES if kwargs == "drawn" else FIXED_EXAMPLES
    configs = DRAWN[env_id] if kwargs == "drawn" else st.just(kwargs)

    @settings(max_examples=examples, deadline=None, database=None)
    @given(
        configs,
        st.integers(0, 2**16),
        st.lists(st.integers(0, 2**16), min_size=60, max_size=80),
        st.floats(0, 1),
    )
    def check(kwargs, seed, actions, where):
        a, b = gym.make(env_id, **kwargs), gym.make(env_id, **kwargs)
        actions = [x % int(a.action_space.n) for x in actions]
        split = 1 + int(where * (len(actions) - 2))  # where the copy is taken
        assert same(a.reset(seed=seed), b.reset(seed=seed))
        assert same(steps_of(a, actions[:split]), steps_of(b, actions[:split]))
        twin = copy.deepcopy(a)
        assert same(steps_of(a, actions[split:]), steps_of(twin, actions[split:]))

    check()


# ------------------------------------------------------------------ info and observations
def test_info_contract_on_every_step(case):
    env = make(case)
    u = env.unwrapped
    rng = np.random.default_rng(0)
    for ep in range(3):
        rec = run_episode(env, uniform_policy(int(env.action_space.n)), rng, seed=ep)
        for info in rec["infos"]:
            keys.check_step_info(info, u.num_states)
        for info in rec["infos"][:-1]:
            assert not set(keys.EPISODE_END_KEYS) & set(info)
        keys.check_episode_end_info(rec["final_info"])
        assert rec["final_info"][keys.NUM_CRITICAL] == sum(rec["critical"])
        assert rec["final_info"][keys.EPISODE_LENGTH] == len(rec["actions"])


def test_info_keys_are_the_documented_ones(case):
    """Every key an env puts in ``info`` is defined in ``annotations`` and named in the env's
    docstring ("Information" section): docs cannot promise keys the code does not return."""
    env = make(case)
    doc = inspect.getdoc(type(env.unwrapped)) or ""
    information = doc.split("## Information", 1)[1].split("## ", 1)[0]
    rng = np.random.default_rng(0)
    seen: set[str] = set()
    for ep in range(2):
        rec = run_episode(env, uniform_policy(int(env.action_space.n)), rng, seed=ep)
        for info in rec["infos"]:
            keys.check_step_info(info, env.unwrapped.num_states)
            seen |= set(info)
        keys.check_episode_end_info(rec["final_info"])
    assert seen <= KNOWN_KEYS, seen - KNOWN_KEYS
    for key in seen:
        assert f"``{key}``" in information, (case, key)


def test_observations_stay_in_their_space_and_follow_the_state(case):
    """Every observation of masked and unmasked random episodes is in the observation space and,
    unless the env shows history in its observation (a transcript), is the state's (a team
    adapter's, the acting agent's: checked in tests/test_multiagent.py)."""
    env = make(case)
    u = env.unwrapped
    of_state = hasattr(u, "dynamics") and not u.observation_shows_history
    space = env.observation_space
    rng = np.random.default_rng(1)
    for ep in range(30):  # half the episodes unmasked: invalid calls and truncations
        explore = 1.0 if ep % 2 else 0.0
        obs, _ = env.reset(seed=ep)
        done = False
        while True:
            assert space.contains(obs), obs
            if of_state:
                assert same(obs, u.dynamics.observe(u.state))
            if done:
                break
            obs, _, terminated, truncated, _ = env.step(actions_of(env, rng, explore))
            done = terminated or truncated


def test_observations_and_masks_are_fresh_arrays(case):
    """Writing into a returned observation or mask changes nothing the env returns later."""
    env = make(case)
    obs, info = env.reset(seed=0)
    if isinstance(obs, np.ndarray) and obs.flags.writeable:
        kept = obs.copy()
        obs[...] = 0 if kept.ravel()[0] else 1
        assert np.array_equal(env.reset(seed=0)[0], kept)
        _, info = env.reset(seed=0)
    if keys.ACTION_MASK in info:
        kept = info[keys.ACTION_MASK].copy()
        info[keys.ACTION_MASK][:] = ~kept
        np.testing.assert_array_equal(env.unwrapped.action_masks(), kept)
        masks = env.unwrapped.action_masks()
        masks[:] = ~kept
        np.testing.assert_array_equal(env.unwrapped.action_masks(), kept)


# ------------------------------------------------------------------------------ bad input
def test_bad_actions_are_refused_and_change_nothing(case):
    """Every action outside the space is an ``InvalidActionError`` that changes nothing: the
    state and history stay (where the env has them) and the env's future is a twin's, which saw
    no bad action; numpy integers and 0-d arrays are actions."""
    env, twin = make(case).unwrapped, make(case).unwrapped
    env.reset(seed=0)
    twin.reset(seed=0)
    has_state = hasattr(env, "dynamics")  # (a team adapter holds its team env instead)
    if has_state:
        before, history = env.state, list(env.history.actions)
    n = int(env.action_space.n)
    bad = (-1, n, 1.0, 1.5, np.float32(0), "0", "1", "scroll", None, np.array([0, 1]))
    bad = (*bad, np.array([1]))
    for action in (*bad, True):
        with pytest.raises(InvalidActionError, match="action"):
            env.step(action)
        if has_state:
            assert env.state == before and env.history.actions == history  # nothing changed
    assert isinstance(InvalidActionError("x"), ValueError)
    mask = action_mask_of(env)
    valid = 0 if mask is None else int(np.flatnonzero(mask)[0])
    out = env.step(np.int64(valid))  # numpy integers are fine
    assert same(out, twin.step(valid))
    if out[2] or out[3]:
        env.reset(seed=0)
        twin.reset(seed=0)
    mask = action_mask_of(env)
    valid = 0 if mask is None else int(np.flatnonzero(mask)[0])
    assert same(env.step(np.array(valid)), twin.step(valid))  # and 0-d arrays
    with pytest.raises(gym.error.ResetNeeded):
        make(case).unwrapped.step(0)
