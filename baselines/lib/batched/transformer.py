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
a function of the state id, and one pass over the tree gives every state's policy and value:
each state on a root-to-leaf path is a token (position: its depth) attending to its ancestors
and itself, the observations a causal pass over its path shows it (the function of running
every path, rounded differently, on half the tokens and under half the scores at routine
length 50). :class:`TokenPlan` cuts the tree's chains into pieces of at most :data:`PIECE`
states sharing their keys (the root path); pieces of similar key lengths share one
``scaled_dot_product_attention`` call with an additive mask. Collection reads every state's
table (the policy is fixed during a rollout); the update recomputes the pass with autograd for
every minibatch (the parameters change after each), on the pieces its steps need
(:meth:`TokenPlan.subset`), the last block after its attention at its steps only; the
evaluation is exact, as for the MLP. An environment where states merge or loop (CodeFix:
invalid actions are self-loops) is refused with a ``ValueError``: there the state does not
determine the history, and per-episode history buffers would be needed.

Runs of one batch may have trees of different depths: a run's position table has its own
tree's length (drawn as alone; rows beyond stay zero and get no gradient), stored last, and its
gradient norm is over its own parameters, so a run is bit-identical alone and in any batch.
:func:`initial_policy`: a run's initial logits and their Jacobian (gradient-SNR measurements).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from baselines.lib.batched.acting import sample_actions
from baselines.lib.batched.envs import EnvConfig
from baselines.lib.batched.settings import TrainerSettings
from baselines.lib.batched.streams import RunStreams
from baselines.lib.batched.trainer import BatchedTrainer
from baselines.lib.batched.update import RolloutData, minibatches

DEFAULTS = {"blocks": 2, "width": 32, "heads": 2, "ff": 128}
"""The paper's sizes."""
PIECE = 64
"""Most queries of one attention piece (consecutive states of one chain sharing their keys)."""
CALL_COST = 4096
"""The cost of one more attention call, in attention scores (pieces are grouped into calls to
minimise the padded scores plus this per call)."""
SUBSET_SAVING = 256
"""A run's minibatch pass runs on its own pieces (:meth:`TokenPlan.subset`) when that saves
at least this many tokens, else with the other runs of its configuration on the whole tree."""
JACOBIAN_CHUNK = 128
"""States of :meth:`InitialPolicy.jacobian` per pass (one replica of the network each)."""


@dataclass(frozen=True)
class HistoryTree:
    """The root-to-leaf paths of an environment whose states each have one history.

    Attributes:
        paths: state ids along each path, shape ``(num_paths, T)`` (padded with the last id).
        lengths: real length of each path, ``(num_paths,)``.
        where: for every state id, ``(path, position)`` of one occurrence (``-1`` if none),
            shape ``(num_states, 2)``; the position is the state's depth.
        observations: the observation of every state id, ``(num_states, obs_dim)`` float32.
        parent: the parent of every state id on a path (``-1`` for the root and the others),
            ``(num_states,)``.
    """

    paths: np.ndarray
    lengths: np.ndarray
    where: np.ndarray
    observations: np.ndarray
    parent: np.ndarray

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
        on_path = np.where(where[:, 0] >= 0, parent, -1)
        return cls(table, lengths, where, observations, on_path)


# ------------------------------------------------------------------------- attention plan
@dataclass(frozen=True)
class _Bucket:
    """Pieces sharing one attention call: ``G`` pieces of ``Q`` query slots and ``K`` keys."""

    pieces: np.ndarray  # (G,) the pieces' ids
    queries: np.ndarray  # (G, Q) token of each query slot (a short piece repeats its last)
    real: np.ndarray  # (G, Q) bool: the slot is a real query (not a repeat)
    keys: np.ndarray  # (G, K) token of each key slot: the root path, then its root again
    bias: torch.Tensor  # (G, 1, Q, K) float32: 0 where the key is an ancestor-or-self, -inf else


def _bucket_keys(keys: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The key length of each piece's bucket (pieces with ``keys`` keys and ``sizes``
    queries): the grouping of the sorted key lengths that minimises the padded scores plus
    :data:`CALL_COST` per call (dynamic programming over the distinct lengths)."""
    distinct = np.unique(keys)
    count = np.array([np.count_nonzero(keys == k) for k in distinct])
    widest = np.array([sizes[keys == k].max() for k in distinct])
    best, cut = np.zeros(len(distinct) + 1), np.zeros(len(distinct) + 1, dtype=np.int64)
    for j in range(1, len(distinct) + 1):
        cost = [best[i] + CALL_COST + count[i:j].sum() * widest[i:j].max() * distinct[j - 1]
                for i in range(j)]  # fmt: skip
        cut[j] = int(np.argmin(cost))
        best[j] = cost[cut[j]]
    out, j = np.zeros_like(keys), len(distinct)
    while j:
        out[(keys >= distinct[cut[j]]) & (keys <= distinct[j - 1])] = distinct[j - 1]
        j = cut[j]
    return out


@dataclass(frozen=True)
class TokenPlan:
    """The tokens of a tree (one per state, parent before child) and how they attend.

    Attributes:
        x, depth: every token's observation ``(N, obs_dim)`` and depth (position) ``(N,)``.
        buckets: the attention calls (see the module docstring).
        slot: query slot of every token in the buckets' concatenated slots ``(N,)``.
        token_of_state: token of every state id (0, the root, for states on no path; ``None``
            for a plan of :meth:`chains` or :meth:`subset`); length: ``max(depth) + 1``.
        piece: the piece of every token ``(N,)``; up: the piece holding the parent of each
            piece's first token (``-1`` at a root), parents before children.
    """

    x: torch.Tensor
    depth: torch.Tensor
    buckets: tuple[_Bucket, ...]
    slot: np.ndarray
    token_of_state: torch.Tensor | None
    length: int
    piece: np.ndarray
    up: np.ndarray
    cache: dict[int, tuple] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, tree: HistoryTree) -> TokenPlan:
        """The plan of every state on a path of ``tree``."""
        depth = tree.where[:, 1]
        states = np.flatnonzero(tree.where[:, 0] >= 0)
        states = states[np.argsort(depth[states], kind="stable")]
        token = np.zeros(len(tree.where), dtype=np.int64)
        token[states] = np.arange(len(states))
        up = tree.parent[states]
        parent = np.where(up >= 0, token[np.maximum(up, 0)], -1)
        plan = cls.chains(parent, tree.observations[states])
        return replace(plan, token_of_state=torch.from_numpy(token))

    @classmethod
    def chains(cls, parent: np.ndarray, x: np.ndarray) -> TokenPlan:
        """The plan of a forest given by ``parent`` ``(N,)`` (``-1`` for roots; every parent
        before its children) with observations ``x`` ``(N, obs_dim)``."""
        n = len(parent)
        depth = np.zeros(n, dtype=np.int64)
        kids: list[list[int]] = [[] for _ in range(n)]
        for v in range(n):
            if parent[v] >= 0:
                depth[v] = depth[parent[v]] + 1
                kids[parent[v]].append(v)
        length = int(depth.max()) + 1
        pieces = []  # (queries, keys): consecutive states of a chain, the root path to the last
        piece, up = np.zeros(n, dtype=np.int64), []
        for head in range(n):
            if parent[head] >= 0 and len(kids[parent[head]]) == 1:
                continue  # inside a chain
            above: list[int] = []
            while len(above) < depth[head]:
                above.append(int(parent[above[-1] if above else head]))
            chain = [head]
            while len(kids[chain[-1]]) == 1:
                chain.append(kids[chain[-1]][0])
            path, done = above[::-1] + chain, 0
            for part in np.array_split(np.array(chain), -(-len(chain) // PIECE)):
                done += len(part)
                piece[part] = len(pieces)
                up.append(int(piece[parent[part[0]]]) if parent[part[0]] >= 0 else -1)
                pieces.append((part.tolist(), path[: depth[head] + done]))
        rounded = _bucket_keys(np.array([len(k) for _, k in pieces]),
                               np.array([len(q) for q, _ in pieces]))  # fmt: skip
        buckets, slot, offset = [], np.zeros(n, dtype=np.int64), 0
        for keys in np.unique(rounded).tolist():
            ids = np.flatnonzero(rounded == keys)
            members = [pieces[i] for i in ids]
            width = max(len(q) for q, _ in members)
            query = np.array([q + q[-1:] * (width - len(q)) for q, _ in members], dtype=np.int64)
            real = np.arange(width)[None, :] < np.array([len(q) for q, _ in members])[:, None]
            key = np.array([p + p[:1] * (keys - len(p)) for _, p in members], dtype=np.int64)
            seen = np.arange(keys)[None, None, :] <= depth[query][:, :, None]
            bias = np.where(seen, 0.0, -np.inf).astype(np.float32)[:, None]
            buckets.append(_Bucket(ids, query, real, key, torch.from_numpy(bias)))
            slot[query[real]] = offset + np.flatnonzero(real.ravel())
            offset += query.size
        x = torch.from_numpy(np.asarray(x, dtype=np.float32))
        return cls(x, torch.from_numpy(depth), tuple(buckets), slot, None, length, piece,
                   np.array(up, dtype=np.int64))  # fmt: skip

    def subset(self, rows: np.ndarray) -> tuple[TokenPlan, np.ndarray]:
        """The plan of the pieces of the tokens ``rows`` ``(M,)`` and of their ancestors (the
        same keys in the same order for each token), and ``rows`` in its tokens."""
        need = np.zeros(len(self.up), dtype=bool)
        need[self.piece[rows]] = True
        for p in range(len(self.up) - 1, -1, -1):
            if need[p] and self.up[p] >= 0:
                need[self.up[p]] = True
        keep = need[self.piece]
        tokens = np.flatnonzero(keep)
        new = np.cumsum(keep) - 1
        buckets, slot, offset = [], np.zeros(len(tokens), dtype=np.int64), 0
        for b in self.buckets:
            sel = np.flatnonzero(need[b.pieces])
            if len(sel):
                query, real = new[b.queries[sel]], b.real[sel]
                bias = b.bias.index_select(0, torch.from_numpy(sel))
                buckets.append(_Bucket(b.pieces[sel], query, real, new[b.keys[sel]], bias))
                slot[query[real]] = offset + np.flatnonzero(real.ravel())
                offset += query.size
        index = torch.from_numpy(tokens)
        x, depth = self.x.index_select(0, index), self.depth.index_select(0, index)
        plan = TokenPlan(x, depth, tuple(buckets), slot, None, self.length, self.piece[tokens],
                         self.up)  # fmt: skip
        return plan, new[rows]

    def indices(self, runs: int) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
        """For ``runs`` stacked runs (tokens flattened ``run * N + token``): each bucket's query
        and key rows ``(piece, slot, run)``, and every token's output row (cached)."""
        if runs not in self.cache:
            n = len(self.slot)
            r = np.arange(runs) * n
            rows = [(torch.from_numpy((b.queries[..., None] + r).reshape(-1)),
                     torch.from_numpy((b.keys[..., None] + r).reshape(-1)))
                    for b in self.buckets]  # fmt: skip
            out = torch.from_numpy((self.slot[None, :] * runs + np.arange(runs)[:, None]).ravel())
            if len(self.cache) >= 4:
                self.cache.pop(next(iter(self.cache)))
            self.cache[runs] = (rows, out)
        return self.cache[runs]


def _attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: TokenPlan, heads: int
) -> torch.Tensor:
    """Multi-head attention of every token over its ancestors and itself: queries, keys and
    values ``(R, N, width)`` to ``(R, N, width)``. Runs and heads share the head dimension of
    one call per bucket (the mask broadcasts over both)."""
    runs, n, width = q.shape
    dh = width // heads
    q, k, v = (t.reshape(runs * n, width) for t in (q, k, v))
    rows, out_rows = plan.indices(runs)
    outs = []
    for bucket, (qi, ki) in zip(plan.buckets, rows, strict=True):
        g, _, nq, nk = bucket.bias.shape
        qb = q.index_select(0, qi).view(g, nq, runs * heads, dh).transpose(1, 2)
        kb = k.index_select(0, ki).view(g, nk, runs * heads, dh).transpose(1, 2)
        vb = v.index_select(0, ki).view(g, nk, runs * heads, dh).transpose(1, 2)
        o = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=bucket.bias.to(q.dtype))
        outs.append(o.transpose(1, 2).reshape(-1, width))
    out = torch.cat(outs) if len(outs) > 1 else outs[0]
    return out.index_select(0, out_rows).view(runs, n, width)


def _take(t: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Rows ``rows`` ``(R, M)`` of each run of ``t`` ``(R, N, k)``: ``(R, M, k)``."""
    return torch.gather(t, 1, rows[..., None].expand(-1, -1, t.shape[-1]))


def _shapes(obs_dim: int, actions: int, length: int, sizes: dict[str, int]) -> dict[str, tuple]:
    """Every parameter's shape, in the order of the initialisation's draws."""
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


def _sizes(overrides: dict[str, Any]) -> dict[str, int]:
    unknown = sorted(set(overrides) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"policy_kwargs.transformer: unknown keys {unknown}")
    sizes = {**DEFAULTS, **overrides}
    if sizes["width"] % sizes["heads"]:
        raise ValueError("policy_kwargs.transformer: width must be a multiple of heads")
    return sizes


class Network:
    """The parameter layout of R stacked runs ``(R, size)`` and the network's pass: those of
    :func:`_shapes`, the position table (``length`` rows, the batch's longest path) last, so a
    run's parameters are its row's first entries in any batch, then zeros."""

    def __init__(self, obs_dim: int, actions: int, length: int, sizes: dict[str, int]) -> None:
        self.sizes = sizes
        self.shapes = _shapes(obs_dim, actions, length, sizes)
        self.offsets: dict[str, int] = {}
        offset = 0
        for name in [n for n in self.shapes if n != "pos"] + ["pos"]:
            self.offsets[name] = offset
            offset += math.prod(self.shapes[name])
        self.num_parameters = offset
        self.size = -(-offset // 64) * 64

    def init(self, gen: torch.Generator, length: int) -> torch.Tensor:
        """One run's initial row ``(size,)`` drawn from ``gen`` (its position table
        ``length`` rows: the draws of a run alone)."""
        theta = torch.zeros(self.size)
        for name, shape in self.shapes.items():
            if name == "pos":
                shape = (length, shape[1])
            lo = self.offsets[name]
            view = theta[lo : lo + math.prod(shape)].view(shape)
            if name.startswith(("ln1_g", "ln2_g", "lnf_g")):
                view.fill_(1.0)
            elif name == "pos":
                view.normal_(0.0, 0.02, generator=gen)
            elif "_w" in name:
                bound = 1.0 / math.sqrt(shape[0])  # nn.Linear's default, fan_in = shape[0]
                view.uniform_(-bound, bound, generator=gen)
                if name == "pi_w":
                    view.mul_(0.01)
        return theta

    def params(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every parameter of every run, ``(R, *shape)`` (one split of ``theta``: its backward
        is one concatenation, where a slice per parameter would write a full-size gradient)."""
        names = sorted(self.shapes, key=self.offsets.__getitem__)
        sizes = [math.prod(self.shapes[n]) for n in names]
        parts = theta.split([*sizes, theta.shape[1] - sum(sizes)], dim=1)
        return {n: t.view(-1, *self.shapes[n]) for n, t in zip(names, parts, strict=False)}

    def forward(
        self,
        theta: torch.Tensor,
        plan: TokenPlan,
        x: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(R, M, A)`` and values ``(R, M)`` of the tokens ``rows`` ``(R, M)`` of
        ``plan`` (``M = N``, every token, when ``None``), differentiable, in ``theta``'s dtype.
        ``x``: per-run observations ``(R, N, obs_dim)`` (default: the plan's, shared)."""
        p, w = self.params(theta), self.sizes["width"]
        x = (plan.x if x is None else x).to(theta.dtype)
        x = x.expand(theta.shape[0], -1, -1) if x.dim() == 2 else x
        h = torch.baddbmm(p["embed_b"], x, p["embed_w"])  # (R, N, w)
        h = h + p["pos"].index_select(1, plan.depth)
        late = rows is not None and rows.shape[1] < h.shape[1]  # last block at rows only
        blocks = self.sizes["blocks"]
        for b in range(blocks):
            a = F.layer_norm(h, (w,)) * p[f"ln1_g{b}"] + p[f"ln1_b{b}"]
            qkv = torch.baddbmm(p[f"qkv_b{b}"], a, p[f"qkv_w{b}"])
            att = _attention(*qkv.split(w, dim=-1), plan, self.sizes["heads"])
            if late and b == blocks - 1:
                h, att = _take(h, rows), _take(att, rows)  # type: ignore[arg-type]
            h = h + torch.baddbmm(p[f"out_b{b}"], att, p[f"out_w{b}"])
            f = F.layer_norm(h, (w,)) * p[f"ln2_g{b}"] + p[f"ln2_b{b}"]
            f = F.gelu(torch.baddbmm(p[f"ff1_b{b}"], f, p[f"ff1_w{b}"]))
            h = h + torch.baddbmm(p[f"ff2_b{b}"], f, p[f"ff2_w{b}"])
        if rows is not None and not late:
            h = _take(h, rows)
        h = F.layer_norm(h, (w,)) * p["lnf_g"] + p["lnf_b"]
        logits = torch.baddbmm(p["pi_b"], h, p["pi_w"])
        values = (h * p["vf_w"].transpose(1, 2)).sum(-1) + p["vf_b"][..., 0]  # no GEMV
        return logits, values

    def states(self, theta: torch.Tensor, plan: TokenPlan) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(R, num_states, A)`` and values ``(R, num_states)`` of every state id
        (states on no path get the root's)."""
        assert plan.token_of_state is not None
        logits, values = self.forward(theta, plan)
        return (logits.index_select(1, plan.token_of_state),
                values.index_select(1, plan.token_of_state))  # fmt: skip


class TransformerTrainer(BatchedTrainer):
    """:class:`~baselines.lib.batched.trainer.BatchedTrainer` with the causal Transformer policy
    (see the module docstring)."""

    policy_name = "transformer"

    def _init_policy(self) -> torch.Tensor:
        self.sizes = _sizes(self.settings.transformer)
        if self.masked:
            raise ValueError("policy: transformer does not support action masks (use policy: mlp)")
        self.trees = [HistoryTree.of(c) for c in self.configs]
        self.plans = [TokenPlan.of(t) for t in self.trees]
        lengths = np.array([p.length for p in self.plans])[self.config_of]  # per run
        first = self.configs[0]
        self.net = Network(first.obs_dim, first.num_actions, int(lengths.max()), self.sizes)
        self.ends = self.net.offsets["pos"] + lengths * self.sizes["width"]  # own parameters
        rows = [self.net.init(st.init, int(n)) for st, n in zip(self.streams, lengths, strict=True)]
        self.tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        return torch.stack(rows)

    def _start_rollout(self, runs: np.ndarray) -> None:
        """The policy of every state of every run, for the rollout (fixed until the update)."""
        self.tables = {}
        with torch.no_grad():
            for c in np.unique(self.config_of[runs]).tolist():
                mine = runs[self.config_of[runs] == c]
                logits, values = self.net.states(self._rows(mine), self.plans[c])
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
            logits, _ = self.net.states(self._rows(runs), self.plans[c])
            return torch.softmax(logits, dim=-1).numpy()[:, ids]

    # --------------------------------------------------------------------- update
    def _update(self, data: RolloutData, runs: np.ndarray) -> None:
        """SB3 PPO's minibatch updates, the loss by autograd through the tree pass (the last
        block's outputs at the minibatch's states only)."""
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
                    logits, values = self._minibatch(theta, c, rows, data, index[rows])
                    loss = loss + self._loss(logits, values, data, index[rows], taken[rows])
                loss.backward()
                grad = theta.grad
                self._clip(grad, runs)
                self.optimizer.step(grad, active)

    def _minibatch(
        self, theta: torch.Tensor, c: int, rows: np.ndarray, data: RolloutData, index: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits ``(R, M, A)`` and values ``(R, M)`` at the steps ``index`` ``(R, M)`` of runs
        ``rows`` (configuration ``c``): alone on its pieces where that saves
        :data:`SUBSET_SAVING` tokens, else stacked on the whole tree (its own steps decide)."""
        plan = self.plans[c]
        assert plan.token_of_state is not None
        flat = torch.from_numpy(index.reshape(-1))
        tokens = plan.token_of_state[data.state_ids.index_select(0, flat).view(len(rows), -1)]
        outs: list[Any] = [None] * len(rows)
        stacked, alone = [], None
        for i, mine in enumerate(tokens.numpy()):
            sub, local = plan.subset(mine)
            if len(sub.slot) + SUBSET_SAVING <= len(plan.slot):
                alone = theta.split(1) if alone is None else alone  # one backward for all
                outs[i] = self.net.forward(alone[rows[i]], sub, rows=torch.from_numpy(local)[None])
            else:
                stacked.append(i)
        if stacked:
            whole = torch.from_numpy(np.asarray(stacked))
            both = self.net.forward(
                theta.index_select(0, torch.from_numpy(rows[stacked])), plan, rows=tokens[whole]
            )
            for k, i in enumerate(stacked):
                outs[i] = (both[0][k : k + 1], both[1][k : k + 1])
        return torch.cat([o[0] for o in outs]), torch.cat([o[1] for o in outs])

    def _clip(self, grad: torch.Tensor, runs: np.ndarray) -> None:
        """``clip_grad_norm_``'s rule on each row of ``grad`` ``(R, size)``, the norm over the
        run's own parameters (its first ``ends``: the same reduction alone or in any batch)."""
        ends = self.ends[runs]
        norms = torch.zeros(len(runs))
        for end in np.unique(ends).tolist():
            mine = torch.from_numpy(np.flatnonzero(ends == end))
            part = grad.index_select(0, mine)[:, :end].contiguous()
            norms[mine] = torch.linalg.vector_norm(part, dim=1)
        factor = torch.clamp(self.loss.max_grad_norm / (norms + 1e-6), max=1.0)
        grad.mul_(factor[:, None])

    def _loss(
        self,
        logits: torch.Tensor,
        values: torch.Tensor,
        data: RolloutData,
        index: np.ndarray,
        taken: np.ndarray,
    ) -> torch.Tensor:
        """The sum over runs of each run's SB3 PPO loss on its minibatch (autograd), from the
        logits ``(R, rows, A)`` and values ``(R, rows)`` of its steps."""
        ls = self.loss
        runs, rows = index.shape
        flat = torch.from_numpy(index.reshape(-1))
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
        log_p = torch.log_softmax(logits, dim=-1)
        log_p_a = log_p.gather(2, actions[..., None])[..., 0]
        ratio = torch.exp(log_p_a - old)
        clipped = torch.clamp(ratio, 1 - ls.clip_range, 1 + ls.clip_range)
        surrogate = torch.minimum(adv * ratio, adv * clipped)
        entropy = -(torch.exp(log_p) * log_p).sum(-1)
        per_run = (-(surrogate * valid).sum(1) - ls.ent_coef * (entropy * valid).sum(1)) / n[:, 0]
        if self.trains_critic and ls.vf_coef:
            returns = data.returns.index_select(0, flat).view(runs, rows)
            per_run = per_run + ls.vf_coef * (((values - returns) ** 2) * valid).sum(1) / n[:, 0]
        return per_run.sum()


# ----------------------------------------------------------------- initial policy (SNR)
@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Torch on one thread, as the trainer runs (its rounding, and no threads waiting)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@dataclass(frozen=True)
class InitialPolicy:
    """A run's policy at its initial parameters (see :func:`initial_policy`).

    Attributes:
        logits: logits of every state id ``(num_states, num_actions)`` float64 (natural-log
            units: the policy is their softmax; rows of states on no path are 0).
        parameters: the run's initial parameters ``(num_parameters,)`` float64 (the columns of
            :meth:`jacobian`, in the trainer's storage order).

    Unpacks as ``logits, jacobian = initial_policy(...)``.
    """

    logits: np.ndarray
    parameters: np.ndarray
    net: Network = field(repr=False)
    tree: HistoryTree = field(repr=False)

    def __iter__(self) -> Iterator[Any]:
        yield self.logits
        yield self.jacobian

    def jacobian(self, chunk: int = JACOBIAN_CHUNK, dtype: Any = np.float64) -> np.ndarray:
        """``d logits[s, a] / d parameters[k]`` at row ``s * num_actions + a``, column ``k``:
        ``(num_states * num_actions, num_parameters)`` in ``dtype`` (logit units per parameter
        unit; rows of states on no path are 0). Reverse mode in float32 on ``chunk`` states
        at a time, each a replica of the network on its root path (the tokens it attends to),
        one forward and one backward per action: memory is the result (1.5 GB in float64 for
        DilutedDoors-v1 with 3 floors of 3 doors and routine length 50) plus about ``chunk``
        paths' activations (0.1 to 0.2 GB there)."""
        tree, net, actions = self.tree, self.net, self.logits.shape[1]
        depth = tree.where[:, 1]
        states = np.flatnonzero(tree.where[:, 0] >= 0)
        states = states[np.argsort(depth[states], kind="stable")]
        theta = torch.from_numpy(self.parameters.astype(np.float32))[None]
        out = np.zeros((len(tree.where) * actions, len(self.parameters)), dtype=dtype)
        for lo in range(0, len(states), chunk):
            s = states[lo : lo + chunk]
            length = int(depth[s].max()) + 1
            plan = TokenPlan.chains(np.arange(length) - 1, np.zeros((length, 1), np.float32))
            x = torch.from_numpy(tree.observations[tree.paths[tree.where[s, 0], :length]])
            replicas = theta.expand(len(s), -1).clone().requires_grad_(True)
            rows = torch.from_numpy(depth[s])[:, None]
            with _one_thread():
                logits, _ = net.forward(replicas, plan, x=x, rows=rows)
                for a in range(actions):
                    (grad,) = torch.autograd.grad(logits[:, 0, a].sum(), replicas,
                                                  retain_graph=a < actions - 1)  # fmt: skip
                    out[s * actions + a] = grad.numpy()
        return out


def initial_policy(
    env_id: str, env_kwargs: dict[str, Any], hyperparameters: dict[str, Any], seed: int
) -> InitialPolicy:
    """The Transformer policy a batched run of ``seed`` starts from, on ``env_id(**env_kwargs)``
    with ``hyperparameters`` (the sizes of ``policy_kwargs.transformer``; the other keys are
    checked as the trainer checks them): :class:`InitialPolicy` with ``logits``
    ``(num_states, num_actions)`` float64, computed by the trainer's pass (equal to what the
    run's first rollout sees), ``parameters`` (the run's initial row, drawn from its own init
    stream) and ``jacobian()`` ``(num_states * num_actions, num_parameters)`` float64."""
    settings = TrainerSettings.from_hyperparameters(hyperparameters)
    sizes = _sizes(settings.transformer)
    config = EnvConfig(env_id, env_kwargs, 1, 1)
    if config.masked:
        raise ValueError("policy: transformer does not support action masks (use policy: mlp)")
    tree = HistoryTree.of(config)
    plan = TokenPlan.of(tree)
    net = Network(config.obs_dim, config.num_actions, plan.length, sizes)
    theta = net.init(RunStreams.of(seed).init, plan.length)[None]
    with torch.no_grad(), _one_thread():
        logits, _ = net.states(theta, plan)
    table = logits[0].double().numpy()
    table[tree.where[:, 0] < 0] = 0.0
    parameters = theta[0, : net.num_parameters].double().numpy()
    return InitialPolicy(table, parameters, net, tree)


def transformer_parameters(env_id: str, env_kwargs: dict[str, Any], **sizes: int) -> int:
    """Parameters of the Transformer policy for one environment configuration (for docs)."""
    config = EnvConfig(env_id, env_kwargs, 1, 1)
    tree = HistoryTree.of(config)
    shapes = _shapes(config.obs_dim, config.num_actions, tree.paths.shape[1], {**DEFAULTS, **sizes})
    return sum(math.prod(s) for s in shapes.values())
