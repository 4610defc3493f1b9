"""The SB3 trainer (``trainer: sb3``): SB3's ``PPO`` for ``ppo`` (``MaskablePPO`` where the env
has ``action_masks()``; turn-level, learned critic, GAE) and ``TrajectoryAdvantagePPO`` with the
run's estimator for every other method, one run at a time (:func:`train`: the runs of a list
one after the other; an SB3 run is the batch of one).

The success rate is evaluated at the run's schedule (:func:`~baselines.lib.trainers.schedule`):
for environments of the suite it is the *exact* success probability of the current stochastic
policy (the oracle's model, no sampling noise); for other environments the success share of the
run's ``eval_episodes`` sampled episodes.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

import routine_envs  # noqa: F401  (registers the suite's ids)
from baselines.lib.envs import check_env_kwargs, check_trainable, make_env
from baselines.lib.scoring import EVALUATIONS
from baselines.lib.trainers import RunResult, schedule, training_privileged
from baselines.lib.trajectory_ppo import TrajectoryAdvantagePPO, maskable_classes, policy_table


def has_action_masks(env: gym.Env) -> bool:
    return callable(getattr(env.unwrapped, "action_masks", None))


class SuccessCurve(BaseCallback):
    """Evaluate the success rate at the points of :func:`schedule` only: at 0 and at every
    multiple of ``eval_every`` up to ``budget``. The policy changes only between rollouts, so
    the evaluation made when the step count first reaches a point is the policy of that point;
    a rollout that runs past the budget adds no evaluation. With ``every_update``, the points
    are instead the start and every update (``evaluation: updates``,
    :mod:`baselines.lib.scoring`): the policy is evaluated when each rollout after the first
    starts (the update before it done) and once more after training, at the steps consumed."""

    def __init__(
        self,
        eval_env: gym.Env,
        eval_every: int,
        eval_episodes: int,
        seed: int,
        csv_path: Path | None = None,
        budget: int | None = None,
        every_update: bool = False,
    ) -> None:
        super().__init__()
        self.every_update = every_update
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

    def _on_rollout_start(self) -> None:
        if self.every_update and self.num_timesteps > self.timesteps[-1]:
            self.record(self.num_timesteps)

    def finish(self) -> None:
        """After training: the rest of the schedule on the final policy, or (``every_update``)
        the final policy at the steps consumed."""
        if self.every_update:
            if self.model.num_timesteps > self.timesteps[-1]:
                self.record(self.model.num_timesteps)
            return
        while self.next_point() is not None:
            self.record(self.next_point())

    def next_point(self) -> int | None:
        """The next scheduled point not yet evaluated (``None``: the schedule is done, or the
        curve is evaluated at updates instead)."""
        if self.every_update:
            return None
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


def check(run: Any) -> None:
    """``ValueError`` (one line) when SB3 cannot train ``run`` (a :class:`~baselines.lib.runs.
    Run`): bad env kwargs, an env the trainers cannot use (a non-Discrete action space, an
    observation an MlpPolicy cannot read), a policy other than the MLP, an estimator whose
    annotations the env does not give or whose batch fields SB3 does not provide."""
    check_env_kwargs(run.env_id, run.env_kwargs)
    if run.hyperparameters.get("policy", "mlp") != "mlp":
        raise ValueError(
            f"--trainer sb3 trains the MLP policy only; the hyperparameters of {run.method.text} "
            f"on {run.env_id} say policy: {run.hyperparameters['policy']} (use --trainer batched)"
        )
    env = make_env(run.env_id, run.env_kwargs)
    try:
        check_trainable(env, run.env_id)
    finally:
        env.close()


def build(run: Any) -> tuple[Any, gym.Env]:
    """The algorithm of ``run`` (a :class:`~baselines.lib.runs.Run`, checked by :func:`check`)
    and its evaluation env, with the run's resolved hyperparameters; torch on one thread (small
    networks: one is fastest, and worker processes share the CPUs)."""
    import torch as th

    th.set_num_threads(1)
    params = dict(run.hyperparameters)
    params.pop("policy", None)
    n_envs = params.pop("n_envs", 8)
    estimator_kwargs = params.pop("estimator_kwargs", None)
    eval_env = make_env(run.env_id, run.env_kwargs)
    # render_mode given: SB3 asks for "rgb_array" otherwise, which Gymnasium warns about
    # for an env that does not draw one
    env_kwargs = {"render_mode": None, **run.env_kwargs}
    venv = make_vec_env(run.env_id, n_envs=n_envs, seed=run.seed, env_kwargs=env_kwargs)
    masked = has_action_masks(eval_env)
    common = dict(seed=run.seed, device=run.device, verbose=0, **params)
    if run.method.turn_level:
        if masked:
            from sb3_contrib import MaskablePPO

            algo = MaskablePPO("MlpPolicy", venv, **common)
        else:
            from stable_baselines3 import PPO

            algo = PPO("MlpPolicy", venv, **common)
    else:
        cls = maskable_classes()[0] if masked else TrajectoryAdvantagePPO
        algo = cls(
            "MlpPolicy",
            venv,
            estimator=run.method.estimator,
            estimator_kwargs=estimator_kwargs,
            **common,
        )
    return algo, eval_env


def train_one(
    run: Any, out: Path | None = None, progress: bool = False, tensorboard: bool = False
) -> RunResult:
    """Train ``run`` (checked: :func:`baselines.lib.runs.check`, as :func:`baselines.lib.runs.
    train` and the ``train`` command do before) and return its success curve; with ``out``,
    SB3's ``progress.csv``, the success curve as it is measured (``success.csv``) and, with
    ``tensorboard``, TensorBoard logs go there."""
    start_cpu = time.process_time()
    algo, eval_env = build(run)
    if out is not None:
        from stable_baselines3.common.logger import configure

        out.mkdir(parents=True, exist_ok=True)
        formats = ["csv", "tensorboard"] if tensorboard else ["csv"]
        algo.set_logger(configure(str(out), formats))
    curve = SuccessCurve(
        eval_env,
        run.eval_every,
        run.eval_episodes,
        run.seed,
        None if out is None else out / "success.csv",
        budget=run.budget,
        every_update=run.evaluation == "updates",
    )
    callbacks = [curve]
    if progress:
        callbacks.append(ProgressBar(run.budget, f"{run.method.text} seed {run.seed}"))
    start = time.perf_counter()
    try:
        algo.learn(run.budget, callback=callbacks)
        curve.finish()
    finally:  # SB3 leaves its csv logger and the environments open
        algo.logger.close()
        algo.get_env().close()
        eval_env.close()
    reached = EVALUATIONS[run.evaluation].steps_to_target(
        curve.timesteps, curve.success, run.target
    )
    return RunResult(
        curve.timesteps,
        curve.success,
        reached if np.isfinite(reached) else None,
        time.perf_counter() - start,
        run.trained_with,
        int(algo.num_timesteps),
        cpu_time=time.process_time() - start_cpu,
        privileged_fields=privileged_of(algo),
        exact=curve.exact,
    )


def train(runs: Sequence[Any], progress: bool = False) -> list[RunResult]:
    """Train ``runs`` (checked) one after the other (:func:`train_one`)."""
    return [train_one(run, progress=progress) for run in runs]


def privileged_of(algo: Any) -> tuple[str, ...]:
    """The privileged fields ``algo``'s estimator is given (its declared record's; ``()`` for
    SB3's own PPO, which has no estimator)."""
    estimator = getattr(algo, "estimator", None)
    return () if estimator is None else training_privileged(estimator)
