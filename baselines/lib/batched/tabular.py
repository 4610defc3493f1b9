"""The networks on every decision state at once, for configurations with few states.

The environments the batched trainer accepts are their exact models: an observation is a
function of the state id. Where a configuration has fewer decision states ``K`` than a rollout
has steps, one forward pass over the ``K`` states (padded to :data:`TABLE_ALIGN` rows) gives
the policy and value of every state for the whole rollout (the parameters do not change during
it), and the steps only look them up. Where ``K`` is at most a minibatch's row count, the
update too runs the networks on the ``K`` states instead of the minibatch's steps: the loss is
a sum over steps of terms that depend on a step's state's outputs, so its gradient with respect
to those outputs is the sum, over the steps at each state, of the per-step gradients
(:func:`table_minibatch_gradient`: per-step terms gathered from and scattered into ``(K, A)``
arrays), followed by one backward pass over the ``K`` states. The same numbers as the per-step
computation up to rounding (``tests/test_batched.py`` checks the gradient against it).

Which path a configuration takes depends only on its ``K`` and the hyperparameters, never on
the other runs of a batch, so runs stay bit-identical alone and in a batch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from baselines.lib.batched import mlp
from baselines.lib.batched.device import to_host

TABLE_ALIGN = 32
"""Rows of a state table are padded to a multiple of this (element-wise kernels then see
every run's block at the same vector alignment)."""
MASKED_LOGIT = -1e8
"""sb3-contrib's ``MaskableCategorical`` logit for an invalid action."""


@dataclass(frozen=True)
class StateTable:
    """The decision states of one configuration as network inputs.

    Attributes:
        ids: decision state ids ``(K,)`` (``decision_observations()``' order).
        row_of: the table row of every state id ``(num_states,)`` int64, ``-1`` where the
            state is not a decision state.
        obs: observations ``(K_pad, d)`` float32, zero rows after the ``K`` real ones.
        masks: action masks ``(K_pad, A)`` bool (padding rows all valid), or ``None``.
    """

    ids: np.ndarray
    row_of: np.ndarray
    obs: torch.Tensor
    masks: torch.Tensor | None

    @property
    def size(self) -> int:
        """Rows of the padded table, ``K_pad``."""
        return int(self.obs.shape[0])

    @classmethod
    def of(cls, ids: np.ndarray, observations: np.ndarray, masks: np.ndarray | None,
           num_states: int) -> StateTable:  # fmt: skip
        """From :meth:`baselines.lib.batched.envs.EnvConfig.decision_states`."""
        k = len(ids)
        size = -(-max(k, 1) // TABLE_ALIGN) * TABLE_ALIGN
        obs = np.zeros((size, observations.shape[1]), dtype=np.float32)
        obs[:k] = observations
        table_masks = None
        if masks is not None:
            table_masks = np.ones((size, masks.shape[1]), dtype=bool)
            table_masks[:k] = masks
        row_of = np.full(num_states, -1, dtype=np.int64)
        row_of[ids] = np.arange(k)
        return cls(
            ids=np.asarray(ids),
            row_of=row_of,
            obs=torch.from_numpy(obs),
            masks=None if table_masks is None else torch.from_numpy(table_masks),
        )

    def on(self, device: torch.device) -> StateTable:
        """The table with its network inputs on ``device`` (itself where they are)."""
        if self.obs.device == device:
            return self
        masks = None if self.masks is None else self.masks.to(device)
        return dataclasses.replace(self, obs=self.obs.to(device), masks=masks)

    def rows(self, state_ids: np.ndarray) -> np.ndarray:
        """The table rows of ``state_ids`` (any shape); ``RuntimeError`` for a state id that
        is not a decision state (a step can only be taken at one)."""
        rows = self.row_of[state_ids]
        if rows.size and rows.min() < 0:
            bad = int(np.asarray(state_ids).reshape(-1)[np.argmin(rows.reshape(-1))])
            raise RuntimeError(f"state_id {bad} is not a decision state of this configuration")
        return rows


def table_inputs(table: StateTable, runs: int) -> torch.Tensor:
    """The table's observations for ``runs`` runs, ``(runs, K_pad, d)`` (a broadcast view)."""
    return table.obs.expand(runs, *table.obs.shape)


def table_policy(
    theta: torch.Tensor, layout: mlp.MLPLayout, table: StateTable, values: bool, entropy: bool
) -> dict[str, np.ndarray]:
    """The policy of the runs ``theta`` ``(R, P)`` on every row of ``table`` (on ``theta``'s
    device), on the host: ``log_p`` and ``p`` ``(R, K_pad, A)`` float32, and when asked
    ``values`` and ``entropy`` ``(R, K_pad)``."""
    x = table_inputs(table, theta.shape[0])
    out: dict[str, np.ndarray] = {}
    with torch.no_grad():
        logits, _ = mlp.forward(theta, layout.net("pi"), x)
        if table.masks is not None:
            logits = logits.masked_fill(~table.masks, MASKED_LOGIT)
        log_p = torch.log_softmax(logits, dim=-1)
        p = torch.exp(log_p)
        out["log_p"], out["p"] = to_host(log_p), to_host(p)
        if values:
            out["values"] = to_host(mlp.forward(theta, layout.net("vf"), x)[0][..., 0])
        if entropy:
            plogp = p * log_p
            if table.masks is not None:
                plogp = torch.where(table.masks, plogp, 0.0)
            out["entropy"] = to_host(-plogp.sum(-1))
    return out
