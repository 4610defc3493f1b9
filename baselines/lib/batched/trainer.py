"""The batched PPO loop: R runs of one batch key trained in lockstep (see the package docstring).

Each iteration collects one rollout of every active run (turn-level for ``ppo``, episode groups
for estimator methods), evaluates the runs whose step count crossed points of their evaluation
schedule during it (with the rollout's policy, as SB3's callback does), and updates every run;
runs evaluated after every update (``evaluation: updates``, :mod:`baselines.lib.scoring`) are
evaluated once at the start and after each update instead, at the steps consumed so far.
A run whose count reaches its budget leaves the batch after its update (its rows are dropped
from the stacked parameters and optimiser state; its sub-environments step idle until every run
of its configuration is done).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from baselines.lib.batched import mlp
from baselines.lib.batched.acting import RolloutPolicy, config_segments
from baselines.lib.batched.device import to_device, to_host
from baselines.lib.batched.envs import EnvConfig, build_configs
from baselines.lib.batched.optim import StackedAdam
from baselines.lib.batched.rollouts import Stepper, collect_groups, collect_steps
from baselines.lib.batched.settings import TrainerSettings
from baselines.lib.batched.streams import RunStreams, Uniforms
from baselines.lib.batched.tabular import MASKED_LOGIT, StateTable, table_policy
from baselines.lib.batched.update import LossSettings, RolloutData, Segment, update
from baselines.lib.trainers import check_feedable, schedule, training_privileged
from routine_envs import credit
from routine_envs.episodes import Declared

BATCHED_PROVIDES = frozenset(
    {"actions", "observations", "log_probs", "entropies", "values"} | set(credit.INFO_KEY_OF_FIELD)
)
"""The batch fields the batched trainer gives an estimator (no ``snapshots``: its sub-envs are
rows of a vector env, not objects to deep-copy; ``mc_rollout`` simulates on the model)."""
EVAL_CHUNK = 8
"""Runs whose policy tables are computed in one batched forward pass."""


@dataclass
class RunState:
    """What one run has measured so far."""

    points: list[int]
    timesteps: list[int]
    success: list[float]
    steps: int = 0
    cpu_time: float = 0.0
    wall_time: float = 0.0
    privileged: tuple[str, ...] = ()
    """The privileged batch fields its estimator is given (its declared record's)."""
    cpu_split: dict[str, float] = field(default_factory=dict)
    """Its share of the batch's CPU seconds per phase (:data:`PHASES`)."""
    update_flops: float = 0.0
    """Its share of the matrix FLOPs of the updates (forward, backward: :data:`mlp.FLOPS`)."""
    every_update: bool = False
    """Evaluated at the start and after every update (``points`` unused)."""


PHASES = ("setup", "rollout", "evaluation", "update")
"""Where a batch's CPU time goes: building the batch (networks, env configurations,
estimators), collecting rollouts (acting, stepping the envs, the estimators' advantages),
evaluating the success probability at the schedule's points, and PPO's update (forward,
backward, optimiser)."""


def check_estimator(estimator: Any, env: Any, env_id: str) -> None:
    """``ValueError`` (one line) when the batched trainer cannot feed ``estimator`` on ``env``
    (``gym.make(env_id, ...)``): info keys it needs that the env does not give, or batch fields
    the trainer does not provide (:data:`BATCHED_PROVIDES`: no ``snapshots``)."""
    check_feedable(estimator, env, BATCHED_PROVIDES, "the batched trainer (--trainer batched)")


class BatchedTrainer:
    """Train runs that share a batch key together (same env id, method, hyperparameters).

    Args:
        runs: the runs (:class:`baselines.lib.runs.Run`: env id and kwargs, the parsed method,
            seed, budget and evaluation schedule; their hyperparameters are the batch's); use
            :func:`baselines.lib.batched.train`, which groups them.
        hyperparameters: the batch's resolved hyperparameters (one set for every run).
    """

    def __init__(self, runs: Sequence[Any], hyperparameters: dict[str, Any]) -> None:
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        torch.set_num_threads(1)
        if not runs:
            raise ValueError("train_runs needs at least one run")
        self.settings = TrainerSettings.from_hyperparameters(hyperparameters)
        s = self.settings
        if s.policy != self.policy_name:
            raise ValueError(f"policy: {s.policy} is not trained by {type(self).__name__}")
        methods = {r.method.text for r in runs}
        if len(methods) != 1:
            raise ValueError(f"one batch trains one method, got {sorted(methods)}")
        self.method = runs[0].method
        self.turn_level = self.method.turn_level
        devices = {r.device for r in runs}
        if len(devices) != 1:
            raise ValueError(f"one batch lives on one device, got {sorted(devices)}")
        self.device = torch.device(devices.pop())
        # runs ordered by configuration: each configuration's sub-envs are contiguous
        order = sorted(range(len(runs)), key=lambda i: _config_sort_key(runs, i))
        self.order = np.array(order, dtype=np.int64)
        self.runs = [runs[i] for i in order]
        configs, config_of, _ = build_configs(
            [(r.env_id, r.env_kwargs) for r in self.runs], s.n_envs
        )
        self.configs: list[EnvConfig] = configs
        self.config_of = config_of
        first = configs[0]
        dims = {(c.obs_dim, c.num_actions, c.masked) for c in configs}
        if len(dims) != 1:
            raise ValueError(f"runs of one batch must share spaces, got {sorted(dims)}")
        self.masked = first.masked
        self.streams = [RunStreams.of(r.seed) for r in self.runs]
        self.estimators: list[Declared] = []
        trains_critic = True
        if not self.turn_level:
            for j in range(len(self.runs)):
                self.estimators.append(self._build_estimator(self.method.estimator, j))
            trains_critic = bool(self.estimators[0].trains_critic)
        self.trains_critic = trains_critic
        self.theta = self._init_policy().to(self.device)
        self.optimizer = StackedAdam(self.theta, s.learning_rate, eps=1e-5)
        self.loss = LossSettings(
            clip_range=s.clip_range,
            ent_coef=s.ent_coef,
            vf_coef=s.vf_coef if trains_critic else 0.0,
            max_grad_norm=s.max_grad_norm,
            normalize_advantage=s.normalize_advantage,
            n_epochs=s.n_epochs,
            batch_size=s.batch_size,
            merge_single=not self.turn_level,
        )
        # state tables (tabular.py) where a configuration has few decision states: for the
        # rollout's policy when they are fewer than a rollout's steps, for the update when
        # they are at most a minibatch's rows (a property of the configuration alone)
        self.collect_tables: list[StateTable | None] = []
        self.update_tables: list[StateTable | None] = []
        for config in configs:
            table = config.state_table().on(self.device) if self.policy_name == "mlp" else None
            small = table is not None and table.size <= s.n_steps * s.n_envs
            self.collect_tables.append(table if small else None)
            fits = table is not None and table.size <= self.loss.rows
            self.update_tables.append(table if fits else None)
        self.policy: RolloutPolicy | None = None
        self.stepper = Stepper(configs, config_of, s.n_envs)
        self.uniforms = Uniforms([st.actions for st in self.streams])
        self.active = np.arange(len(self.runs), dtype=np.int64)
        reads = [training_privileged(e) for e in self.estimators] or [()] * len(self.runs)
        self.state = [
            RunState(
                [] if r.evaluation == "updates" else schedule(r.budget, r.eval_every),
                [],
                [],
                privileged=read,
                every_update=r.evaluation == "updates",
            )
            for r, read in zip(self.runs, reads, strict=True)
        ]
        self.every_update = np.array([st.every_update for st in self.state], dtype=bool)
        self.budgets = np.array([r.budget for r in self.runs], dtype=np.int64)
        self.episode_starts = np.ones((len(self.runs), s.n_envs), dtype=np.float32)
        # a rollout scheme (routine_envs.tree_grpo): how the estimator's groups are sampled
        schemes = {getattr(e.reader, "rollout", None) for e in self.estimators}
        self.scheme = schemes.pop() if len(schemes) == 1 else None
        if self.scheme is not None:
            self.scheme.check_group_size(s.n_envs)
        branch_on_entropy = getattr(self.scheme, "entropy_threshold", None) is not None
        self.want_entropies = branch_on_entropy or any(
            "entropies" in e.requires for e in self.estimators
        )
        self._phase("setup", start_cpu, np.arange(len(self.runs)))
        self._charge(start_cpu, start_wall, np.arange(len(self.runs)))

    policy_name = "mlp"

    def _init_policy(self) -> torch.Tensor:
        """Every run's initial parameters, stacked ``(R, P)``."""
        first, s = self.configs[0], self.settings
        self.layout = mlp.make_layout(
            first.obs_dim,
            first.num_actions,
            list(s.pi_arch),
            list(s.vf_arch) if self.trains_critic else None,
        )
        return torch.stack([mlp.init_parameters(self.layout, st.init) for st in self.streams])

    def _update(self, data: RolloutData, runs: np.ndarray) -> None:
        """SB3's epochs of minibatch updates of ``runs`` on ``data``: each configuration's runs
        on its state table where it has one (``data.table_rows`` set here), per step else."""
        segments = []
        rows = np.zeros((len(runs), data.stride), dtype=np.int64)
        tabular = False
        for lo, hi, c in config_segments(self.config_of, runs):
            table = self.update_tables[c]
            segments.append(Segment(lo, hi, table))
            if table is not None:
                tabular = True
                ids = to_host(data.state_ids.view(len(runs), -1)[lo:hi])
                real = np.arange(data.stride)[None, :] < data.sizes[lo:hi, None]
                rows[lo:hi] = np.where(real, table.row_of[ids], 0)
        if tabular:
            data.table_rows = to_device(rows.reshape(-1), self.device)
        update(
            self.theta,
            self.optimizer,
            self.layout,
            data,
            self.loss,
            [self.streams[j].shuffle for j in runs.tolist()],
            segments,
        )

    def _start_rollout(self, runs: np.ndarray) -> None:
        """Before a rollout's collection: the policy prepared once (:class:`RolloutPolicy`:
        state tables or frozen weights), as it is fixed until the update."""
        self.policy = RolloutPolicy(
            self.theta,
            self.active,
            self.config_of,
            self.layout,
            self.collect_tables,
            self.trains_critic,
            self.want_entropies,
        )

    @staticmethod
    def check_settings(hyperparameters: dict[str, Any]) -> TrainerSettings:
        """The batch's settings, or ``ValueError`` naming a key this trainer cannot honour."""
        return TrainerSettings.from_hyperparameters(hyperparameters)

    # ---------------------------------------------------------------------- set-up
    def _build_estimator(self, estimator: Any, j: int) -> Declared:
        config = self.configs[self.config_of[j]]
        context = credit.EstimatorContext(
            env=config.env.unwrapped,
            policy_table=lambda j=j: self.policy_table_of(j),
            gamma=self.settings.gamma,
            gae_lambda=self.settings.gae_lambda,
            sampler=config.sampler,
            seed=self.streams[j].estimator_seed,
        )
        # requires (and the rest) read once, here: every later use is of this record
        built = credit.build_estimator(estimator, context, **self.settings.estimator_kwargs)
        estimator = credit.declare(built)
        check_estimator(estimator, config.env, config.env_id)
        return estimator

    def _phase(self, name: str, cpu0: float, runs: np.ndarray, flops: float = 0.0) -> float:
        """Attribute the CPU seconds since ``cpu0`` (and ``flops``) to phase ``name`` of
        ``runs``, equally; the time now (the next phase's start)."""
        now = time.process_time()
        share = (now - cpu0) / max(1, len(runs))
        for j in runs.tolist():
            split = self.state[j].cpu_split
            split[name] = split.get(name, 0.0) + share
            self.state[j].update_flops += flops / max(1, len(runs))
        return now

    def _charge(self, cpu0: float, wall0: float, runs: np.ndarray) -> None:
        """Attribute the CPU and wall time since ``cpu0``/``wall0`` equally to ``runs``."""
        cpu = (time.process_time() - cpu0) / len(runs)
        wall = (time.perf_counter() - wall0) / len(runs)
        for j in runs.tolist():
            self.state[j].cpu_time += cpu
            self.state[j].wall_time += wall

    # ---------------------------------------------------------------------- policy
    def _rows(self, runs: np.ndarray) -> torch.Tensor:
        """The parameter rows of ``runs`` (indices into the run order)."""
        if len(runs) == len(self.active) and np.array_equal(runs, self.active):
            return self.theta
        pos = np.searchsorted(self.active, runs)
        return self.theta.index_select(0, to_device(pos, self.device))

    def act(
        self,
        runs: np.ndarray,
        obs: np.ndarray,
        masks: np.ndarray | None,
        u: np.ndarray,
        state_ids: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Actions, log-probabilities, values and entropies of ``runs`` at ``obs``."""
        assert self.policy is not None
        return self.policy.act(runs, obs, masks, u, state_ids)

    def values_of(
        self, runs: np.ndarray, obs: np.ndarray, state_ids: np.ndarray | None = None
    ) -> np.ndarray:
        """Values ``(R, k)`` of ``runs`` at ``obs`` ``(R, k, d)`` (``state_ids``: their states,
        for policies that need them)."""
        assert self.policy is not None
        return self.policy.values(runs, obs, state_ids)

    def decision_probs(self, runs: np.ndarray) -> np.ndarray:
        """The current policies of ``runs`` (all of one configuration) on its decision states,
        ``(R, K, A)`` float32 (``EnvConfig.decision_states`` order)."""
        c = int(self.config_of[runs[0]])
        config = self.configs[c]
        if self.policy is not None:  # during a rollout: the rollout's own tables
            probs = self.policy.decision_probs(runs)
            if probs is not None:
                return probs
        table = self.collect_tables[c]
        if table is not None:
            return table_policy(self._rows(runs), self.layout, table, False, False)["p"][
                :, : len(table.ids)
            ]
        _, observations, masks = config.decision_states()
        out = []
        for lo in range(0, len(runs), EVAL_CHUNK):
            chunk = runs[lo : lo + EVAL_CHUNK]
            k = len(chunk)
            x = to_device(np.repeat(observations[None], k, axis=0), self.device)
            with torch.no_grad():
                logits, _ = mlp.forward(self._rows(chunk), self.layout.net("pi"), x)
                if masks is not None:
                    m = to_device(masks, self.device)
                    logits = logits.masked_fill(~m, MASKED_LOGIT)
                out.append(to_host(torch.softmax(logits, dim=-1)))
        return np.concatenate(out)

    def policy_tables(self, runs: np.ndarray) -> list[np.ndarray]:
        """The tabular policy ``(num_states, A)`` float64 of each of ``runs`` (all of one
        configuration) on every state."""
        config = self.configs[self.config_of[runs[0]]]
        return list(config.evaluator().tables(self.decision_probs(runs)))

    def policy_table_of(self, j: int) -> np.ndarray:
        return self.policy_tables(np.array([j]))[0]

    def evaluate(self, runs: np.ndarray) -> dict[int, float]:
        """Exact success probability of the current policy of each of ``runs``."""
        out: dict[int, float] = {}
        for c in np.unique(self.config_of[runs]).tolist():
            mine = runs[self.config_of[runs] == c]
            for lo in range(0, len(mine), EVAL_CHUNK):
                chunk = mine[lo : lo + EVAL_CHUNK]
                success = self.configs[c].evaluator()(self.decision_probs(chunk))
                out.update(zip(chunk.tolist(), success.tolist(), strict=True))
        return out

    def _record_points(self, runs: np.ndarray, before: np.ndarray) -> None:
        """Evaluate, with the current policy, the points of ``runs`` crossed since ``before``
        (their step counts when the rollout started; the first call records point 0)."""
        due = []
        for j, b in zip(runs.tolist(), before.tolist(), strict=True):
            st = self.state[j]
            k = len(st.timesteps)
            if k < len(st.points) and st.points[k] <= st.steps and (st.points[k] > b or k == 0):
                due.append(j)
        if not due:
            return
        values = self.evaluate(np.array(due, dtype=np.int64))
        for j in due:
            st = self.state[j]
            while len(st.timesteps) < len(st.points) and st.points[len(st.timesteps)] <= st.steps:
                st.timesteps.append(st.points[len(st.timesteps)])
                st.success.append(values[j])

    def _record_updates(self, runs: np.ndarray) -> None:
        """Evaluate the current policy of those of ``runs`` evaluated after every update, at
        their step counts (the steps their updates consumed)."""
        due = runs[self.every_update[runs]]
        if not len(due):
            return
        values = self.evaluate(due)
        for j in due.tolist():
            st = self.state[j]
            st.timesteps.append(st.steps)
            st.success.append(values[j])

    # ------------------------------------------------------------------------ loop
    def iteration(self) -> None:
        """One rollout and update of every active run."""
        cpu0, wall0 = time.process_time(), time.perf_counter()
        runs = self.active
        s = self.settings
        before = np.array([self.state[j].steps for j in runs.tolist()])
        phase = cpu0
        self._start_rollout(runs)
        if self.turn_level:
            ro = collect_steps(
                self.stepper,
                runs,
                self.act,
                self.values_of,
                self.uniforms,
                self.episode_starts,
                s.n_steps,
                s.gamma,
                s.gae_lambda,
            )
            for j in runs.tolist():
                self.state[j].steps += s.n_steps * s.n_envs
            data = RolloutData.from_runs(
                list(ro.obs),
                list(ro.actions),
                list(ro.log_probs),
                list(ro.advantages),
                list(ro.returns),
                None if ro.masks is None else list(ro.masks),
                list(ro.state_ids),
                device=self.device,
            )
        else:
            data = self._episode_rollout(runs)
        phase = self._phase("rollout", phase, runs)
        self._record_points(runs, before)
        phase = self._phase("evaluation", phase, runs)
        flops = mlp.FLOPS.count
        self._update(data, runs)
        phase = self._phase("update", phase, runs, mlp.FLOPS.count - flops)
        self.policy = None  # the rollout's policy is stale from here
        self._record_updates(runs)
        if self.observe is not None:
            self.observe(self, runs)
        self._phase("evaluation", phase, runs)
        self._charge(cpu0, wall0, runs)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        retired = self._retire()
        if len(retired):  # their last evaluations: theirs
            self._phase("evaluation", cpu0, retired)
            self._charge(cpu0, wall0, retired)

    def _episode_rollout(self, runs: np.ndarray) -> RolloutData:
        s = self.settings
        rollouts = collect_groups(
            self.stepper,
            runs,
            self.act,
            self.values_of if self.trains_critic else None,
            self.uniforms,
            [self.streams[j].groups for j in runs.tolist()],
            s.n_steps * s.n_envs,
            self.want_entropies,
            self.scheme,
        )
        obs, actions, log_probs, advantages, returns, masks, ids = [], [], [], [], [], [], []
        for j, ro in zip(runs.tolist(), rollouts, strict=True):
            batch = ro.batch
            self.state[j].steps += ro.steps_taken  # a tree's shared steps count once
            # on its declared fields only (batch_for), its arrays checked finite as it returns
            # (credit.check_advantages: ~3 us a rollout, 0.01% of an iteration)
            result = self.estimators[j](batch)
            adv = np.asarray(result.advantages, dtype=np.float64)
            if self.trains_critic:
                ret = result.returns if result.returns is not None else adv + batch.values
            else:  # return targets stay 0 (and the value head is not trained)
                ret = np.zeros_like(adv)
            obs.append(batch.observations)
            actions.append(batch.actions)
            log_probs.append(batch.log_probs)
            advantages.append(adv)
            returns.append(np.asarray(ret))
            masks.append(ro.masks)
            ids.append(batch.state_ids)
        masks_ = masks if self.masked else None
        return RolloutData.from_runs(
            obs, actions, log_probs, advantages, returns, masks_, ids, device=self.device
        )

    def _retire(self) -> np.ndarray:
        """Drop the runs that reached their budget from the batch (evaluated at the rest of
        their schedule); those runs."""
        steps = np.array([self.state[j].steps for j in self.active.tolist()])
        keep = steps < self.budgets[self.active]
        if keep.all():
            return np.zeros(0, dtype=np.int64)
        rows = np.flatnonzero(keep)
        retired = self.active[~keep]
        for j in self.active[~keep].tolist():  # the rest of the schedule: final policy
            st = self.state[j]
            if len(st.timesteps) < len(st.points):
                value = self.evaluate(np.array([j]))[j]
                while len(st.timesteps) < len(st.points):
                    st.timesteps.append(st.points[len(st.timesteps)])
                    st.success.append(value)
        self.active = self.active[rows]
        self.theta = self.theta.index_select(0, to_device(rows, self.device))
        self.optimizer.select(rows)
        self.optimizer.bind(self.theta)
        live_configs = set(self.config_of[self.active].tolist())
        for c in range(len(self.configs)):
            self.stepper.alive[c] = c in live_configs
        return retired

    observe: Callable[[BatchedTrainer, np.ndarray], None] | None = None
    """Called as ``observe(trainer, runs)`` with the initial policies and after every update
    (before runs that reached their budget leave): what a lab reads of a training run's
    policies (:meth:`policy_tables`, ``state[j].steps``). It must not change the trainer."""

    def train(self, progress: Any = None) -> list[RunState]:
        """Train every run to its budget; the states in the callers' order of ``runs``."""
        cpu0, wall0 = time.process_time(), time.perf_counter()
        self.stepper.reset(
            np.concatenate([st.env_seed + np.arange(self.settings.n_envs) for st in self.streams])
        )
        self._record_points(self.active, np.full(len(self.active), -1))
        self._record_updates(self.active)
        if self.observe is not None:
            self.observe(self, self.active)
        self._phase("evaluation", cpu0, self.active)
        self._charge(cpu0, wall0, self.active)
        while len(self.active):
            done_before = sum(self.state[j].steps for j in range(len(self.runs)))
            self.iteration()
            if progress is not None:
                progress(sum(self.state[j].steps for j in range(len(self.runs))) - done_before)
        out: list[RunState | None] = [None] * len(self.runs)
        for position, original in enumerate(self.order.tolist()):
            out[original] = self.state[position]
        return out  # type: ignore[return-value]


def _config_sort_key(runs: Sequence[Any], i: int) -> tuple[str, int]:
    from baselines.lib.batched.envs import config_key

    return config_key(runs[i].env_id, runs[i].env_kwargs), i
