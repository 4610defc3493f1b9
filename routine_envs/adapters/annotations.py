"""The annotations an adapter hands to a trainer: per turn and per episode, public and plain.

Every adapter keeps an :class:`AnnotationLog` of its episode and exposes it (TRL: the
``annotations`` property of the environment class and :func:`routine_envs.adapters.trl.
annotations_of`; verifiers: ``state["routine_annotations"]`` and rubric metrics; SkyRL:
``metadata["annotations"]`` and ``get_metrics()``), so a trainer-side consumer (a reward
function, a rubric metric, a logger) never reads an adapter's private attributes.

Per turn (:data:`TURN_KEYS`), of the state the turn's reply was given in (as
:class:`~routine_envs.episodes.Episode` records ``infos``): ``step`` (0 first), ``critical``,
``anchor`` (the observation text's hash), ``state_id`` and ``invalid_turn`` (the reply named no
action). Per episode, once it ended (:data:`EPISODE_KEYS`): ``decision_density``,
``num_critical``, ``num_invalid_turns``, ``episode_length`` and ``success``, as the text env
counts them (invalid turns included: see :mod:`routine_envs.text.env`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routine_envs import annotations as keys

TURN_KEYS = ("step", "critical", "anchor", "state_id", "invalid_turn")
EPISODE_KEYS = (
    keys.DECISION_DENSITY,
    keys.NUM_CRITICAL,
    keys.NUM_INVALID_TURNS,
    keys.EPISODE_LENGTH,
    keys.SUCCESS,
)


class AnnotationLog:
    """The annotations of one episode, turn by turn.

    Call :meth:`start` with the ``info`` of ``reset`` and :meth:`record` with each step's
    ``info``; :meth:`turns` and :meth:`episode` are what a trainer reads."""

    def __init__(self) -> None:
        self._turns: list[dict[str, Any]] = []
        self._pending: Mapping[str, Any] = {}
        self._episode: dict[str, Any] | None = None

    def start(self, info: Mapping[str, Any]) -> None:
        """A new episode whose first state has ``info``."""
        self._turns, self._pending, self._episode = [], dict(info), None

    def record(self, info: Mapping[str, Any], done: bool) -> None:
        """One turn taken in the pending state; ``info`` is the step's (the next state's),
        and the episode's counts when ``done``."""
        state = self._pending
        self._turns.append(
            {
                "step": len(self._turns),
                "critical": bool(state.get(keys.CRITICAL, False)),
                "anchor": int(state.get(keys.ANCHOR, 0)),
                "state_id": int(state.get(keys.STATE_ID, -1)),
                "invalid_turn": bool(info.get(keys.INVALID_TURN, False)),
            }
        )
        self._pending = dict(info)
        if done:
            self._episode = {k: info[k] for k in EPISODE_KEYS if k in info}

    def turns(self) -> list[dict[str, Any]]:
        """One dict per turn so far (:data:`TURN_KEYS`), a copy."""
        return [dict(t) for t in self._turns]

    def episode(self) -> dict[str, Any] | None:
        """The episode's counts (:data:`EPISODE_KEYS`) once it ended, else ``None``."""
        return None if self._episode is None else dict(self._episode)

    def as_dict(self) -> dict[str, Any]:
        """``{"turns": [...], "episode": {...} | None}`` (JSON-serialisable)."""
        return {"turns": self.turns(), "episode": self.episode()}

    def metrics(self) -> dict[str, float]:
        """Scalar metrics for a logger: the episode's counts (floats) once it ended, and the
        fraction of turns taken in critical states so far."""
        out = {k: float(v) for k, v in (self.episode() or {}).items()}
        if self._turns:
            out["critical_turn_fraction"] = sum(t["critical"] for t in self._turns) / len(
                self._turns
            )
        return out
