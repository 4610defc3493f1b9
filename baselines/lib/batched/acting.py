"""The MLP policy during one rollout: actions, log-probabilities, values and entropies of the
active runs at their sub-environments' states.

The parameters do not change during a rollout, so :class:`RolloutPolicy` prepares them once:
for a configuration with a :class:`~baselines.lib.batched.tabular.StateTable`, the policy and
value of every decision state (one forward pass; a step then only looks its state's row up);
for the others, each network's weights copied out contiguously (:class:`mlp.FrozenNet`) for the
per-step forward passes. Runs are contiguous by configuration (the trainer orders them so), and
every call splits its runs into those segments.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

from baselines.lib.batched import mlp
from baselines.lib.batched.device import to_device, to_host
from baselines.lib.batched.tabular import MASKED_LOGIT, StateTable, table_policy


def sample_actions(probs: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: for each row of ``probs`` ``(..., A)`` the first action whose
    cumulative probability (float64) exceeds its uniform; the last action of positive
    probability where rounding leaves the uniform above the total."""
    cdf = np.cumsum(probs.astype(np.float64), axis=-1)
    a = (cdf <= uniforms[..., None]).sum(axis=-1)
    over = a >= probs.shape[-1]
    if over.any():
        last = probs.shape[-1] - 1 - np.argmax(probs[..., ::-1] > 0, axis=-1)
        a = np.where(over, last, a)
    return a.astype(np.int64)


def config_segments(config_of: np.ndarray, runs: np.ndarray) -> list[tuple[int, int, int]]:
    """``(lo, hi, configuration)`` of the contiguous positions of each configuration in
    ``runs`` (sorted by configuration; ``config_of``: the configuration of every run)."""
    configs = config_of[runs]
    cuts = [0, *(np.flatnonzero(np.diff(configs)) + 1).tolist(), len(runs)]
    return [(a, b, int(configs[a])) for a, b in itertools.pairwise(cuts)]


@dataclass
class _Part:
    """One configuration's active runs, rows ``[lo, hi)`` of ``theta``: its state table's
    arrays (``(hi - lo, K_pad, ...)``) or its frozen networks."""

    lo: int
    hi: int
    table: StateTable | None
    arrays: dict[str, np.ndarray]
    nets: dict[str, mlp.FrozenNet]


class RolloutPolicy:
    """The policy of the active runs for one rollout.

    Args:
        theta: the active runs' parameters ``(R, P)`` (rows in the order of ``active``).
        active: the runs' indices ``(R,)``, sorted, contiguous by configuration.
        config_of: the configuration of every run of the batch.
        layout: the MLP layout.
        tables: each configuration's state table, or ``None`` for per-step forward passes.
        critic: whether there is a value network; entropies: whether to give entropies.
    """

    def __init__(
        self,
        theta: torch.Tensor,
        active: np.ndarray,
        config_of: np.ndarray,
        layout: mlp.MLPLayout,
        tables: list[StateTable | None],
        critic: bool,
        entropies: bool,
    ) -> None:
        self.active, self.config_of, self.layout = active, config_of, layout
        self.theta_device = theta.device
        self.critic, self.entropies = critic, entropies
        self.parts: dict[int, _Part] = {}
        configs = config_of[active]
        for c in np.unique(configs).tolist():
            rows = np.flatnonzero(configs == c)
            lo, hi = int(rows[0]), int(rows[-1]) + 1
            table = tables[c]
            arrays: dict[str, np.ndarray] = {}
            nets: dict[str, mlp.FrozenNet] = {}
            if table is not None:
                arrays = table_policy(theta[lo:hi], layout, table, critic, entropies)
            else:
                nets["pi"] = mlp.FrozenNet.of(theta[lo:hi], layout.net("pi"))
                if critic:
                    nets["vf"] = mlp.FrozenNet.of(theta[lo:hi], layout.net("vf"))
            self.parts[c] = _Part(lo, hi, table, arrays, nets)

    def _segments(self, runs: np.ndarray) -> list[tuple[slice, _Part, np.ndarray]]:
        """``(positions in runs, part, rows of the part)`` for each configuration of ``runs``
        (sorted)."""
        out = []
        for a, b, c in config_segments(self.config_of, runs):
            part = self.parts[c]
            rows = np.searchsorted(self.active, runs[a:b]) - part.lo
            out.append((slice(a, b), part, rows))
        return out

    @staticmethod
    def _net(part: _Part, name: str, rows: np.ndarray) -> mlp.FrozenNet:
        net = part.nets[name]
        if len(rows) == part.hi - part.lo:  # every run of the part (rows are sorted)
            return net
        return net.rows(to_device(rows, net.weights[0].device))

    def act(
        self,
        runs: np.ndarray,
        obs: np.ndarray,
        masks: np.ndarray | None,
        u: np.ndarray,
        state_ids: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Actions, log-probabilities, values (``None`` without a critic) and entropies
        (``None`` unless asked for) of ``runs`` at ``obs`` ``(R, n, d)``, each ``(R, n)``;
        ``u`` ``(R, n)`` are the uniforms of the draws."""
        k, n = state_ids.shape
        actions = np.zeros((k, n), dtype=np.int64)
        log_prob = np.zeros((k, n), dtype=np.float32)
        values = np.zeros((k, n), dtype=np.float32) if self.critic else None
        entropy = np.zeros((k, n), dtype=np.float32) if self.entropies else None
        for where, part, rows in self._segments(runs):
            if part.table is not None:
                size = part.table.size
                flat = (rows[:, None] * size + part.table.rows(state_ids[where])).reshape(-1)
                a = part.arrays
                num_actions = a["p"].shape[-1]
                p = a["p"].reshape(-1, num_actions)[flat]
                chosen = sample_actions(p, u[where].reshape(-1))
                actions[where] = chosen.reshape(-1, n)
                log_prob[where] = a["log_p"].reshape(-1, num_actions)[flat, chosen].reshape(-1, n)
                if values is not None:
                    values[where] = a["values"].reshape(-1)[flat].reshape(-1, n)
                if entropy is not None:
                    entropy[where] = a["entropy"].reshape(-1)[flat].reshape(-1, n)
                continue
            with torch.no_grad():  # a step's crossings: its observations in, its outputs out
                device = self.theta_device
                x = to_device(obs[where], device)
                logits = self._net(part, "pi", rows)(x)
                if masks is not None:
                    logits = logits.masked_fill(~to_device(masks[where], device), MASKED_LOGIT)
                log_p = torch.log_softmax(logits, dim=-1)
                p = torch.exp(log_p)
                chosen = sample_actions(to_host(p), u[where])
                actions[where] = chosen
                log_prob[where] = to_host(
                    log_p.gather(2, to_device(chosen, device)[..., None])[..., 0]
                )
                if values is not None:
                    values[where] = to_host(self._net(part, "vf", rows)(x)[..., 0])
                if entropy is not None:
                    plogp = p * log_p
                    if masks is not None:
                        plogp = torch.where(to_device(masks[where], device), plogp, 0.0)
                    entropy[where] = to_host(-plogp.sum(-1))
        return actions, log_prob, values, entropy

    def values(
        self, runs: np.ndarray, obs: np.ndarray, state_ids: np.ndarray | None = None
    ) -> np.ndarray:
        """Values ``(R, k)`` of ``runs`` at ``obs`` ``(R, k, d)`` (the states ``state_ids``
        ``(R, k)``: needed for runs with a state table)."""
        out = np.zeros(obs.shape[:2], dtype=np.float32)
        for where, part, rows in self._segments(runs):
            if part.table is not None:
                if state_ids is None:
                    raise ValueError("values of a state table need the state ids")
                size = part.table.size
                flat = rows[:, None] * size + part.table.rows(state_ids[where])
                out[where] = part.arrays["values"].reshape(-1)[flat]
                continue
            x = to_device(np.ascontiguousarray(obs[where], dtype=np.float32), self.theta_device)
            with torch.no_grad():
                out[where] = to_host(self._net(part, "vf", rows)(x)[..., 0])
        return out

    def decision_probs(self, runs: np.ndarray) -> np.ndarray | None:
        """The action probabilities ``(R, K, A)`` of ``runs`` (one configuration with a state
        table) on its decision states, as the rollout samples them; ``None`` without a table."""
        ((_, part, rows),) = self._segments(runs)
        if part.table is None:
            return None
        return part.arrays["p"][rows, : len(part.table.ids)]
