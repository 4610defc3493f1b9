"""The decision-density diagnosis recovers known rho, keeps its level on routine states, and fails
clearly on environments it cannot branch."""

from __future__ import annotations

import json
import math
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from scipy.stats import binomtest

import routine_envs
from routine_envs.diagnose import (
    DiagnosisResult,
    ModelPolicy,
    UniformPolicy,
    action_dependence_test,
    as_policy,
    cluster_wilson_interval,
    diagnose,
    min_rollouts,
    minimum_detectable_effect,
    reading,
    with_action_mask,
)
from tests import children

gym.register_envs(routine_envs)
ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------- toy environments
class EveryKthStep(gym.Env):
    """``horizon`` steps; on steps ``t % period == 0`` action 1 raises the chance of a unit reward
    from 0.1 to 0.9 (one uniform draw on ``np_random``); every step also pays ``N(0, 1)`` noise
    from ``np_random`` whatever the action. Exactly ``ceil(horizon / period)`` critical steps."""

    def __init__(self, horizon: int = 12, period: int = 3) -> None:
        self.horizon, self.period = horizon, period
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Discrete(horizon + 1)
        self.t = 0

    def _info(self) -> dict[str, Any]:
        return {"critical": self.t < self.horizon and self.t % self.period == 0}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self.t, self._info()

    def step(self, action: int):
        reward = float(self.np_random.normal())
        u = self.np_random.random()  # drawn on every step: both actions consume the same numbers
        if self.t % self.period == 0:
            reward += float(u < (0.9 if action == 1 else 0.1))
        self.t += 1
        return self.t, reward, self.t >= self.horizon, False, self._info()


class NoisyRoutine(gym.Env):
    """Every state routine (``Q(s, .)`` constant), but not trivially: action 0 pays one ``N(0, 1)``
    draw, action 1 the second of two, so the branches' paths differ and the paired differences
    are ``N(0, 2k)``, not zero. The t-test is exact here: false positives occur at rate alpha."""

    def __init__(self, horizon: int = 4) -> None:
        self.horizon = horizon
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Discrete(horizon + 1)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self.t, {"critical": False}

    def step(self, action: int):
        draws = self.np_random.normal(size=1 + int(action))
        self.t += 1
        return self.t, float(draws[-1]), self.t >= self.horizon, False, {"critical": False}


class Endless(NoisyRoutine):
    """Never terminates: only the step budget ends an episode."""

    def step(self, action: int):
        obs, reward, _, truncated, info = super().step(action)
        return min(obs, self.horizon), reward, False, truncated, info


class ContinuousActions(NoisyRoutine):
    def __init__(self) -> None:
        super().__init__()
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)


class Uncopyable(NoisyRoutine):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


# ------------------------------------------------------------------------------ the estimate
@pytest.mark.parametrize("routine_length", [0, 3, 8])
def test_recovers_one_over_one_plus_l_on_diluted_doors(routine_length):
    """reward="fraction": every door is critical and every episode has rho = 1/(1+L) exactly;
    with common random numbers a door's effect on the return is deterministic, so the test finds
    every door and no corridor cell."""
    env = gym.make("DilutedDoors-v0", routine_length=routine_length, reward="fraction")
    result = diagnose(env, num_states=60, num_rollouts=9, seed=routine_length)
    expected = 1 / (1 + routine_length)
    assert result.num_states >= 60
    assert result.num_states % (3 * (1 + routine_length)) == 0  # whole episodes
    assert result.rho == pytest.approx(expected, abs=1e-12)
    assert result.share_routine == pytest.approx(1 - expected, abs=1e-12)
    assert result.ci[0] <= expected <= result.ci[1]
    agreement = result.agreement
    assert agreement is not None
    assert agreement.accuracy == 1.0
    assert agreement.false_positives == agreement.false_negatives == 0
    assert result.mde.return_units == 0.0  # every paired difference was constant
    assert result.num_inconclusive == 0  # every routine state had identical branches
    assert result.rho_upper == result.rho


def test_success_reward_matches_the_annotations_not_one_over_one_plus_l():
    """reward="success": after a wrong door nothing matters, so those doors are routine and the
    target is the annotated share, E[critical doors] / E[T] = (1 + q) / (F (1 + L)) with q = 1/3
    for F = 2 floors under the uniform policy, not 1 / (1 + L). Two floors keep the smallest
    effect (floor 0: the success chance moves by q) within reach of 48 rollouts."""
    env = gym.make("DilutedDoors-v0", num_floors=2, num_doors=3, routine_length=3, reward="success")
    result = diagnose(env, num_states=160, num_rollouts=48, seed=1)
    agreement = result.agreement
    assert agreement is not None
    assert agreement.accuracy >= 0.98
    assert agreement.false_positives == 0
    target = (1 + 1 / 3) / (2 * 4)
    assert result.ci[0] <= target <= result.ci[1]
    assert result.rho == pytest.approx(agreement.annotated_rho, abs=0.02)
    assert result.rho < 0.8 / (1 + 3)


@pytest.mark.parametrize(("horizon", "period"), [(12, 3), (10, 4)])
def test_recovers_known_rho_on_a_toy_env(horizon, period):
    """Critical every ``period`` steps with a random effect; noise on every step. Common random
    numbers make routine branches identical (difference exactly 0) whatever the noise."""
    env = EveryKthStep(horizon, period)
    result = diagnose(env, num_states=120, num_rollouts=16, seed=3)
    expected = math.ceil(horizon / period) / horizon
    assert result.rho == pytest.approx(expected, abs=1e-12)
    assert result.ci[0] <= expected <= result.ci[1]
    assert result.settings["env"] == "EveryKthStep"
    for record in result.records:
        assert record.critical == (record.step % period == 0)
        if not record.critical:  # the routine branches coincided exactly, despite the noise
            assert record.max_abs_difference == 0.0 and record.p_value == 1.0
    assert result.return_variance > 1.0  # the noise is there


def test_false_positive_rate_on_noisy_routine_states_is_alpha():
    """Routine states whose branches differ (mean-zero normal differences): the exact t-test flags
    them at rate alpha, within binomial noise (400 states: 20 +- 4.4 expected)."""
    alpha = 0.05
    result = diagnose(NoisyRoutine(horizon=4), num_states=400, num_rollouts=6, alpha=alpha, seed=5)
    assert result.num_states == 400
    assert all(r.max_sd_difference > 0 for r in result.records)  # never trivially identical
    assert 0.02 <= result.rho <= 0.085
    assert result.ci[0] <= alpha <= result.ci[1]
    assert result.agreement is not None
    assert result.agreement.false_positive_rate == pytest.approx(result.rho)
    assert result.agreement.true_positives + result.agreement.false_negatives == 0
    assert result.num_inconclusive == result.num_states - result.num_critical
    assert result.rho_upper == 1.0  # the upper bracket counts every state whose branches differ
    assert "Caution" in reading(result)  # the branches differed: effects might be hiding


def test_is_reproducible_from_the_seed():
    env = EveryKthStep()
    first = diagnose(env, num_states=24, num_rollouts=8, seed=11)
    second = diagnose(env, num_states=24, num_rollouts=8, seed=11)
    assert [r.mean_returns for r in first.records] == [r.mean_returns for r in second.records]


def test_runs_on_gymnasium_toy_text_envs():
    """Any branchable registered id works, wrappers (TimeLimit) included."""
    result = diagnose(gym.make("FrozenLake-v1"), num_states=10, num_rollouts=10, seed=0)
    assert result.num_states >= 10
    assert 0.0 <= result.ci[0] <= result.rho <= result.ci[1] <= 1.0
    assert result.agreement is None  # FrozenLake has no annotations
    assert result.settings["env"] == "FrozenLake-v1"


def test_step_budget_cuts_and_warns():
    with pytest.warns(RuntimeWarning, match="max_steps=5"):
        result = diagnose(Endless(), num_states=10, num_rollouts=8, max_steps=5, seed=0)
    assert result.num_truncated_episodes == 2
    assert result.num_states == 10
    assert result.num_truncated_rollouts == 10 * 8 * 2  # every continuation: it never ends


# ----------------------------------------------------------------------------- bad inputs
def test_rejects_continuous_actions():
    with pytest.raises(ValueError, match="discrete action space"):
        diagnose(ContinuousActions(), num_states=5)


def test_rejects_an_env_that_cannot_be_deep_copied():
    with pytest.raises(TypeError, match=r"copy\.deepcopy"):
        diagnose(Uncopyable(), num_states=5)


@pytest.mark.parametrize(
    "kwargs",
    [{"num_rollouts": 7}, {"alpha": 0.0}, {"alpha": 1.5}, {"num_states": 0}, {"max_steps": 0}],
)
def test_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError):
        diagnose(NoisyRoutine(), **kwargs)


# ----------------------------------------------------------------------------- the statistics
def test_paired_test_matches_closed_forms():
    """Student t with 1 and 2 degrees of freedom has closed-form tails (an independent oracle)."""
    same = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    assert action_dependence_test(same).p_value == 1.0
    # a constant shift: infinite t, so the sign-flip floor 2^(1 - n) per comparison, x 2
    shifted = np.array([[0.0, 5.0, -1.0], [0.5, 5.5, -0.5], [0.0, 5.0, -1.0]])
    assert action_dependence_test(shifted).p_value == 2 * 2.0**-2
    shifted16 = np.stack([np.arange(16.0), np.arange(16.0) + 0.25])
    assert action_dependence_test(shifted16).p_value == 2.0**-15

    d = np.array([-0.2, 1.0])  # df = 1: P(|T| >= t) = 1 - 2 atan(t) / pi (above the floor 1/2)
    t = d.mean() / (d.std(ddof=1) / math.sqrt(2))
    outcome = action_dependence_test(np.stack([np.zeros(2), d]))
    assert outcome.p_value == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-10)

    d = np.array([0.3, 1.1, -0.2])  # df = 2: P(|T| >= t) = 1 - t / sqrt(2 + t^2) (floor 1/4)
    t = abs(d.mean() / (d.std(ddof=1) / math.sqrt(3)))
    outcome = action_dependence_test(np.stack([np.zeros(3), d, np.zeros(3)]))
    assert outcome.p_values[0] == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-10)
    assert outcome.p_value == pytest.approx(2 * outcome.p_values[0])  # Bonferroni over 2


def test_minimum_detectable_effect_shrinks_like_one_over_sqrt_n():
    small = minimum_detectable_effect(16, 3, 0.01)
    large = minimum_detectable_effect(1024, 3, 0.01)
    assert small > large > 0
    # for large n it tends to (z_{1 - 0.0025} + z_{0.8}) / sqrt(n) = (2.807 + 0.8416) / 32
    assert large == pytest.approx((2.807 + 0.8416) / 32, rel=0.01)


def test_cluster_interval_widens_with_correlated_episodes():
    lengths = np.full(20, 10)
    independent = np.array([2, 3, 1, 2, 2, 3, 1, 2, 2, 2] * 2)  # near-binomial spread
    clustered = np.array([0, 4] * 10)  # same share, episodes all-or-nothing
    (lo_a, hi_a), deff_a = cluster_wilson_interval(independent, lengths)
    (lo_b, hi_b), deff_b = cluster_wilson_interval(clustered, lengths)
    assert deff_a == 1.0 and deff_b > 1.5
    assert hi_b - lo_b > hi_a - lo_a
    (lo, hi), _ = cluster_wilson_interval(np.zeros(5), np.full(5, 10))
    assert lo == 0.0 and 0.0 < hi < 0.1  # no collapse to a point at rho = 0


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_cluster_interval_without_clustering_is_scipys_wilson_interval(confidence):
    """With a design effect of 1 the interval is the plain Wilson score interval."""
    lengths = np.full(20, 10)
    critical = np.array([2, 3, 1, 2, 2, 3, 1, 2, 2, 2] * 2)
    (low, high), deff = cluster_wilson_interval(critical, lengths, confidence)
    assert deff == 1.0
    wilson = binomtest(int(critical.sum()), int(lengths.sum())).proportion_ci(
        confidence, method="wilson"
    )
    assert (low, high) == pytest.approx((wilson.low, wilson.high), rel=1e-12)


# --------------------------------------------------------------------------- reading, output
def _doors(routine_length: int, num_states: int = 30) -> DiagnosisResult:
    env = gym.make("DilutedDoors-v0", routine_length=routine_length, reward="fraction")
    return diagnose(env, num_states=num_states, num_rollouts=9, seed=0)


def test_reading_high_and_low_rho():
    high = reading(_doors(0))
    assert high.startswith("High decision density") and "suffice" in high
    low_result = _doors(8, num_states=270)  # 10 episodes: enough for the Var(R) advice
    low = reading(low_result)
    assert low.startswith("Low decision density")
    assert f"sigma^2/Var(R) < rho = {low_result.rho:.3g}" in low
    assert f"rho^(-1/2) = {low_result.rho**-0.5:.2g}x" in low


def test_result_is_strict_json():
    result = _doors(2)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["rho"] == pytest.approx(1 / 3)
    assert data["agreement"]["accuracy"] == 1.0
    assert len(data["records"]) == result.num_states


def test_cli(tmp_path):
    path = tmp_path / "result.json"
    command = [
        sys.executable, "-m", "routine_envs", "diagnose", "DilutedDoors-v0",
        "--env-kwargs", '{"routine_length": 2, "reward": "fraction"}',
        "--states", "12", "--rollouts", "9", "--seed", "0", "--json", str(path),
    ]  # fmt: skip
    done = children.run(command, cwd=ROOT, timeout=120, check=True)
    assert "rho (critical share of steps)  0.3333" in done.stdout, done.describe()
    assert 'Agreement with info["critical"]' in done.stdout
    assert "Reading" in done.stdout
    assert json.loads(path.read_text())["rho"] == pytest.approx(1 / 3)

    bad = children.run([*command[:5], "--kwargs", "{oops"], cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "--kwargs: must be a JSON object" in bad.stderr, bad.describe()
    # the deprecated spelling still works, with a notice
    old = children.run([*command[:5], "--kwargs", command[6], *command[7:11]], cwd=ROOT,
                       timeout=120, check=True)  # fmt: skip
    assert "rho (critical share of steps)  0.3333" in old.stdout, old.describe()
    assert "warning: --kwargs is deprecated: use --env-kwargs" in old.stderr, old.describe()
    few = children.run([*command[:5], "--rollouts", "4"], cwd=ROOT, timeout=120)
    assert few.returncode != 0 and "use num_rollouts >= 9" in few.stderr, few.describe()
    assert "Traceback" not in few.stderr, few.describe()


def test_progress_bar_on_stderr(capsys):
    """The tqdm bar writes to stderr only, and counts the states of the last, finished episode."""
    result = diagnose(EveryKthStep(), num_states=13, num_rollouts=8, seed=0, progress=True)
    captured = capsys.readouterr()
    assert result.num_states == 24  # two whole episodes of 12
    assert "diagnose" in captured.err
    assert f"{result.num_states}/{result.num_states}" in captured.err
    assert captured.out == ""
    diagnose(EveryKthStep(), num_states=12, num_rollouts=8, seed=0, progress=False)
    assert capsys.readouterr() == ("", "")


def test_core_package_does_not_need_the_diagnose_extra():
    """``import routine_envs`` loads neither scipy nor tqdm, and the diagnosis neither torch nor
    stable-baselines3; without scipy, importing the diagnosis fails with an ImportError naming
    the extra to install."""
    code = textwrap.dedent(
        """
        import sys
        import routine_envs
        loaded = [m for m in sys.modules if m.split(".")[0] in ("scipy", "tqdm")]
        assert not loaded, loaded
        import routine_envs.diagnose  # the policies need torch and SB3 only for a model
        heavy = {"torch", "stable_baselines3", "sb3_contrib"}
        loaded = [m for m in sys.modules if m.split(".")[0] in heavy]
        assert not loaded, loaded
        for name in list(sys.modules):
            if name.startswith("routine_envs.diagnose"):
                del sys.modules[name]
        sys.modules["scipy"] = None  # as if not installed
        try:
            import routine_envs.diagnose
        except ImportError as error:
            print(error)
        """
    )
    done = children.run([sys.executable, "-c", code], cwd=ROOT, timeout=120, check=True)
    assert 'pip install "routine-envs[diagnose]"' in done.stdout, done.describe()
    assert "scipy" in done.stdout


def test_min_rollouts_is_where_a_state_can_first_be_critical():
    assert min_rollouts(3, 0.01) == 9  # 2 * 2^-8 = 0.0078 <= 0.01 < 2 * 2^-7
    assert min_rollouts(2, 0.05) == 6
    shift = np.stack([np.zeros(9), np.ones(9), np.zeros(9)])  # action 1 always pays 1 more
    assert (
        action_dependence_test(shift).p_value <= 0.01 < action_dependence_test(shift[:, :8]).p_value
    )


def test_docs_python_example_runs():
    """docs/diagnose.md's example runs as written (fewer states)."""
    text = (ROOT / "docs" / "diagnose.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    (block,) = [b for b in blocks if "num_states=200" in b]
    namespace: dict[str, Any] = {}
    exec(block.replace("num_states=200", "num_states=30"), namespace)
    assert namespace["result"].rho == pytest.approx(1 / 6)


def test_docs_frozen_lake_policy_is_the_optimal_one():
    """docs/diagnose.md's frozen_lake_policy module plays the optimal actions (those of the
    tests' value iteration) and is a valid --policy callable."""
    from tests.frozen_lake import lake_actions

    text = (ROOT / "docs" / "diagnose.md").read_text()
    (block,) = [b.split("```", 1)[0] for b in text.split("```python\n")[1:] if "BEST" in b]
    namespace: dict[str, Any] = {}
    exec(block, namespace)
    assert namespace["BEST"].tolist() == lake_actions(True).tolist()
    policy = as_policy(namespace["optimal"], gym.spaces.Discrete(4))
    assert policy(14, {}, np.random.default_rng(0)) == lake_actions(True)[14]


# ------------------------------------------------------------------------- the user's policy
def _lake_path_returns(env: gym.Env, actions: np.ndarray) -> list[tuple[int, set[float]]]:
    """On the deterministic lake: the states of the greedy path from 0 and, at each, the set of
    returns of every first action followed by the policy (an exact oracle from ``P``)."""
    table = env.unwrapped.P

    def follow(state: int, action: int) -> float:
        for _ in range(100):
            ((_, state, reward, done),) = table[state][action]
            if done:
                return reward
            action = int(actions[state])
        return 0.0

    path, state = [], 0
    while True:
        path.append((state, {follow(state, a) for a in range(4)}))
        ((_, state, _, done),) = table[state][int(actions[state])]
        if done:
            return path


def test_optimal_policy_finds_critical_states_on_the_deterministic_lake():
    """is_slippery=False: under the optimal policy a state is critical exactly where some action
    falls into a hole (the oracle follows P); the uniform policy finds no state critical."""
    from tests.frozen_lake import deterministic_optimal_policy, lake_actions

    env = gym.make("FrozenLake-v1", is_slippery=False)
    path = _lake_path_returns(env, lake_actions(False))
    expected = [len(returns) > 1 for _, returns in path]
    assert len(path) == 6 and sum(expected) == 4  # 4 of the 6 path cells border a hole
    result = diagnose(
        env, num_states=12, num_rollouts=10, seed=0, policy=deterministic_optimal_policy
    )
    assert [r.critical for r in result.records] == expected * 2
    assert result.rho == pytest.approx(4 / 6)
    assert result.settings["policy"] == "tests.frozen_lake:deterministic_optimal_policy"
    uniform = diagnose(env, num_states=12, num_rollouts=10, seed=0)
    assert uniform.num_critical == 0 and uniform.settings["policy"] == "uniform random"


def test_optimal_policy_finds_critical_states_on_the_slippery_lake():
    """FrozenLake-v1 as registered (slippery): under the uniform policy nothing is significant,
    under the optimal actions (value iteration on P) most steps of the episode are critical."""
    from tests.frozen_lake import optimal_policy

    env = gym.make("FrozenLake-v1")
    settings = {"num_states": 1, "num_rollouts": 32, "seed": 17}
    uniform = diagnose(env, **settings)
    optimal = diagnose(env, policy=optimal_policy, **settings)
    assert uniform.num_critical == 0
    assert optimal.num_critical >= 4 and optimal.num_states == 11
    assert all(r.max_abs_difference >= 0.2 for r in optimal.records if r.critical)
    assert "under the tests.frozen_lake:optimal_policy policy" in " ".join(reading(optimal).split())
    assert "under the uniform random policy" in reading(uniform)


POLICY_MODULE = """
import numpy as np

def down(observation):
    return np.array([0.0, 1.0, 0.0, 0.0])

def softmax(temperature=1.0):
    logits = np.arange(4.0) / temperature
    return lambda observation: np.exp(logits) / np.exp(logits).sum()

def make_fixed(action):
    return lambda observation: np.eye(4)[action]

class Fixed:
    def __init__(self, action=0):
        self.action = action
    def __call__(self, observation):
        return np.eye(4)[self.action]

def wrong_shape(observation):
    return np.array([0.5, 0.5])

def negative(observation):
    return np.array([1.5, -0.5, 0.0, 0.0])

def not_summing(observation):
    return np.array([0.2, 0.2, 0.2, 0.2])

def broken(observation):
    raise RuntimeError("no model here")
"""


@pytest.fixture
def policy_module(tmp_path, monkeypatch):
    """A module of policies written to tmp_path and put on sys.path; its name."""
    name = "diagnose_test_policies"
    (tmp_path / f"{name}.py").write_text(POLICY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    yield name
    sys.modules.pop(name, None)


def test_policy_from_a_module_spec(policy_module):
    """'module:callable' (observation -> probabilities) is imported and followed: always down on
    the deterministic lake falls into the hole at step 3; a class or a factory with JSON keyword
    arguments makes the policy; sampling from probabilities is reproducible from the seed."""
    env = gym.make("FrozenLake-v1", is_slippery=False)
    down = diagnose(env, num_states=6, num_rollouts=10, policy=f"{policy_module}:down")
    assert down.num_states == 6 and down.num_episodes == 2  # 0 -> 4 -> 8 -> 12 (a hole)
    assert down.settings["policy"] == f"{policy_module}:down"
    for spec in [
        f'{policy_module}:Fixed{{"action": 1}}',
        f'{policy_module}:make_fixed{{"action": 1}}',
    ]:
        same = diagnose(env, num_states=6, num_rollouts=10, policy=spec)
        assert [r.mean_returns for r in same.records] == [r.mean_returns for r in down.records]
        assert same.settings["policy"] == spec
    spec = f'{policy_module}:softmax{{"temperature": 2.0}}'
    first, second = (
        diagnose(env, num_states=8, num_rollouts=10, seed=4, policy=spec) for _ in "ab"
    )
    assert [r.mean_returns for r in first.records] == [r.mean_returns for r in second.records]


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("wrong_shape", r"shape \(2,\), not \(4,\)"),
        ("negative", "negative values"),
        ("not_summing", "values summing to 0.8, not 1"),
    ],
)
def test_bad_probabilities_are_a_clear_error(policy_module, function, message):
    env = gym.make("FrozenLake-v1")
    with pytest.raises(ValueError, match=f"policy {policy_module}:{function}: returned {message}"):
        diagnose(env, num_states=5, num_rollouts=10, policy=f"{policy_module}:{function}")


def test_policy_objects_and_the_older_continuation_policy():
    """A callable obs -> probabilities object, and the (obs, info, rng) -> action form, by either
    keyword; both keywords at once are refused."""
    env = EveryKthStep()
    always_one = diagnose(
        env, num_states=12, num_rollouts=8, policy=lambda obs: np.array([0.0, 1.0])
    )
    legacy = diagnose(env, num_states=12, num_rollouts=8, continuation_policy=lambda o, i, rng: 1)
    as_new = diagnose(env, num_states=12, num_rollouts=8, policy=lambda o, i, rng: 1)
    assert [r.mean_returns for r in always_one.records] == [r.mean_returns for r in legacy.records]
    assert [r.mean_returns for r in as_new.records] == [r.mean_returns for r in legacy.records]
    assert "<lambda>" in legacy.settings["policy"]
    with pytest.raises(ValueError, match="not both"):
        diagnose(env, num_states=12, policy="uniform", continuation_policy=lambda o, i, rng: 1)
    uniform = as_policy("uniform", env.action_space)
    assert isinstance(uniform, UniformPolicy)
    assert as_policy(uniform, env.action_space) is uniform


def _run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    from routine_envs.__main__ import main

    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("missing.zip", "--policy 'missing.zip': no such file"),
        ("no_such_module_xyz:policy", "--policy 'no_such_module_xyz:policy': cannot import module"),
        ("{module}:nothing", "has no attribute 'nothing'"),
        ("{module}:wrong_shape", r"returned shape (2,), not (4,)"),
        ("{module}:broken", "RuntimeError on the first observation: no model here"),
        ("greedy", "expected 'uniform'; 'random{"),
    ],
)
def test_cli_refuses_a_bad_policy(policy_module, capsys, policy, message):
    argv = ["diagnose", "FrozenLake-v1", "--policy", policy.format(module=policy_module)]
    status, out, err = _run_cli([*argv, "--no-progress"], capsys)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: --policy")
    assert message in err


def test_cli_runs_a_saved_sb3_model(tmp_path, capsys):
    """An untrained PPO saved to a .zip loads and runs through --policy; the output names it.
    Its probabilities are the model's (Categorical from get_distribution)."""
    sb3 = pytest.importorskip("stable_baselines3")
    env = gym.make("FrozenLake-v1")
    model = sb3.PPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
    path = tmp_path / "model.zip"
    model.save(path)
    policy = as_policy(str(path), env.action_space)
    assert policy.name == f"PPO {path}"
    tensor, _ = model.policy.obs_to_tensor(0)
    expected = model.policy.get_distribution(tensor).distribution.probs.detach().numpy()[0]
    assert policy.probabilities(0, {}) == pytest.approx(expected, abs=1e-6)
    argv = ["diagnose", "FrozenLake-v1", "--policy", str(path), "--states", "5", "--rollouts", "10"]
    status, out, err = _run_cli(
        [*argv, "--no-progress", "--json", str(tmp_path / "r.json")], capsys
    )
    assert status == 0, err
    assert f"policy                         PPO {path}" in out
    assert json.loads((tmp_path / "r.json").read_text())["settings"]["policy"] == f"PPO {path}"
    (tmp_path / "bad.zip").write_text("not a model")
    argv[3] = str(tmp_path / "bad.zip")
    status, out, err = _run_cli(argv, capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "not a saved PPO or MaskablePPO model" in err


def test_masked_model_gets_the_action_mask():
    """A MaskablePPO on CodeFix-v0 (action_masks()) gives invalid actions probability 0 through
    diagnose's masks; the policy never takes them."""
    contrib = pytest.importorskip("sb3_contrib")
    env = gym.make("CodeFix-v0")
    model = contrib.MaskablePPO("MlpPolicy", env, n_steps=16, batch_size=16, seed=0, device="cpu")
    policy = as_policy(model, env.action_space)
    assert isinstance(policy, ModelPolicy) and policy.masked
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(10):
        mask = env.unwrapped.action_masks()
        probs = policy.probabilities(obs, with_action_mask(env, {}))
        assert np.all(probs[~mask] == 0) and probs.sum() == pytest.approx(1)
        action = policy(obs, with_action_mask(env, {}), rng)
        assert mask[action]
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
