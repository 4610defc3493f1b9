"""The PettingZoo team environments: module conventions, per-agent annotation truth by
counterfactual rollouts, per-agent values and decision density, invalid arguments, and the
parameter-shared training adapter with its sweep. The contract suite (tests/test_contract.py)
runs PettingZoo's API tests, the exact per-agent gap, determinism, branching and bad actions."""

from __future__ import annotations

import copy
import inspect
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.utils.conversions import parallel_to_aec_wrapper
from pettingzoo.utils.wrappers import AssertOutOfBoundsWrapper, OrderEnforcingWrapper

from routine_envs import annotations as keys
from routine_envs.envs import DilutedDoorsV0Env, RoutineGridV0Env
from routine_envs.multiagent import (
    MODULES,
    TeamDilutedDoorsV0Env,
    TeamRoutineGridV0Env,
    diluted_doors_v0,
    routine_grid_v0,
)

ROOT = Path(__file__).resolve().parents[1]

CONFIGS = [
    ("diluted_doors_v0", {}),
    (
        "diluted_doors_v0",
        {"num_agents": 3, "num_floors": 3, "routine_length": (0, 3), "reward": "fraction"},
    ),
    ("diluted_doors_v0", {"chooser": [1, 1, 0, 1], "routine_length": 2}),
    ("routine_grid_v0", {}),
    (
        "routine_grid_v0",
        {"num_agents": 3, "branching": 2, "corridor_length": (0, 2), "reward": "fraction"},
    ),
]


def config_id(config):
    name, kwargs = config
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


# ------------------------------------------------------------------------ PettingZoo's tests
@pytest.mark.parametrize("name", sorted(MODULES))
def test_versioned_module_conventions(name):
    mod = MODULES[name]
    par = mod.parallel_env()
    assert par.metadata["name"] == name == str(par)
    assert mod.__name__ == f"routine_envs.multiagent.{name}"
    aec = mod.env()
    assert type(aec.unwrapped) is type(par) and str(aec) == name == aec.metadata["name"]
    # wrapped as PettingZoo wraps its envs: order enforcing over out-of-bounds assertion over
    # the derived AEC env (parallel_to_aec, which adds its own order enforcing)
    assert isinstance(aec, OrderEnforcingWrapper)
    assert isinstance(aec.env, AssertOutOfBoundsWrapper)
    assert isinstance(mod.raw_env().env, parallel_to_aec_wrapper)
    # the class is named by version; its signature (the dynamics' fields, then the options) is
    # the constructors', and its repr shows the configuration
    cls = type(par)
    assert cls.__name__.endswith(f"V{name[-1]}Env") and cls.dynamics_class is type(par.dynamics)
    assert inspect.signature(mod.parallel_env) == inspect.signature(cls)
    assert repr(cls(max_cycles=5)) == repr(par).removesuffix(")") + ", max_cycles=5)"
    turn_based = mod.turn_based_env()
    assert type(turn_based.team) is cls and turn_based.team.dynamics == par.dynamics


def test_plain_names_are_the_current_versions():
    import routine_envs
    from routine_envs import envs, multiagent

    assert routine_envs.DilutedDoorsEnv is envs.DilutedDoorsEnv is envs.DilutedDoorsV1Env
    assert envs.RoutineGridEnv is envs.RoutineGridV1Env
    assert multiagent.TeamDilutedDoorsEnv is multiagent.TeamDilutedDoorsV1Env
    assert multiagent.TeamRoutineGridEnv is multiagent.TeamRoutineGridV1Env


def test_turn_based_rows_name_the_team_envs_defaults():
    """``import routine_envs`` registers the turn-based ids without PettingZoo, so their rows
    name their keyword arguments: they are the team envs' defaults, and the entry point is the
    versioned module's."""
    from routine_envs.registration import TEAM_ADAPTERS

    assert len(TEAM_ADAPTERS) == len(MODULES)
    for row in TEAM_ADAPTERS:
        module, _, attribute = row.entry_point.partition(":")
        name = module.removeprefix("routine_envs.multiagent.")
        assert attribute == "turn_based_env" and name in MODULES
        parameters = inspect.signature(MODULES[name].parallel_env).parameters.values()
        defaults = {p.name: p.default for p in parameters if p.kind is not p.KEYWORD_ONLY}
        assert row.kwargs == defaults, row.id
        assert set(row.small_kwargs) <= set(defaults) and row.density_kwarg in defaults


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_spaces_are_the_same_objects_on_every_call(config):
    name, kwargs = config
    par = MODULES[name].parallel_env(**kwargs)
    aec = MODULES[name].env(**kwargs)
    before = {a: (par.observation_space(a), par.action_space(a)) for a in par.possible_agents}
    par.reset(seed=0)
    aec.reset(seed=0)
    par.step({a: 0 for a in par.agents})
    for a in par.possible_agents:
        assert par.observation_space(a) is before[a][0] and par.action_space(a) is before[a][1]
        assert aec.observation_space(a) is aec.observation_space(a)
        assert aec.observation_space(a) is aec.unwrapped.observation_space(a)
        assert aec.action_space(a) is aec.unwrapped.action_space(a)
    first, *rest = par.possible_agents
    for a in rest:  # equal (parameter sharing) but distinct (independent seeding)
        assert par.observation_space(a) == par.observation_space(first)
        assert par.action_space(a) is not par.action_space(first)


# --------------------------------------------------------------------- annotation truth
def branch_returns(env, agent: int, num_rollouts: int, seed: int) -> np.ndarray:
    """Team return after each action of ``agent`` only, shape ``(num_actions, num_rollouts)``:
    per rollout the teammates' actions are drawn once and held fixed across ``agent``'s
    actions, the env is branched with ``copy.deepcopy`` and every branch continues with the
    same seeded uniform-random joint actions (common random numbers)."""
    n = env.num_actions
    out = np.zeros((n, num_rollouts))
    for r in range(num_rollouts):
        joint = np.random.default_rng([seed, r, 0]).integers(n, size=env.team_size)
        for a in range(n):
            branch = copy.deepcopy(env)
            joint[agent] = a
            actions = {name: int(joint[i]) for i, name in enumerate(branch.possible_agents)}
            rng = np.random.default_rng([seed, r, 1])
            total = 0.0
            while True:
                _, rewards, terms, truncs, _ = branch.step(actions)
                total += rewards["agent_0"]
                if terms["agent_0"] or truncs["agent_0"]:
                    break
                actions = {name: int(rng.integers(n)) for name in branch.agents}
            out[a, r] = total
    return out


def visited_states(env, num_states: int, seed: int):
    """Deep copies of ``env`` at distinct joint states met by uniform-random play."""
    rng = np.random.default_rng(seed)
    found = {}
    for episode in range(50):
        _, infos = env.reset(seed=seed + episode)
        while env.agents and len(found) < num_states:
            ids = {info[keys.STATE_ID] for info in infos.values()}
            assert len(ids) == 1, "every agent reports the joint state's id"
            sid = ids.pop()
            if sid not in found:
                found[sid] = (copy.deepcopy(env), infos)
            actions = {a: int(rng.integers(env.num_actions)) for a in env.agents}
            _, _, _, _, infos = env.step(actions)
        if len(found) >= num_states:
            break
    return list(found.values())


COUNTERFACTUAL_CONFIGS = [
    (TeamDilutedDoorsV0Env, {"num_floors": 2, "routine_length": 1}),
    (
        TeamDilutedDoorsV0Env,
        {"num_agents": 3, "num_floors": 2, "routine_length": (0, 2), "reward": "fraction"},
    ),
    (TeamRoutineGridV0Env, {"num_junctions": 2, "branching": 2, "corridor_length": 1}),
    (
        TeamRoutineGridV0Env,
        {"num_junctions": 2, "branching": 2, "corridor_length": 1, "reward": "fraction"},
    ),
]


@pytest.mark.parametrize(
    "cls, kwargs",
    COUNTERFACTUAL_CONFIGS,
    ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(COUNTERFACTUAL_CONFIGS)],
)
def test_per_agent_critical_is_true_by_counterfactual_rollouts(cls, kwargs):
    """Routine for an agent: its action never changes the team return (pathwise, for every
    draw of the teammates' actions and continuation). Critical: it changes the mean."""
    env = cls(**kwargs)
    seen = {True: 0, False: 0}
    for branch_env, infos in visited_states(env, num_states=12, seed=1):
        for i, name in enumerate(branch_env.possible_agents):
            returns = branch_returns(branch_env, i, num_rollouts=60, seed=7)
            critical = infos[name][keys.CRITICAL]
            seen[critical] += 1
            if critical:
                means = returns.mean(axis=1)
                assert means.max() - means.min() > 0.05, (name, infos[name], means)
            else:
                assert np.all(returns == returns[:1]), (name, infos[name])
    assert seen[True] >= 2 and seen[False] >= 4, seen


def test_doors_critical_only_for_the_floor_chooser():
    env = TeamDilutedDoorsV0Env(num_agents=3, num_floors=4, routine_length=2, reward="fraction")
    assert env.choosers == (0, 1, 2, 0)
    _, infos = env.reset(seed=0)
    floors = []
    while env.agents:
        state = env.joint_state
        flags = [infos[a][keys.CRITICAL] for a in env.possible_agents]
        if state.position == 0:
            floors.append(state.floor)
            assert flags == [i == env.choosers[state.floor] for i in range(3)]
        else:
            assert not any(flags)
        _, _, _, _, infos = env.step({a: 0 for a in env.agents})
    assert floors == [0, 1, 2, 3]
    assert TeamDilutedDoorsV0Env(num_agents=2, chooser=1).choosers == (1, 1, 1, 1)
    # the joint model: at the start only agent_0's (the chooser's) action moves Q*
    team = TeamDilutedDoorsV0Env(num_agents=2, num_floors=2, routine_length=1)
    q = team.optimal().q[team.reset(seed=0)[1]["agent_0"][keys.STATE_ID]]
    door = team.correct_doors[0]
    for other in range(3):
        assert q[team.joint_action_index([door, other])] == 1.0
        assert q[team.joint_action_index([(door + 1) % 3, other])] == 0.0
    assert team.num_joint_actions == 9 == team.model().num_actions


def test_grid_teammate_failure_makes_junctions_routine_under_success_reward():
    env = TeamRoutineGridV0Env(num_junctions=2, branching=2, corridor_length=1)
    wrong = [1 - core.layout.correct_actions[0] for core in env.cores]
    right = [core.layout.correct_actions[0] for core in env.cores]
    _, infos = env.reset(seed=0)
    assert all(infos[a][keys.CRITICAL] for a in env.possible_agents)
    env.step({"agent_0": right[0], "agent_1": wrong[1]})  # agent_1 takes a wrong branch
    _, _, _, _, infos = env.step({"agent_0": 0, "agent_1": 0})
    cell = env.cores[0].layout.cells[env.joint_state[0]]
    assert cell.walked == 0 and cell.junction == 1  # agent_0 stands at its next junction
    assert not infos["agent_0"][keys.CRITICAL]  # ... but the team can no longer succeed
    fraction = TeamRoutineGridV0Env(
        num_junctions=2, branching=2, corridor_length=1, reward="fraction"
    )
    fraction.reset(seed=0)
    fraction.step({"agent_0": right[0], "agent_1": wrong[1]})
    _, _, _, _, infos = fraction.step({"agent_0": 0, "agent_1": 0})
    assert infos["agent_0"][keys.CRITICAL]


@pytest.mark.parametrize("config", CONFIGS[:2] + CONFIGS[3:4], ids=config_id)
def test_exact_per_agent_values_have_zero_routine_advantage(config):
    name, kwargs = config
    env = MODULES[name].parallel_env(**kwargs)
    rng = np.random.default_rng(0)
    table = rng.dirichlet(np.ones(env.num_actions), size=(env.num_states, env.team_size))
    q, v = env.agent_values(table)
    model = env.model()
    gaps = env.action_gaps()
    for sid in np.flatnonzero(model.decision_states):
        for i in range(env.team_size):
            np.testing.assert_allclose(table[sid, i] @ q[sid, i], v[sid], atol=1e-12)
            if gaps[sid, i] == 0:
                assert np.ptp(q[sid, i]) == 0.0  # exactly: routine advantages are exactly 0
            else:  # the teammates' actions averaged out: the same flags as the optimal gap
                assert np.ptp(q[sid, i]) > 1e-6
    # the policy's exact success probability agrees with sampled episodes
    exact = env.success_probability(table)
    wins = 0
    for episode in range(400):
        _, infos = env.reset(seed=episode)
        while env.agents:
            sid = infos["agent_0"][keys.STATE_ID]
            actions = {
                a: int(rng.choice(env.num_actions, p=table[sid, i]))
                for i, a in enumerate(env.agents)
            }
            _, _, _, _, infos = env.step(actions)
        wins += infos["agent_0"][keys.SUCCESS]
    assert abs(wins / 400 - exact) < 4 * np.sqrt(exact * (1 - exact) / 400) + 0.01


# ----------------------------------------------------------------------- decision density
def play(env, policy, seed=0):
    """One episode; returns the last infos and the number of steps."""
    _, infos = env.reset(seed=seed)
    steps = 0
    while env.agents:
        _, _, _, _, infos = env.step({a: policy(env, i) for i, a in enumerate(env.agents)})
        steps += 1
    return infos, steps


@pytest.mark.parametrize("num_agents, num_floors, length", [(2, 4, 10), (3, 3, 2), (2, 3, 5)])
def test_doors_per_agent_decision_density(num_agents, num_floors, length):
    env = TeamDilutedDoorsV0Env(
        num_agents=num_agents, num_floors=num_floors, routine_length=length, reward="fraction"
    )
    infos, steps = play(env, lambda e, i: int(np.random.default_rng(i).integers(3)))
    assert steps == num_floors * (1 + length)
    team = 1 / (1 + length)
    assert env.team_decision_density == pytest.approx(team)
    assert env.decision_density == pytest.approx(1 / (num_agents * (1 + length)))
    for i, agent in enumerate(env.possible_agents):
        floors = len(range(i, num_floors, num_agents))  # rotating chooser
        rho = floors / (num_floors * (1 + length))
        assert infos[agent][keys.DECISION_DENSITY] == pytest.approx(rho)
        assert infos[agent][keys.NUM_CRITICAL] == floors
        assert env.agent_decision_density[agent] == pytest.approx(rho)
        keys.check_episode_end_info(infos[agent])
    mean = np.mean([infos[a][keys.DECISION_DENSITY] for a in env.possible_agents])
    assert mean == pytest.approx(env.decision_density)


def test_grid_per_agent_decision_density():
    env = TeamRoutineGridV0Env(num_agents=2, num_junctions=3, branching=3, corridor_length=4)

    def correct(e, i):
        cell = e.cores[i].layout.cells[e.joint_state[i]]
        return e.cores[i].layout.correct_actions[cell.junction] if cell.walked == 0 else 0

    infos, steps = play(env, correct)
    assert steps == 3 * (1 + 4) == env.max_episode_length
    for agent in env.possible_agents:
        assert infos[agent][keys.SUCCESS]
        assert infos[agent][keys.DECISION_DENSITY] == pytest.approx(1 / 5)
        assert env.agent_decision_density[agent] == pytest.approx(1 / 5)
    assert env.team_decision_density == pytest.approx(1 / 5) == env.decision_density


# --------------------------------------------------------------- determinism and branching
def trajectory(env, seed, num_steps=60):
    rng = np.random.default_rng(123)
    out = [env.reset(seed=seed)]
    for _ in range(num_steps):
        if not env.agents:
            out.append(env.reset())
        out.append(env.step({a: int(rng.integers(env.num_actions)) for a in env.agents}))
    return out


def test_seed_changes_random_corridors():
    env = TeamDilutedDoorsV0Env(num_floors=4, routine_length=(0, 9))
    lengths = set()
    for seed in range(6):
        _, steps = play(env, lambda e, i: 0, seed=seed)
        lengths.add(steps)
    assert len(lengths) > 1


def test_team_of_one_is_the_single_agent_env():
    pairs = [
        (
            TeamDilutedDoorsV0Env(num_agents=1, num_floors=3, routine_length=(0, 4)),
            DilutedDoorsV0Env(routine_length=(0, 4)),
        ),
        (
            TeamRoutineGridV0Env(num_agents=1, corridor_length=3),
            RoutineGridV0Env(corridor_length=3),
        ),
    ]
    for team, single in pairs:
        rng = np.random.default_rng(0)
        for seed in range(3):
            _, infos = team.reset(seed=seed)
            _, info = single.reset(seed=seed)
            done = False
            while not done:
                assert infos["agent_0"][keys.STATE_ID] == info[keys.STATE_ID]
                assert infos["agent_0"][keys.CRITICAL] == info[keys.CRITICAL]
                action = int(rng.integers(single.action_space.n))
                _, rewards, terms, _, infos = team.step({"agent_0": action})
                _, reward, terminated, _, info = single.step(action)
                assert rewards["agent_0"] == reward and terms["agent_0"] == terminated
                done = terminated
            for key in keys.EPISODE_END_KEYS:
                assert infos["agent_0"][key] == info[key]


# --------------------------------------------------------------------------- invalid input
@pytest.mark.parametrize(
    "cls, kwargs, match",
    [
        (TeamDilutedDoorsV0Env, {"num_agents": 0}, "num_agents"),
        (TeamDilutedDoorsV0Env, {"num_agents": 2.0}, "num_agents"),
        (TeamDilutedDoorsV0Env, {"chooser": 2}, "chooser"),
        (TeamDilutedDoorsV0Env, {"chooser": "random"}, "chooser"),
        (TeamDilutedDoorsV0Env, {"chooser": [0, 1]}, "chooser"),
        (TeamDilutedDoorsV0Env, {"chooser": [0, 1, 2, 0]}, "chooser"),
        (TeamDilutedDoorsV0Env, {"chooser": True}, "chooser"),
        (TeamDilutedDoorsV0Env, {"routine_length": -1}, "routine_length"),
        (TeamDilutedDoorsV0Env, {"reward": "mean"}, "reward"),
        (TeamDilutedDoorsV0Env, {"max_cycles": 0}, "max_cycles"),
        (TeamDilutedDoorsV0Env, {"render_mode": "rgb_array"}, "render_mode"),
        (TeamRoutineGridV0Env, {"num_agents": -1}, "num_agents"),
        (TeamRoutineGridV0Env, {"reward": "all"}, "reward"),
        (TeamRoutineGridV0Env, {"branching": 4}, "branching"),
        (TeamRoutineGridV0Env, {"corridor_length": 1}, "corridor_length"),
        (TeamRoutineGridV0Env, {"layout_seed": -1}, "layout_seed"),
        (TeamRoutineGridV0Env, {"max_cycles": 1.5}, "max_cycles"),
    ],
)
def test_invalid_arguments_raise_value_error(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(**kwargs)


# ---------------------------------------------------------------------- render, state, docs
@pytest.mark.parametrize("name", sorted(MODULES))
def test_render_ansi_and_global_state(name):
    env = MODULES[name].parallel_env(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert "agent_0" in text and "agent_1" in text
    state = env.state()
    assert env.state_space.contains(state)
    np.testing.assert_array_equal(
        state,
        np.concatenate(
            [env.dynamics.observe_agent(env.joint_state, i) for i in range(env.team_size)]
        ),
    )
    silent = MODULES[name].parallel_env()
    silent.reset(seed=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert silent.render() is None
    assert caught


def test_docs_page_names_every_argument_and_info_key():
    text = (ROOT / "docs" / "multiagent.md").read_text()
    for module in MODULES.values():
        for param in inspect.signature(module.parallel_env).parameters:
            assert f"`{param}`" in text, (module.__name__, param)
    env = diluted_doors_v0.parallel_env(routine_length=0, num_floors=1)
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"agent_0": 0, "agent_1": 0})
    for key in infos["agent_0"]:
        assert f"`{key}`" in text, key
    for name in MODULES:
        assert name in text
    assert "1/(num_agents * (1 + L))" in text
    assert routine_grid_v0.parallel_env().metadata["name"] == "routine_grid_v0"


# ------------------------------------------------------------------ training adapter, sweep
@pytest.fixture(scope="module")
def team_baselines():
    pytest.importorskip("stable_baselines3")
    from baselines.experiments.multiagent import sweep

    return sweep


def test_turn_based_adapter_episode():
    from gymnasium.utils.env_checker import check_env

    from routine_envs.multiagent.turn_based import TEAM_ENVS, TurnBasedTeamEnv

    for env_id in TEAM_ENVS:  # importing the module registers the turn-based ids
        assert isinstance(gym.make(env_id).unwrapped, TurnBasedTeamEnv)
    env = TurnBasedTeamEnv(TeamDilutedDoorsV0Env(num_floors=2, routine_length=2))
    check_env(env, skip_render_check=True)
    reference = TeamDilutedDoorsV0Env(num_floors=2, routine_length=2)
    obs, info = env.reset(seed=0)
    _, ref_infos = reference.reset(seed=0)
    rng = np.random.default_rng(0)
    turns, total, done = 0, 0.0, False
    while not done:
        turn = turns % 2
        agent = f"agent_{turn}"
        assert info[keys.STATE_ID] == ref_infos[agent][keys.STATE_ID] * 2 + turn
        assert info[keys.CRITICAL] == ref_infos[agent][keys.CRITICAL]
        assert obs[reference.observation_space(agent).shape[0] - 3 + turn] == 1.0  # one-hot
        action = int(rng.integers(3))
        obs, reward, terminated, truncated, info = env.step(action)
        turns += 1
        if turn == 0:
            assert reward == 0.0 and not terminated
            pending = action
        else:
            _, rewards, _, _, ref_infos = reference.step({"agent_0": pending, "agent_1": action})
            assert reward == rewards["agent_0"]
        total += reward
        done = terminated or truncated
    keys.check_episode_end_info(info)
    assert info[keys.EPISODE_LENGTH] == turns == 2 * 2 * 3
    assert info[keys.DECISION_DENSITY] == pytest.approx(
        np.mean([ref_infos[a][keys.DECISION_DENSITY] for a in reference.possible_agents])
    )
    assert total == float(info[keys.SUCCESS])
    # the exact model through the adapter
    table = np.full((env.num_states, 3), 1 / 3)
    assert env.success_probability(table) == pytest.approx(1 / 9)
    ids, observations = env.decision_observations()
    assert observations.shape == (len(ids), env.observation_space.shape[0])
    advantage = env.oracle(table).advantage
    routine = ~np.array(
        [reference.dynamics.is_agent_critical(reference.describe_state(i // 2), i % 2) for i in ids]
    )
    assert np.all(advantage[ids[routine]] == 0.0) and np.any(advantage[ids[~routine]] != 0.0)


@pytest.mark.parametrize("method", ["ppo", "trajectory_mc", "oracle"])
def test_parameter_shared_training_runs(team_baselines, method):
    from baselines.experiments.train.command import TrainArgs, main

    result = main(
        TrainArgs(
            env_id="TeamDilutedDoors-v0",
            env_kwargs={"num_floors": 2, "routine_length": 1},
            method=method,
            total_timesteps=512,
            eval_every=512,
            progress=False,
        )
    )
    assert result.timesteps[:2] == [0, 512]  # one rollout of 8 teams x 128 turns may pass 512
    assert result.success[0] == pytest.approx(1 / 9, abs=0.01)  # near-uniform initial policy
    assert all(0.0 <= s <= 1.0 for s in result.success)


def test_team_sweep_is_resumable_and_reported(team_baselines, tmp_path, capsys):
    args = team_baselines.TeamSweepArgs(
        env_kwargs={"num_floors": 2},
        routine_lengths=[0, 1],
        methods=["ppo", "trajectory_mc"],
        seeds=[0],
        budget_episodes=1,
        min_budget_steps=256,
        eval_points=2,
        workers=1,
        out=tmp_path,
    )
    tables = team_baselines.main(args)
    out = capsys.readouterr().out
    assert "4 to do" in out and "steps to target success" in out
    rows = tables["steps_to_target"]
    assert {(r["routine_length"], r["method"]) for r in rows} == {
        (0, "ppo"),
        (0, "trajectory_mc"),
        (1, "ppo"),
        (1, "trajectory_mc"),
    }
    assert sorted({r["rho"] for r in rows}) == pytest.approx([1 / 4, 1 / 2])
    for name in ("learning_curves.csv", "steps_to_target.png", "summary_scores.csv"):
        assert (tmp_path / name).exists()
    team_baselines.run_sweep(args, progress=False)
    assert "0 to do" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown team environment"):
        team_baselines.plan(team_baselines.TeamSweepArgs(env_id="DilutedDoors-v0"))
    with pytest.raises(ValueError, match="unknown method"):
        team_baselines.plan(team_baselines.TeamSweepArgs(methods=["nope"]))
