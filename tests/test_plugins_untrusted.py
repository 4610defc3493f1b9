"""Plugin specs are untrusted input: deep, huge or non-finite JSON, objects that are not
estimators or detectors, arguments that do not match the constructor, plugin modules that exit
on import. Each is a one-line ``ValueError`` naming the spec (and the argument) before any run:
in the library, in the config, and through every command (exit status 2)."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baselines.lib import config, specs
from routine_envs import credit, detectors, plugins
from routine_envs.envs import DilutedDoorsV0Env

DEEP = 'gigpo{"a": ' + "[" * 100000 + "]" * 100000 + "}"
MESSAGE_LIMIT = 600  # characters: every error here is one bounded line


def refused(call: Any, *args: Any, **kwargs: Any) -> str:
    """The message of the ``ValueError`` that ``call(*args, **kwargs)`` raises (one line,
    bounded); anything else raised (RecursionError, SystemExit, KeyboardInterrupt) fails."""
    try:
        call(*args, **kwargs)
    except ValueError as err:
        message = str(err)
    except BaseException as err:  # the bug: not a one-line ValueError
        pytest.fail(f"{call.__name__} raised {type(err).__name__}, not ValueError")
    else:
        pytest.fail(f"{call.__name__}{args} was accepted")
    assert "\n" not in message and len(message) <= MESSAGE_LIMIT, message[:2000]
    return message


# --------------------------------------------------------------------------- parsing
def test_deep_or_huge_json_is_a_one_line_error_naming_the_spec():
    message = refused(plugins.parse_spec, DEEP, "--method")
    assert message.startswith('--method \'gigpo{"a": [[[') and "10000 characters" in message
    short_but_deep = 'gigpo{"a": ' + "[" * 3000 + "]" * 3000 + "}"  # under the size cap
    assert "nest 3001 levels deep" in refused(plugins.parse_spec, short_but_deep)
    nested = "gigpo" + "{" + '"a": {' * 15 + '"b": 1' + "}" * 16
    assert plugins.parse_spec(nested).target == "gigpo"  # 16 levels: the limit is inclusive
    brackets_in_strings = 'gigpo{"a": "' + "[" * 50 + '"}'
    assert plugins.parse_spec(brackets_in_strings).kwargs == {"a": "[" * 50}


def test_long_numbers_and_non_finite_numbers_name_the_spec_and_the_argument():
    message = refused(plugins.parse_spec, 'gigpo{"omega": ' + "1" * 5000 + "}", "--method")
    assert message.startswith('--method \'gigpo{"omega"') and "argument 'omega'" in message
    assert "5000 digits" in message
    for literal in ("NaN", "Infinity", "-Infinity", "1e999", "-1e999"):
        message = refused(plugins.parse_spec, f'gigpo{{"omega": {literal}}}', "method")
        assert "argument 'omega'" in message and literal in message, message
    nested = 'classifier{"source_kwargs": {"scale": [1, NaN]}}'
    assert "argument 'source_kwargs' (at \"['scale'][1]\")" in refused(plugins.parse_spec, nested)
    assert "'omega' twice" in refused(plugins.parse_spec, 'gigpo{"omega": 1, "omega": 2}')
    assert plugins.parse_spec('gigpo{"omega": -2.5e-3}').kwargs == {"omega": -2.5e-3}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='gipo{}[]":,0123456789.eE-+ NaInfty\\tx', max_size=80))
def test_any_spec_text_parses_or_is_a_one_line_value_error(text):
    try:
        spec = plugins.parse_spec(text)
    except ValueError as err:
        assert "\n" not in str(err) and len(str(err)) <= MESSAGE_LIMIT
    else:
        assert isinstance(spec.kwargs, dict)
        assert all(isinstance(k, str) for k in spec.kwargs)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=4))
def test_finite_bounded_arguments_round_trip(kwargs):
    text = "gigpo" + json.dumps(kwargs)
    if depth(kwargs) > plugins.MAX_JSON_DEPTH:
        assert "levels deep" in refused(plugins.parse_spec, text)
    else:
        assert plugins.parse_spec(text).kwargs == kwargs


def depth(value: Any) -> int:
    """How deep lists and dicts nest in ``value`` (a scalar: 0)."""
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


# ---------------------------------------------------------------- the objects named
@pytest.mark.parametrize("target", ["builtins:int", "collections:OrderedDict", "json:dumps"])
def test_objects_that_are_not_estimators_are_refused(target):
    message = refused(config.parse_method, target)
    assert f"estimator '{target}' is not an advantage estimator" in message
    assert "is not a detector" in refused(detectors.build_detector, target)


def test_a_class_is_checked_before_anything_is_built():
    class NoCall:
        name, requires, trains_critic = "no_call", frozenset(), False

    class TwoArguments:
        name, requires, trains_critic = "two", frozenset(), False

        def __call__(self, batch, extra):
            return credit.Advantages(np.zeros(batch.num_steps))

    class BadRequires:
        name, requires, trains_critic = "bad", frozenset({"no_such_field"}), False

        def __init__(self):
            raise AssertionError("never built")

        def __call__(self, batch):
            raise AssertionError("never called")

    class NumberName:
        name, requires, trains_critic = 3, frozenset(), False

        def __call__(self, batch):
            raise AssertionError("never called")

    assert "lacks ['__call__(batch)']" in refused(credit.build_estimator, NoCall)
    assert "does not take one argument" in refused(credit.build_estimator, TwoArguments)
    assert "['no_such_field']" in refused(credit.build_estimator, BadRequires)
    assert "name must be a text" in refused(credit.build_estimator, NumberName)


# ---------------------------------------------------------------- the arguments given
def test_arguments_must_match_the_signature_and_types():
    message = refused(config.parse_method, 'gigpo{"omega": "x"}')
    assert 'gigpo{"omega": "x"}' in message
    assert "argument 'omega' must be a finite number, got str 'x'" in message
    message = refused(config.parse_method, 'gigpo{"nope": 1}')
    assert "unknown argument 'nope'; it accepts eps, gamma, group_by, normalize_std, omega" in (
        message
    )
    assert "'omega' is NaN" in refused(config.parse_method, 'gigpo{"omega": NaN}')
    assert "true or false, got int 1" in refused(config.parse_method, 'gigpo{"normalize_std": 1}')
    assert specs.parse_method('gigpo{"omega": 2}').kwargs == {"omega": 2}  # int for a float
    assert specs.parse_method('trajectory_mc{"baseline": null}').kwargs == {"baseline": None}
    # mc_rollout's source is chosen by name in data; any other value is refused
    assert specs.parse_method('mc_rollout{"source": "model", "seed": 3}')
    message = refused(config.parse_method, 'mc_rollout{"source": 3}')
    assert "argument 'source' must be 'model' or 'branch', got int 3" in message


def test_python_arguments_are_checked_too():
    assert "argument 'omega'" in refused(credit.build_estimator, "gigpo", omega="x")
    assert "argument 'omega'" in refused(credit.build_estimator, "gigpo", omega=float("nan"))
    assert "argument 'num_rollouts'" in refused(
        credit.build_estimator, "mc_rollout", num_rollouts=2.5
    )
    assert credit.build_estimator("gigpo", omega=np.float64(0.5)).omega == 0.5
    env = DilutedDoorsV0Env(num_floors=2, num_doors=2, routine_length=1)
    table = np.full((env.num_states, 2), 0.5)
    oracle = credit.build_estimator("oracle", env=env, policy=table, seed=np.int64(3))
    assert oracle.env is env and oracle.seed == 3
    assert "argument 'rate'" in refused(detectors.build_detector, "random", rate="x")


def test_arguments_the_context_fills_cannot_be_given_as_data():
    for spec, name in [
        ('oracle{"env": "DilutedDoors-v1"}', "env"),
        ('oracle{"policy": [[0.5, 0.5]]}', "policy"),
        ('mc_rollout{"source": {"values": 1}}', "source"),
    ]:
        assert f"argument '{name}'" in refused(config.parse_method, spec), spec
    message = refused(detectors.build_detector, 'branching{"sampler": 1}')
    assert "argument 'sampler' is filled by the caller's context" in message
    message = refused(detectors.build_detector, 'random{"rate": "x"}')
    assert "bad arguments for detector 'random' in 'random{\"rate\": \"x\"}'" in message


def test_detector_masked_checks_the_detector_it_names():
    message = refused(config.parse_method, 'detector_masked{"detector": "builtins:int"}')
    assert "detector 'builtins:int' is not a detector" in message
    spec = 'detector_masked{"detector": "random", "detector_kwargs": {"nope": 1}}'
    assert "unknown argument 'nope'; it accepts rate, seed" in refused(config.parse_method, spec)
    inner = json.dumps({"detector": 'random{"rate": "x"}'})
    assert "argument 'rate'" in refused(config.parse_method, "detector_masked" + inner)
    assert specs.parse_method('detector_masked{"detector": "random", "soft": true}')


@dataclass
class Declared:
    """Every kind of hint the check reads."""

    mode: Literal["a", "b"] = "a"
    pair: tuple[int, int] = (0, 1)
    scale: float | None = None
    weights: Sequence[float] = (1.0,)
    flag: bool = False
    options: dict[str, Any] | None = None
    anything: Any = None


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"mode": "b", "pair": [2, 3], "scale": 1, "weights": [0.5, 2], "flag": True}, None),
        ({"options": {"x": [1]}, "anything": {"deep": [None]}}, None),
        ({"mode": "c"}, "'mode' must be 'a' or 'b', got str 'c'"),
        ({"pair": [1, 2, 3]}, "'pair' must be a list"),
        ({"pair": [1, "2"]}, "'pair' must be a list"),
        ({"scale": "1"}, "'scale' must be a finite number or null"),
        ({"weights": "abc"}, "'weights' must be a list of a finite number"),
        ({"weights": [1, True]}, "'weights' must be a list of a finite number"),
        ({"flag": 0}, "'flag' must be true or false"),
        ({"options": [1]}, "'options' must be a mapping"),
        ({"weights": [1.0] * 1001}, "'weights' has 1001 items; at most 1000"),
        ({"mode": "a" * 1001}, "'mode' has 1001 characters"),
        ({"x" * 5000: 1}, "unknown argument 'xxxxxxxx"),
    ],
)
def test_declared_types(kwargs, problem):
    accepted = plugins.declared_arguments(Declared)
    call = plugins.check_arguments
    if problem is None:
        call(kwargs, accepted, "where")
        Declared(**kwargs)
    else:
        assert problem in refused(call, kwargs, accepted, "where")


def test_config_estimator_kwargs_are_checked_naming_the_file(tmp_path):
    path = tmp_path / "bad.yml"
    path.write_text("methods:\n  gigpo: {estimator_kwargs: {omega: x}}\n")
    message = refused(config.load_hyperparameters, "DilutedDoors-v1", "gigpo", path)
    assert str(path) in message and "argument 'omega'" in message
    path.write_text("methods:\n  oracle: {estimator_kwargs: {env: DilutedDoors-v1}}\n")
    assert "argument 'env'" in refused(
        config.load_hyperparameters, "DilutedDoors-v1", "oracle", path
    )
    path.write_text("methods:\n  gigpo: {estimator_kwargs: {omega: .nan}}\n")
    assert "argument 'omega'" in refused(
        config.load_hyperparameters, "DilutedDoors-v1", "gigpo", path
    )
    for shipped in sorted(config.CONFIG_DIR.glob("*.yml")):  # the shipped configs still load
        for method in config.known_methods():
            config.load_hyperparameters(shipped.stem, method, shipped)


# ---------------------------------------------------------------- modules that exit
PLUGINS = {
    "exits_on_import": "import sys\nsys.exit(3)\n",
    "interrupts_on_import": "raise KeyboardInterrupt\n",
    "exits_on_getattr": "def __getattr__(name):\n    raise SystemExit(5)\n",
}


@pytest.fixture
def exiting_plugins(tmp_path, monkeypatch):
    for name, source in PLUGINS.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in PLUGINS:
        sys.modules.pop(name, None)


def test_a_plugin_that_exits_or_interrupts_on_import_is_a_value_error(exiting_plugins):
    message = refused(plugins.load_object, "exits_on_import:X", "--method")
    assert "cannot import module 'exits_on_import' (SystemExit: 3" in message
    message = refused(credit.build_estimator, "interrupts_on_import:X")
    assert "module 'interrupts_on_import' (KeyboardInterrupt" in message
    assert "SystemExit: 5" in refused(detectors.build_detector, "exits_on_getattr:X")


# ---------------------------------------------------------------- every command
BAD_METHODS = [
    ("collections:OrderedDict", "is not an advantage estimator"),
    ("builtins:int", "is not an advantage estimator"),
    ('gigpo{"omega": "x"}', "argument 'omega' must be a finite number"),
    ('gigpo{"nope": 1}', "unknown argument 'nope'"),
    ('gigpo{"omega": NaN}', "argument 'omega' is NaN"),
    ("exits_on_import:X", "SystemExit: 3"),
]


def commands(method: str, out: str) -> list[list[str]]:
    """``python -m baselines ARGV`` of every command that takes a method."""
    lab = ["--env-id", "CodeFix-v1", "--routine-lengths", "2", "--out", out]
    return [
        ["benchmark", "run", "--tier", "smoke", "--method", method, "--out", out],
        ["train", "--method", method, "--out", out],
        ["compare", "--methods", "ppo", method, "--out", out],
        ["snr_lab", "measure", "--estimators", "trajectory_mc", method, *lab],
    ]


@pytest.mark.parametrize(("method", "expected"), BAD_METHODS)
def test_every_command_refuses_a_bad_method_before_any_run(
    method, expected, exiting_plugins, tmp_path, capsys
):
    from baselines.commands import main

    out = tmp_path / "out"
    for argv in commands(method, str(out)):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        lines = capsys.readouterr().err.strip().splitlines()
        assert exit_info.value.code == 2, (argv[0], lines)
        assert len(lines) == 1 and expected in lines[0], (argv[0], lines)
        assert not out.exists(), argv[0]  # nothing was started or written


OUTSIDE = """
    from dataclasses import dataclass
    from typing import ClassVar

    from routine_envs import credit


    @dataclass
    class Windowed:
        '''Declares an argument its from_context reads and checks a value its types cannot.'''

        window: int = 2
        name: ClassVar[str] = "windowed"
        requires: ClassVar[frozenset] = frozenset()
        trains_critic: ClassVar[bool] = False
        extra_arguments: ClassVar[dict] = {"unit": str}

        @classmethod
        def from_context(cls, context, unit="steps", **kwargs):
            return cls(**kwargs)

        @classmethod
        def check_arguments(cls, kwargs):
            if kwargs.get("window", 2) < 1:
                raise ValueError(f"window must be >= 1, got {kwargs['window']}")
            if kwargs.get("window") == 99:
                raise RuntimeError("a bug\\nin the check")

        def __call__(self, batch):
            return credit.TrajectoryMC()(batch)
"""


def test_an_outside_class_declares_extra_arguments_and_its_own_check(tmp_path, monkeypatch):
    (tmp_path / "windowed_estimators.py").write_text(textwrap.dedent(OUTSIDE))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        spec = 'windowed_estimators:Windowed{"window": 3, "unit": "turns"}'
        assert specs.parse_method(spec).kwargs == {"window": 3, "unit": "turns"}
        assert credit.build_estimator(spec).window == 3
        bad = 'windowed_estimators:Windowed{"window": 0}'
        assert "window must be >= 1, got 0" in refused(config.parse_method, bad)
        bad = 'windowed_estimators:Windowed{"window": 99}'
        assert "RuntimeError: a bug in the check" in refused(config.parse_method, bad)
        bad = 'windowed_estimators:Windowed{"unit": 1}'
        assert "argument 'unit' must be a text" in refused(config.parse_method, bad)
        bad = 'windowed_estimators:Windowed{"units": "turns"}'
        message = refused(config.parse_method, bad)
        assert "unknown argument 'units'; it accepts unit, window" in message
    finally:
        sys.modules.pop("windowed_estimators", None)
