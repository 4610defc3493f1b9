"""One training run of an SB3 method: ``python -m baselines.train --env-id DilutedDoors-v1``.

Methods: ``ppo`` is SB3's PPO (turn-level, learned critic, GAE; ``MaskablePPO`` when the env has
``action_masks()``); every estimator name of :mod:`routine_envs.credit` trains
``TrajectoryAdvantagePPO`` with that estimator. Hyperparameters: the default config
(:data:`baselines.lib.config.DEFAULT_CONFIG`), overridden by ``baselines/configs/<env id>.yml``
where it exists. Everything is validated before training starts.

The evaluation success rate over time goes to ``<out>/success.csv``: for environments of the
suite it is the *exact* success probability of the current stochastic policy (the oracle's
model, no sampling noise); for other environments the success share of ``--eval-episodes``
sampled episodes.
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

import routine_envs
from baselines.lib.config import TURN_LEVEL_METHODS, check_method, load_hyperparameters
from baselines.lib.envs import check_env_kwargs, check_trainable
from baselines.lib.stats import first_crossing
from baselines.lib.trainers import TRAINERS, RunResult, schedule
from baselines.lib.trajectory_ppo import TrajectoryAdvantagePPO, maskable_classes, policy_table
from routine_envs.cli import check_output_folder, flag_of

gym.register_envs(routine_envs)
th.set_num_threads(1)


@dataclass
class TrainArgs:
    """Settings of one run (cleanrl-style: each field carries its help text)."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "registered env id"})
    env_kwargs: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "gym.make keyword arguments (JSON)"}
    )
    method: str = field(
        default="ppo",
        metadata={
            "help": "'ppo', an estimator name, or an import path 'package.module:Name' of your "
            "own estimator; either may end with JSON arguments, e.g. 'gigpo{\"omega\": 0.5}'"
        },
    )
    seed: int = field(default=0, metadata={"help": "seed of the algorithm and the envs", "min": 0})
    total_timesteps: int = field(default=50_000, metadata={"help": "environment steps", "min": 1})
    eval_every: int = field(default=2_000, metadata={"help": "steps between evaluations", "min": 1})
    eval_episodes: int = field(
        default=200,
        metadata={"help": "episodes per evaluation when the env has no exact model", "min": 1},
    )
    target_success: float = field(default=0.9, metadata={"help": "success rate to reach"})
    out: Path | None = field(default=None, metadata={"help": "folder for CSV and SB3 logs"})
    config: Path | None = field(default=None, metadata={"help": "hyperparameter YAML"})
    tensorboard: bool = field(default=False, metadata={"help": "write TensorBoard logs"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})
    trainer: str = field(
        default="sb3",
        metadata={
            "help": "'sb3' (SB3 PPO / TrajectoryAdvantagePPO, one process per run) or 'batched' "
            "(baselines.lib.batched: the same algorithm, many runs per process)",
            "choices": list(TRAINERS),
        },
    )


def has_action_masks(env: gym.Env) -> bool:
    return callable(getattr(env.unwrapped, "action_masks", None))


class SuccessCurve(BaseCallback):
    """Evaluate the success rate at the points of :func:`schedule` only: at 0 and at every
    multiple of ``eval_every`` up to ``budget``. The policy changes only between rollouts, so
    the evaluation made when the step count first reaches a point is the policy of that point;
    a rollout that runs past the budget adds no evaluation."""

    def __init__(
        self,
        eval_env: gym.Env,
        eval_every: int,
        eval_episodes: int,
        seed: int,
        csv_path: Path | None = None,
        budget: int | None = None,
    ) -> None:
        super().__init__()
        self.eval_env, self.eval_every, self.eval_episodes = eval_env, eval_every, eval_episodes
        self.points = schedule(budget, eval_every) if budget is not None else None
        self.csv_path = csv_path
        self.rng = np.random.default_rng(seed)
        self.timesteps: list[int] = []
        self.success: list[float] = []
        base = eval_env.unwrapped
        self.exact = hasattr(base, "success_probability") and (
            not has_action_masks(eval_env) or hasattr(base, "action_masks_of")
        )
        if csv_path is not None:
            csv_path.parent.mkdir(parents=True, exist_ok=True)
            with csv_path.open("w", newline="") as f:
                csv.writer(f).writerow(["timesteps", "success", "exact"])

    def evaluate(self) -> float:
        if self.exact:
            return self.eval_env.unwrapped.success_probability(
                policy_table(self.model.policy, self.eval_env)
            )
        wins = 0
        masked = has_action_masks(self.eval_env)
        for _ in range(self.eval_episodes):
            obs, _ = self.eval_env.reset(seed=int(self.rng.integers(2**31 - 1)))
            done = False
            while not done:
                kwargs = {"action_masks": self.eval_env.unwrapped.action_masks()} if masked else {}
                action, _ = self.model.predict(obs, deterministic=False, **kwargs)
                obs, _, terminated, truncated, info = self.eval_env.step(int(action))
                done = terminated or truncated
            wins += bool(info.get("success", False))
        return wins / self.eval_episodes

    def record(self, timestep: int) -> None:
        value = float(self.evaluate())
        self.timesteps.append(timestep)
        self.success.append(value)
        self.logger.record("eval/success", value)
        if self.csv_path is not None:
            with self.csv_path.open("a", newline="") as f:
                csv.writer(f).writerow([timestep, f"{value:.6f}", int(self.exact)])

    def _on_training_start(self) -> None:
        if not self.timesteps:
            self.record(0)

    def next_point(self) -> int | None:
        """The next scheduled point not yet evaluated (``None``: the schedule is done)."""
        k = len(self.timesteps)
        if self.points is None:
            return k * self.eval_every
        return self.points[k] if k < len(self.points) else None

    def _on_step(self) -> bool:
        point = self.next_point()
        while point is not None and self.num_timesteps >= point:
            self.record(point)
            point = self.next_point()
        return True


class ProgressBar(BaseCallback):
    """A tqdm progress bar over environment steps (SB3's own needs ``rich``)."""

    def __init__(self, total: int, label: str) -> None:
        super().__init__()
        self.total, self.label, self.bar = total, label, None

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=self.total, desc=self.label, unit="step", dynamic_ncols=True, mininterval=0.5
        )

    def _on_step(self) -> bool:
        self.bar.update(max(0, min(self.num_timesteps, self.total) - self.bar.n))
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


def make_env(env_id: str, env_kwargs: dict[str, Any]) -> gym.Env:
    """``gym.make(env_id, **env_kwargs)``; the environment's refusal of a keyword argument
    (``num_floors must be >= 1``) as a ``ValueError`` naming ``--env-kwargs`` and the value."""
    try:
        return gym.make(env_id, **env_kwargs)
    except ValueError as err:
        raise ValueError(f"--env-kwargs {json.dumps(env_kwargs)}: {err}") from None


def write_settings(args: TrainArgs, hyperparameters: dict[str, Any]) -> None:
    """``settings.json`` in ``args.out``: the run's settings and resolved hyperparameters."""
    settings = {
        **asdict(args),
        "out": str(args.out),
        "config": str(args.config),
        "hyperparameters": hyperparameters,
    }
    (args.out / "settings.json").write_text(json.dumps(settings, indent=2, default=str))


def build(args: TrainArgs) -> tuple[Any, gym.Env, dict[str, Any]]:
    """Validate everything and build the algorithm, its evaluation env and its settings.

    Raises:
        ValueError: unknown env id, bad env kwargs, an env the trainers cannot use (a
            non-Discrete action space, an observation an MlpPolicy cannot read), unknown method,
            bad YAML key, an estimator whose annotations the env does not provide.
    """
    check_env_kwargs(args.env_id, args.env_kwargs)  # the id, then the kwargs' names
    if args.seed < 0:
        raise ValueError(f"--seed {args.seed}: must be >= 0")
    spec = check_method(args.method)
    for name in ("total_timesteps", "eval_every", "eval_episodes"):
        if getattr(args, name) < 1:
            raise ValueError(f"{flag_of(name)} {getattr(args, name)}: must be >= 1")
    if not 0 < args.target_success <= 1:
        raise ValueError(f"--target-success {args.target_success}: must be in (0, 1]")
    eval_env = make_env(args.env_id, args.env_kwargs)  # bad kwargs: refused before --out is made
    try:  # a continuous action space or an observation the policy cannot read: refused here
        check_trainable(eval_env, args.env_id)
        hyper = load_hyperparameters(args.env_id, args.method, args.config)
        if args.out is not None:
            check_output_folder(args.out)  # the last check: a refused run creates nothing
    except ValueError:
        eval_env.close()
        raise
    params = dict(hyper)
    if params.pop("policy", "mlp") != "mlp":
        raise ValueError("policy: transformer needs --trainer batched (SB3 trains the MLP only)")
    n_envs = params.pop("n_envs", 8)
    estimator_kwargs = params.pop("estimator_kwargs", None)
    # render_mode given: SB3 asks for "rgb_array" otherwise, which Gymnasium warns about
    # for an env that does not draw one
    env_kwargs = {"render_mode": None, **args.env_kwargs}
    venv = make_vec_env(args.env_id, n_envs=n_envs, seed=args.seed, env_kwargs=env_kwargs)
    masked = has_action_masks(eval_env)
    common = dict(seed=args.seed, device="cpu", verbose=0, **params)
    if args.tensorboard and args.out is not None:
        common["tensorboard_log"] = str(args.out / "tensorboard")
    if spec.target in TURN_LEVEL_METHODS:
        if masked:
            from sb3_contrib import MaskablePPO

            algo = MaskablePPO("MlpPolicy", venv, **common)
        else:
            from stable_baselines3 import PPO

            algo = PPO("MlpPolicy", venv, **common)
    else:
        cls = maskable_classes()[0] if masked else TrajectoryAdvantagePPO
        algo = cls(
            "MlpPolicy", venv, estimator=spec.target, estimator_kwargs=estimator_kwargs, **common
        )
    return algo, eval_env, {"n_envs": n_envs, **hyper}


def main(args: TrainArgs) -> RunResult:
    """Train one run and return its success curve (also written to ``args.out``)."""
    if args.trainer not in TRAINERS:
        raise ValueError(f"--trainer must be one of {TRAINERS}, got {args.trainer!r}")
    if args.trainer == "batched":
        return main_batched(args)
    start_cpu = time.process_time()
    algo, eval_env, hyper = build(args)
    if args.out is not None:
        from stable_baselines3.common.logger import configure

        args.out.mkdir(parents=True, exist_ok=True)
        algo.set_logger(configure(str(args.out), ["csv"]))
        write_settings(args, hyper)
    curve = SuccessCurve(
        eval_env,
        args.eval_every,
        args.eval_episodes,
        args.seed,
        None if args.out is None else args.out / "success.csv",
        budget=args.total_timesteps,
    )
    callbacks = [curve]
    if args.progress:
        callbacks.append(ProgressBar(args.total_timesteps, f"{args.method} seed {args.seed}"))
    start = time.perf_counter()
    try:
        algo.learn(args.total_timesteps, callback=callbacks)
        while curve.next_point() is not None:  # the rest of the schedule, on the final policy
            curve.record(curve.next_point())
    finally:  # SB3 leaves its csv logger and the environments open
        algo.logger.close()
        algo.get_env().close()
        eval_env.close()
    reached = first_crossing(curve.timesteps, curve.success, args.target_success)
    return RunResult(
        curve.timesteps,
        curve.success,
        reached if np.isfinite(reached) else None,
        time.perf_counter() - start,
        hyper,
        int(algo.num_timesteps),
        cpu_time=time.process_time() - start_cpu,
        privileged_fields=privileged_of(algo),
    )


def privileged_of(algo: Any) -> tuple[str, ...]:
    """The privileged fields ``algo``'s estimator is given (its declared record's; ``()`` for
    SB3's own PPO, which has no estimator)."""
    estimator = getattr(algo, "estimator", None)
    return () if estimator is None else estimator.privileged


def main_batched(args: TrainArgs) -> RunResult:
    """One run on the batched trainer (:mod:`baselines.lib.batched`, R = 1): validated as
    :func:`build` validates, the same ``success.csv`` and ``settings.json`` in ``args.out``
    (its evaluation is always exact: the trainer needs an environment with a model)."""
    from baselines.lib.batched import RunSpec, train_runs

    if args.tensorboard:
        raise ValueError("--tensorboard is not supported by --trainer batched (it logs no SB3 run)")
    check_env_kwargs(args.env_id, args.env_kwargs)
    if args.eval_episodes < 1:
        raise ValueError(f"--eval-episodes {args.eval_episodes}: must be >= 1")
    make_env(args.env_id, args.env_kwargs).close()  # bad kwargs: refused before --out is made
    spec = RunSpec(
        env_id=args.env_id,
        env_kwargs=dict(args.env_kwargs),
        method=args.method,
        seed=args.seed,
        total_timesteps=args.total_timesteps,
        eval_every=args.eval_every,
        target_success=args.target_success,
        config=args.config,
    )
    spec.check()
    hyper = spec.resolved_hyperparameters()
    if args.out is not None:
        check_output_folder(args.out)  # after every check: a refused run creates nothing
        write_settings(args, hyper)
    (result,) = train_runs([spec], progress=args.progress)
    if args.out is not None:
        with (args.out / "success.csv").open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["timesteps", "success", "exact"])
            for t, value in zip(result.timesteps, result.success, strict=True):
                writer.writerow([t, f"{value:.6f}", 1])
    return result


def parse_args(argv: list[str] | None = None) -> TrainArgs:
    """The settings of one run from the command line (one flag per :class:`TrainArgs` field)."""
    from baselines.commands import settings_of

    return settings_of("train", argv)


def cli_main(argv: list[str] | None = None) -> RunResult:
    """``python -m baselines.train``: parse, train, print the outcome. Bad settings are one line
    on stderr and exit status 2, before any training; a full disk and Ctrl-C are one line too
    (:func:`routine_envs.cli.run_main`)."""
    from baselines.commands import script

    return script("train")(argv)


def train_command(run_args: TrainArgs) -> RunResult:
    """``train``: one run, then its outcome printed."""
    result = main(run_args)
    print(
        f"final success {result.final_success:.3f}; steps to {run_args.target_success}: "
        f"{'not reached' if result.steps_to_target is None else f'{result.steps_to_target:.0f}'}"
        f" (interpolated between evaluations); {result.wall_time:.1f} s"
    )
    return result
