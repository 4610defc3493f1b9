"""Episode records: a batch of finished episodes as flat per-step arrays.

Every advantage estimator in :mod:`routine_envs.credit` consumes an :class:`EpisodeBatch`. Steps
of one episode are contiguous; ``episode_starts`` holds the offsets. ``N`` is the number of steps
in the batch, ``M`` the number of episodes.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

import gymnasium as gym
import numpy as np

from routine_envs import annotations as keys


@dataclass
class Episode:
    """One finished episode, as collected step by step.

    ``infos[t]`` is the info of the state in which action ``t`` was taken (the info returned by
    ``reset`` for ``t = 0``, by step ``t - 1`` after that). ``snapshots[t]``, when kept, is
    ``(env_copy, obs, info)`` of that state, for Monte-Carlo critics that branch from it.
    ``observations[t]``, ``log_probs[t]`` and ``entropies[t]``, when recorded, are the
    observation of that state, the behaviour policy's ``log pi(a_t | s_t)`` and the entropy of
    its action distribution there (nats). ``final_info``, when recorded, is the info the last
    step returned (of the state the episode ended in): with it the batch has each step's
    ``turn_score`` after the step (:attr:`EpisodeBatch.turn_scores`).
    """

    rewards: list[float] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    infos: list[Mapping[str, Any]] = field(default_factory=list)
    values: list[float] | None = None
    observations: list[Any] | None = None
    log_probs: list[float] | None = None
    entropies: list[float] | None = None
    group: int = 0
    truncated: bool = False
    bootstrap_value: float = 0.0
    snapshots: list[tuple[Any, Any, Mapping[str, Any]]] | None = None
    final_info: Mapping[str, Any] | None = None


PER_STEP_FIELDS = (
    "actions",
    "critical",
    "state_ids",
    "anchors",
    "observations",
    "log_probs",
    "entropies",
    "values",
    "turn_scores",
)
"""The optional :class:`EpisodeBatch` fields with one entry per step."""

PRIVILEGED_FIELDS: Mapping[str, str] = {
    "critical": "the ground-truth annotation of which steps matter",
    "state_ids": "the canonical id of the state, which may encode what the observation hides",
    "turn_scores": "a verifier's score of the state each step reached (a process reward)",
    "values": "privileged where the source fills it with exact values (the SNR lab's V^pi); a "
    "learner's own value predictions are not",
}
"""The batch fields that carry privileged information (computed from the hidden state or the
exact model, unavailable to an agent in deployment), with why: a method that requires one of them
is marked privileged in result tables. ``values`` is privileged only where its source is exact
(the lab), not where a trainer fills it with the learner's predictions."""


def privileged_reads(reader: Any) -> tuple[str, ...]:
    """The :data:`PRIVILEGED_FIELDS` that ``reader`` (an estimator or a detector: anything with
    ``requires``; its :class:`Declared` record: the frozen set) declares, in that mapping's
    order: what marks it privileged."""
    declared = frozenset(reader.requires)
    return tuple(f for f in PRIVILEGED_FIELDS if f in declared)


@dataclass(frozen=True, eq=False)
class Declared:
    """A reader (an estimator or a detector) with what it declares read once, when it is built
    (:func:`routine_envs.credit.declare`): a ``requires`` property that says something else when
    read again changes nothing. Every consumer (the trainers, the SNR lab, the merge probe, the
    detector scorer) holds this record and uses nothing else: the batch the reader is given
    (:func:`batch_for`), the fields checked against its source, and the privileged fields
    recorded for its runs (:attr:`privileged`) come from the one frozen set.

    Attributes:
        reader: the estimator or detector itself (call it through this record).
        name: its ``name``.
        requires: its ``requires``, frozen.
        kind: ``"estimator"`` or ``"detector"`` (how errors name it).
        trains_critic: its ``trains_critic`` (``False`` where it has none: a detector).
        group_independent: its ``group_independent`` (``False`` where it has none).
    """

    reader: Any
    name: str
    requires: frozenset[str]
    kind: str = "estimator"
    trains_critic: bool = False
    group_independent: bool = False

    @property
    def privileged(self) -> tuple[str, ...]:
        """The privileged fields it declared (:func:`privileged_reads`): all it is given."""
        return privileged_reads(self)

    def __call__(self, batch: EpisodeBatch) -> Any:
        """The reader on ``batch`` as it may see it (:func:`batch_for`)."""
        return self.reader(batch_for(self, batch))


def reader_label(reader: Any) -> str:
    """How errors name ``reader``: ``estimator 'rloo'``, ``detector 'entropy'`` (a
    :class:`Declared` record by its ``kind``; else an estimator where it has
    ``trains_critic``)."""
    if isinstance(reader, Declared):
        kind = reader.kind
    else:
        kind = "estimator" if hasattr(reader, "trains_critic") else "detector"
    return f"{kind} {getattr(reader, 'name', type(reader).__name__)!r}"


def batch_for(reader: Any, batch: EpisodeBatch) -> EpisodeBatch:
    """``batch`` as ``reader`` (an estimator or a detector; every consumer passes its
    :class:`Declared` record, so the frozen ``requires``) may see it: every privileged field it
    does not declare in ``requires`` replaced by an :class:`UndeclaredField` that raises on any
    use (:meth:`EpisodeBatch.visible_to`). Every place that applies an estimator or a detector
    to a batch calls it through this, so a read of ``batch.critical`` (or ``state_ids``,
    ``turn_scores``, ``values``) that the reader did not declare fails at once instead of
    passing unseen."""
    return batch.visible_to(frozenset(reader.requires), reader_label(reader))


class UndeclaredFieldError(RuntimeError):
    """A reader (an estimator, a detector) used a privileged batch field that it did not declare
    in ``requires`` (:class:`UndeclaredField`)."""


class UndeclaredField:
    """What a privileged :class:`EpisodeBatch` field holds for a reader that did not declare it,
    where the batch has it (:meth:`EpisodeBatch.visible_to`; a field the batch lacks stays
    ``None``).

    Any use raises :class:`UndeclaredFieldError` naming the field and the reader: truth value,
    ``len``, indexing, iteration, membership, arithmetic, comparisons, hashing, conversion to a
    number, ``np.asarray`` and every numpy function and ufunc (``np.where(field, 1.0, 0.05)``
    included), and any attribute (``hasattr`` too). What reveals nothing works: ``is None`` (it
    is not ``None``, so :func:`routine_envs.credit.check_batch` passes it), ``isinstance``,
    ``repr``, copying and pickling (so a batch holding one slices, splits and copies)."""

    __slots__ = ("_field", "_reader")

    def __init__(self, field: str, reader: str) -> None:
        object.__setattr__(self, "_field", field)
        object.__setattr__(self, "_reader", reader)

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        why = PRIVILEGED_FIELDS.get(self._field, "privileged")
        raise UndeclaredFieldError(
            f"{self._reader} read batch.{self._field}, which it did not declare in requires "
            f"(privileged: {why}); declare it in requires to read it (which marks the method "
            "privileged)"
        )

    def __getattr__(self, name: str) -> NoReturn:
        if name in UndeclaredField.__slots__:  # not set yet: no recursion
            raise AttributeError(name)
        self._refuse()

    def __repr__(self) -> str:
        return f"<batch.{self._field} hidden from {self._reader}: not declared in requires>"

    def hides_from(self, reader: str) -> bool:
        """Whether this sentinel hides its field from ``reader`` (a method, so it answers where
        every other use raises)."""
        return self._reader == reader

    def __copy__(self) -> UndeclaredField:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> UndeclaredField:
        return self

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (UndeclaredField, (self._field, self._reader))

    __setattr__ = __delattr__ = __call__ = _refuse
    __bool__ = __len__ = __iter__ = __reversed__ = __contains__ = _refuse
    __getitem__ = __setitem__ = __delitem__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = _refuse  # type: ignore[assignment]
    __array__ = __array_function__ = __array_ufunc__ = _refuse
    __int__ = __float__ = __complex__ = __index__ = __round__ = _refuse
    __trunc__ = __floor__ = __ceil__ = __neg__ = __pos__ = __abs__ = __invert__ = _refuse
    __add__ = __radd__ = __iadd__ = __sub__ = __rsub__ = __isub__ = _refuse
    __mul__ = __rmul__ = __imul__ = __matmul__ = __rmatmul__ = __imatmul__ = _refuse
    __truediv__ = __rtruediv__ = __itruediv__ = __floordiv__ = __rfloordiv__ = _refuse
    __ifloordiv__ = __mod__ = __rmod__ = __imod__ = __divmod__ = __rdivmod__ = _refuse
    __pow__ = __rpow__ = __ipow__ = __lshift__ = __rlshift__ = __ilshift__ = _refuse
    __rshift__ = __rrshift__ = __irshift__ = __and__ = __rand__ = __iand__ = _refuse
    __or__ = __ror__ = __ior__ = __xor__ = __rxor__ = __ixor__ = _refuse


def stack_observations(observations: Sequence[Any]) -> np.ndarray:
    """Observations as one array ``(N, *obs_shape)``; an object array ``(N,)`` where they do not
    stack (text, dicts, ragged shapes)."""
    try:
        out = np.stack([np.asarray(o) for o in observations])
    except ValueError:
        out = None
    if out is None or out.dtype == object or out.dtype.kind in "US":
        out = np.empty(len(observations), dtype=object)
        out[:] = list(observations)
    return out


@dataclass(frozen=True)
class EpisodeBatch:
    """A batch of ``M`` finished episodes with ``N`` steps in all.

    Attributes:
        rewards: reward of each step, shape ``(N,)``.
        episode_starts: offsets, shape ``(M + 1,)``: episode ``i`` is steps
            ``episode_starts[i]:episode_starts[i + 1]``.
        groups: group id of each episode, shape ``(M,)``: episodes with equal ids started from
            the same initial state (GRPO-style groups).
        actions: action of each step, shape ``(N,)``, or ``None``.
        critical: ``info["critical"]`` of each step's state, shape ``(N,)``, or ``None``.
        state_ids: ``info["state_id"]`` of each step's state, shape ``(N,)``, or ``None``
            (privileged: the id may encode what the observation hides).
        anchors: ``info["anchor"]`` of each step, an observation-only key (equal observations,
            equal anchors), shape ``(N,)`` int64, or ``None``.
        observations: the observation of each step's state, shape ``(N, *obs_shape)`` (an
            object array where observations do not stack, e.g. text), or ``None``.
        log_probs: the behaviour policy's ``log pi(a_t | s_t)`` of each step (nats), shape
            ``(N,)``, or ``None``.
        entropies: the entropy of the behaviour policy's action distribution at each step's
            state (nats), shape ``(N,)``, or ``None``.
        values: the learner's value prediction ``V(s_t)``, shape ``(N,)``, or ``None``.
        turn_scores: ``info["turn_score"]`` of the state each step *reached* (returned by step
            ``t``: a verifier's score of the world after turn ``t``), shape ``(N,)``, or
            ``None`` (privileged: see :data:`PRIVILEGED_FIELDS`).
        truncated: whether each episode was cut by a time limit, shape ``(M,)``.
        bootstrap_values: ``V(s_T)`` after the last step of each episode, shape ``(M,)``; only
            used where ``truncated`` (a terminated episode has no future).
        snapshots: per step, ``(env_copy, obs, info)`` of the state, or ``None``.
    """

    rewards: np.ndarray
    episode_starts: np.ndarray
    groups: np.ndarray
    actions: np.ndarray | None = None
    critical: np.ndarray | None = None
    state_ids: np.ndarray | None = None
    anchors: np.ndarray | None = None
    observations: np.ndarray | None = None
    log_probs: np.ndarray | None = None
    entropies: np.ndarray | None = None
    values: np.ndarray | None = None
    turn_scores: np.ndarray | None = None
    truncated: np.ndarray | None = None
    bootstrap_values: np.ndarray | None = None
    snapshots: Sequence[tuple[Any, Any, Mapping[str, Any]]] | None = None

    def __post_init__(self) -> None:
        starts = np.asarray(self.episode_starts)
        n, m = len(self.rewards), len(starts) - 1
        if m < 1 or starts[0] != 0 or starts[-1] != n or np.any(np.diff(starts) < 1):
            raise ValueError(
                "episode_starts must go from 0 to num_steps in increasing steps, "
                f"got {starts.tolist()[:10]} for {n} steps"
            )
        if len(self.groups) != m:
            raise ValueError(
                f"groups must have one entry per episode ({m}), got {len(self.groups)}"
            )
        for name in PER_STEP_FIELDS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, UndeclaredField) and len(value) != n:
                raise ValueError(f"{name} must have one entry per step ({n}), got {len(value)}")
        for name in ("truncated", "bootstrap_values"):
            value = getattr(self, name)
            if value is not None and len(value) != m:
                raise ValueError(f"{name} must have one entry per episode ({m}), got {len(value)}")
        if self.snapshots is not None and len(self.snapshots) != n:
            raise ValueError(
                f"snapshots must have one entry per step ({n}), got {len(self.snapshots)}"
            )

    # ------------------------------------------------------------------------- shape
    @property
    def num_steps(self) -> int:
        return len(self.rewards)

    @property
    def num_episodes(self) -> int:
        return len(self.episode_starts) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Steps per episode, shape ``(M,)``."""
        return np.diff(self.episode_starts)

    @property
    def episode_index(self) -> np.ndarray:
        """Episode of each step, shape ``(N,)``."""
        return np.repeat(np.arange(self.num_episodes), self.lengths)

    @property
    def step_index(self) -> np.ndarray:
        """Position of each step within its episode (0 first), shape ``(N,)``."""
        return np.arange(self.num_steps) - np.repeat(self.episode_starts[:-1], self.lengths)

    def episode_returns(self) -> np.ndarray:
        """Undiscounted return of each episode, shape ``(M,)``."""
        return np.add.reduceat(self.rewards, self.episode_starts[:-1])

    def padded(self, per_step: np.ndarray, fill: float = 0.0) -> np.ndarray:
        """``per_step`` (shape ``(N,)``) laid out as ``(M, max_length)``, padded with ``fill``."""
        out = np.full((self.num_episodes, int(self.lengths.max())), fill, dtype=per_step.dtype)
        out[self.episode_index, self.step_index] = per_step
        return out

    def unpad(self, table: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`padded`: shape ``(M, max_length)`` back to ``(N,)``."""
        return table[self.episode_index, self.step_index]

    def returns_to_go(self, gamma: float = 1.0) -> np.ndarray:
        """``G_t = sum_{k >= t} gamma^(k - t) r_k`` within each episode, shape ``(N,)``.

        A truncated episode adds ``gamma^(T - t) * bootstrap_values`` (when given)."""
        rewards = self.padded(np.asarray(self.rewards, dtype=np.float64))
        tail = np.zeros(self.num_episodes)
        if self.truncated is not None and self.bootstrap_values is not None:
            tail = np.where(self.truncated, self.bootstrap_values, 0.0)
        out = np.zeros_like(rewards)
        running = tail.copy()
        lengths = self.lengths
        for t in range(rewards.shape[1] - 1, -1, -1):
            live = t < lengths
            running = np.where(live, rewards[:, t] + gamma * running, running)
            out[:, t] = running
        return self.unpad(out)

    def group_index(self) -> np.ndarray:
        """Dense group index ``0..G-1`` of each episode, shape ``(M,)``."""
        return np.unique(self.groups, return_inverse=True)[1].reshape(-1)

    def episodes(self, start: int, stop: int) -> EpisodeBatch:
        """The batch of episodes ``start:stop`` (contiguous), every field sliced alike."""
        if not 0 <= start < stop <= self.num_episodes:
            raise ValueError(f"episodes {start}:{stop} out of 0:{self.num_episodes}")
        lo, hi = int(self.episode_starts[start]), int(self.episode_starts[stop])
        per_step = {name: getattr(self, name) for name in PER_STEP_FIELDS}
        per_episode = {n: getattr(self, n) for n in ("groups", "truncated", "bootstrap_values")}
        return EpisodeBatch(
            rewards=self.rewards[lo:hi],
            episode_starts=self.episode_starts[start : stop + 1] - lo,
            **{n: _sliced(v, lo, hi) for n, v in per_step.items()},
            **{n: None if v is None else v[start:stop] for n, v in per_episode.items()},
            snapshots=None if self.snapshots is None else self.snapshots[lo:hi],
        )

    def visible_to(self, declared: Collection[str], reader: str = "a reader") -> EpisodeBatch:
        """This batch as a reader (named by ``reader`` in errors: ``estimator 'rloo'``) that
        declared ``declared`` may see it: every :data:`PRIVILEGED_FIELDS` entry it did not
        declare that the batch has replaced by an :class:`UndeclaredField`, which raises on any
        use (a field the batch lacks stays ``None``; the other fields are the same arrays, not
        copies; nothing left to hide: the batch itself)."""
        hidden = {
            f: UndeclaredField(f, reader)
            for f in PRIVILEGED_FIELDS
            if f not in declared
            and getattr(self, f) is not None
            and not (
                isinstance(getattr(self, f), UndeclaredField)
                and getattr(self, f).hides_from(reader)
            )
        }
        return replace(self, **hidden) if hidden else self

    def split_groups(self) -> list[EpisodeBatch]:
        """One batch per group, in order (each group's episodes must be contiguous, as
        collected here): for estimators that must see one group at a time."""
        groups = np.asarray(self.groups)
        edges = np.flatnonzero(np.diff(groups) != 0) + 1
        bounds = [0, *edges.tolist(), self.num_episodes]
        if len(np.unique(groups)) != len(bounds) - 1:
            raise ValueError("the episodes of a group are not contiguous")
        return [self.episodes(a, b) for a, b in itertools.pairwise(bounds)]

    # ---------------------------------------------------------------------- building
    @classmethod
    def from_episodes(cls, episodes: Iterable[Episode]) -> EpisodeBatch:
        """Stack :class:`Episode` records. Annotations are taken from the infos when every step
        has them (``critical``/``state_id``/``anchor``; ``turn_score`` after each step, from the
        next step's info and the episode's ``final_info``, when every episode has one);
        observations, log-probabilities, entropies, values and snapshots when every episode has
        them."""
        episodes = list(episodes)
        if not episodes:
            raise ValueError("an EpisodeBatch needs at least one episode")
        for i, ep in enumerate(episodes):
            if not ep.rewards or len({len(ep.rewards), len(ep.actions), len(ep.infos)}) != 1:
                raise ValueError(
                    f"episode {i} has {len(ep.rewards)} rewards, "
                    f"{len(ep.actions)} actions and {len(ep.infos)} infos"
                )
        lengths = [len(ep.rewards) for ep in episodes]
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        infos = [info for ep in episodes for info in ep.infos]

        def from_infos(key: str, dtype: type) -> np.ndarray | None:
            if all(key in info for info in infos):
                return np.fromiter((info[key] for info in infos), dtype=dtype, count=len(infos))
            return None

        def per_step(name: str) -> np.ndarray | None:
            if all(getattr(ep, name) is not None for ep in episodes):
                return np.concatenate(
                    [np.asarray(getattr(ep, name), dtype=np.float64) for ep in episodes]
                )
            return None

        after = [
            info for ep in episodes for info in (*ep.infos[1:], ep.final_info or {})
        ]  # the info each step returned: of the state it reached
        turn_scores = None
        if all(keys.TURN_SCORE in info for info in after):
            turn_scores = np.fromiter(
                (info[keys.TURN_SCORE] for info in after), dtype=np.float64, count=len(after)
            )
        observations = None
        if all(ep.observations is not None for ep in episodes):
            observations = stack_observations([o for ep in episodes for o in ep.observations])
        snapshots = None
        if all(ep.snapshots is not None for ep in episodes):
            snapshots = [s for ep in episodes for s in ep.snapshots]
        return cls(
            rewards=np.concatenate([np.asarray(ep.rewards, dtype=np.float64) for ep in episodes]),
            episode_starts=starts,
            groups=np.array([ep.group for ep in episodes], dtype=np.int64),
            actions=np.concatenate([np.asarray(ep.actions, dtype=np.int64) for ep in episodes]),
            critical=from_infos(keys.CRITICAL, bool),
            state_ids=from_infos(keys.STATE_ID, np.int64),
            anchors=from_infos(keys.ANCHOR, np.int64),
            observations=observations,
            log_probs=per_step("log_probs"),
            entropies=per_step("entropies"),
            values=per_step("values"),
            turn_scores=turn_scores,
            truncated=np.array([ep.truncated for ep in episodes], dtype=bool),
            bootstrap_values=np.array([ep.bootstrap_value for ep in episodes], dtype=np.float64),
            snapshots=snapshots,
        )


def _sliced(value: Any, lo: int, hi: int) -> Any:
    """Steps ``lo:hi`` of a per-step field (``None`` and a hidden field stay as they are)."""
    return value if value is None or isinstance(value, UndeclaredField) else value[lo:hi]


ActionFn = Callable[[Any, Mapping[str, Any], np.random.Generator], int]
"""A single-env policy for collection: ``(obs, info, rng) -> action``."""


def collect_episodes(
    env: gym.Env,
    policy: ActionFn,
    num_groups: int,
    group_size: int = 1,
    seed: int = 0,
    keep_snapshots: bool = False,
) -> EpisodeBatch:
    """Play ``num_groups * group_size`` episodes of ``env`` under ``policy``.

    The episodes of a group start from the same initial state: each is reset with the group's
    seed, so a group shares its initial state and the environment's random stream (common random
    numbers); only the policy's choices, drawn from a generator seeded by ``seed``, differ.
    The batch has the observations and the annotations of the infos; ``policy`` returns only
    actions, so it has no log-probabilities or entropies.

    Args:
        env: a Gymnasium environment (annotated, for estimators that need annotations).
        policy: ``(obs, info, rng) -> action``.
        num_groups: number of groups ``G``.
        group_size: episodes per group.
        seed: seeds the group seeds and the policy's generator.
        keep_snapshots: keep ``(deepcopy(env), obs, info)`` of every state (for ``mc_rollout``).
    """
    rng = np.random.default_rng(seed)
    group_seeds = rng.integers(2**31 - 1, size=num_groups)
    episodes = []
    for g, group_seed in enumerate(group_seeds):
        for _ in range(group_size):
            obs, info = env.reset(seed=int(group_seed))
            ep = Episode(group=g, observations=[], snapshots=[] if keep_snapshots else None)
            done = False
            while not done:
                if keep_snapshots:
                    ep.snapshots.append((copy.deepcopy(env), obs, info))
                action = policy(obs, info, rng)
                ep.infos.append(info)
                ep.observations.append(obs)
                ep.actions.append(action)
                obs, reward, terminated, truncated, info = env.step(action)
                ep.rewards.append(float(reward))
                done = terminated or truncated
                ep.truncated = bool(truncated and not terminated)
            ep.final_info = info
            episodes.append(ep)
    return EpisodeBatch.from_episodes(episodes)
