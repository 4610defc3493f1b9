"""Exact tabular model and dynamic programming: the suite's "perfect critic".

Every environment of the suite exposes its exact dynamics through ``env.unwrapped.model()``, a
:class:`TabularModel` built by enumerating the states reachable from the initial distribution.
On it, :func:`evaluate_policy` gives ``Q^pi``, ``V^pi`` and ``A^pi`` for any tabular policy
without sampling, and :func:`optimal_values` gives ``Q*`` and the action gap that defines which
states are critical.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

Outcome = tuple[float, Hashable, float, bool]
"""``(probability, next_state, reward, terminated)`` of one transition."""

PolicyLike = np.ndarray | Callable[[int], Sequence[float] | np.ndarray]
"""A tabular policy: an array of shape ``(num_states, num_actions)`` of action probabilities, or a
function from ``state_id`` to a probability vector of shape ``(num_actions,)``."""


class StatesById(Mapping[int, Hashable]):
    """``{state_id: state}`` over the reachable ids, decoding each state on access (for models
    built in bulk, where a dict of every state would cost more than the model itself)."""

    def __init__(self, reachable: np.ndarray, decode: Callable[[int], Hashable]) -> None:
        self._ids = np.flatnonzero(reachable)
        self._reachable = reachable
        self._decode = decode

    def __getitem__(self, state_id: int) -> Hashable:
        if not 0 <= state_id < self._reachable.size or not self._reachable[state_id]:
            raise KeyError(state_id)
        return self._decode(int(state_id))

    def __iter__(self) -> Iterator[int]:
        return (int(i) for i in self._ids)

    def __len__(self) -> int:
        return int(self._ids.size)


@dataclass(frozen=True)
class TabularModel:
    """The exact finite model of an environment, indexed by ``state_id``.

    Transitions are stored flat: transition ``i`` goes from ``state[i]`` under ``action[i]`` with
    probability ``prob[i]`` to ``next_state[i]``, paying ``reward[i]``; ``terminated[i]`` says the
    episode ends there (no value is bootstrapped from a terminal next state).

    Attributes:
        num_states: size of the id space, ``env.unwrapped.num_states``.
        num_actions: size of the action space.
        initial: initial-state distribution, shape ``(num_states,)``.
        reachable: which ids are reachable from the initial distribution, shape ``(num_states,)``.
        terminal: which reachable ids are terminal (no action is taken there).
        state, action, next_state: int64 arrays of shape ``(num_transitions,)``.
        prob, reward: float64 arrays of shape ``(num_transitions,)``.
        terminated: bool array of shape ``(num_transitions,)``.
        states: the underlying state of every reachable id, ``{state_id: state}`` (a dict, or
            a :class:`StatesById` that decodes on access).
    """

    num_states: int
    num_actions: int
    initial: np.ndarray
    reachable: np.ndarray
    terminal: np.ndarray
    state: np.ndarray
    action: np.ndarray
    prob: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    states: Mapping[int, Hashable] = field(default_factory=dict, compare=False, repr=False)

    @property
    def decision_states(self) -> np.ndarray:
        """Reachable, non-terminal ids (where an action is taken), shape ``(num_states,)`` bool."""
        return self.reachable & ~self.terminal

    def layers(self) -> ModelLayers | None:
        """The backward-pass schedule of this model (computed once), or ``None`` when the model
        has a cycle other than self-loops (dynamic programming then sweeps to a fixed point)."""
        cache = self.__dict__.setdefault("_layers_cache", [])
        if not cache:
            cache.append(model_layers(self))
        return cache[0]


@dataclass(frozen=True)
class ModelLayers:
    """A schedule for one exact backward pass over an acyclic model (self-loops allowed).

    *Pass-through* states, where every action has the same single outcome (a routine corridor
    cell), are folded into affine maps ``V(s) = offset[s] + scale[s] * V(exit[s])`` to the
    first other state ``exit[s]`` (by pointer doubling, ``log2`` of the longest corridor in
    vectorized steps); their values follow from it, whatever the policy. Every other decision
    state gets a *height*, the longest chain of transitions (through pass-through states) from it
    to the end; evaluating heights in increasing order sees every successor's value before it is
    needed, so the depth of the pass is the number of decisions on the longest path, not its
    length. States and transitions are sorted by height (transitions stably, so each
    ``(state, action)`` sums its outcomes in the model's order: bit-identical to sweeping to the
    fixed point wherever the folded corridors pay 0 with ``gamma = 1``, and equal to rounding
    otherwise).

    Attributes:
        states: the other decision ids sorted by height, shape ``(K,)``.
        state_bounds: ``states[state_bounds[h]:state_bounds[h + 1]]`` have height ``h``.
        transitions: their transition indices sorted by height, shape ``(M,)``.
        transition_bounds: the same slicing for ``transitions``.
        local_index: ``rank of the source within its height * num_actions + action`` for each
            sorted transition, shape ``(M,)``.
        passing: the pass-through ids, shape ``(P,)``; ``passing_transition`` the index of one
            of their (identical) transitions, ``passing_next``/``passing_done`` its next state and
            termination, shape ``(P,)``.
    """

    states: np.ndarray
    state_bounds: np.ndarray
    transitions: np.ndarray
    transition_bounds: np.ndarray
    local_index: np.ndarray
    passing: np.ndarray
    passing_transition: np.ndarray
    passing_next: np.ndarray
    passing_done: np.ndarray

    @property
    def depth(self) -> int:
        """Number of heights (vectorized steps of the pass)."""
        return len(self.state_bounds) - 1

    def fold(
        self, gamma: float, reward: np.ndarray, num_states: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(offset, scale, exit)`` of every id, shape ``(num_states,)``, for the discount
        ``gamma`` and the per-transition ``reward``: ``V(s) = offset + scale * V(exit)``, the
        identity for the states that are not pass-through, ``exit = -1`` where a corridor ends
        the episode."""
        offset = np.zeros(num_states)
        scale = np.ones(num_states)
        exit_ = np.arange(num_states, dtype=np.int64)
        p = self.passing
        if p.size == 0:
            return offset, scale, exit_
        is_passing = np.zeros(num_states, dtype=bool)
        is_passing[p] = True
        a = reward[self.passing_transition].astype(np.float64)
        b = np.where(self.passing_done, 0.0, gamma)
        x = np.where(self.passing_done, -1, self.passing_next)
        position = np.full(num_states, -1, dtype=np.int64)
        position[p] = np.arange(p.size)
        for _ in range(64):  # pointer doubling: 2**64 cells is more than any model
            inner = (x >= 0) & is_passing[np.maximum(x, 0)]
            if not inner.any():
                break
            j = position[x[inner]]
            a[inner] = a[inner] + b[inner] * a[j]
            b[inner] = b[inner] * b[j]
            x[inner] = x[j]
        offset[p], scale[p], exit_[p] = a, b, x
        return offset, scale, exit_


def _pass_through(model: TabularModel, decide: np.ndarray) -> np.ndarray:
    """Decision ids whose every action has one transition, all with the same next state, reward
    and termination, not a self-loop: bool ``(num_states,)``."""
    n, m = model.num_states, model.num_actions
    sa = model.state * m + model.action
    counts = np.bincount(sa, minlength=n * m).reshape(n, m)
    single = decide & np.all(counts == 1, axis=1)
    first = np.full(n * m, -1, dtype=np.int64)
    first[sa[::-1]] = np.arange(sa.size)[::-1]  # a transition of each (state, action)
    idx = first.reshape(n, m)[single]
    same = np.ones(idx.shape[0], dtype=bool)
    for column in (model.next_state, model.reward, model.terminated):
        values = column[idx]
        same &= np.all(values == values[:, :1], axis=1)
    ids = np.flatnonzero(single)[same]
    ok = model.next_state[first.reshape(n, m)[ids, 0]] != ids
    result = np.zeros(n, dtype=bool)
    result[ids[ok]] = True
    return result


def model_layers(model: TabularModel) -> ModelLayers | None:
    """The backward-pass schedule: pass-through corridors folded, then heights of the other
    decision states by layered topological peeling (linear in the transitions, one vectorized
    step per height); ``None`` if a cycle remains."""
    n = model.num_states
    decide = model.decision_states
    passing_mask = _pass_through(model, decide)
    passing = np.flatnonzero(passing_mask)
    m = model.num_actions
    sa = model.state * m + model.action
    first = np.full(n * m, -1, dtype=np.int64)
    first[sa[::-1]] = np.arange(sa.size)[::-1]
    one = first[passing * m] if passing.size else np.zeros(0, dtype=np.int64)
    p_next, p_done = model.next_state[one], model.terminated[one]
    # where each corridor leads (gamma-free: only the structure matters for the heights)
    exit_ = np.arange(n, dtype=np.int64)
    x = np.where(p_done, -1, p_next)
    position = np.full(n, -1, dtype=np.int64)
    position[passing] = np.arange(passing.size)
    for _ in range(64):
        inner = (x >= 0) & passing_mask[np.maximum(x, 0)]
        if not inner.any():
            break
        x[inner] = x[position[x[inner]]]
    else:
        return None  # a cycle of pass-through states
    exit_[passing] = x
    others = decide & ~passing_mask
    from_decision = others[model.state]
    through = np.where(model.terminated, -1, exit_[model.next_state])
    continuing = from_decision & (through >= 0) & (model.next_state != model.state)
    continuing &= through != model.state  # a corridor back to its own start is a loop...
    if np.any(from_decision & (through == model.state) & (model.next_state != model.state)):
        return None  # ...through other states: a cycle
    src, dst = model.state[continuing], through[continuing]
    # one edge per distinct (src, dst) pair, so out-degrees count successors, not outcomes
    pairs = np.unique(src * np.int64(n) + dst)
    src, dst = pairs // n, pairs % n
    out_degree = np.bincount(src, minlength=n)
    order = np.argsort(dst, kind="stable")  # predecessors of each node, grouped
    pred, pred_ptr = src[order], np.searchsorted(dst[order], np.arange(n + 1))
    height = np.full(n, -1, dtype=np.int64)
    layer = np.flatnonzero(others & (out_degree == 0))
    remaining = out_degree.copy()
    h = 0
    while layer.size:
        height[layer] = h
        starts, ends = pred_ptr[layer], pred_ptr[layer + 1]
        counts = ends - starts
        if counts.sum() == 0:
            break
        idx = np.repeat(ends - counts.cumsum(), counts) + np.arange(counts.sum())
        candidates, hits = np.unique(pred[idx], return_counts=True)
        remaining[candidates] -= hits
        layer = candidates[remaining[candidates] == 0]
        h += 1
    if np.any(height[others] < 0):
        return None
    states = np.flatnonzero(others)
    states = states[np.argsort(height[states], kind="stable")]
    top = int(height[states].max()) + 1 if states.size else 0
    state_bounds = np.searchsorted(height[states], np.arange(top + 1))
    rank = np.zeros(n, dtype=np.int64)
    rank[states] = np.arange(states.size) - state_bounds[height[states]]
    tr = np.flatnonzero(from_decision)
    tr = tr[np.argsort(height[model.state[tr]], kind="stable")]
    transition_bounds = np.searchsorted(height[model.state[tr]], np.arange(top + 1))
    local = rank[model.state[tr]] * model.num_actions + model.action[tr]
    return ModelLayers(
        states, state_bounds, tr, transition_bounds, local, passing, one, p_next, p_done
    )


def build_model(
    initial: Sequence[tuple[float, Hashable]],
    outcomes: Callable[[Hashable, int], Sequence[Outcome]],
    state_id: Callable[[Hashable], int],
    num_states: int,
    num_actions: int,
) -> TabularModel:
    """Enumerate the states reachable from ``initial`` and record every transition.

    Args:
        initial: ``(probability, state)`` pairs of the initial distribution.
        outcomes: the environment's transition function, ``(state, action) -> outcomes``.
        state_id: the canonical id of a state.
        num_states: size of the id space.
        num_actions: number of discrete actions.
    """
    init = np.zeros(num_states)
    reachable = np.zeros(num_states, dtype=bool)
    terminal = np.zeros(num_states, dtype=bool)
    frontier: list[Hashable] = []
    states: dict[int, Hashable] = {}
    for prob, s in initial:
        sid = state_id(s)
        init[sid] += prob
        if not reachable[sid]:
            reachable[sid] = True
            states[sid] = s
            frontier.append(s)
    rows: list[tuple[int, int, float, int, float, bool]] = []
    while frontier:
        s = frontier.pop()
        sid = state_id(s)
        for a in range(num_actions):
            for prob, nxt, reward, done in outcomes(s, a):
                nid = state_id(nxt)
                rows.append((sid, a, prob, nid, reward, done))
                if not reachable[nid]:
                    reachable[nid] = True
                    states[nid] = nxt
                    if done:
                        terminal[nid] = True
                    else:
                        frontier.append(nxt)
    cols = list(zip(*rows, strict=False)) if rows else [()] * 6
    return TabularModel(
        num_states=num_states,
        num_actions=num_actions,
        initial=init,
        reachable=reachable,
        terminal=terminal,
        state=np.asarray(cols[0], dtype=np.int64),
        action=np.asarray(cols[1], dtype=np.int64),
        prob=np.asarray(cols[2], dtype=np.float64),
        next_state=np.asarray(cols[3], dtype=np.int64),
        reward=np.asarray(cols[4], dtype=np.float64),
        terminated=np.asarray(cols[5], dtype=bool),
        states=states,
    )


def model_from_arrays(
    num_states: int,
    num_actions: int,
    start: int,
    transitions: Sequence[np.ndarray],
    decode: Callable[[int], Hashable],
) -> TabularModel:
    """A :class:`TabularModel` built in bulk: every transition of the states reachable from the
    deterministic start ``start``, as the columns ``(state, action, prob, next_state, reward,
    terminated)``, within each ``(state, action)`` in the order of the dynamics' outcomes.
    Reachable and terminal ids follow from them; ``decode`` is ``state_from_id``."""
    state, action, prob, next_state, reward, terminated = transitions
    terminated = np.asarray(terminated, dtype=bool)
    reachable = np.zeros(num_states, dtype=bool)
    reachable[start] = True
    reachable[state] = True
    reachable[next_state] = True
    terminal = np.zeros(num_states, dtype=bool)
    terminal[next_state[terminated]] = True
    initial = np.zeros(num_states)
    initial[start] = 1.0
    return TabularModel(
        num_states=num_states,
        num_actions=num_actions,
        initial=initial,
        reachable=reachable,
        terminal=terminal,
        state=np.asarray(state, dtype=np.int64),
        action=np.asarray(action, dtype=np.int64),
        prob=np.asarray(prob, dtype=np.float64),
        next_state=np.asarray(next_state, dtype=np.int64),
        reward=np.asarray(reward, dtype=np.float64),
        terminated=terminated,
        states=StatesById(reachable, decode),
    )


@dataclass(frozen=True)
class OracleValues:
    """Exact values of a policy (or of the optimal policy), indexed by ``state_id``.

    Attributes:
        q: ``Q(s, a)``, shape ``(num_states, num_actions)``; 0 on terminal and unreachable ids.
        v: ``V(s)``, shape ``(num_states,)``; 0 on terminal and unreachable ids.
        reachable: which ids the values are defined for, shape ``(num_states,)``.
    """

    q: np.ndarray
    v: np.ndarray
    reachable: np.ndarray

    @property
    def advantage(self) -> np.ndarray:
        """``A(s, a) = Q(s, a) - V(s)``, shape ``(num_states, num_actions)``."""
        return self.q - self.v[:, None]

    @property
    def action_gap(self) -> np.ndarray:
        """``max_a Q(s, a) - min_a Q(s, a)``, shape ``(num_states,)``."""
        return self.q.max(axis=1) - self.q.min(axis=1)


def policy_table(policy: PolicyLike, model: TabularModel) -> np.ndarray:
    """Turn ``policy`` into a validated array of shape ``(num_states, num_actions)``.

    Rows of ids where no action is taken (terminal or unreachable) are not consulted.

    Raises:
        ValueError: wrong shape, negative entries, or rows that do not sum to 1.
    """
    shape = (model.num_states, model.num_actions)
    decide = model.decision_states
    if callable(policy):
        table = np.zeros(shape)
        for sid in np.flatnonzero(decide):
            table[sid] = np.asarray(policy(int(sid)), dtype=np.float64)
    else:
        table = np.asarray(policy, dtype=np.float64)
        if table.shape != shape:
            raise ValueError(
                f"policy must have shape {shape} (num_states, num_actions), got {table.shape}"
            )
    rows = table[decide]
    if rows.size and (np.any(rows < 0) or not np.allclose(rows.sum(axis=1), 1.0, atol=1e-9)):
        bad = int(np.flatnonzero(decide)[np.argmax(np.abs(rows.sum(axis=1) - 1))])
        raise ValueError(
            f"policy rows must be probability vectors; state_id {bad} has {table[bad].tolist()}"
        )
    return table


def _self_loops(model: TabularModel) -> tuple[np.ndarray, np.ndarray]:
    """Which transitions return to their own state without ending the episode (a no-op, e.g. an
    invalid action), and the probability of doing so per (state, action), shape
    ``(num_states, num_actions)``. Dynamic programming solves these loops in closed form instead
    of iterating them, so models that are acyclic but for self-loops converge exactly."""
    loop = (model.next_state == model.state) & ~model.terminated
    mass = np.bincount(
        model.state * model.num_actions + model.action,
        weights=model.prob * loop,
        minlength=model.num_states * model.num_actions,
    )
    return loop, mass.reshape(model.num_states, model.num_actions)


def _backup(
    model: TabularModel, v: np.ndarray, gamma: float, loop: np.ndarray, reward: np.ndarray
) -> np.ndarray:
    """``Q'(s, a) = sum_s' p (r + gamma (1 - done) V(s'))`` over the transitions that are not
    self-loops (their rewards are kept), shape ``(num_states, num_actions)``."""
    target = reward + gamma * np.where(model.terminated | loop, 0.0, v[model.next_state])
    flat = np.bincount(
        model.state * model.num_actions + model.action,
        weights=model.prob * target,
        minlength=model.num_states * model.num_actions,
    )
    return flat.reshape(model.num_states, model.num_actions)


def _iterate(
    model: TabularModel,
    improve: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    gamma: float,
    max_iterations: int | None,
    tol: float,
    reward: np.ndarray | None = None,
    layer_improve: LayerImprove | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``V = improve(Q', gamma * self-loop mass)`` and return ``(Q, V)`` with
    ``Q = Q' + gamma * self-loop mass * V``. ``improve(q_rest, stay, ids)`` gets the rows of the
    ids ``ids``. An acyclic model (self-loops allowed) takes one exact backward pass in order of
    height, linear in the transitions, with ``layer_improve`` (the same formula on rows already
    gathered in height order); a model with cycles is swept to a fixed point."""
    reward = model.reward if reward is None else reward
    loop, loop_mass = _self_loops(model)
    stay = gamma * loop_mass
    layers = model.layers()
    if layers is not None and layer_improve is not None and max_iterations is None and tol == 0:
        return _backward_pass(model, layers, layer_improve, gamma, reward, loop, stay)
    v = np.zeros(model.num_states)
    all_ids = np.arange(model.num_states)
    if max_iterations is None:  # depth of an acyclic model, or enough sweeps to contract to ~1e-17
        contraction = math.ceil(40 / -math.log(gamma)) if gamma < 1 else 0
        max_iterations = 10 * model.num_states + 100 + contraction
    for _ in range(max_iterations):
        q_rest = _backup(model, v, gamma, loop, reward)
        v_new = improve(q_rest, stay, all_ids)
        # An acyclic model converges exactly (to the bit) after as many sweeps as its depth.
        delta = np.max(np.abs(v_new - v)) if v.size else 0.0
        v = v_new
        if delta <= tol:
            return q_rest + stay * v[:, None], v
    raise RuntimeError(
        f"dynamic programming did not converge in {max_iterations} sweeps "
        f"(gamma={gamma}); pass gamma < 1 for a model with cycles"
    )


LayerImprove = Callable[[np.ndarray], Callable[[np.ndarray, np.ndarray, slice], np.ndarray]]
"""``layer_improve(order)`` prepares per-state arrays gathered in ``order`` (the decision ids by
height) and returns ``improve(q_rest, stay, rows)`` for the rows ``rows`` (a slice) of them."""


def _backward_pass(
    model: TabularModel,
    layers: ModelLayers,
    layer_improve: LayerImprove,
    gamma: float,
    reward: np.ndarray,
    loop: np.ndarray,
    stay: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One pass over the heights of an acyclic model: exact, linear in the transitions. Every
    array is gathered once in height order, so a height costs a handful of slice operations."""
    n, m = model.num_states, model.num_actions
    order = layers.states
    improve = layer_improve(order)
    # V with one extra slot (index -1 = n) that stays 0: where a corridor ends the episode
    v = np.zeros(n + 1)
    q_sorted = np.zeros((order.size, m))
    stay_sorted = stay[order]
    tr = layers.transitions
    prob, rew, nxt = model.prob[tr], reward[tr], model.next_state[tr]
    offset, scale, exit_ = layers.fold(gamma, reward, n)
    exit_ = np.where(exit_ < 0, n, exit_)
    # V(s') = offset + scale * V(exit): the identity 0 + 1 * V(s') unless s' is a corridor
    off, sc, ex = offset[nxt], scale[nxt], exit_[nxt]
    # gamma where the transition bootstraps, 0 where it ends or loops: ``r + g * V(s')`` equals
    # the sweep's ``r + gamma * where(cut, 0, V(s'))`` to the bit
    bootstrap = np.where(model.terminated[tr] | loop[tr], 0.0, gamma)
    local = layers.local_index
    sb, tb = layers.state_bounds.tolist(), layers.transition_bounds.tolist()
    for h in range(layers.depth):
        s0, s1, t0, t1 = sb[h], sb[h + 1], tb[h], tb[h + 1]
        after = off[t0:t1] + sc[t0:t1] * v[ex[t0:t1]]
        target = rew[t0:t1] + bootstrap[t0:t1] * after
        q = np.bincount(local[t0:t1], weights=prob[t0:t1] * target, minlength=(s1 - s0) * m)
        q = q.reshape(s1 - s0, m)
        q_sorted[s0:s1] = q
        rows = slice(s0, s1)
        v[order[s0:s1]] = improve(q, stay_sorted[rows], rows)
    p = layers.passing
    v[p] = offset[p] + scale[p] * v[exit_[p]]
    v = v[:n]
    q_rest = np.zeros((n, m))
    q_rest[order] = q_sorted
    q_rest[p] = v[p, None]  # every action of a corridor cell has its one outcome
    return q_rest + stay * v[:, None], v


def _expectation(pi: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``sum_a pi(a|s) Q(s, a)`` written as ``m + sum_a pi (Q - m)`` with ``m`` the smallest ``Q``
    among the actions the policy takes: equal to ``Q`` to the bit where ``Q(s, .)`` is constant on
    the policy's support, so routine advantages are exactly zero even when a policy row sums to 1
    only up to rounding."""
    on_support = np.where(pi > 0, q, np.inf).min(axis=1)
    q_min = np.where(np.isfinite(on_support), on_support, q.min(axis=1))
    return q_min + (pi * (q - q_min[:, None])).sum(axis=1)


def evaluate_policy(
    model: TabularModel,
    policy: PolicyLike,
    gamma: float = 1.0,
    max_iterations: int | None = None,
    tol: float = 0.0,
    reward: np.ndarray | None = None,
) -> OracleValues:
    """Exact ``Q^pi``, ``V^pi`` (and so ``A^pi``) of a tabular policy, without sampling.

    Acyclic models (every model of the suite: self-loops are solved in closed form) take one
    backward pass, linear in the transitions; models with cycles are swept to a fixed point.

    Args:
        model: the environment's model, ``env.unwrapped.model()``.
        policy: action probabilities per ``state_id`` (array or function, see :data:`PolicyLike`).
        gamma: discount factor in ``(0, 1]``.
        max_iterations: cap on sweeps (default ``10 * num_states + 100``); given, it forces sweeps.
        tol: stop sweeping when no value changes by more than this; 0 demands a fixed point.
        reward: per-transition rewards to use instead of ``model.reward``, shape
            ``(num_transitions,)`` (e.g. success indicators).
    """
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    pi = policy_table(policy, model)
    decide = model.decision_states

    def improve(q_rest: np.ndarray, stay: np.ndarray, ids: np.ndarray) -> np.ndarray:
        # V = sum_a pi (Q' + stay V)  =>  V = sum_a pi Q' / (1 - sum_a pi stay)
        rows, here = pi[ids], decide[ids]
        leave = 1.0 - (rows * stay).sum(axis=1)
        trapped = here & (leave <= 0)
        if trapped.any():
            raise ValueError(
                f"the policy never leaves state_id {int(ids[np.flatnonzero(trapped)[0]])} "
                "(it only takes actions that loop back there): its value is "
                "undefined"
            )
        return np.where(here, _expectation(rows, q_rest) / np.where(here, leave, 1.0), 0.0)

    def layer_improve(order: np.ndarray) -> Callable[[np.ndarray, np.ndarray, slice], np.ndarray]:
        pi_o = pi[order]
        support = pi_o > 0
        loops = _self_loops(model)[1][order] * gamma
        leave_o = 1.0 - (pi_o * loops).sum(axis=1)
        if np.any(leave_o <= 0):
            improve(np.zeros((order.size, model.num_actions)), loops, order)  # raises, names it

        def improve_rows(q: np.ndarray, stay: np.ndarray, rows: slice) -> np.ndarray:
            # the decision rows of _expectation (every row has support), divided by leave
            q_min = np.where(support[rows], q, np.inf).min(axis=1)
            return (q_min + (pi_o[rows] * (q - q_min[:, None])).sum(axis=1)) / leave_o[rows]

        return improve_rows

    q, v = _iterate(model, improve, gamma, max_iterations, tol, reward, layer_improve)
    q = np.where(decide[:, None], q, 0.0)
    return OracleValues(q=q, v=v, reachable=model.reachable.copy())


def optimal_values(
    model: TabularModel, gamma: float = 1.0, max_iterations: int | None = None, tol: float = 0.0
) -> OracleValues:
    """Exact ``Q*`` and ``V*`` by value iteration; ``.action_gap`` defines critical states."""
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    decide = model.decision_states

    def improve(q_rest: np.ndarray, stay: np.ndarray, ids: np.ndarray) -> np.ndarray:
        # repeating a until it leaves is worth Q'(s, a) / (1 - stay); a pure loop never wins
        with np.errstate(divide="ignore", invalid="ignore"):
            resolved = np.where(stay < 1, q_rest / (1 - stay), -np.inf)
        best = resolved.max(axis=1) if resolved.size else np.zeros(len(ids))
        return np.where(decide[ids] & np.isfinite(best), best, 0.0)

    def layer_improve(order: np.ndarray) -> Callable[[np.ndarray, np.ndarray, slice], np.ndarray]:
        return lambda q, stay, rows: improve(q, stay, order[rows])

    q, v = _iterate(model, improve, gamma, max_iterations, tol, layer_improve=layer_improve)
    q = np.where(decide[:, None], q, 0.0)
    return OracleValues(q=q, v=v, reachable=model.reachable.copy())


def occupancy(
    model: TabularModel, policy: PolicyLike, max_iterations: int | None = None, tol: float = 0.0
) -> np.ndarray:
    """Expected number of visits of each state per episode under ``policy`` (terminal states
    excluded), shape ``(num_states,)``: ``d = mu + P_pi^T d`` summed over time. With ``gamma = 1``
    the exact policy gradient of a tabular softmax is ``d(s) pi(a|s) A(s, a)`` per logit."""
    pi = policy_table(policy, model)
    weight = model.prob * pi[model.state, model.action] * ~model.terminated
    decide = model.decision_states
    visits = np.where(decide, model.initial, 0.0)
    current = visits.copy()
    limit = max_iterations if max_iterations is not None else 10 * model.num_states + 100
    for _ in range(limit):
        current = np.bincount(
            model.next_state, weights=weight * current[model.state], minlength=model.num_states
        )
        visits += current
        if current.sum() <= tol:
            return visits
    raise RuntimeError(
        f"occupancy did not converge in {limit} sweeps: the model has cycles "
        "that the policy never leaves"
    )


def success_values(model: TabularModel, success: np.ndarray, policy: PolicyLike) -> float:
    """Exact probability that an episode under ``policy`` ends in a state with
    ``success[state_id]`` (bool, shape ``(num_states,)``), from the initial distribution."""
    hits = model.terminated & success[model.next_state]
    values = evaluate_policy(model, policy, reward=hits.astype(np.float64))
    return float(model.initial @ values.v)


def expected_return(model: TabularModel, values: OracleValues) -> float:
    """Expected return from the initial distribution: ``sum_s mu(s) V(s)``."""
    return float(model.initial @ values.v)


def return_moments(model: TabularModel, policy: PolicyLike) -> tuple[float, float]:
    """Exact mean and standard deviation of an episode's undiscounted return under ``policy``,
    from the initial distribution, without sampling: ``E[R] = mu . V`` and ``E[R^2] = mu . M``
    with ``M`` the value of the per-transition reward ``r^2 + 2 r V(s')`` (``G^2 = r^2 + 2 r G'
    + G'^2``; ``V(s') = 0`` past a terminal transition)."""
    v = evaluate_policy(model, policy).v
    after = np.where(model.terminated, 0.0, v[model.next_state])
    second = evaluate_policy(model, policy, reward=model.reward**2 + 2 * model.reward * after).v
    mean = float(model.initial @ v)
    variance = float(model.initial @ second) - mean**2
    return mean, math.sqrt(max(variance, 0.0))


def uniform_policy(model: TabularModel) -> np.ndarray:
    """The uniform random policy, shape ``(num_states, num_actions)``."""
    return np.full((model.num_states, model.num_actions), 1.0 / model.num_actions)


__all__: Iterable[str] = [
    "ModelLayers",
    "OracleValues",
    "Outcome",
    "PolicyLike",
    "StatesById",
    "TabularModel",
    "build_model",
    "evaluate_policy",
    "expected_return",
    "model_from_arrays",
    "occupancy",
    "optimal_values",
    "policy_table",
    "return_moments",
    "success_values",
    "uniform_policy",
]
