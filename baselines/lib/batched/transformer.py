"""The paper's policy as an option (``policy: transformer``): a causal Transformer over the turn
history, R runs batched the same way as the MLP (stacked parameters, batched products, per-run
Adam, clipping, shuffling and seed streams).

Architecture (``policy_kwargs: {transformer: {...}}`` overrides the sizes): every observation of
the episode so far is a token (a linear embedding plus a learned position embedding), then
``blocks`` pre-norm blocks (causal multi-head self-attention with ``heads`` heads of width
``width / heads``, then a ``ff``-wide GELU feed-forward, each with a residual), a final layer
norm, and linear policy and value heads on the last token. Defaults: 2 blocks, width 32, 2
heads, feed-forward 128 (about 30K parameters with DilutedDoors-v1's embeddings). Initialisation:
PyTorch's ``nn.Linear`` default (Kaiming uniform) scaled as SB3 scales its heads (policy head
0.01, value head 1), layer norms at identity, position embeddings ``N(0, 0.02)``.

How the history is fed: in the environments where it applies every state has exactly one
history (its state graph is a tree from the start: DilutedDoors, RoutineGrid), so the policy is
a function of the state id, and one causal pass over the root-to-leaf paths of the tree gives the
policy and value of every decision state at once (the output at position ``t`` of a path sees
exactly the path's first ``t + 1`` observations). Collection reads that table (the policy is
fixed during a rollout), the update recomputes it with autograd for every minibatch and takes the
minibatch's steps from it, and the evaluation is exact, as for the MLP. An environment where
states merge or loop (CodeFix: invalid actions are self-loops) is refused with a ``ValueError``:
there the state does not determine the history, and per-episode history buffers would be needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from baselines.lib.batched.acting import sample_actions
from baselines.lib.batched.envs import EnvConfig
from baselines.lib.batched.optim import clip_by_global_norm
from baselines.lib.batched.trainer import BatchedTrainer
from baselines.lib.batched.update import RolloutData, minibatches

DEFAULTS = {"blocks": 2, "width": 32, "heads": 2, "ff": 128}
"""The paper's sizes."""


@dataclass(frozen=True)
class HistoryTree:
    """The root-to-leaf paths of an environment whose states each have one history.

    Attributes:
        paths: state ids along each path, shape ``(num_paths, T)`` (padded with the last id).
        lengths: real length of each path, ``(num_paths,)``.
        where: for every state id, ``(path, position)`` of one occurrence (``-1`` if none),
            shape ``(num_states, 2)``.
        observations: the observation of every state id, ``(num_states, obs_dim)`` float32.
    """

    paths: np.ndarray
    lengths: np.ndarray
    where: np.ndarray
    observations: np.ndarray

    @classmethod
    def of(cls, config: EnvConfig) -> HistoryTree:
        base = config.env.unwrapped
        model = base.model()
        decide = model.decision_states
        step = (model.next_state != model.state) & (model.prob > 0)
        if np.any((model.next_state == model.state) & ~model.terminated & (model.prob > 0)):
            raise ValueError(
                f"policy: transformer needs states that each have one history; "
                f"{config.env_id} has self-loops (a state can repeat): use policy: mlp"
            )
        src, dst = model.state[step], model.next_state[step]
        pairs = np.unique(np.stack([src, dst]), axis=1)
        parents = np.bincount(pairs[1], minlength=model.num_states)
        if parents.max(initial=0) > 1 or np.count_nonzero(model.initial) != 1:
            raise ValueError(
                f"policy: transformer needs states that each have one history; in "
                f"{config.env_id} some state has several predecessors: use policy: mlp"
            )
        parent = np.full(model.num_states, -1, dtype=np.int64)
        parent[pairs[1]] = pairs[0]
        children = np.bincount(pairs[0][decide[pairs[1]]], minlength=model.num_states)
        leaves = np.flatnonzero(decide & (children == 0))
        paths = []
        for leaf in leaves.tolist():
            path = [leaf]
            while parent[path[-1]] >= 0:
                path.append(int(parent[path[-1]]))
            paths.append(path[::-1])
        longest = max(len(p) for p in paths)
        table = np.array([p + [p[-1]] * (longest - len(p)) for p in paths], dtype=np.int64)
        lengths = np.array([len(p) for p in paths], dtype=np.int64)
        where = np.full((model.num_states, 2), -1, dtype=np.int64)
        for k in range(len(paths) - 1, -1, -1):
            where[table[k, : lengths[k]], 0] = k
            where[table[k, : lengths[k]], 1] = np.arange(lengths[k])
        ids, obs = base.decision_observations()
        observations = np.zeros((model.num_states, obs.shape[1]), dtype=np.float32)
        observations[ids] = obs
        return cls(table, lengths, where, observations)


def _shapes(obs_dim: int, actions: int, length: int, sizes: dict[str, int]) -> dict[str, tuple]:
    w, f = sizes["width"], sizes["ff"]
    shapes: dict[str, tuple] = {"embed_w": (obs_dim, w), "embed_b": (1, w), "pos": (length, w)}
    for b in range(sizes["blocks"]):
        shapes |= {
            f"ln1_g{b}": (1, w), f"ln1_b{b}": (1, w), f"qkv_w{b}": (w, 3 * w),
            f"qkv_b{b}": (1, 3 * w), f"out_w{b}": (w, w), f"out_b{b}": (1, w),
            f"ln2_g{b}": (1, w), f"ln2_b{b}": (1, w), f"ff1_w{b}": (w, f), f"ff1_b{b}": (1, f),
            f"ff2_w{b}": (f, w), f"ff2_b{b}": (1, w),
        }  # fmt: skip
    shapes |= {"lnf_g": (1, w), "lnf_b": (1, w), "pi_w": (w, actions), "pi_b": (1, actions),
               "vf_w": (w, 1), "vf_b": (1, 1)}  # fmt: skip
    return shapes


class TransformerTrainer(BatchedTrainer):
    """:class:`~baselines.lib.batched.trainer.BatchedTrainer` with the causal Transformer policy
    (see the module docstring)."""

    policy_name = "transformer"

    def _init_policy(self) -> torch.Tensor:
        unknown = sorted(set(self.settings.transformer) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"policy_kwargs.transformer: unknown keys {unknown}")
        self.sizes = {**DEFAULTS, **self.settings.transformer}
        if self.sizes["width"] % self.sizes["heads"]:
            raise ValueError("policy_kwargs.transformer: width must be a multiple of heads")
        if self.masked:
            raise ValueError("policy: transformer does not support action masks (use policy: mlp)")
        self.trees = [HistoryTree.of(c) for c in self.configs]
        length = max(t.paths.shape[1] for t in self.trees)
        first = self.configs[0]
        self.shapes = _shapes(first.obs_dim, first.num_actions, length, self.sizes)
        self.offsets, offset = {}, 0
        for name, shape in self.shapes.items():
            self.offsets[name] = offset
            offset += math.prod(shape)
        self.size = -(-offset // 64) * 64
        rows = [self._init_one(st.init) for st in self.streams]
        self.tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        return torch.stack(rows)

    @property
    def num_parameters(self) -> int:
        return sum(math.prod(s) for s in self.shapes.values())

    def _init_one(self, gen: torch.Generator) -> torch.Tensor:
        theta = torch.zeros(self.size)
        for name, shape in self.shapes.items():
            view = theta[self.offsets[name] : self.offsets[name] + math.prod(shape)].view(shape)
            if name.startswith(("ln1_g", "ln2_g", "lnf_g")):
                view.fill_(1.0)
            elif name == "pos":
                view.normal_(0.0, 0.02, generator=gen)
            elif name.endswith("_w") or "_w" in name:
                bound = 1.0 / math.sqrt(shape[0])  # nn.Linear's default, fan_in = shape[0]
                view.uniform_(-bound, bound, generator=gen)
                if name == "pi_w":
                    view.mul_(0.01)
        return theta

    def _view(self, theta: torch.Tensor, name: str) -> torch.Tensor:
        shape = self.shapes[name]
        lo = self.offsets[name]
        return theta[:, lo : lo + math.prod(shape)].view(-1, *shape)

    # ---------------------------------------------------------------- the network
    def _all_states(self, theta: torch.Tensor, c: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(R, num_states, A)`` and values ``(R, num_states)`` of every state of
        configuration ``c`` (rows of states on no path are zeros), differentiable."""
        tree = self.trees[c]
        runs = theta.shape[0]
        num_paths, length = tree.paths.shape
        x = torch.from_numpy(tree.observations[tree.paths.reshape(-1)])  # (P*T, d)
        v = self._view
        w = self.sizes["width"]
        heads = self.sizes["heads"]
        h = torch.matmul(x[None], v(theta, "embed_w")) + v(theta, "embed_b")  # (R, P*T, w)
        h = h.view(runs, num_paths, length, w) + v(theta, "pos")[:, None, :length]
        causal = torch.ones(length, length, dtype=torch.bool).tril()
        for b in range(self.sizes["blocks"]):
            a = torch.nn.functional.layer_norm(h, (w,)) * v(theta, f"ln1_g{b}")[:, None]
            a = a + v(theta, f"ln1_b{b}")[:, None]
            qkv = torch.matmul(a.view(runs, -1, w), v(theta, f"qkv_w{b}")) + v(theta, f"qkv_b{b}")
            qkv = qkv.view(runs, num_paths, length, 3, heads, w // heads)
            q, k, val = qkv.unbind(3)
            q, k, val = (t.transpose(2, 3) for t in (q, k, val))  # (R, P, heads, T, w/h)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(w // heads)
            scores = scores.masked_fill(~causal, float("-inf"))
            att = torch.matmul(torch.softmax(scores, dim=-1), val).transpose(2, 3)
            att = att.reshape(runs, -1, w)
            h = h + (torch.matmul(att, v(theta, f"out_w{b}")) + v(theta, f"out_b{b}")).view(h.shape)
            f = torch.nn.functional.layer_norm(h, (w,)) * v(theta, f"ln2_g{b}")[:, None]
            f = (f + v(theta, f"ln2_b{b}")[:, None]).view(runs, -1, w)
            f = torch.nn.functional.gelu(
                torch.matmul(f, v(theta, f"ff1_w{b}")) + v(theta, f"ff1_b{b}")
            )
            h = h + (torch.matmul(f, v(theta, f"ff2_w{b}")) + v(theta, f"ff2_b{b}")).view(h.shape)
        h = torch.nn.functional.layer_norm(h, (w,)) * v(theta, "lnf_g")[:, None]
        h = (h + v(theta, "lnf_b")[:, None]).view(runs, -1, w)
        logits = torch.matmul(h, v(theta, "pi_w")) + v(theta, "pi_b")
        values = (h * v(theta, "vf_w").transpose(1, 2)).sum(-1) + v(theta, "vf_b")[..., 0]
        flat = np.where(tree.where[:, 0] >= 0, tree.where[:, 0] * length + tree.where[:, 1], 0)
        index = torch.from_numpy(flat)
        return logits.index_select(1, index), values.index_select(1, index)

    def _start_rollout(self, runs: np.ndarray) -> None:
        """The policy of every state of every run, for the rollout (fixed until the update)."""
        self.tables = {}
        with torch.no_grad():
            for c in np.unique(self.config_of[runs]).tolist():
                mine = runs[self.config_of[runs] == c]
                logits, values = self._all_states(self._rows(mine), c)
                log_p = torch.log_softmax(logits, dim=-1)
                for i, j in enumerate(mine.tolist()):
                    self.tables[j] = (log_p[i].numpy(), values[i].numpy())

    def act(self, runs, obs, masks, u, state_ids):
        log_p = np.stack([self.tables[j][0][state_ids[i]] for i, j in enumerate(runs.tolist())])
        actions = sample_actions(np.exp(log_p), u)
        log_prob = np.take_along_axis(log_p, actions[..., None], axis=-1)[..., 0]
        values = None
        if self.trains_critic:
            values = np.stack(
                [self.tables[j][1][state_ids[i]] for i, j in enumerate(runs.tolist())]
            )
        entropy = None
        if self.want_entropies:
            entropy = -(np.exp(log_p) * log_p).sum(-1)
        return actions, log_prob.astype(np.float32), values, entropy

    def values_of(
        self, runs: np.ndarray, obs: np.ndarray, state_ids: np.ndarray | None = None
    ) -> np.ndarray:
        """Values from the rollout's table (``state_ids`` needed: the final observation of a
        truncated episode has none, and the trees here never truncate)."""
        if state_ids is None:
            raise ValueError("policy: transformer cannot bootstrap a truncated episode")
        return np.stack([self.tables[j][1][state_ids[i]] for i, j in enumerate(runs.tolist())])

    def decision_probs(self, runs: np.ndarray) -> np.ndarray:
        """The policies of ``runs`` (one configuration) on its decision states ``(R, K, A)``."""
        c = int(self.config_of[runs[0]])
        ids = self.configs[c].decision_states()[0]
        with torch.no_grad():
            logits, _ = self._all_states(self._rows(runs), c)
            return torch.softmax(logits, dim=-1).numpy()[:, ids]

    # --------------------------------------------------------------------- update
    def _update(self, data: RolloutData, runs: np.ndarray) -> None:
        """SB3 PPO's minibatch updates, the loss by autograd through the whole-tree pass."""
        ls = self.loss
        stride = data.stride
        shufflers = [self.streams[j].shuffle for j in runs.tolist()]
        configs = self.config_of[runs]
        for _ in range(ls.n_epochs):
            batches = [
                minibatches(int(n), ls, g) for n, g in zip(data.sizes, shufflers, strict=True)
            ]
            for j in range(max(len(b) for b in batches)):
                active = np.array([len(b) > j for b in batches])
                index = np.full((len(runs), ls.rows), stride - 1, dtype=np.int64)
                taken = np.zeros(len(runs), dtype=np.int64)
                for r, pieces in enumerate(batches):
                    if j < len(pieces):
                        index[r, : len(pieces[j])] = pieces[j]
                        taken[r] = len(pieces[j])
                index += np.arange(len(runs))[:, None] * stride
                theta = self.theta.detach().requires_grad_(True)
                loss = torch.zeros(())
                for c in np.unique(configs).tolist():
                    rows = np.flatnonzero(configs == c)
                    logits, values = self._all_states(theta[rows], c)
                    loss = loss + self._loss(logits, values, data, index[rows], taken[rows])
                loss.backward()
                grad = theta.grad
                clip_by_global_norm(grad, ls.max_grad_norm)
                self.optimizer.step(grad, active)

    def _loss(
        self,
        logits: torch.Tensor,
        values: torch.Tensor,
        data: RolloutData,
        index: np.ndarray,
        taken: np.ndarray,
    ) -> torch.Tensor:
        """The sum over runs of each run's SB3 PPO loss on its minibatch (autograd)."""
        ls = self.loss
        runs, rows = index.shape
        flat = torch.from_numpy(index.reshape(-1))
        ids = data.state_ids.index_select(0, flat).view(runs, rows)
        actions = data.actions.index_select(0, flat).view(runs, rows)
        old = data.old_log_prob.index_select(0, flat).view(runs, rows)
        adv = data.advantages.index_select(0, flat).view(runs, rows)
        valid = torch.from_numpy(np.arange(rows)[None, :] < taken[:, None])
        n = torch.from_numpy(np.maximum(taken, 1).astype(np.float32))[:, None]
        if ls.normalize_advantage:
            mean = adv.sum(1, keepdim=True) / n
            centred = torch.where(valid, adv - mean, 0.0)
            dof = torch.from_numpy(np.maximum(taken - 1, 1).astype(np.float32))[:, None]
            std = torch.sqrt((centred * centred).sum(1, keepdim=True) / dof)
            adv = torch.where(torch.from_numpy(taken > 1)[:, None], centred / (std + 1e-8), adv)
        step_logits = torch.gather(logits, 1, ids[..., None].expand(-1, -1, logits.shape[-1]))
        log_p = torch.log_softmax(step_logits, dim=-1)
        log_p_a = log_p.gather(2, actions[..., None])[..., 0]
        ratio = torch.exp(log_p_a - old)
        clipped = torch.clamp(ratio, 1 - ls.clip_range, 1 + ls.clip_range)
        surrogate = torch.minimum(adv * ratio, adv * clipped)
        entropy = -(torch.exp(log_p) * log_p).sum(-1)
        per_run = (-(surrogate * valid).sum(1) - ls.ent_coef * (entropy * valid).sum(1)) / n[:, 0]
        if self.trains_critic and ls.vf_coef:
            returns = data.returns.index_select(0, flat).view(runs, rows)
            v = torch.gather(values, 1, ids)
            per_run = per_run + ls.vf_coef * (((v - returns) ** 2) * valid).sum(1) / n[:, 0]
        return per_run.sum()


def transformer_parameters(env_id: str, env_kwargs: dict[str, Any], **sizes: int) -> int:
    """Parameters of the Transformer policy for one environment configuration (for docs)."""
    config = EnvConfig(env_id, env_kwargs, 1, 1)
    tree = HistoryTree.of(config)
    shapes = _shapes(config.obs_dim, config.num_actions, tree.paths.shape[1], {**DEFAULTS, **sizes})
    return sum(math.prod(s) for s in shapes.values())
