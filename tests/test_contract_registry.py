"""The contract of the registry as a whole, over every registered id (the rows of
``ENVIRONMENTS``, the team adapters of ``TEAM_ADAPTERS`` and the ids outside code registers with
``register_dynamics``):

- every id is a case of the contract suite (``tests/test_contract.py``), is made as its row
  says (the package's with its module's name, ``routine_envs:Id``), and vectorizes (sync, async,
  native: every id of a dynamics class has the model-driven vector env attached);
- importing the package is quiet and cheap, and registering again changes nothing;
- ``metadata["render_modes"]`` lists exactly the modes an env draws (a mode it does not is a
  ``RenderModeError``: a ``ValueError``, and a ``TypeError`` for SB3's fallback);
- a bad value of any keyword the entry point takes (a non-string ``render_mode`` included) is a
  one-line ``ValueError`` naming the keyword, through ``gym.make``, ``gym.make_vec`` and the
  command lines, never another exception (a property test over the small configurations);
- the native vector env returns what ``SyncVectorEnv`` returns, the info keys in the same order
  with their values, dtypes and ``_key`` masks, in every autoreset mode, through time-limit
  truncations and natural ends;
- a team adapter's random generator is its team env's.
"""

from __future__ import annotations

import copy
import inspect
import sys
import textwrap
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from hypothesis import given, settings
from hypothesis import strategies as st

from routine_envs import annotations as keys
from routine_envs.envs.validation import RenderModeError
from routine_envs.registration import entry
from tests import children
from tests.test_contract import CASES, SMALL, SMALL_CONFIGS, case_id, is_team_adapter, make, same
from tests.utils import all_env_ids, outside_ids, registry_ids

#: every id with its small configuration (the fast case of the contract suite)
SMALL_CASES = [(env_id, SMALL_CONFIGS.get(env_id, {})) for env_id in registry_ids()]
#: render modes a Gymnasium env may offer
KNOWN_MODES = ("ansi", "human", "rgb_array")
#: values of render_mode that are not strings
NON_STRINGS = (1, 1.5, True, b"ansi", ["ansi"], ("ansi",), {"mode": "ansi"}, np.array([1, 2]))


def accepted_keywords(env_id: str) -> list[str]:
    """The keyword arguments the entry point of ``env_id`` takes (its ``inspect.signature``, as
    the command lines read it); none of them is ``**kwargs``."""
    entry_point = gym.spec(env_id).entry_point
    creator = (
        gym.envs.registration.load_env_creator(entry_point)
        if isinstance(entry_point, str)
        else entry_point
    )
    params = inspect.signature(creator).parameters.values()
    assert all(p.kind is p.KEYWORD_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
    return sorted(p.name for p in params)


def assert_one_line_value_error(error: BaseException, name: str) -> None:
    """``error`` is a ``ValueError`` whose message is one line naming ``name``."""
    assert isinstance(error, ValueError), f"{type(error).__name__}: {error}"
    message = str(error)
    assert name in message and "\n" not in message.strip(), message


# ------------------------------------------------------------------------------- registry
def test_every_registered_id_is_a_contract_case():
    """The ids the package registers with Gymnasium are exactly its tables', those of outside
    code are in the registry too, and every one is a case (with its defaults) of the contract
    suite."""
    registered = {
        env_id
        for env_id, spec in gym.registry.items()
        if isinstance(spec.entry_point, str) and spec.entry_point.startswith("routine_envs.")
    }
    assert registered == set(registry_ids()) - set(outside_ids())
    assert {"KeyCorridor-v0", "Button-v0"} <= set(outside_ids())
    assert set(registry_ids()) <= {env_id for env_id, kwargs in CASES if not kwargs}


@pytest.mark.parametrize("env_id", registry_ids())
def test_namespaced_make_and_registry_row(env_id):
    """A package id is made under its module's name; every id's spec is its row: the kwargs
    (every field's default, then the preset), no time limit, the native vector env."""
    name = env_id if env_id in outside_ids() else f"routine_envs:{env_id}"
    env = make((name, {}))
    row = entry(env_id)
    assert env.spec.kwargs == row.kwargs
    assert env.spec.max_episode_steps == row.max_episode_steps
    assert gym.spec(env_id).vector_entry_point == row.vector_entry_point
    if row.dynamics is not None:  # the whole configuration: every field, by its default
        assert type(env.unwrapped.dynamics) is row.dynamics
        assert set(row.kwargs) >= set(inspect.signature(row.dynamics).parameters)
        assert row.vector_entry_point is not None


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("env_id", registry_ids())
def test_make_vec(env_id, mode):
    """Every id vectorizes (the team adapters on their small case: a default episode is longer
    than the steps taken here)."""
    make((env_id, {}))  # (skips a team adapter without its extra)
    kwargs = SMALL_CONFIGS[env_id] if is_team_adapter(env_id) else {}
    envs = gym.make_vec(env_id, num_envs=3, vectorization_mode=mode, **kwargs)
    try:
        obs, infos = envs.reset(seed=42)
        assert obs.shape == (3, *envs.single_observation_space.shape)
        assert infos[keys.CRITICAL].shape == (3,) and infos[keys.STATE_ID].dtype.kind == "i"
        ends = 0
        for _ in range(80):
            obs, _rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
            ends += int(np.sum(terminated | truncated))
            if np.any(terminated):
                done = terminated | truncated
                assert np.all(infos["_" + keys.DECISION_DENSITY] == done)
        assert ends >= 3
    finally:
        envs.close()


@pytest.mark.parametrize("case", SMALL, ids=case_id)
def test_native_vector_env_equals_sync(case):
    """``gym.make_vec(id)`` (the native vector env of every id) returns what ``SyncVectorEnv``
    over single envs returns, step by step, bit for bit."""
    env_id, kwargs = case
    if is_team_adapter(env_id):
        pytest.skip("the team adapters have no native vector env (make_vec: SyncVectorEnv)")
    native = gym.make_vec(env_id, num_envs=3, **kwargs)
    sync = gym.make_vec(env_id, num_envs=3, vectorization_mode="sync", **kwargs)
    assert not isinstance(native, gym.vector.SyncVectorEnv)
    rng = np.random.default_rng(0)
    dynamics = native.unwrapped.dynamics if hasattr(native.unwrapped, "dynamics") else None
    out_native, out_sync = [native.reset(seed=5)], [sync.reset(seed=5)]
    for _ in range(60):
        if dynamics is not None and dynamics.has_action_masks:
            masks = [e.unwrapped.action_masks() for e in sync.envs]
            # a finished sub-env (reset by the next step) has no valid action: any is ignored
            actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        else:
            actions = rng.integers(native.single_action_space.n, size=3)
        out_native.append(native.step(actions))
        out_sync.append(sync.step(actions))
    assert same(out_native, out_sync)


def test_vector_envs_are_reproducible():
    def run():
        envs = gym.make_vec("DilutedDoors-v0", num_envs=2, routine_length=(0, 8))
        envs.action_space.seed(0)
        obs, _ = envs.reset(seed=5)
        out = [obs]
        for _ in range(40):
            obs, *_ = envs.step(envs.action_space.sample())
            out.append(obs)
        return np.stack(out)

    np.testing.assert_array_equal(run(), run())


def test_import_is_quiet_cheap_and_registers():
    code = textwrap.dedent("""
        import sys
        import gymnasium as gym
        import routine_envs
        gym.make("DilutedDoors-v1")
        heavy = [m for m in ("torch", "pettingzoo", "stable_baselines3", "matplotlib")
                 if m in sys.modules]
        assert not heavy, heavy
    """)
    out = children.run([sys.executable, "-c", code], timeout=120, check=True)
    assert out.stdout == "" and out.stderr == "", out.describe()


def test_namespaced_make_works_without_prior_import():
    code = 'import gymnasium as gym; gym.make("routine_envs:DilutedDoors-v1").reset(seed=0)'
    children.run([sys.executable, "-c", code], timeout=120, check=True)


def test_registration_is_idempotent():
    from routine_envs.registration import register_all

    before = dict(gym.registry)
    register_all()
    assert dict(gym.registry) == before


# ---------------------------------------------------------------------------- render modes
@pytest.mark.filterwarnings("ignore:.*not in the possible render_modes")
@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda case: case[0])
def test_metadata_lists_exactly_the_render_modes_the_env_draws(case, capsys):
    """Every mode in ``metadata["render_modes"]`` builds and draws (text, nothing returned while
    printing, an ``(H, W, 3)`` uint8 image); every other known mode is refused with a
    ``RenderModeError`` naming ``render_mode``, a ``ValueError`` and a ``TypeError`` (SB3's
    ``make_vec_env`` asks for ``"rgb_array"`` and falls back on ``TypeError``)."""
    env_id, kwargs = case
    modes = make(case).unwrapped.metadata["render_modes"]
    assert set(modes) <= set(KNOWN_MODES) and "ansi" in modes
    for mode in KNOWN_MODES:
        if mode in modes:
            env = make(case, render_mode=mode)
            env.reset(seed=0)
            picture = env.render()
            if mode == "ansi":
                assert isinstance(picture, str) and picture.strip()
            elif mode == "human":
                assert picture is None and capsys.readouterr().out.strip()
            else:
                assert picture.dtype == np.uint8 and picture.ndim == 3 and picture.shape[2] == 3
            continue
        with pytest.raises(RenderModeError) as caught:
            gym.make(env_id, render_mode=mode, **kwargs)
        assert isinstance(caught.value, TypeError)
        assert_one_line_value_error(caught.value, "render_mode")


@pytest.mark.parametrize("mode", ["%", "50%", "%s", "rgb%_array"])
def test_a_render_mode_holding_a_percent_sign_is_named_not_a_gymnasium_type_error(mode):
    """Gymnasium's warning for a mode it does not know formats its message with ``%``: through
    ``gym.make`` such a mode failed with ``TypeError: not enough arguments for format string``
    (found by the keyword fuzz below); it is a ``RenderModeError`` naming ``render_mode``."""
    with pytest.raises(RenderModeError) as caught:
        gym.make("DilutedDoors-v1", render_mode=mode)
    assert_one_line_value_error(caught.value, "render_mode")


@pytest.mark.parametrize("env_id", registry_ids())
def test_a_non_string_render_mode_is_a_value_error_naming_it(env_id):
    """Through ``gym.make`` (Gymnasium calls ``render_mode.endswith`` before the env sees it) and
    through ``gym.make_vec``, synchronous and native."""
    make((env_id, {}))  # (skips a team adapter without its extra)
    native = not is_team_adapter(env_id)
    for value in NON_STRINGS:
        makers = [
            lambda v: gym.make(env_id, render_mode=v),
            lambda v: gym.make_vec(env_id, 2, vectorization_mode="sync", render_mode=v),
        ]
        if native:
            makers.append(lambda v: gym.make_vec(env_id, 2, render_mode=v))
        for maker in makers:
            with pytest.raises(Exception) as caught:  # (its type is checked below)
                maker(value)
            assert_one_line_value_error(caught.value, "render_mode")


def test_sb3_make_vec_env_falls_back_where_an_env_draws_no_image():
    """SB3's ``make_vec_env`` asks every env for ``"rgb_array"`` first: the team adapters, which
    draw text only, are then made with their default (the fallback on ``TypeError``)."""
    pytest.importorskip("pettingzoo")
    env_util = pytest.importorskip("stable_baselines3.common.env_util")
    venv = env_util.make_vec_env(
        "TeamDilutedDoors-v0", n_envs=2, env_kwargs=SMALL_CONFIGS["TeamDilutedDoors-v0"]
    )
    assert venv.get_attr("render_mode") == [None, None]
    venv.close()


# ------------------------------------------------------------------------------ config fuzz
#: the string options of the envs' keywords, and a few that are none
OPTION_STRINGS = ["", "x", "1", "ansi", "human", "rgb_array", "success", "fraction", "rotate"]
OPTION_STRINGS += ["vector", "text", "image", "actions", "position", "progress", "arbitrary"]
#: values of every kind for any keyword: valid ones of each env and the mistakes people make
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.sampled_from([-1, 0, 1, 2, 3, 5, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(OPTION_STRINGS),
    st.text(max_size=6),
    st.binary(max_size=4),
    st.lists(st.integers(-3, 5), max_size=5),
    st.tuples(st.integers(-3, 8), st.integers(-3, 8)),
    st.tuples(st.floats(-1, 3), st.floats(-1, 3)),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(object),
    st.integers(-3, 8).map(np.int64),
    st.floats(-1, 2).map(np.float64),
    st.lists(st.integers(0, 3), min_size=1, max_size=3).map(np.array),
    st.complex_numbers(max_magnitude=3),
)
#: examples per id (8 ids: about as many cases as the review's fuzz of 1,130)
FUZZ_EXAMPLES = 150


@pytest.mark.filterwarnings("ignore:.*not in the possible render_modes")
@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda case: case[0])
def test_any_value_of_any_keyword_builds_or_is_a_one_line_value_error(case):
    """On the small configuration of every id, any value of any keyword the entry point takes
    either builds an env that resets and steps, or raises a one-line ``ValueError`` naming the
    keyword: never an ``AttributeError``, a ``TypeError`` or anything else."""
    env_id, small = case
    make(case)  # (skips a team adapter without its extra)
    names = accepted_keywords(env_id)

    @settings(max_examples=FUZZ_EXAMPLES, deadline=None, database=None)
    @given(st.sampled_from(names), ANY_VALUE)
    def check(name: str, value: Any) -> None:
        kwargs = {**small, name: value}
        try:
            env = gym.make(env_id, **kwargs)
        except Exception as error:  # the kind of error is what is checked
            assert_one_line_value_error(error, name)
            return
        env.reset(seed=0)
        env.step(0)
        env.close()

    check()


# ---------------------------------------------------------------------------- vector envs
def assert_same_in_order(expected: Any, actual: Any, where: str) -> None:
    """Equal values and dtypes, dict keys in the same order, recursively (object arrays of
    final observations element by element)."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), where
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_same_in_order(e, a, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), where
        assert list(actual) == list(expected), f"{where}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_same_in_order(expected[key], actual[key], f"{where}[{key!r}]")
    elif isinstance(expected, np.ndarray) and expected.dtype == object:
        assert actual.dtype == object and actual.shape == expected.shape, where
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert (a is None) if e is None else True, f"{where}[{i}]"
            if e is not None:
                assert_same_in_order(e, a, f"{where}[{i}]")
    else:
        assert isinstance(actual, np.ndarray), f"{where}: {type(actual).__name__}"
        assert actual.dtype == expected.dtype, f"{where}: {actual.dtype} != {expected.dtype}"
        np.testing.assert_array_equal(actual, expected, err_msg=where)


def random_actions(sync: gym.vector.SyncVectorEnv, rng: np.random.Generator) -> np.ndarray:
    """One action per sub-env: a valid one (by its mask, where it has masks) 4 times in 5."""
    n = int(sync.single_action_space.n)
    actions = []
    for env in sync.envs:
        masks = getattr(env.unwrapped, "action_masks", None)
        mask = masks() if masks is not None else None
        if mask is not None and mask.any() and rng.random() < 0.8:
            actions.append(int(rng.choice(np.flatnonzero(mask))))
        else:
            actions.append(int(rng.integers(n)))
    return np.array(actions)


@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda mode: mode.value)
@pytest.mark.parametrize("env_id", all_env_ids())
def test_native_vector_env_infos_equal_sync_at_truncation_and_termination(env_id, mode):
    """``gym.make_vec(id, n)`` (the native vector env) against ``SyncVectorEnv`` over single envs
    with the same ``max_episode_steps`` and autoreset mode, step by step over random actions:
    observations, rewards, terminations, truncations and infos (keys in order, values, dtypes,
    ``_key`` masks; ``final_obs``/``final_info`` in SAME_STEP), through time-limit truncations
    and natural ends (DISABLED: the ended sub-envs reset with a mask)."""
    kwargs = SMALL_CONFIGS[env_id]  # (episodes that often end before 7 steps)
    truncations = terminations = 0
    for max_episode_steps in (3, 7):
        native = gym.make_vec(
            env_id, 4, autoreset_mode=mode, max_episode_steps=max_episode_steps, **kwargs
        )
        sync = gym.make_vec(
            env_id,
            4,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": mode},
            max_episode_steps=max_episode_steps,
            **kwargs,
        )
        assert not isinstance(native, gym.vector.SyncVectorEnv)
        rng = np.random.default_rng(max_episode_steps)
        assert_same_in_order(sync.reset(seed=3), native.reset(seed=3), "reset")
        for t in range(120):
            actions = random_actions(sync, rng)
            expected = sync.step(actions)
            assert_same_in_order(expected, native.step(actions), f"T={max_episode_steps} {t}")
            terminated, truncated = expected[2], expected[3]
            terminations += int(terminated.sum())
            truncations += int((truncated & ~terminated).sum())
            done = terminated | truncated
            if mode == AutoresetMode.DISABLED and done.any():
                assert_same_in_order(
                    sync.reset(options={"reset_mask": done.copy()}),
                    native.reset(options={"reset_mask": done.copy()}),
                    f"T={max_episode_steps} reset after {t}",
                )
    assert truncations >= 5 and terminations >= 5, (truncations, terminations)


# ------------------------------------------------------------------------------ team adapters
def test_a_team_adapters_generator_is_its_team_envs():
    """Setting ``env.unwrapped.np_random`` (as branched Monte-Carlo rollouts do to give every
    branch the same randomness, e.g. ``routine_envs.diagnose``) sets the draws of the episode:
    two branches with equal generators have one future, with different generators another."""
    pytest.importorskip("pettingzoo")
    env = gym.make("TeamDilutedDoors-v0", num_floors=3, routine_length=(0, 9))
    env.reset(seed=0)

    def lengths(branch: gym.Env, seed: int) -> list[int]:
        branch.unwrapped.np_random = np.random.default_rng(seed)
        out = []
        for _ in range(6):  # episodes of always-0 actions: their length is the drawn corridors'
            done, steps = False, 0
            while not done:
                _, _, terminated, truncated, _ = branch.step(0)
                done, steps = terminated or truncated, steps + 1
            out.append(steps)
            branch.reset()
        return out

    assert env.unwrapped.np_random is env.unwrapped.team.np_random
    same_a, same_b = lengths(copy.deepcopy(env), 1), lengths(copy.deepcopy(env), 1)
    assert same_a == same_b
    assert lengths(copy.deepcopy(env), 2) != same_a


# ------------------------------------------------------------------------------ command lines
def run_cli(main: Any, argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """``main(argv)``: its exit status (``SystemExit`` included), stdout and stderr."""
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("kwargs", ['{"render_mode": 1}', '{"render_mode": ["ansi"]}'])
def test_diagnose_refuses_a_non_string_render_mode_in_one_line(kwargs, capsys):
    from routine_envs.__main__ import main

    argv = ["diagnose", "DilutedDoors-v1", "--env-kwargs", kwargs, "--no-progress"]
    status, out, err = run_cli(main, argv, capsys)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
    assert "render_mode" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env-id", "Pendulum-v1"], "--env-id Pendulum-v1: the trainers need a Discrete"),
        (
            ["--env-id", "CodeFix-v1", "--env-kwargs", '{"obs_mode": "text"}'],
            "--env-id CodeFix-v1: the trainers' MlpPolicy needs an observation space",
        ),
        (["--env-kwargs", '{"render_mode": 1}'], "render_mode must be None or one of"),
        (
            ["--env-id", "TeamDilutedDoors-v0", "--env-kwargs", '{"nope": 1}'],
            "TeamDilutedDoors-v0 takes no keyword argument(s) ['nope']",
        ),
    ],
)
def test_train_refuses_an_env_it_cannot_train_in_one_line(argv, message, capsys):
    """Before any training: a continuous action space, an observation an MlpPolicy cannot read,
    a bad render mode, an unknown keyword of a team adapter (a small budget keeps a run that
    is wrongly started short)."""
    pytest.importorskip("stable_baselines3")
    if "TeamDilutedDoors-v0" in argv:
        pytest.importorskip("pettingzoo")
    from baselines.commands import main

    budget = ["--total-timesteps", "64", "--eval-every", "64", "--eval-episodes", "1"]
    status, out, err = run_cli(main, ["train", *argv, *budget, "--no-progress"], capsys)
    assert status == 2 and out == "", err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    assert message in err
