"""Rollout collection for R runs at once, on the native vector envs of their configurations.

:class:`Stepper` steps every configuration's :class:`~routine_envs.envs.model_vector.ModelVectorEnv`
and presents the sub-environments in run order (run ``r``: rows ``r * n`` to ``r * n + n - 1``
of every per-env array). Two collectors:

- :func:`collect_steps` (SB3 ``PPO``'s ``collect_rollouts``): ``n_steps`` steps of every env,
  episodes continuing across rollouts, SB3's bootstrap of time-limit truncations
  (``r += gamma * V(final obs)``) and GAE(lambda) with SB3's ``episode_starts`` bookkeeping.
- :func:`collect_groups` (``TrajectoryAdvantagePPO``'s): whole episodes in groups of ``n``
  episodes that start with the same reset seed (drawn from the run's group stream), until the
  run has at least ``n_steps * n`` steps; the steps of a run in group, member, time order as an
  :class:`~routine_envs.episodes.EpisodeBatch` for the estimator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.lib.batched.envs import EnvConfig
from routine_envs import annotations as keys
from routine_envs.episodes import EpisodeBatch
from routine_envs.tree_grpo import TreeRollout

INFO_KEYS = (keys.CRITICAL, keys.STATE_ID, keys.ANCHOR)


class Stepper:
    """Every run's ``n`` sub-environments, across configurations, in run order.

    ``configs[c].venv`` holds the sub-environments of the runs of configuration ``c``; runs must
    be ordered by configuration and slot (``config_of`` non-decreasing, slots ``0, 1, ...``).
    A configuration none of whose runs is active any more is no longer stepped.
    """

    def __init__(self, configs: list[EnvConfig], config_of: np.ndarray, n: int) -> None:
        self.configs, self.n = configs, n
        sizes = [c.venv.num_envs for c in configs]
        self.bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        total = int(self.bounds[-1])
        c0 = configs[0]
        self.obs = np.zeros((total, c0.obs_dim), dtype=np.float32)
        self.info = {k: np.zeros(total, dtype=np.int64) for k in INFO_KEYS}
        self.info[keys.CRITICAL] = np.zeros(total, dtype=bool)
        self.masks = np.ones((total, c0.num_actions), dtype=bool) if c0.masked else None
        self.num_actions = c0.num_actions  # every configuration's (a batch shares spaces)
        #: ``turn_score`` of the state each row's last step reached (its final state where the
        #: episode ended), ``(total,)``; NaN until stepped or where the env reports none
        self.reached_score = np.full(total, np.nan)
        self.alive = np.ones(len(configs), dtype=bool)
        self.config_of = config_of  # the configuration of each run, (R,)

    def _store(self, c: int, obs: np.ndarray, infos: dict[str, Any], where: np.ndarray) -> None:
        lo = self.bounds[c]
        rows = lo + where
        self.obs[rows] = obs[where]
        for k in INFO_KEYS:
            self.info[k][rows] = infos[k][where]
        if self.masks is not None:
            self.masks[rows] = infos[keys.ACTION_MASK][where]

    def reset(self, seeds: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Reset the env rows ``rows`` (all when ``None``) with ``seeds`` (one per row)."""
        rows = np.arange(self.bounds[-1]) if rows is None else np.asarray(rows)
        for c, config in enumerate(self.configs):
            lo, hi = self.bounds[c], self.bounds[c + 1]
            mine = rows[(rows >= lo) & (rows < hi)]
            if not mine.size:
                continue
            local = mine - lo
            full = len(local) == config.venv.num_envs
            seed_list: list[int | None] = [None] * config.venv.num_envs
            for i, s in zip(
                local.tolist(), seeds[(rows >= lo) & (rows < hi)].tolist(), strict=True
            ):
                seed_list[i] = int(s)
            mask = None
            if not full:
                mask = np.zeros(config.venv.num_envs, dtype=bool)
                mask[local] = True
            obs, infos = config.venv.reset(
                seed=seed_list, options=None if mask is None else {"reset_mask": mask}
            )
            self._store(c, obs, infos, local)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        """Step every live configuration with ``actions`` (one per env row). Returns rewards,
        terminated, truncated (by the env's own step budget), and the final observation and
        state id of each row that ended (zeros elsewhere), all with one entry per row;
        ``self.obs`` and ``self.info`` then describe the current states (new episodes where one
        ended)."""
        total = int(self.bounds[-1])
        rewards = np.zeros(total)
        terminated = np.zeros(total, dtype=bool)
        truncated = np.zeros(total, dtype=bool)
        final = np.zeros_like(self.obs)
        final_ids = np.zeros(total, dtype=np.int64)
        for c, config in enumerate(self.configs):
            if not self.alive[c]:
                continue
            lo, hi = self.bounds[c], self.bounds[c + 1]
            obs, r, te, tr, infos = config.venv.step(actions[lo:hi])
            rewards[lo:hi], terminated[lo:hi], truncated[lo:hi] = r, te, tr
            ended = np.flatnonzero(te | tr)
            if ended.size:
                final[lo + ended] = np.stack(infos["final_obs"][ended])
                final_ids[lo + ended] = infos["final_info"][keys.STATE_ID][ended]
            if keys.TURN_SCORE in infos:
                score = np.asarray(infos[keys.TURN_SCORE], dtype=np.float64).copy()
                if ended.size:
                    score[ended] = infos["final_info"][keys.TURN_SCORE][ended]
                self.reached_score[lo:hi] = score
            self._store(c, obs, infos, np.arange(hi - lo))
        return rewards, terminated, truncated, final, final_ids

    def env_rows(self, runs: np.ndarray) -> np.ndarray:
        """The env rows of ``runs`` (indices in the batch's run order), ``(len(runs) * n,)``."""
        return (runs[:, None] * self.n + np.arange(self.n)).reshape(-1)


Act = Callable[..., tuple[np.ndarray, ...]]
"""``act(runs, obs (R, n, d), masks (R, n, A) | None, uniforms (R, n), state_ids (R, n)) ->
(actions, log_probs,
values, entropies)``, each ``(R, n)``; values ``None`` without a critic, entropies ``None`` when
not asked for."""


@dataclass
class StepRollout:
    """A turn-level rollout of the active runs, flat per run (SB3's env-major order)."""

    obs: np.ndarray  # (R, N, d)
    actions: np.ndarray  # (R, N)
    log_probs: np.ndarray
    advantages: np.ndarray
    returns: np.ndarray
    masks: np.ndarray | None  # (R, N, A)
    state_ids: np.ndarray  # (R, N)


def collect_steps(
    stepper: Stepper,
    runs: np.ndarray,
    act: Act,
    values_of: Callable[..., np.ndarray],
    uniforms: Any,
    episode_starts: np.ndarray,
    n_steps: int,
    gamma: float,
    gae_lambda: float,
) -> StepRollout:
    """SB3 ``PPO``'s rollout of ``n_steps`` steps of every env of ``runs`` (see the module
    docstring). ``episode_starts`` ``(R_all, n)`` float32 is SB3's ``_last_episode_starts``,
    updated in place. ``values_of(runs, obs (R, k, d), state_ids (R, k)) -> (R, k)`` evaluates
    the value net."""
    n, rows = stepper.n, stepper.env_rows(runs)
    k = len(runs)
    d = stepper.obs.shape[1]
    obs_buf = np.zeros((n_steps, k, n, d), dtype=np.float32)
    act_buf = np.zeros((n_steps, k, n), dtype=np.int64)
    logp_buf = np.zeros((n_steps, k, n), dtype=np.float32)
    val_buf = np.zeros((n_steps, k, n), dtype=np.float32)
    rew_buf = np.zeros((n_steps, k, n), dtype=np.float32)
    start_buf = np.zeros((n_steps, k, n), dtype=np.float32)
    mask_buf = None
    if stepper.masks is not None:
        mask_buf = np.zeros((n_steps, k, n, stepper.masks.shape[1]), dtype=bool)
    id_buf = np.zeros((n_steps, k, n), dtype=np.int64)
    all_actions = np.zeros(int(stepper.bounds[-1]), dtype=np.int64)
    dones = np.zeros((k, n), dtype=np.float32)
    for t in range(n_steps):
        obs = stepper.obs[rows].reshape(k, n, d)
        masks = None if stepper.masks is None else stepper.masks[rows].reshape(k, n, -1)
        ids = stepper.info[keys.STATE_ID][rows].reshape(k, n)
        id_buf[t] = ids
        actions, log_probs, values, _ = act(runs, obs, masks, uniforms.take(runs, n), ids)
        all_actions[rows] = actions.reshape(-1)
        rewards, terminated, truncated, final, final_ids = stepper.step(all_actions)
        rewards = rewards[rows].reshape(k, n).astype(np.float32)
        cut = (truncated & ~terminated)[rows].reshape(k, n)
        if cut.any():  # SB3: bootstrap a time-limit truncation from V(terminal observation)
            final_obs = final[rows].reshape(k, n, d)
            v_final = values_of(runs, final_obs, _final_ids(stepper, rows, final_ids, cut))
            rewards = rewards + np.where(cut, gamma * v_final, 0.0).astype(np.float32)
        obs_buf[t], act_buf[t], logp_buf[t], val_buf[t] = obs, actions, log_probs, values
        rew_buf[t], start_buf[t] = rewards, episode_starts[runs]
        if mask_buf is not None:
            mask_buf[t] = masks
        dones = (terminated | truncated)[rows].reshape(k, n).astype(np.float32)
        episode_starts[runs] = dones
    last_ids = stepper.info[keys.STATE_ID][rows].reshape(k, n)
    last_values = values_of(runs, stepper.obs[rows].reshape(k, n, d), last_ids)
    last_values = last_values.astype(np.float32)
    advantages = gae(rew_buf, val_buf, start_buf, last_values, dones, gamma, gae_lambda)
    returns = advantages + val_buf

    def flat(a: np.ndarray) -> np.ndarray:  # (T, R, n, ...) -> (R, n * T, ...), env-major
        return np.moveaxis(a, 0, 2).reshape(k, n * n_steps, *a.shape[3:])

    return StepRollout(
        flat(obs_buf),
        flat(act_buf),
        flat(logp_buf),
        flat(advantages),
        flat(returns),
        None if mask_buf is None else flat(mask_buf),
        flat(id_buf),
    )


def _final_ids(
    stepper: Stepper, rows: np.ndarray, final_ids: np.ndarray, cut: np.ndarray
) -> np.ndarray:
    """The state ids whose values bootstrap the truncations ``cut`` ``(R, n)``: each cut
    episode's last state, the current (decision) state elsewhere (a value read, then unused)."""
    k, n = cut.shape
    current = stepper.info[keys.STATE_ID][rows].reshape(k, n)
    return np.where(cut, final_ids[rows].reshape(k, n), current)


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    episode_starts: np.ndarray,
    last_values: np.ndarray,
    dones: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> np.ndarray:
    """SB3's ``RolloutBuffer.compute_returns_and_advantage`` in float32: arrays ``(T, ...)``
    (rewards, values, ``episode_starts``), ``last_values`` and ``dones`` of the last step
    ``(...)``; returns the advantages ``(T, ...)`` (the return targets are ``adv + values``)."""
    steps = rewards.shape[0]
    advantages = np.zeros_like(rewards, dtype=np.float32)
    last = np.zeros(rewards.shape[1:], dtype=np.float32)
    g, lam = np.float32(gamma), np.float32(gae_lambda)
    for t in range(steps - 1, -1, -1):
        if t == steps - 1:
            nonterminal = 1.0 - dones.astype(np.float32)
            next_values = last_values
        else:
            nonterminal, next_values = 1.0 - episode_starts[t + 1], values[t + 1]
        delta = rewards[t] + g * next_values * nonterminal - values[t]
        last = delta + g * lam * nonterminal * last
        advantages[t] = last
    return advantages


@dataclass
class GroupRollout:
    """A rollout of whole episodes of one run: its batch (for the estimator; its
    ``num_steps`` is what SB3 counts) and, per step in the batch's order, the action masks
    ``(N, A)`` (``None`` without masks)."""

    batch: EpisodeBatch
    masks: np.ndarray | None
    steps_taken: int
    """The environment steps it took (its budget's count): ``batch.num_steps``, fewer under a
    tree scheme (a step its leaves share is taken once)."""


def collect_groups(
    stepper: Stepper,
    runs: np.ndarray,
    act: Act,
    values_of: Callable[..., np.ndarray] | None,
    uniforms: Any,
    group_seeds: list[np.random.Generator],
    target: int,
    want_entropies: bool,
    scheme: TreeRollout | None = None,
) -> list[GroupRollout]:
    """``TrajectoryAdvantagePPO``'s rollout for every run of ``runs``: groups of ``n`` episodes
    from one reset seed until the run has ``target`` steps (see the module docstring).
    ``values_of`` (critic estimators only) gives the values bootstrapped at truncations.

    With ``scheme`` (:class:`routine_envs.tree_grpo.TreeRollout`) a group is sampled as trees:
    its members start alike (one reset seed: the same state and the same stream of the env's
    randomness), and a member copies its block leader's action until its tree branches (the
    branch decisions drawn from ``group_seeds``); a step a member copies is shared, not taken
    again, and is not counted towards ``target``."""
    n, rows = stepper.n, stepper.env_rows(runs)
    if scheme is not None:
        scheme.check_group_size(n)
        levels = np.zeros((len(runs), scheme.trees), dtype=np.int64)
    k, d = len(runs), stepper.obs.shape[1]
    live = np.zeros((k, n), dtype=bool)
    collecting = np.ones(k, dtype=bool)
    collected = np.zeros(k, dtype=np.int64)
    group = np.full(k, -1, dtype=np.int64)
    all_actions = np.zeros(int(stepper.bounds[-1]), dtype=np.int64)
    record: dict[str, list[np.ndarray]] = {
        name: []
        for name in (
            "obs",
            "actions",
            "log_probs",
            "values",
            "entropies",
            "rewards",
            "live",
            "scores",
        )
    }
    record.update({name: [] for name in (*INFO_KEYS, "group", "cut", "bootstrap", "masks")})
    while collecting.any():
        starting = np.flatnonzero(collecting & ~live.any(axis=1))
        if starting.size:
            seeds = np.array([int(group_seeds[j].integers(2**31 - 1)) for j in starting.tolist()])
            stepper.reset(np.repeat(seeds, n), stepper.env_rows(runs[starting]))
            live[starting] = True
            group[starting] += 1
            if scheme is not None:
                levels[starting] = 0
        obs = stepper.obs[rows].reshape(k, n, d)
        masks = None if stepper.masks is None else stepper.masks[rows].reshape(k, n, -1)
        going = np.flatnonzero(collecting)
        actions = np.zeros((k, n), dtype=np.int64)
        log_probs = np.zeros((k, n), dtype=np.float32)
        values = np.zeros((k, n), dtype=np.float32)
        entropies = np.zeros((k, n), dtype=np.float32)
        a, lp, v, h = act(
            runs[going],
            obs[going],
            None if masks is None else masks[going],
            uniforms.take(runs[going], n),
            stepper.info[keys.STATE_ID][rows].reshape(k, n)[going],
        )
        actions[going], log_probs[going] = a, lp
        if v is not None:
            values[going] = v
        if h is not None:
            entropies[going] = h
        own = live
        if scheme is not None:
            choices = np.full((k, n), stepper.num_actions) if masks is None else masks.sum(axis=2)
            actions, log_probs, values, entropies, own = _tree_step(
                scheme,
                levels,
                going,
                live,
                choices,
                entropies,
                group_seeds,
                (actions, log_probs, values, entropies),
            )
        record["obs"].append(obs)
        record["actions"].append(actions)
        record["log_probs"].append(log_probs)
        record["values"].append(values)
        record["entropies"].append(entropies)
        record["live"].append(live.copy())
        record["group"].append(group.copy())
        for name in INFO_KEYS:
            record[name].append(stepper.info[name][rows].reshape(k, n))
        if masks is not None:
            record["masks"].append(masks)
        all_actions[rows] = actions.reshape(-1)
        rewards, terminated, truncated, final, final_ids = stepper.step(all_actions)
        ended = (terminated | truncated)[rows].reshape(k, n) & live
        cut = ended & ~terminated[rows].reshape(k, n)
        bootstrap = np.zeros((k, n), dtype=np.float64)
        if values_of is not None and cut.any():
            final_obs = final[rows].reshape(k, n, d)
            v_final = values_of(runs, final_obs, _final_ids(stepper, rows, final_ids, cut))
            bootstrap = v_final.astype(np.float64)
        record["rewards"].append(rewards[rows].reshape(k, n))
        record["scores"].append(stepper.reached_score[rows].reshape(k, n))
        record["cut"].append(cut)
        record["bootstrap"].append(np.where(cut, bootstrap, 0.0))
        collected += own.sum(axis=1)
        live &= ~ended
        finished_group = collecting & ~live.any(axis=1)
        collecting &= ~(finished_group & (collected >= target))
    stacked = {name: np.stack(parts) for name, parts in record.items() if parts}
    return [
        _run_batch(stacked, j, want_entropies, values_of is not None, int(collected[j]))
        for j in range(k)
    ]


def _tree_step(
    scheme: TreeRollout,
    levels: np.ndarray,
    going: np.ndarray,
    live: np.ndarray,
    choices: np.ndarray,
    entropies: np.ndarray,
    group_seeds: list[np.random.Generator],
    sampled: tuple[np.ndarray, ...],
) -> tuple[np.ndarray, ...]:
    """One step of tree rollouts (``levels`` updated in place): the trees that branch here (by
    the state of each tree's first leaf: ``choices``, its valid actions, and its entropy),
    then every member's action (log-probability, value, entropy) its block leader's; the arrays
    as copied and the members that took a step of their own, all ``(k, n)``."""
    firsts = np.arange(scheme.trees) * scheme.leaves
    normalised = None
    if scheme.entropy_threshold is not None:
        widest = np.log(np.maximum(choices[:, firsts], 1))  # the entropy of a uniform choice
        with np.errstate(divide="ignore", invalid="ignore"):
            normalised = np.where(widest > 0, entropies[:, firsts] / widest, 0.0)
    uniforms = np.ones(levels.shape)  # a run not collecting never branches
    for j in going.tolist():
        uniforms[j] = group_seeds[j].random(scheme.trees)
    levels += scheme.branching(levels, live[:, firsts], normalised, uniforms)
    lead = scheme.leaders(levels)
    copied = tuple(np.take_along_axis(a, lead, axis=1) for a in sampled)
    own = live & (lead == np.arange(live.shape[1]))
    return (*copied, own)


def _run_batch(
    rec: dict[str, np.ndarray], j: int, want_entropies: bool, with_values: bool, taken: int
) -> GroupRollout:
    """Run ``j``'s steps of a recorded group rollout as an :class:`EpisodeBatch` (episodes in
    group, member order; each episode's steps in time order) that took ``taken`` env steps."""
    t, i = np.nonzero(rec["live"][:, j, :])
    g = rec["group"][t, j]
    order = np.lexsort((t, i, g))
    t, i, g = t[order], i[order], g[order]
    episode = g * rec["live"].shape[2] + i
    starts = np.flatnonzero(np.concatenate([[True], episode[1:] != episode[:-1]]))
    bounds = np.append(starts, len(t)).astype(np.int64)
    last = bounds[1:] - 1
    cut = rec["cut"][t[last], j, i[last]]
    scores = rec["scores"][t, j, i]  # of the state each step reached (privileged)
    batch = EpisodeBatch(
        rewards=rec["rewards"][t, j, i].astype(np.float64),
        episode_starts=bounds,
        groups=g[starts].astype(np.int64),
        actions=rec["actions"][t, j, i],
        critical=rec[keys.CRITICAL][t, j, i].astype(bool),
        state_ids=rec[keys.STATE_ID][t, j, i].astype(np.int64),
        anchors=rec[keys.ANCHOR][t, j, i].astype(np.int64),
        observations=rec["obs"][t, j, i],
        log_probs=rec["log_probs"][t, j, i].astype(np.float64),
        entropies=rec["entropies"][t, j, i].astype(np.float64) if want_entropies else None,
        values=rec["values"][t, j, i].astype(np.float64),
        turn_scores=None if np.isnan(scores).any() else scores,
        truncated=cut.astype(bool),
        bootstrap_values=rec["bootstrap"][t[last], j, i[last]]
        if with_values
        else np.zeros(len(starts)),
    )
    masks = rec["masks"][t, j, i] if "masks" in rec else None
    return GroupRollout(batch, masks, taken)
