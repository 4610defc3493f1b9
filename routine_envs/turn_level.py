"""The turn-level credit assignment that multi-turn LLM trainers adopted in 2025-26, as
estimators of :mod:`routine_envs.credit` (registered there by name: ``discounted_turn``,
``turn_index_norm``, ``turn_credit``).

A *turn* here is a step of the environment (one tool call, one reply). Each class cites the
code it follows; the tests pin each to a batch computed by hand.

- :class:`DiscountedTurn`: every turn's advantage is its discounted return-to-go, normalised
  over all the turns of its group (verifiers' stepwise advantages; PipelineRL's level 1).
- :class:`TurnIndexNorm`: per-turn rewards normalised within the group at each turn index and
  summed over the turns to come (MT-GRPO's construction, as verl's RFC #7244 ports it), and with
  ``fix=True`` a variant whose baseline does not depend on the episode's own length (the kind
  of fix RFC #7244 proposes).
- :class:`TurnCredit`: prime-rl's turn-credit shaping: per-turn state scores (the privileged
  ``info["turn_score"]``) turned into progress, smeared backwards, on top of GRPO.

The exact expected gradient of :class:`TurnIndexNorm` (its bias when the policy controls the
number of turns) is :func:`routine_envs.turn_bias.turn_index_norm_gradient`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from routine_envs.credit import Advantages, FromContext, check_batch
from routine_envs.episodes import EpisodeBatch


def group_mean_std(
    values: np.ndarray, keys: np.ndarray, members: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per element of ``values``, the mean and the population std of the ``values`` sharing its
    key, over the elements where ``members`` (all by default); an element whose key has no
    member gets mean and std 0. All arrays have one shape; ``keys`` non-negative ints."""
    flat_keys, flat = keys.ravel(), values.ravel().astype(np.float64)
    inside = np.ones(flat.shape, bool) if members is None else members.ravel()
    size = int(flat_keys.max()) + 1 if flat_keys.size else 0
    counts = np.bincount(flat_keys[inside], minlength=size)
    sums = np.bincount(flat_keys[inside], weights=flat[inside], minlength=size)
    means = np.divide(sums, counts, out=np.zeros(size), where=counts > 0)
    squares = np.bincount(
        flat_keys[inside], weights=(flat[inside] - means[flat_keys[inside]]) ** 2, minlength=size
    )
    std = np.sqrt(np.divide(squares, counts, out=np.zeros(size), where=counts > 0))
    return means[flat_keys].reshape(values.shape), std[flat_keys].reshape(values.shape)


def _check_unit(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _check_eps(value: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
        raise ValueError(f"eps must be a number >= 0, got {value!r}")
    return float(value)


def reverse_cumsum(table: np.ndarray, weight: float = 1.0) -> np.ndarray:
    """``out[:, t] = sum_{k >= t} weight^(k - t) table[:, k]`` along the last axis, (M, T)."""
    out = np.zeros_like(table, dtype=np.float64)
    running = np.zeros(table.shape[0])
    for t in range(table.shape[1] - 1, -1, -1):
        running = table[:, t] + weight * running
        out[:, t] = running
    return out


@dataclass
class DiscountedTurn(FromContext):
    """Stepwise advantages: ``A_t = (G_t - mean(G)) / (std(G) + eps)``, ``G_t = sum_{k >= t}
    gamma^(k - t) r_k`` the discounted return-to-go of turn ``t``, mean and population std over
    *every turn of every episode of the group* (a longer episode weighs more in its group's
    baseline); without ``normalize_std`` ``A_t = G_t - mean(G)``.

    Source: verifiers' stepwise advantages (PrimeIntellect-ai/verifiers PR #536, after "Kevin:
    Multi-Turn RL for Generating CUDA Kernels", arXiv 2507.11948): each assistant turn is a
    training sample with ``R_t = sum_{i >= t} gamma^(i - t) r_i`` ("sum" aggregation), and
    ``(R - mean) / (np.std + 1e-8)`` over all the samples of a prompt's rollouts; PipelineRL's
    level 1, sparse per-turn Monte-Carlo returns from the terminal reward (ServiceNow/PipelineRL
    PR #135). With ``gamma = 1`` and sparse rewards ``G_t = R_i`` on every turn: on a group whose
    episodes have equal lengths this is ``trajectory_mc`` (``normalize_std`` and ``eps`` alike);
    with unequal lengths the baseline is the length-weighted mean of the returns. Truncated
    episodes add ``gamma^(T - t)`` times their bootstrap value (0 for a critic-free trainer).
    """

    gamma: float = 1.0
    normalize_std: bool = True
    eps: float = 1e-8
    name: ClassVar[str] = "discounted_turn"
    requires: ClassVar[frozenset[str]] = frozenset()
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.gamma = _check_unit("gamma", self.gamma)
        self.eps = _check_eps(self.eps)

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        to_go = batch.returns_to_go(self.gamma)
        group_of_step = np.repeat(batch.group_index(), batch.lengths)
        mean, std = group_mean_std(to_go, group_of_step)
        adv = to_go - mean
        return Advantages(adv / (std + self.eps) if self.normalize_std else adv)


@dataclass
class TurnIndexNorm(FromContext):
    """Per-turn-index normalisation (MT-GRPO): a turn's advantage is the sum, over the turns to
    come of its episode, of each turn's reward centred on the group's mean at that turn index.

    The last turn's reward is the episode's *outcome* ``O_i``, every earlier one an
    *intermediate* reward ``r_{i,k}`` (a cost, a tool-call or format reward). With ``T_i`` the
    episode's turns, ``I_k`` the episodes of the group for which turn ``k`` is intermediate
    (``k < T_j - 1``) and ``b_k`` the mean of their ``r_{j,k}``,

        A_{i,t} = sum_{k = t}^{T_i - 2} (r_{i,k} - b_k) + (O_i - mean_group(O)).

    The baseline ``sum_k b_k`` has as many terms as the episode has turns left, so it depends on
    the episode's own stopping turn: where the policy chooses when to stop it is
    action-dependent and the gradient is biased by exactly the accumulated group means of the
    intermediate rewards, a hidden bonus ``-b_k`` on every "take another turn" (closed form:
    :func:`routine_envs.turn_bias.turn_index_norm_gradient`; derivation in docs/estimators.md).

    ``fix=True``, the variant with a baseline that does not depend on the episode's length:
    every episode of the group counts at every turn index up to the group's last (an episode
    whose turn ``k`` is not intermediate counts as reward 0), and the sum runs to that last index,

        A_{i,t} = G_{i,t} - mean_group(G^int_{., t}) - mean_group(O),

    ``G_{i,t}`` the return-to-go and ``G^int_{j,t}`` the intermediate rewards of ``j`` from turn
    ``t`` on (0 once ``j`` stopped): a baseline of the turn index and the other episodes, whose
    expected gradient is exactly ``(G - 1) / G`` times the policy gradient (as ``trajectory_mc``'s;
    the group mean includes the episode itself).

    ``normalize_std`` divides each centred term by the population std of its group of terms
    (plus ``eps``), as MT-GRPO does; the closed forms hold for the mean-only default.

    Sources: "Reinforcing Multi-Turn Reasoning in LLM Agents via Turn-Level Credit Assignment"
    (Zeng et al., arXiv 2505.11821; MT-GRPO: ``A_{i,1} = Â^T_i + Â^O_i`` with the turn reward
    and the outcome each normalised over the group), the per-turn-index port and its bias in
    verl's RFC #7244 (https://github.com/verl-project/verl/issues/7244), atropos PR #162.
    With rewards only at the end (Diluted Doors) both variants are ``trajectory_mc``.
    """

    fix: bool = False
    normalize_std: bool = False
    eps: float = 1e-6
    name: ClassVar[str] = "turn_index_norm"
    requires: ClassVar[frozenset[str]] = frozenset()
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.eps = _check_eps(self.eps)

    @property
    def label(self) -> str:
        """How results name this estimator: the fixed variant says so."""
        return f"{self.name} (fix)" if self.fix else self.name

    def expected_gradient(self, env: Any, policy: Any, group_size: int | None) -> np.ndarray | None:
        """The exact ``E g`` of this estimator's gradient estimate for batches of one group of
        ``group_size`` episodes under the tabular ``policy`` (``None`` with ``normalize_std``:
        no closed form); the lab prints the bias it implies beside the measured one
        (:func:`routine_envs.turn_bias.turn_index_norm_gradient`)."""
        if self.normalize_std:
            return None
        from routine_envs.turn_bias import turn_index_norm_gradient  # it imports the SNR lab

        return turn_index_norm_gradient(env, policy, group_size, fix=self.fix)

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        rewards = batch.padded(np.asarray(batch.rewards, dtype=np.float64))
        lengths, rows = batch.lengths, np.arange(batch.num_episodes)
        width = rewards.shape[1]
        group = batch.group_index()
        outcome = rewards[rows, lengths - 1]
        mean, std = group_mean_std(outcome, group)
        outcome_adv = outcome - mean
        if self.normalize_std:
            outcome_adv = outcome_adv / (std + self.eps)
        intermediate = np.arange(width)[None, :] < (lengths - 1)[:, None]
        values = np.where(intermediate, rewards, 0.0)
        keys = group[:, None] * width + np.arange(width)[None, :]
        members = np.ones_like(intermediate) if self.fix else intermediate
        mean, std = group_mean_std(values, keys, members)
        centred = values - mean
        if self.normalize_std:
            centred = centred / (std + self.eps)
        centred = np.where(members, centred, 0.0)
        # fix: the sum runs past the episode's end (its own terms are -mean there); natural:
        # members are the episode's intermediate turns only
        adv = reverse_cumsum(centred) + outcome_adv[:, None]
        return Advantages(batch.unpad(adv))


def progress_deltas(scores: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """prime-rl's ``deltas``: per-turn progress ``phi_t - phi_{t-1}`` of the scores after each
    turn, the first turn 0 (its score is the starting point); ``(M, T)`` padded, 0 past the
    end."""
    out = np.zeros_like(scores, dtype=np.float64)
    out[:, 1:] = scores[:, 1:] - scores[:, :-1]
    out[np.arange(scores.shape[1])[None, :] >= lengths[:, None]] = 0.0
    return out


def smear(progress: np.ndarray, gamma: float) -> np.ndarray:
    """prime-rl's ``smear``: the progress of turn ``k`` (1-based) spread over turns ``j <= k``
    with weights ``gamma^(k - j) / z_k``, ``z_k = sum_{d < k} gamma^d`` (``k`` at
    ``gamma = 1``), so each turn's progress is given out exactly once; returns each turn's
    credit ``c_j = sum_{k >= j} gamma^(k - j) progress_k / z_k``, shape ``(M, T)``."""
    turns = np.arange(1, progress.shape[1] + 1, dtype=np.float64)
    z = turns if gamma == 1.0 else (1.0 - gamma**turns) / (1.0 - gamma)
    return reverse_cumsum(progress / z[None, :], gamma)


@dataclass
class TurnCredit(FromContext):
    """Turn-credit shaping: GRPO whose within-episode credit follows per-turn state scores.

    With ``phi_t`` the score of the state after turn ``t`` (``batch.turn_scores``, the
    environment's ``info["turn_score"]``: privileged, a verifier's view), the episode's
    progress per turn is ``d_1 = 0``, ``d_t = phi_t - phi_{t-1}`` (a turn earns for changing
    the state, not for being in a good one; the first turn's score is the starting point), its
    credit ``c_t`` the progress smeared backwards (:func:`smear`: weights ``gamma^d`` at
    distance ``d``, normalised to sum to 1), and

        A_{i,t} = level_i + beta (c_{i,t} - mean_t c_{i,t}),
        level_i = (R_i + phi_T - phi_1) - mean_group(R + phi_T - phi_1),

    so the shaping moves credit between an episode's turns (it sums to 0 over them) and the
    level is GRPO's over the return plus the net progress (no std). A group of one trains on
    the shaping alone.

    Source: prime-rl's ``turn_credit`` algorithm (PrimeIntellect-ai/prime-rl PR #3282,
    ``src/prime_rl/orchestrator/algo/turn_credit.py``: ``deltas``, ``smear``, ``a = A + beta
    (c_turn - c_mean)`` with the token-weighted mean; here each turn is one step, weight 1);
    the defaults ``gamma = 0.9``, ``beta = 1`` are its tests'. Its optional GRPO length penalty
    is not reproduced.
    """

    gamma: float = 0.9
    beta: float = 1.0
    name: ClassVar[str] = "turn_credit"
    requires: ClassVar[frozenset[str]] = frozenset({"turn_scores"})
    trains_critic: ClassVar[bool] = False
    group_independent: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.gamma = _check_unit("gamma", self.gamma)
        if not isinstance(self.beta, (int, float)) or isinstance(self.beta, bool):
            raise ValueError(f"beta must be a number, got {self.beta!r}")
        if not np.isfinite(self.beta):
            raise ValueError(f"beta must be finite, got {self.beta!r}")

    @property
    def label(self) -> str:
        """How results name this estimator: it reads a privileged field, and says so."""
        return f"{self.name} (privileged: turn_score)"

    def __call__(self, batch: EpisodeBatch) -> Advantages:
        check_batch(self, batch)
        scores = batch.padded(np.asarray(batch.turn_scores, dtype=np.float64))
        lengths, rows = batch.lengths, np.arange(batch.num_episodes)
        progress = progress_deltas(scores, lengths)
        net = scores[rows, lengths - 1] - scores[:, 0]
        shaped = batch.episode_returns() + net
        mean, _ = group_mean_std(shaped, batch.group_index())
        level = shaped - mean
        credits = smear(progress, self.gamma)
        live = np.arange(scores.shape[1])[None, :] < lengths[:, None]
        centre = np.where(live, credits, 0.0).sum(axis=1) / lengths
        adv = level[:, None] + self.beta * (credits - centre[:, None])
        return Advantages(batch.unpad(adv))
