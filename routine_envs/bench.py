"""Speed benchmark: ``python -m routine_envs.bench``.

Prints, measured in one run on the same machine, with ratios:

1. single-environment steps per second of every registered environment beside Gymnasium's
   ``FrozenLake-v1``, unwrapped and through ``gym.make``'s default wrappers;
2. vectorized steps per second, counted in sub-environment steps, of Diluted Doors' native
   vector env beside Gymnasium's natively vectorized ``CartPole-v1`` and beside a
   ``SyncVectorEnv`` over single Diluted Doors, at several numbers of sub-environments;
3. the cost of ``copy.deepcopy(env)`` (branching an episode) in microseconds;
4. the exact model of Diluted Doors at 10, 30 and 100 floors (``routine_length=50``): states
   per second of building the model and of one evaluation of the uniform policy;
5. the speed goals of the suite, met or not.

Actions are drawn in advance so that only ``step`` (and ``reset`` at episode ends) is timed; each
figure is the best of ``--repeats`` timed runs, each capped at ``--seconds``. Numbers on a shared
machine are noisy: compare the ratios, measured in the same run. Not a test: it asserts nothing.
"""

from __future__ import annotations

import copy
import platform
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

import routine_envs
from routine_envs.registration import ENVIRONMENTS

gym.register_envs(routine_envs)

PrintFn = Callable[[str], None]
#: (label, env id, kwargs) of an environment to time.
Case = tuple[str, str, dict[str, Any]]

REFERENCE: Case = ("FrozenLake-v1", "FrozenLake-v1", {"is_slippery": True})
VECTOR_ID = "DilutedDoors-v0"
VECTOR_REFERENCE = "CartPole-v1"
SIZES = (1, 64, 1024, 4096)

# the goals (issue 8), as ratios measured in the same run
GOAL_SINGLE = 1.5  # DilutedDoors-v0 unwrapped / FrozenLake-v1 unwrapped
GOAL_VECTOR = 1.0  # native vector env / CartPole-v1's vector env, per sub-env step, at 4096
GOAL_SYNC = 50.0  # native vector env / SyncVectorEnv over single envs, at 4096
GOAL_DEEPCOPY_US = 50.0  # copy.deepcopy of an env, microseconds
GOAL_MODEL_STATES_PER_S = 1e6  # exact model: building it, and one policy evaluation
MODEL_FLOORS = (10, 30, 100)
MODEL_ROUTINE_LENGTH = 50


def suite() -> tuple[Case, ...]:
    """Every environment of the registration table, in its order (new rows appear here)."""
    return tuple((entry.id, entry.id, {}) for entry in ENVIRONMENTS)


SUITE: tuple[Case, ...] = suite()


@dataclass
class Timing:
    """Single-env speed: ``steps_per_second`` of ``label``, through ``gym.make`` if ``wrapped``."""

    label: str
    wrapped: bool
    steps_per_second: float


@dataclass
class VectorTiming:
    """Vector-env speed in sub-environment steps per second, with ``num_envs`` sub-envs."""

    label: str
    num_envs: int
    steps_per_second: float


def _actions(space: gym.Space, count: int, seed: int) -> list[Any]:
    """``count`` actions drawn in advance (Python ints for a ``Discrete`` space)."""
    if isinstance(space, gym.spaces.Discrete):
        low = int(space.start)
        return (low + np.random.default_rng(seed).integers(space.n, size=count)).tolist()
    space.seed(seed)
    return [space.sample() for _ in range(count)]


def steps_per_second(
    env: gym.Env, steps: int, repeats: int, seed: int = 0, seconds: float = 1.0
) -> float:
    """Best-of-``repeats`` steps per second of ``env`` under uniformly random actions.

    A timed run stops after ``steps`` steps or once ``seconds`` have passed (checked every 1000
    steps), whichever comes first."""
    actions = _actions(env.action_space, steps, seed)
    chunks = [actions[i : i + 1000] for i in range(0, steps, 1000)]
    best = 0.0
    for r in range(repeats):
        env.reset(seed=seed + r)
        step, reset = env.step, env.reset
        done_steps = 0
        start = time.perf_counter()
        deadline = start + seconds
        for chunk in chunks:
            for a in chunk:
                _, _, terminated, truncated, _ = step(a)
                if terminated or truncated:
                    reset()
            done_steps += len(chunk)
            if time.perf_counter() > deadline:
                break
        best = max(best, done_steps / (time.perf_counter() - start))
    return best


def measure(
    steps: int,
    repeats: int,
    suite: Sequence[Case] = SUITE,
    reference: Case = REFERENCE,
    seconds: float = 1.0,
) -> list[Timing]:
    """Time each environment unwrapped and through ``gym.make``'s default wrappers. Runs are
    interleaved (each repeat times every environment in turn), so that a change of load on a
    shared machine affects all of them alike."""
    envs = []
    for label, env_id, kwargs in (reference, *suite):
        made = gym.make(env_id, **kwargs)
        envs += [(label, False, made.unwrapped), (label, True, made)]
    best = [0.0] * len(envs)
    for r in range(repeats):
        for i, (_, _, env) in enumerate(envs):
            best[i] = max(best[i], steps_per_second(env, steps, 1, seed=r, seconds=seconds))
    for _, wrapped, env in envs:
        if wrapped:
            env.close()
    return [
        Timing(label, wrapped, rate) for (label, wrapped, _), rate in zip(envs, best, strict=True)
    ]


def report(
    timings: list[Timing], print_fn: PrintFn = print, reference: str = REFERENCE[0]
) -> dict[str, float]:
    """Print the table and return ``{"<label> <unwrapped|gym.make>": ratio to reference}``."""
    ref = {t.wrapped: t.steps_per_second for t in timings if t.label == reference}
    ratios = {}
    print_fn(f"{'environment':<20} {'mode':<10} {'steps/s':>12} {'x ' + reference:>16}")
    for t in timings:
        mode = "gym.make" if t.wrapped else "unwrapped"
        ratio = t.steps_per_second / ref[t.wrapped]
        print_fn(f"{t.label:<20} {mode:<10} {t.steps_per_second:>12,.0f} {ratio:>16.2f}")
        if t.label != reference:
            ratios[f"{t.label} {mode}"] = ratio
    return ratios


# ------------------------------------------------------------------------------- vector envs
def vector_steps_per_second(
    envs: gym.vector.VectorEnv,
    substeps: int,
    repeats: int,
    seed: int = 0,
    seconds: float = 1.0,
    warm_up: bool = True,
) -> float:
    """Best-of-``repeats`` sub-environment steps per second of ``envs`` under random actions.

    A timed run takes ``max(1, substeps // num_envs)`` vector steps, or stops once ``seconds``
    have passed; autoreset is the vector env's own. ``warm_up`` resets and takes two steps first
    (the first-step checks of wrapped sub-environments)."""
    n = envs.num_envs
    space = envs.single_action_space
    rows = np.asarray(_actions(space, 16 * n, seed)).reshape(16, n)  # cycled through
    steps = max(1, substeps // n)
    if warm_up:
        envs.reset(seed=seed)
        for row in rows[:2]:
            envs.step(row)
    best = 0.0
    for _ in range(repeats):
        step = envs.step
        start = time.perf_counter()
        deadline = start + seconds
        done = 0
        while done < steps:
            step(rows[done % 16])
            done += 1
            if time.perf_counter() > deadline:
                break
        best = max(best, done * n / (time.perf_counter() - start))
    return best


def vector_cases() -> tuple[tuple[str, Callable[[int], gym.vector.VectorEnv]], ...]:
    """(label, maker of a vector env with ``num_envs`` sub-envs) of the vector table."""
    return (
        (
            f"{VECTOR_ID} native",
            lambda n: gym.make_vec(VECTOR_ID, n, vectorization_mode="vector_entry_point"),
        ),
        (
            f"{VECTOR_REFERENCE} native",
            lambda n: gym.make_vec(VECTOR_REFERENCE, n, vectorization_mode="vector_entry_point"),
        ),
        (f"{VECTOR_ID} sync", lambda n: gym.make_vec(VECTOR_ID, n, vectorization_mode="sync")),
    )


def measure_vector(
    sizes: Sequence[int] = SIZES, substeps: int = 1_000_000, repeats: int = 3, seconds: float = 1.0
) -> list[VectorTiming]:
    """Time each vector env of :func:`vector_cases` at each number of sub-environments (runs
    interleaved across the vector envs of one size, as in :func:`measure`)."""
    out = []
    for n in sizes:
        cases = [(label, make(n)) for label, make in vector_cases()]
        best = [0.0] * len(cases)
        for r in range(repeats):
            for i, (_, envs) in enumerate(cases):
                rate = vector_steps_per_second(envs, substeps, 1, r, seconds, warm_up=r == 0)
                best[i] = max(best[i], rate)
        for (label, envs), rate in zip(cases, best, strict=True):
            out.append(VectorTiming(label, n, rate))
            envs.close()
    return out


def report_vector(timings: list[VectorTiming], print_fn: PrintFn = print) -> dict[str, float]:
    """Print sub-env steps/s per size with the ratios of the native Diluted Doors vector env to
    the others; return ``{"x <label> @<num_envs>": ratio}``."""
    native = f"{VECTOR_ID} native"
    by = {(t.label, t.num_envs): t.steps_per_second for t in timings}
    sizes = sorted({t.num_envs for t in timings})
    labels = list(dict.fromkeys(t.label for t in timings))
    others = [label for label in labels if label != native]
    head = "".join(f"{label:>26}" for label in labels)
    ratio_head = "".join(f"{'x ' + label:>30}" for label in others)
    print_fn(f"{'num_envs':>8}{head}{ratio_head}")
    ratios = {}
    for n in sizes:
        cells = "".join(f"{by[(label, n)]:>26,.0f}" for label in labels)
        ratio_cells = ""
        for label in others:
            ratio = by[(native, n)] / by[(label, n)]
            ratios[f"x {label} @{n}"] = ratio
            ratio_cells += f"{ratio:>30.2f}"
        print_fn(f"{n:>8}{cells}{ratio_cells}")
    return ratios


# ------------------------------------------------------------------------------- deep copies
def deepcopy_microseconds(env: Any, number: int = 2000, repeats: int = 5) -> float:
    """Best-of-``repeats`` cost of ``copy.deepcopy(env)`` in microseconds."""
    times = timeit.repeat(lambda: copy.deepcopy(env), number=number, repeat=repeats)
    return min(times) / number * 1e6


def measure_deepcopy(number: int = 2000, repeats: int = 5) -> dict[str, float]:
    """Deep-copy cost (µs) of ``gym.make("DilutedDoors-v0")`` and of its ``unwrapped`` env,
    after ``reset`` and a few steps (mid-episode, where Monte-Carlo critics branch)."""
    env = gym.make(VECTOR_ID)
    env.reset(seed=0)
    for _ in range(5):
        env.step(0)
    return {
        f"{VECTOR_ID} gym.make": deepcopy_microseconds(env, number, repeats),
        f"{VECTOR_ID} unwrapped": deepcopy_microseconds(env.unwrapped, number, repeats),
    }


def report_deepcopy(costs: dict[str, float], print_fn: PrintFn = print) -> None:
    print_fn(f"{'copy.deepcopy(env)':<36} {'microseconds':>12}")
    for label, us in costs.items():
        print_fn(f"{label:<36} {us:>12.1f}")


# ----------------------------------------------------------------------------- exact model
@dataclass(frozen=True)
class ModelTiming:
    """States per second of building the exact model and of one policy evaluation (the first,
    which includes the backward-pass schedule), best of several runs."""

    label: str
    num_states: int
    build_per_s: float
    evaluate_per_s: float


def measure_model(
    floors: Sequence[int] = MODEL_FLOORS,
    routine_length: int = MODEL_ROUTINE_LENGTH,
    repeats: int = 3,
) -> list[ModelTiming]:
    """Diluted Doors' exact model at each number of floors (fresh dynamics for every run, so
    nothing is cached between them)."""
    from routine_envs.envs.diluted_doors import DoorsDynamics
    from routine_envs.oracle import evaluate_policy, uniform_policy

    out = []
    for num_floors in floors:
        build, evaluate = [], []
        for _ in range(repeats):
            dynamics = DoorsDynamics(num_floors=num_floors, routine_length=routine_length)
            start = time.perf_counter()
            model = dynamics.model()
            build.append(time.perf_counter() - start)
            policy = uniform_policy(model)
            start = time.perf_counter()
            evaluate_policy(model, policy)
            evaluate.append(time.perf_counter() - start)
        label = f"DilutedDoors floors={num_floors} L={routine_length}"
        n = model.num_states
        out.append(ModelTiming(label, n, n / min(build), n / min(evaluate)))
    return out


def report_model(timings: list[ModelTiming], print_fn: PrintFn = print) -> dict[str, float]:
    print_fn(f"{'exact model':<36} {'states':>9} {'build states/s':>15} {'evaluate states/s':>18}")
    out = {}
    for t in timings:
        print_fn(
            f"{t.label:<36} {t.num_states:>9} {t.build_per_s:>15,.0f} {t.evaluate_per_s:>18,.0f}"
        )
        out[f"build {t.label}"] = t.build_per_s
        out[f"evaluate {t.label}"] = t.evaluate_per_s
    return out


# ------------------------------------------------------------------------------------ goals
def goals(
    single: dict[str, float],
    vector: dict[str, float],
    copies: dict[str, float],
    model: dict[str, float] | None = None,
) -> dict[str, tuple[float, float, bool]]:
    """``{goal: (measured, target, met)}`` from the ratios of :func:`report`,
    :func:`report_vector` and the costs of :func:`measure_deepcopy` (missing figures skipped)."""
    out: dict[str, tuple[float, float, bool]] = {}
    key = f"{VECTOR_ID} unwrapped"
    if key in single:
        out[f"{key} / {REFERENCE[0]} unwrapped >= {GOAL_SINGLE}x"] = (
            single[key],
            GOAL_SINGLE,
            single[key] >= GOAL_SINGLE,
        )
    size = max((int(k.rsplit("@", 1)[1]) for k in vector), default=None)
    for label, target in (
        (f"{VECTOR_REFERENCE} native", GOAL_VECTOR),
        (f"{VECTOR_ID} sync", GOAL_SYNC),
    ):
        ratio = vector.get(f"x {label} @{size}")
        if ratio is not None:
            out[f"vector @{size} / {label} >= {target:g}x"] = (ratio, target, ratio >= target)
    for label, us in copies.items():
        out[f"deepcopy {label} < {GOAL_DEEPCOPY_US:g} us"] = (
            us,
            GOAL_DEEPCOPY_US,
            us < GOAL_DEEPCOPY_US,
        )
    for label, rate in (model or {}).items():
        out[f"{label} >= {GOAL_MODEL_STATES_PER_S:.0e} states/s"] = (
            rate,
            GOAL_MODEL_STATES_PER_S,
            rate >= GOAL_MODEL_STATES_PER_S,
        )
    return out


def report_goals(results: dict[str, tuple[float, float, bool]], print_fn: PrintFn = print) -> None:
    for name, (measured, _target, met) in results.items():
        print_fn(f"{'met    ' if met else 'NOT MET'}  {name:<58} measured {measured:.2f}")


@dataclass
class BenchSettings:
    """The speed benchmark: steps per second of every registered environment (single and
    vectorized), the cost of branching an episode and of the exact model, beside Gymnasium's
    FrozenLake-v1 and CartPole-v1 measured in the same run, and the suite's speed goals."""

    steps: int = field(default=100_000, metadata={"help": "steps per timed run", "min": 1})
    repeats: int = field(default=5, metadata={"help": "timed runs; the best is kept", "min": 1})
    sizes: list[int] = field(
        default_factory=lambda: list(SIZES),
        metadata={"help": "numbers of sub-environments", "min": 1},
    )
    vector_steps: int = field(
        default=1_000_000,
        metadata={"help": "sub-environment steps per timed run of a vector env", "min": 1},
    )
    seconds: float = field(default=1.0, metadata={"help": "cap on one timed run (s)", "min": 0})
    copies: int = field(default=2000, metadata={"help": "deep copies per timed run", "min": 1})
    model_floors: list[int] = field(
        default_factory=lambda: list(MODEL_FLOORS),
        metadata={
            "help": "numbers of floors of the exact-model table (routine_length 50)",
            "min": 1,
        },
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``python -m routine_envs.bench``: parse ``argv`` (the flags of :class:`BenchSettings`)
    and run every table; ``{"single", "vector", "deepcopy", "model", "goals"}``."""
    from routine_envs import cli, commands

    return cli.main(commands.tree(), ["bench", *cli.arguments(argv)])


def run(args: BenchSettings) -> dict[str, Any]:
    """Run every table; return ``{"single", "vector", "deepcopy", "model", "goals"}``."""
    print_fn = print

    print_fn(
        f"routine-envs {routine_envs.__version__}, gymnasium {gym.__version__}, numpy "
        f"{np.__version__}, Python {platform.python_version()} on {platform.machine()}"
    )
    print_fn("\n== single environment: steps per second")
    single = report(measure(args.steps, args.repeats, seconds=args.seconds), print_fn)
    print_fn("\n== vector environments: sub-environment steps per second")
    vector = report_vector(
        measure_vector(args.sizes, args.vector_steps, args.repeats, args.seconds), print_fn
    )
    print_fn("\n== branching")
    copies = measure_deepcopy(args.copies, args.repeats)
    report_deepcopy(copies, print_fn)
    print_fn("\n== exact model (states per second)")
    model = report_model(measure_model(args.model_floors, repeats=args.repeats), print_fn)
    print_fn("\n== goals (ratios measured in this run)")
    results = goals(single, vector, copies, model)
    report_goals(results, print_fn)
    return {
        "single": single,
        "vector": vector,
        "deepcopy": copies,
        "model": model,
        "goals": results,
    }


if __name__ == "__main__":
    main()
