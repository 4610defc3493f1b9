"""Routine Grid: episodes, annotations and closed forms, rho, layouts, observations, bad
configurations, renders. The contract suite (tests/test_contract.py) covers the generic checks
over its configurations."""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import math
import pickle
from collections import deque
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import annotations as keys
from routine_envs.annotations import ACTION_GAP
from routine_envs.dynamics import Dynamics
from routine_envs.envs import RoutineGridV0Env
from routine_envs.envs.routine_grid import (
    CORRIDOR,
    DEAD_END,
    GOAL,
    JUNCTION,
    LAVA,
    GridDynamics,
    make_layout,
)
from routine_envs.oracle import optimal_values
from tests.strategies import grid_configs
from tests.utils import (
    counterfactual_returns,
    run_episode,
    sample_states,
    tabular_sampler,
    uniform_policy,
)

ROOT = Path(__file__).resolve().parents[1]


def correct_policy(env: RoutineGridV0Env):
    """The right branch at every junction, action 0 (free) in corridors."""
    return lambda sid, _rng: (
        env.layout.correct_actions[env.describe_state(sid).junction]
        if env.describe_state(sid).kind == JUNCTION
        else 0
    )


def bfs_distance(desc: tuple[str, ...]) -> int | None:
    """Independent search over the text map (FrozenLake-style): shortest walk from ``S`` to
    ``G`` over open squares, never through lava or a dead end; ``None`` when unreachable."""
    height, width = len(desc), len(desc[0])
    start = next((r, c) for r in range(height) for c in range(width) if desc[r][c] == "S")
    dist, queue = {start: 0}, deque([start])
    while queue:
        r, c = queue.popleft()
        if desc[r][c] == "G":
            return dist[(r, c)]
        for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
            n = (r + dr, c + dc)
            inside = 0 <= n[0] < height and 0 <= n[1] < width
            if inside and n not in dist and desc[n[0]][n[1]] in ".+G":
                dist[n] = dist[(r, c)] + 1
                queue.append(n)
    return None


# --------------------------------------------------------------------------- episodes
def test_defaults_and_successful_episode_shape():
    env = gym.make("RoutineGrid-v0")
    u = env.unwrapped
    assert (u.num_junctions, u.branching, u.corridor_length, u.step_cost) == (3, 3, 5, 0.0)
    assert u.decision_density == pytest.approx(1 / 6, abs=1e-15)
    assert u.max_episode_length == 18 and env.spec.max_episode_steps is None
    rec = run_episode(env, correct_policy(u), np.random.default_rng(0), seed=0)
    assert len(rec["actions"]) == 18
    assert rec["critical"] == ([True] + [False] * 5) * 3
    assert rec["rewards"] == [0.0] * 17 + [1.0]
    assert [i[ACTION_GAP] for i in rec["infos"]] == ([1.0] + [0.0] * 5) * 3 + [0.0]
    end = rec["final_info"]
    assert end == {**end, "success": True, "num_critical": 3, "episode_length": 18}
    assert end["decision_density"] == pytest.approx(1 / 6)
    assert u.describe_state(rec["state_ids"][-1]).kind == GOAL
    keys.check_episode_end_info(end)


@pytest.mark.parametrize("failing_junction", [0, 1, 2])
def test_wrong_branch_ends_after_a_full_corridor_with_the_same_rho(failing_junction):
    env = RoutineGridV0Env(num_junctions=3, branching=3, corridor_length=4, layout_seed=1)
    _, info = env.reset(seed=0)
    correct = env.layout.correct_actions
    rewards, steps = [], 0
    done = False
    while not done:
        cell = env.describe_state(info["state_id"])
        if cell.kind == JUNCTION:
            wrong = (correct[cell.junction] + 1) % 3
            action = wrong if cell.junction == failing_junction else correct[cell.junction]
        else:
            action = 2
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        steps += 1
        done = terminated or truncated
    assert terminated and not truncated and sum(rewards) == 0.0
    assert steps == 5 * (failing_junction + 1)  # a wrong branch is as long as the right one
    assert env.describe_state(info["state_id"]).kind in (LAVA, DEAD_END)
    assert info["success"] is False and info["num_critical"] == failing_junction + 1
    assert info["decision_density"] == pytest.approx(1 / 5, rel=1e-15)


def test_corridor_outcome_does_not_depend_on_the_action():
    env = RoutineGridV0Env(num_junctions=2, branching=2, corridor_length=3, layout_seed=4)
    model = env.model()
    for sid in np.flatnonzero(model.decision_states):
        rows = (model.state == sid).nonzero()[0]
        targets = {(int(model.next_state[i]), float(model.reward[i])) for i in rows}
        kind = env.describe_state(int(sid)).kind
        assert len(targets) == (1 if kind == CORRIDOR else 2), (sid, targets)


def test_max_steps_truncates_with_episode_end_info():
    env = gym.make("RoutineGrid-v0", max_steps=4)
    env.reset(seed=0)
    for _ in range(3):
        assert env.step(0)[3] is False
    _, _, terminated, truncated, info = env.step(0)
    assert (terminated, truncated) == (False, True)
    assert info["episode_length"] == 4 and info["num_critical"] == 1
    assert info["success"] is False and info["decision_density"] == 0.25


# ------------------------------------------------------------------------ annotations
ANNOTATION_CONFIGS = [
    {"num_junctions": 3, "branching": 3, "corridor_length": 2},
    {"num_junctions": 4, "branching": 2, "corridor_length": (0, 3), "layout_seed": 7},
    {"num_junctions": 3, "branching": 3, "corridor_length": 3, "soft_routine": True},
    {"num_junctions": 2, "branching": 2, "corridor_length": 2, "soft_routine": 0.3},
    {"num_junctions": 2, "branching": 3, "corridor_length": 2, "soft_routine": 0.05,
     "critical_tolerance": 0.01},
]  # fmt: skip


@pytest.mark.parametrize("kwargs", ANNOTATION_CONFIGS)
def test_annotations_equal_value_iteration_over_the_model(kwargs):
    env = RoutineGridV0Env(**kwargs)
    model = env.model()
    assert model.reachable.all()  # every cell of the maze is reachable
    gap = optimal_values(model).action_gap  # the oracle's own value iteration
    np.testing.assert_allclose(env.action_gaps(), gap, rtol=0, atol=1e-12)
    decide = model.decision_states
    flags = np.array([env.unwrapped.dynamics.is_critical(s) for s in range(env.num_states)])
    np.testing.assert_array_equal(flags[decide], gap[decide] > env.critical_tolerance)
    assert not flags[model.terminal].any()
    kinds = np.array([env.describe_state(s).kind for s in range(env.num_states)])
    # closed forms: the right branch is worth 1 and a wrong one 0; dithering costs c
    np.testing.assert_allclose(gap[kinds == JUNCTION], 1.0, atol=1e-12)
    np.testing.assert_allclose(gap[kinds == CORRIDOR], env.step_cost, atol=1e-12)


EDGE_CONFIGS = [  # a tolerance equal to the dithering cost: the gap's rounding decides
    {"soft_routine": 0.01, "critical_tolerance": 0.01},
    {"soft_routine": 0.1, "critical_tolerance": 0.1, "branching": 2, "corridor_length": (1, 3)},
]


@pytest.mark.parametrize("kwargs", ANNOTATION_CONFIGS + EDGE_CONFIGS)
def test_dynamics_is_critical_and_state_from_id_agree_with_the_definitions(kwargs):
    dyn = RoutineGridV0Env(**kwargs).unwrapped.dynamics
    assert isinstance(dyn, GridDynamics) and dyn == GridDynamics(**kwargs)
    model = dyn.model()
    gap = optimal_values(model).action_gap  # the exact action gap, from the oracle directly
    for sid in np.flatnonzero(model.reachable):
        state = model.states[int(sid)]
        own = dyn.is_critical(state)
        assert type(own) is bool and own == Dynamics.is_critical(dyn, state), sid
        assert own == (bool(gap[sid] > dyn.critical_tolerance) and not model.terminal[sid]), sid
        assert dyn.action_gap(state) == gap[sid] == Dynamics.action_gap(dyn, state)
        assert dyn.state_id(dyn.state_from_id(int(sid))) == sid
        assert dyn.state_from_id(dyn.state_id(state)) == state
        assert dyn.cell(state) == dyn.layout.cells[int(sid)]
    for bad in (-1, dyn.num_states):
        with pytest.raises(ValueError, match="state_id"):
            dyn.state_from_id(bad)
    assert dyn.approximate_routine == (dyn.step_cost > 0)


def test_dynamics_are_immutable_shared_and_normalized():
    dyn = GridDynamics(corridor_length=[4, 4], soft_routine=True, layout_seed=2)
    assert (dyn.corridor_length, dyn.corridor_range, dyn.soft_routine) == (4, (4, 4), 0.01)
    assert dyn.step_cost == 0.01 and dyn == GridDynamics(corridor_length=4, soft_routine=0.01,
                                                         layout_seed=2)  # fmt: skip
    assert hash(dyn) == hash(GridDynamics(corridor_length=4, soft_routine=0.01, layout_seed=2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        dyn.branching = 2
    replaced = dataclasses.replace(dyn, critical_tolerance=0.005)
    assert replaced.layout.desc == dyn.layout.desc and replaced.decision_density == 1.0
    env = RoutineGridV0Env(corridor_length=4, soft_routine=True, layout_seed=2)
    assert env.dynamics == dyn and copy.deepcopy(env).dynamics is env.dynamics
    assert pickle.loads(pickle.dumps(dyn)) == dyn
    with pytest.raises(ValueError, match="view_size"):
        GridDynamics(view_size=6)


def test_describe_tells_the_way_but_not_the_correct_branch():
    dyn = GridDynamics(num_junctions=3, branching=3, corridor_length=3, soft_routine=0.05)
    texts = {sid: dyn.describe(sid) for sid in range(dyn.num_states)}
    for sid, text in texts.items():
        cell = dyn.cell(sid)
        heading = ("east", "south", "west", "north")[cell.heading]
        assert f"heading {heading}" in text, text
        if cell.kind == JUNCTION:
            assert f"junction {cell.junction + 1} of 3" in text
            assert "left (north), action 1: ahead (east), action 2: right (south)" in text
            for word in ("goal", "lava", "dead end", "correct", "wrong", "trap"):
                assert word not in text, text
        elif cell.kind == CORRIDOR:
            assert "corridor" in text and "cost 0.05" in text
    # the junctions of mazes whose correct branches differ read the same
    junction_texts = {
        GridDynamics(layout_seed=seed).describe(GridDynamics(layout_seed=seed).layout.start)
        for seed in range(20)
    }
    assert len(junction_texts) == 1
    assert len({make_layout(3, 3, (5, 5), seed).correct_actions for seed in range(20)}) > 1


def test_soft_routine_rewards_gap_and_tolerance():
    env = gym.make("RoutineGridSoft-v0")
    u = env.unwrapped
    assert u.step_cost == 0.01 and u.soft_routine and u.decision_density == pytest.approx(1 / 6)
    _, info = env.reset(seed=0)
    _, r0, _, _, info = env.step(u.layout.correct_actions[0])
    assert r0 == 0.0 and info[ACTION_GAP] == pytest.approx(0.01) and not info["critical"]
    assert env.step(1)[1] == pytest.approx(-0.01) and env.step(0)[1] == 0.0
    # a tolerance below the dithering cost makes every state on the way critical
    strict = RoutineGridV0Env(soft_routine=0.01, critical_tolerance=0.005)
    assert strict.decision_density == 1.0
    rec = run_episode(strict, correct_policy(strict), np.random.default_rng(0), seed=0)
    assert all(rec["critical"]) and rec["final_info"]["num_critical"] == 18


@pytest.mark.parametrize("soft", [False, 0.2])
def test_annotation_truth_by_counterfactual_branching(soft):
    """Independent of the model: branch sampled states into each action with the same random
    continuation. Routine states give equal returns path by path (hard routine) or returns that
    differ by exactly the dithering cost (soft routine); critical ones differ in mean."""
    env = gym.make(
        "RoutineGrid-v0", num_junctions=3, branching=2, corridor_length=(1, 3), layout_seed=2,
        soft_routine=soft, critical_tolerance=0.5,
    )  # fmt: skip
    u = env.unwrapped
    cost = u.step_cost
    table = np.full((u.num_states, 2), 0.5)  # right branch 4 times in 5, corridors uniform
    for sid in range(u.num_states):
        cell = u.describe_state(sid)
        if cell.kind == JUNCTION:
            table[sid, u.layout.correct_actions[cell.junction]] = 0.8
            table[sid, 1 - u.layout.correct_actions[cell.junction]] = 0.2
    policy = tabular_sampler(table)
    states = sample_states(env, policy, num_states=20, seed=3)
    assert sum(info["critical"] for _, info in states) == 3
    assert sum(not info["critical"] for _, info in states) >= 10
    for branch, info in states:
        returns = counterfactual_returns(branch, info, policy, num_rollouts=60, seed=11)
        if info["critical"]:
            means = returns.mean(axis=1)
            se = returns.std(axis=1).max() / math.sqrt(returns.shape[1]) + 1e-12
            assert means.max() - means.min() > 4 * se, (info, means)
        else:
            np.testing.assert_allclose(returns[1] - returns[0], -cost, atol=1e-12)
            assert info[ACTION_GAP] == pytest.approx(cost, abs=1e-12)


def test_oracle_closed_forms_for_uniform_policy():
    """Uniform policy, hard routine: V at junction j = (1/B)^(J-j); routine advantages are 0."""
    J, B = 4, 2
    env = RoutineGridV0Env(num_junctions=J, branching=B, corridor_length=3, layout_seed=9)
    values = env.oracle(np.full((env.num_states, B), 1 / B))
    junctions = [s for s in env.layout.spine if env.describe_state(s).kind == JUNCTION]
    assert len(junctions) == J
    for j, sid in enumerate(junctions):
        assert values.v[sid] == pytest.approx(B ** -(J - j), rel=1e-12)
        q = values.q[sid]
        assert q[env.layout.correct_actions[j]] == pytest.approx(B ** -(J - j - 1), rel=1e-12)
    routine = env.model().decision_states & ~env.unwrapped.dynamics.critical_table()
    assert routine.sum() > 20 and np.abs(values.advantage[routine]).max() == 0.0


# ----------------------------------------------------------------------------- layouts
def test_layout_text_map_and_solvability():
    env = RoutineGridV0Env(num_junctions=3, branching=3, corridor_length=5)
    desc = env.layout.desc
    text = "".join(desc)
    assert text.count("S") == 1 and text.count("+") == 2 and text.count("G") == 1
    assert text.count("~") + text.count("x") == 6  # two wrong branches per junction
    assert bfs_distance(desc) == 2 * 18  # a step crosses a cell and a doorway


def test_correct_branch_is_uniform_over_actions():
    counts = np.zeros((2, 3))
    for seed in range(300):
        for b, low in ((2, 0), (3, 2)):
            layout = make_layout(3, b, (low, low + 1), seed)
            np.add.at(counts[b - 2], list(layout.correct_actions), 1)
    expected = np.array([[450, 450, 0], [300, 300, 300]])
    assert counts[0, 2] == 0 and np.all(np.abs(counts - expected) < 4 * np.sqrt(expected + 1))


def test_state_ids_are_canonical_and_describe_state_inverts():
    env = RoutineGridV0Env(num_junctions=3, branching=2, corridor_length=(0, 3), layout_seed=3)
    positions = [(c.row, c.col) for c in env.layout.cells]
    assert positions == sorted(positions) and len(set(positions)) == env.num_states
    assert env.layout.kinds[positions[0]] != 0
    with pytest.raises(ValueError, match="state_id"):
        env.describe_state(env.num_states)


# ------------------------------------------------------------------------ observations
def test_vector_observation_is_a_function_of_the_state_and_in_space():
    env = RoutineGridV0Env(num_junctions=3, branching=2, corridor_length=(1, 3), layout_seed=5)
    seen: dict[int, np.ndarray] = {}
    rng = np.random.default_rng(1)
    for ep in range(20):
        rec = run_episode(env, uniform_policy(2), rng, seed=ep)
        for sid, obs in zip(rec["state_ids"], rec["obs"], strict=False):
            assert env.observation_space.contains(obs)
            if sid in seen:
                np.testing.assert_array_equal(seen[sid], obs)
            seen[sid] = obs
    obs, _ = env.reset(seed=0)
    n = env.num_junctions
    assert obs[:n].tolist() == [1, 0, 0] and obs[n] == 1.0 and obs[n + 3] == 1.0  # east
    assert obs[n + 7 : n + 10].sum() == 2  # two ways out of a branching-2 junction
    obs[0] = 0.5  # a fresh array: the table is not touched
    assert env.reset()[0][0] == 1.0


def test_image_observation_is_the_egocentric_view():
    env = RoutineGridV0Env(obs_mode="image", view_size=5)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (5, 5, 3) and obs.dtype == np.uint8
    start = env.layout.cells[env.layout.start]
    desc = env.layout.desc
    code = {"#": 2, ".": 1, "+": 1, "S": 1, "G": 8, "~": 9, "x": 3}
    for ahead in range(5):  # heading east: view column 2 runs along the agent's row
        expected = code[desc[start.row][start.col + ahead]]
        assert obs[4 - ahead, 2, 0] == expected
    for right in (-2, -1, 1, 2):  # the agent's right is south
        assert obs[4, 2 + right, 0] == code[desc[start.row + right][start.col]]
    check_env(gym.make("RoutineGrid-v0", obs_mode="image", view_size=5).unwrapped)


# ----------------------------------------------------------------- branching, determinism
def test_same_configuration_same_maze_and_trajectory():
    def trajectory(layout_seed):
        env = gym.make("RoutineGrid-v0", branching=2, corridor_length=(1, 5),
                       layout_seed=layout_seed)  # fmt: skip
        env.action_space.seed(0)
        out = []
        for ep in range(5):
            obs, info = env.reset(seed=ep)
            done = False
            while not done:
                obs, r, term, trunc, info = env.step(env.action_space.sample())
                out.append((obs.tobytes(), r, info["state_id"], info["critical"]))
                done = term or trunc
        return env.unwrapped.layout.desc, out

    assert trajectory(1) == trajectory(1)
    assert trajectory(1)[0] != trajectory(2)[0]


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"num_junctions": 0}, "num_junctions"),
        ({"num_junctions": 2.0}, "num_junctions"),
        ({"branching": 1}, "branching"),
        ({"branching": 4}, "branching"),
        ({"branching": True}, "branching"),
        ({"corridor_length": -1}, "corridor_length"),
        ({"corridor_length": (4, 3)}, "corridor_length"),
        ({"corridor_length": (1, 2, 3)}, "corridor_length"),
        ({"corridor_length": "5"}, "corridor_length"),
        ({"corridor_length": 1}, "corridor_length"),  # branching=3 needs room to turn
        ({"corridor_length": (1, 4)}, "corridor_length"),
        ({"layout_seed": -1}, "layout_seed"),
        ({"layout_seed": None}, "layout_seed"),
        ({"soft_routine": -0.1}, "soft_routine"),
        ({"soft_routine": 2.0}, "soft_routine"),
        ({"soft_routine": "yes"}, "soft_routine"),
        ({"critical_tolerance": 1.0}, "critical_tolerance"),
        ({"critical_tolerance": -0.5}, "critical_tolerance"),
        ({"critical_tolerance": None}, "critical_tolerance"),
        ({"obs_mode": "pixels"}, "obs_mode"),
        ({"view_size": 4}, "view_size"),
        ({"view_size": 1}, "view_size"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_steps": 1.5}, "max_steps"),
        ({"render_mode": "video"}, "render_mode"),
    ],
)
@pytest.mark.filterwarnings("ignore:.*render_mode")  # gym.make warns before the env raises
def test_invalid_configuration_raises_value_error_naming_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        gym.make("RoutineGrid-v0", **kwargs)


# ---------------------------------------------------------------------- rendering, docs
def test_render_modes_mark_critical_cells():
    env = gym.make("RoutineGrid-v0", render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "critical" in text.splitlines()[0] and text.count("*") == 2  # + the agent's junction
    assert text.count(">") == 1
    env = gym.make("RoutineGrid-v0", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    u = env.unwrapped
    assert frame.shape == (u.layout.kinds.shape[0] * 10, u.layout.kinds.shape[1] * 10, 3)
    yellow = np.all(frame == (250, 200, 0), axis=-1)
    junctions = [u.describe_state(s) for s in u.layout.spine if u.dynamics.critical_table()[s]]
    assert len(junctions) == 3
    for cell in junctions:  # a 2-pixel yellow frame on each junction's 10-pixel square
        square = yellow[cell.row * 10 : cell.row * 10 + 10, cell.col * 10 : cell.col * 10 + 10]
        assert square[2:8, 2:8].sum() == 0 and square.sum() >= 60
    assert (
        yellow.sum()
        == sum(  # nowhere else
            yellow[c.row * 10 : c.row * 10 + 10, c.col * 10 : c.col * 10 + 10].sum()
            for c in junctions
        )
    )
    assert np.all(frame == (30, 80, 200), axis=-1).sum() > 10  # the agent
    env.step(u.layout.correct_actions[0])
    visited = np.all(env.render() == (175, 200, 230), axis=-1).sum()
    assert visited == 36 + 100  # inside the start's frame, and the doorway walked through


def test_docs_layout_picture_is_up_to_date(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "make_png", ROOT / "docs" / "make_routine_grid_png.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fresh = tmp_path / "routine_grid.png"
    module.main(fresh)
    committed = ROOT / "docs" / "envs" / "routine_grid.png"
    assert committed.read_bytes() == fresh.read_bytes(), "run python docs/make_routine_grid_png.py"
    assert "routine_grid.png" in (ROOT / "docs" / "envs" / "routine_grid.md").read_text()


# ------------------------------------------------------------------------ property tests
@settings(max_examples=40, deadline=None)
@given(grid_configs, st.integers(0, 2**16))
def test_property_rho_formula_solvability_and_annotation_truth(kwargs, seed):
    env = RoutineGridV0Env(**kwargs)
    lengths = env.layout.corridor_lengths
    low, high = env.corridor_range
    assert all(low <= n <= high for n in lengths)
    # solvable, and the map's shortest path is the maze's only way: 2 squares per step
    assert bfs_distance(env.layout.desc) == 2 * (env.num_junctions + sum(lengths))
    assert env.decision_density == pytest.approx(env.num_junctions / env.max_episode_length)
    rng = np.random.default_rng(seed)
    rec = run_episode(env, uniform_policy(env.branching), rng, seed=seed)
    end = rec["final_info"]
    keys.check_episode_end_info(end)
    passed = end["num_critical"]  # junctions reached; every one is critical
    assert end["episode_length"] == passed + sum(lengths[:passed])
    if low == high:
        assert end["decision_density"] == pytest.approx(1 / (1 + low), rel=1e-15)
    last = env.describe_state(rec["state_ids"][-1])
    assert last.kind in (GOAL, LAVA, DEAD_END) and end["success"] == (last.kind == GOAL)
    assert passed == env.num_junctions or not end["success"]
    gap = optimal_values(env.model()).action_gap
    for sid, flag in zip(rec["state_ids"], rec["critical"], strict=False):
        assert (gap[sid] > env.critical_tolerance) == flag
    for info in rec["infos"]:
        keys.check_step_info(info, env.num_states)
