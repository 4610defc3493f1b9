"""PPO's update for R runs at once: SB3's loss, minibatches, clipping and Adam, per run.

For each epoch every run shuffles its own rollout (its shuffling generator) and cuts it into
SB3's minibatches of ``batch_size`` (``RolloutBuffer.get``); a last minibatch of one step joins
the one before it (``TrajectoryAdvantagePPO``'s rule, only possible with variable-size episode
rollouts). Minibatch ``j`` of every run is processed together, padded to a fixed row count that
depends only on the hyperparameters (so a run's numbers do not depend on the batch); a run with
fewer minibatches skips the step (its Adam state is untouched).

The loss is SB3 PPO's: clipped surrogate on advantages normalised per minibatch (mean and the
unbiased std over the minibatch, ``+ 1e-8``; none for a minibatch of one step), unclipped value
loss (MSE to the return targets) times ``vf_coef``, minus ``ent_coef`` times the mean entropy;
MaskablePPO's masking (invalid logits set to ``-1e8``, their entropy terms 0). Its gradient is
written out by hand (the derivative of each term with respect to the logits and the value, then
:func:`baselines.lib.batched.mlp.backward`) and clipped to ``max_grad_norm`` per run.

Runs of a configuration with few decision states (a :class:`~baselines.lib.batched.tabular.
StateTable` in their :class:`Segment`) take :func:`table_minibatch_gradient`: the same gradient
with the networks run on the table's states instead of the minibatch's steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from baselines.lib.batched import mlp
from baselines.lib.batched.device import to_device
from baselines.lib.batched.optim import StackedAdam, clip_by_global_norm
from baselines.lib.batched.tabular import MASKED_LOGIT, StateTable, table_inputs

RUN_CHUNK = 16
"""Runs whose networks are run forward and backward in one batched pass (more at once only
adds memory traffic: measured on rb1's Doors settings, R = 40). The loss around them, small
element-wise work on ``(R, rows)`` and ``(R, K, A)`` arrays whose cost is the number of calls,
is computed once for every run of a segment."""


@dataclass
class RolloutData:
    """One rollout of R runs, padded: run ``r`` has ``sizes[r]`` steps; row ``N`` (the last of
    each run's block of ``N + 1``) is an all-zero padding row (mask all valid).

    Shapes: ``obs`` ``(R * (N + 1), obs_dim)`` float32, ``actions`` ``(R * (N + 1),)`` int64,
    ``old_log_prob``, ``advantages``, ``returns`` ``(R * (N + 1),)`` float32, ``masks``
    ``(R * (N + 1), A)`` bool or ``None``; ``table_rows`` ``(R * (N + 1),)`` int64: each
    step's row in its configuration's state table (0 where there is none), or ``None``.
    """

    obs: torch.Tensor
    actions: torch.Tensor
    old_log_prob: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    masks: torch.Tensor | None
    sizes: np.ndarray
    state_ids: torch.Tensor | None = None
    table_rows: torch.Tensor | None = None

    @property
    def stride(self) -> int:
        return int(self.obs.shape[0] // len(self.sizes))

    @classmethod
    def from_runs(
        cls,
        obs: list[np.ndarray],
        actions: list[np.ndarray],
        log_probs: list[np.ndarray],
        advantages: list[np.ndarray],
        returns: list[np.ndarray],
        masks: list[np.ndarray] | None,
        state_ids: list[np.ndarray] | None = None,
        device: torch.device | str = "cpu",
    ) -> RolloutData:
        """Pad per-run arrays (run ``r``: ``(N_r, ...)``) into one :class:`RolloutData` on
        ``device``."""
        device = torch.device(device)
        sizes = np.array([len(a) for a in actions], dtype=np.int64)
        stride = int(sizes.max()) + 1
        runs = len(sizes)

        def pad(parts: list[np.ndarray], dtype: type, fill: object = 0) -> np.ndarray:
            shape = (runs, stride, *parts[0].shape[1:])
            out = np.full(shape, fill, dtype=dtype)
            for r, part in enumerate(parts):
                out[r, : len(part)] = part
            return out.reshape(runs * stride, *parts[0].shape[1:])

        return cls(
            obs=to_device(pad(obs, np.float32), device),
            actions=to_device(pad(actions, np.int64), device),
            old_log_prob=to_device(pad(log_probs, np.float32), device),
            advantages=to_device(pad(advantages, np.float32), device),
            returns=to_device(pad(returns, np.float32), device),
            masks=None if masks is None else to_device(pad(masks, bool, True), device),
            sizes=sizes,
            state_ids=None if state_ids is None else to_device(pad(state_ids, np.int64), device),
        )


@dataclass(frozen=True)
class LossSettings:
    """SB3 PPO's loss and update settings (the protocol's hyperparameters)."""

    clip_range: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    normalize_advantage: bool
    n_epochs: int
    batch_size: int
    merge_single: bool
    """Merge a last minibatch of one step into the one before (episode rollouts)."""

    @property
    def rows(self) -> int:
        """Rows of every padded minibatch: ``batch_size`` (``+ 1`` when merging can occur)."""
        return self.batch_size + (1 if self.merge_single else 0)


@dataclass(frozen=True)
class Segment:
    """The runs ``[lo, hi)`` (rows of ``theta``) of one configuration, and its state table
    when their gradients are computed on it (``None``: per step)."""

    lo: int
    hi: int
    table: StateTable | None = None


def minibatches(size: int, settings: LossSettings, rng: np.random.Generator) -> list[np.ndarray]:
    """SB3's minibatches of one run's ``size`` steps for one epoch: a permutation cut every
    ``batch_size`` (a last piece of one step joined to the one before when ``merge_single``)."""
    perm = rng.permutation(size)
    bs = settings.batch_size
    starts = list(range(0, size, bs))
    if settings.merge_single and size > bs and size % bs == 1:
        starts = starts[:-1]
    ends = [*starts[1:], size]
    return [perm[a:b] for a, b in zip(starts, ends, strict=True)]


def update(
    theta: torch.Tensor,
    optimizer: StackedAdam,
    layout: mlp.MLPLayout,
    data: RolloutData,
    settings: LossSettings,
    shufflers: list[np.random.Generator],
    segments: list[Segment] | None = None,
) -> None:
    """``n_epochs`` of SB3 PPO's minibatch updates of every run (see the module docstring);
    ``segments`` (default: every run per step) say which runs use a state table."""
    runs, rows, stride = theta.shape[0], settings.rows, data.stride
    base = np.arange(runs, dtype=np.int64)[:, None] * stride
    pi, vf = layout.net("pi"), layout.net("vf")
    grad = torch.zeros_like(theta)
    parts = segments or [Segment(0, runs)]
    work = mlp.Workspace(theta.device)  # the minibatch steps' arrays, reused (kept in cache)
    for _ in range(settings.n_epochs):
        batches = [
            minibatches(int(n), settings, g) for n, g in zip(data.sizes, shufflers, strict=True)
        ]
        count = max(len(b) for b in batches)
        index = np.full((count, runs, rows), stride - 1, dtype=np.int64)  # the padding row
        taken = np.zeros((count, runs), dtype=np.int64)
        for r, pieces in enumerate(batches):
            for j, piece in enumerate(pieces):
                index[j, r, : len(piece)] = piece
                taken[j, r] = len(piece)
        index += base
        for j in range(count):
            active = taken[j] > 0
            grad.zero_()
            for seg in parts:
                lo, hi = seg.lo, seg.hi
                args = (data, index[j, lo:hi], taken[j, lo:hi], settings, work)
                if seg.table is None:
                    minibatch_gradient(theta[lo:hi], grad[lo:hi], pi, vf, *args)
                else:
                    table_minibatch_gradient(theta[lo:hi], grad[lo:hi], layout, seg.table, *args)
            clip_by_global_norm(grad, settings.max_grad_norm)
            optimizer.step(grad, active)


def chunked_forward(
    theta: torch.Tensor,
    layers: tuple[mlp.Layer, ...],
    x: torch.Tensor,
    work: mlp.Workspace | None = None,
    chunk: int = RUN_CHUNK,
) -> tuple[torch.Tensor, list[list[torch.Tensor]]]:
    """:func:`mlp.forward` of the runs ``theta`` ``(R, P)`` on ``x`` ``(R, B, in)``,
    :data:`RUN_CHUNK` runs at a time: the output ``(R, B, out)`` and each chunk's kept inputs
    (for :func:`chunked_backward`). Each run's numbers are those of a pass on its own."""
    outs, kept = [], []
    net = layers[0].net
    for k, lo in enumerate(range(0, theta.shape[0], chunk)):
        hi = lo + chunk
        out, inputs = mlp.forward(theta[lo:hi], layers, x[lo:hi], True, work, (net, k))
        outs.append(out)
        kept.append(inputs)
    return (outs[0] if len(outs) == 1 else torch.cat(outs)), kept


def chunked_backward(
    theta: torch.Tensor,
    grad: torch.Tensor,
    layers: tuple[mlp.Layer, ...],
    kept: list[list[torch.Tensor]],
    d_out: torch.Tensor,
    work: mlp.Workspace | None = None,
    chunk: int = RUN_CHUNK,
) -> None:
    """:func:`mlp.backward` chunk by chunk, after :func:`chunked_forward` (same ``chunk`` and
    ``work``; it uses up the kept inputs)."""
    net = layers[0].net
    for k, lo in enumerate(range(0, theta.shape[0], chunk)):
        hi = lo + chunk
        mlp.backward(theta[lo:hi], grad[lo:hi], layers, kept[k], d_out[lo:hi], work, (net, k))


def normalised_advantages(
    adv: torch.Tensor, valid: torch.Tensor, taken: np.ndarray, n: torch.Tensor
) -> torch.Tensor:
    """SB3's per-minibatch normalisation of ``adv`` ``(R, rows)`` (``valid`` its real steps,
    ``taken`` their counts, ``n`` the counts at least 1, ``(R, 1)``): mean and unbiased std
    over the real steps, ``+ 1e-8``; none for a minibatch of one step."""
    mean = adv.sum(1, keepdim=True) / n
    centred = torch.where(valid, adv - mean, 0.0)
    dof = to_device(np.maximum(taken - 1, 1).astype(np.float32), adv.device)[:, None]
    std = torch.sqrt((centred * centred).sum(1, keepdim=True) / dof)
    normalised = centred / (std + 1e-8)
    several = to_device(taken > 1, adv.device)[:, None]
    return torch.where(several, normalised, adv)  # SB3: no normalisation for one step


def minibatch_gradient(
    theta: torch.Tensor,
    grad: torch.Tensor,
    pi: tuple[mlp.Layer, ...],
    vf: tuple[mlp.Layer, ...],
    data: RolloutData,
    index: np.ndarray,
    taken: np.ndarray,
    settings: LossSettings,
    work: mlp.Workspace | None = None,
) -> None:
    """The gradient of SB3 PPO's loss on one padded minibatch of every run (``index``
    ``(R, rows)`` into ``data``'s flat rows, the first ``taken[r]`` real), into ``grad``."""
    runs, rows = index.shape
    flat = to_device(index.reshape(-1), theta.device)
    x = data.obs.index_select(0, flat).view(runs, rows, -1)
    actions = data.actions.index_select(0, flat).view(runs, rows, 1)
    old = data.old_log_prob.index_select(0, flat).view(runs, rows)
    adv = data.advantages.index_select(0, flat).view(runs, rows)
    valid = to_device(np.arange(rows)[None, :] < taken[:, None], theta.device)
    n = to_device(np.maximum(taken, 1).astype(np.float32), theta.device)[:, None]
    weight = valid / n  # d mean / d element, (R, rows)

    if settings.normalize_advantage:
        adv = normalised_advantages(adv, valid, taken, n)

    logits, pi_inputs = chunked_forward(theta, pi, x, work)
    masks = None
    if data.masks is not None:
        masks = data.masks.index_select(0, flat).view(runs, rows, -1)
        logits = logits.masked_fill(~masks, MASKED_LOGIT)
    log_p = torch.log_softmax(logits, dim=-1)
    p = torch.exp(log_p)
    log_p_a = log_p.gather(2, actions)[..., 0]
    ratio = torch.exp(log_p_a - old)
    clipped = torch.clamp(ratio, 1.0 - settings.clip_range, 1.0 + settings.clip_range)
    # torch.min's gradient flows through the smaller term (half each on ties, which sums to the
    # same); the clipped term has no gradient outside the clip range
    unclipped = adv * ratio <= adv * clipped
    d_log_p_a = -(adv * ratio) * unclipped * weight  # d policy loss / d log pi(a)
    p_log_p = p * log_p if masks is None else torch.where(masks, p * log_p, 0.0)
    entropy = -p_log_p.sum(-1, keepdim=True)
    # d(-ent_coef * mean H) / d logits = ent_coef * w * p * (log p + H); 0 where masked (p = 0)
    log_p_safe = log_p if masks is None else torch.where(masks, log_p, 0.0)
    d_logits = p * (log_p_safe + entropy) * (settings.ent_coef * weight)[..., None]
    # d log pi(a) / d logits = onehot(a) - p
    d_logits -= p * d_log_p_a[..., None]
    d_logits.scatter_add_(2, actions, d_log_p_a[..., None])
    chunked_backward(theta, grad, pi, pi_inputs, d_logits, work)

    if vf and settings.vf_coef != 0.0:
        returns = data.returns.index_select(0, flat).view(runs, rows)
        values, vf_inputs = chunked_forward(theta, vf, x, work)
        d_values = (values[..., 0] - returns) * (2.0 * settings.vf_coef) * weight
        chunked_backward(theta, grad, vf, vf_inputs, d_values[..., None], work)


def table_minibatch_gradient(
    theta: torch.Tensor,
    grad: torch.Tensor,
    layout: mlp.MLPLayout,
    table: StateTable,
    data: RolloutData,
    index: np.ndarray,
    taken: np.ndarray,
    settings: LossSettings,
    work: mlp.Workspace | None = None,
) -> None:
    """:func:`baselines.lib.batched.update.minibatch_gradient` on the state table: the same
    gradient of SB3 PPO's loss on one padded minibatch of every run (``index`` ``(R, rows)``
    into ``data``'s flat rows, the first ``taken[r]`` real) into ``grad``, with the networks
    run on the ``K_pad`` table rows (``data.table_rows`` gives each step's row) instead of the
    steps."""
    runs, rows = index.shape
    size, num_actions = table.size, layout.num_actions
    flat = to_device(index.reshape(-1), theta.device)
    state = data.table_rows.index_select(0, flat).view(runs, rows)
    actions = data.actions.index_select(0, flat).view(runs, rows)
    old = data.old_log_prob.index_select(0, flat).view(runs, rows)
    adv = data.advantages.index_select(0, flat).view(runs, rows)
    valid = to_device(np.arange(rows)[None, :] < taken[:, None], theta.device)
    n = to_device(np.maximum(taken, 1).astype(np.float32), theta.device)[:, None]
    weight = valid / n  # d mean / d step, (R, rows)
    if settings.normalize_advantage:
        adv = normalised_advantages(adv, valid, taken, n)

    x = table_inputs(table, runs)
    pi, vf = layout.net("pi"), layout.net("vf")
    logits, pi_inputs = chunked_forward(theta, pi, x, work)  # (R, K_pad, A)
    masks = table.masks
    if masks is not None:
        logits = logits.masked_fill(~masks, MASKED_LOGIT)
    log_p = torch.log_softmax(logits, dim=-1)
    p = torch.exp(log_p)
    pair = state * num_actions + actions  # (R, rows) into the flat (K_pad * A) of a run
    log_p_a = log_p.view(runs, -1).gather(1, pair)
    ratio = torch.exp(log_p_a - old)
    clipped = torch.clamp(ratio, 1.0 - settings.clip_range, 1.0 + settings.clip_range)
    unclipped = adv * ratio <= adv * clipped
    d_log_p_a = -(adv * ratio) * unclipped * weight  # d policy loss / d log pi(a), per step
    # the per-step terms summed per state: sum_i d_i onehot(a_i), and the state's weight
    device = theta.device
    per_pair = torch.zeros(runs, size * num_actions, device=device).scatter_add_(1, pair, d_log_p_a)
    per_pair = per_pair.view(runs, size, num_actions)
    per_state = torch.zeros(runs, size, device=device).scatter_add_(1, state, weight)
    p_log_p = p * log_p if masks is None else torch.where(masks, p * log_p, 0.0)
    entropy = -p_log_p.sum(-1, keepdim=True)
    log_p_safe = log_p if masks is None else torch.where(masks, log_p, 0.0)
    d_logits = p * (log_p_safe + entropy) * (settings.ent_coef * per_state)[..., None]
    d_logits -= p * per_pair.sum(-1, keepdim=True)
    d_logits += per_pair
    chunked_backward(theta, grad, pi, pi_inputs, d_logits, work)

    if vf and settings.vf_coef != 0.0:
        returns = data.returns.index_select(0, flat).view(runs, rows)
        target = torch.zeros(runs, size, device=device).scatter_add_(1, state, weight * returns)
        values, vf_inputs = chunked_forward(theta, vf, x, work)
        d_values = (values[..., 0] * per_state - target) * (2.0 * settings.vf_coef)
        chunked_backward(theta, grad, vf, vf_inputs, d_values[..., None], work)
