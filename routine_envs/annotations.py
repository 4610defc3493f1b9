"""The info contract: the keys every routine-envs environment puts in ``info``.

This module is the single definition of those keys; environments, estimators, tests and docs
import them from here.

Per step (on ``reset`` and on every ``step``), describing the state just observed, i.e. the
state in which the *next* action is taken:

``critical`` (bool)
    Ground truth: can the action taken in this state change the expected return? Formally, the
    optimal action gap ``max_a Q*(s, a) - min_a Q*(s, a)`` is positive (for every environment in
    the suite this is the same as: under any policy that gives every action positive probability,
    ``Q^pi(s, .)`` is not constant). Routine states have ``critical=False``; so does a terminal
    state, where no action is taken.
``state_id`` (int)
    Canonical id of the underlying (Markov) state, in ``[0, env.unwrapped.num_states)``. Equal
    states give equal ids, so ids can index tabular policies and values. The state may hold what
    the observation hides (a hidden bug, the layout's outcome so far): ``state_id`` is
    *privileged*, and grouping steps by it is an explicit, named choice.
``anchor`` (int)
    An observation-only grouping key: a stable 63-bit hash of the observation alone
    (:func:`observation_anchor`), so equal observations give equal anchors in every process and
    run. Estimators that group steps (GiGPO's step groups) group by it unless asked otherwise.
``turn_score`` (float)
    A verifier's score of the state just observed: how far the task is along, as a process
    reward model or a programmatic check would judge it (``Dynamics.turn_score``). By default
    the exact probability that the episode succeeds from this state when played optimally from
    here (terminal states: 1.0 for a success, else 0.0); environments document their own
    (Diluted Doors: 1.0 while every door chosen so far is right; CodeFix: 1.0 while the applied
    patch makes the failing test pass). It is *privileged*, like ``state_id``: it is computed
    from the hidden state, so a method that reads it is marked so
    (:data:`routine_envs.episodes.PRIVILEGED_FIELDS`).

At the end of an episode (``terminated or truncated``) additionally:

``success`` (bool)
    The episode reached the environment's goal.
``num_critical`` (int)
    Number of steps of the episode whose action was taken in a critical state.
``episode_length`` (int)
    Number of steps of the episode (actions taken).
``decision_density`` (float)
    ``num_critical / episode_length``: the realized decision density rho of the episode.

Optional, where an environment's routine is only approximate (e.g. ``RoutineGrid-v0`` with
``soft_routine``):

``action_gap`` (float)
    The exact optimal action gap ``max_a Q*(s, a) - min_a Q*(s, a)`` of the state just observed
    (0 on a terminal state); ``critical`` is then ``action_gap > tolerance``, the tolerance
    documented by the environment.

Where some actions are invalid in some states (e.g. ``CodeFix-v0``; the environment then also
has ``action_masks()``, the sb3-contrib ``MaskablePPO`` protocol):

``action_mask`` (bool array, shape ``(num_actions,)``)
    The actions valid in the state just observed.
``invalid_action`` (bool)
    The action just taken was invalid there: a no-op that left the state unchanged.

The text interface (:mod:`routine_envs.text`) adds, on every turn:

``invalid_turn`` (bool)
    The reply just read named no action (malformed text): the state did not change.
``invalid_reason`` (str)
    Why (``""`` for a valid turn).
``parsed_action`` (int)
    The action the reply named, ``-1`` for an invalid turn (``-1`` on ``reset``).

and at the episode end ``num_invalid_turns`` (int). There ``episode_length`` counts turns,
invalid ones included, and ``num_critical`` the turns taken in a critical state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

CRITICAL: Final = "critical"
STATE_ID: Final = "state_id"
ANCHOR: Final = "anchor"
TURN_SCORE: Final = "turn_score"
SUCCESS: Final = "success"
NUM_CRITICAL: Final = "num_critical"
EPISODE_LENGTH: Final = "episode_length"
DECISION_DENSITY: Final = "decision_density"

STEP_KEYS: Final = (CRITICAL, STATE_ID, ANCHOR, TURN_SCORE)
"""Keys present in ``info`` on ``reset`` and every ``step``."""
EPISODE_END_KEYS: Final = (SUCCESS, NUM_CRITICAL, EPISODE_LENGTH, DECISION_DENSITY)
"""Keys added to ``info`` on the step that ends an episode."""
ACTION_GAP: Final = "action_gap"
ACTION_MASK: Final = "action_mask"
INVALID_ACTION: Final = "invalid_action"
OPTIONAL_KEYS: Final = (ACTION_GAP, ACTION_MASK, INVALID_ACTION)
"""Keys some environments add on ``reset`` and every ``step``."""
INVALID_TURN: Final = "invalid_turn"
INVALID_REASON: Final = "invalid_reason"
NUM_INVALID_TURNS: Final = "num_invalid_turns"
PARSED_ACTION: Final = "parsed_action"
TEXT_KEYS: Final = (INVALID_TURN, INVALID_REASON, PARSED_ACTION)
"""Keys the text interface adds on every turn (``num_invalid_turns`` at the episode end)."""
ALL_KEYS: Final = STEP_KEYS + EPISODE_END_KEYS


def observation_anchor(observation: Any) -> int:
    """The ``anchor`` of an observation: a stable 63-bit hash (blake2b) of its dtype, shape and
    bytes (of its UTF-8 text for a string, of its items in key order for a dict), equal for
    equal observations in every process, as a non-negative int."""
    digest = hashlib.blake2b(digest_size=8)
    _feed(digest, observation)
    return int.from_bytes(digest.digest(), "little") >> 1


def _feed(digest: Any, observation: Any) -> None:
    if isinstance(observation, str):
        digest.update(b"s" + observation.encode())
    elif isinstance(observation, Mapping):
        for key in sorted(observation):
            digest.update(b"k" + str(key).encode())
            _feed(digest, observation[key])
    else:
        array = np.ascontiguousarray(observation)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())


def decision_density(critical: Sequence[bool] | np.ndarray) -> float:
    """Realized decision density of one episode.

    Args:
        critical: the ``critical`` flag of each state in which an action was taken, shape ``(T,)``.

    Returns:
        ``sum(critical) / T``, a float in ``[0, 1]``.

    Raises:
        ValueError: for an empty episode, whose density is undefined.
    """
    flags = np.asarray(critical, dtype=bool)
    if flags.ndim != 1 or flags.size == 0:
        raise ValueError(f"critical must be a non-empty 1-d sequence, got shape {flags.shape}")
    return float(flags.sum() / flags.size)


def episode_end_info(
    success: bool | np.ndarray,
    num_critical: int | np.ndarray,
    episode_length: int | np.ndarray,
    *,
    ended: np.ndarray | None = None,
    num_invalid_turns: int | None = None,
) -> dict[str, Any]:
    """The keys added to ``info`` at an episode's end, in :data:`EPISODE_END_KEYS` order: the
    one definition every env, vector env, team env and the text env build them from.

    Args:
        success: the episode reached the goal (``bool(success)`` is reported).
        num_critical: steps (turns) taken in a critical state, int.
        episode_length: steps (turns) of the episode, int >= 1.
        ended: for a vector env, a bool array ``(num_envs,)``: the other arguments are then
            arrays of that shape (kept as they are), and ``decision_density`` is their float64
            ratio where ``ended`` (0 elsewhere).
        num_invalid_turns: the text interface's count of invalid turns, added last when given.

    Returns:
        ``{success, num_critical, episode_length, decision_density[, num_invalid_turns]}``.
    """
    if ended is None:
        success = bool(success)
        density: float | np.ndarray = num_critical / episode_length
    else:
        density = np.zeros(np.shape(ended))
        np.divide(num_critical, episode_length, out=density, where=ended)
    info: dict[str, Any] = {
        SUCCESS: success,
        NUM_CRITICAL: num_critical,
        EPISODE_LENGTH: episode_length,
        DECISION_DENSITY: density,
    }
    if num_invalid_turns is not None:
        info[NUM_INVALID_TURNS] = num_invalid_turns
    return info


def check_step_info(info: Mapping[str, Any], num_states: int | None = None) -> None:
    """Raise ``ValueError`` when ``info`` breaks the per-step contract (a key missing or wrong)."""
    for key in STEP_KEYS:
        if key not in info:
            raise ValueError(f"info lacks the required key {key!r}: {sorted(info)}")
    if not isinstance(info[CRITICAL], (bool, np.bool_)):
        raise ValueError(f"info[{CRITICAL!r}] must be a bool, got {type(info[CRITICAL]).__name__}")
    state_id = info[STATE_ID]
    if not isinstance(state_id, (int, np.integer)) or isinstance(state_id, bool):
        raise ValueError(f"info[{STATE_ID!r}] must be an int, got {type(state_id).__name__}")
    if num_states is not None and not 0 <= state_id < num_states:
        raise ValueError(f"info[{STATE_ID!r}]={state_id} is outside [0, {num_states})")
    anchor = info[ANCHOR]
    if not isinstance(anchor, (int, np.integer)) or isinstance(anchor, bool) or anchor < 0:
        raise ValueError(f"info[{ANCHOR!r}] must be a non-negative int, got {anchor!r}")
    score = info[TURN_SCORE]
    if not isinstance(score, (float, np.floating)) or not np.isfinite(score):
        raise ValueError(f"info[{TURN_SCORE!r}] must be a finite float, got {score!r}")


def check_episode_end_info(info: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` when an episode-end ``info`` lacks a key or is inconsistent."""
    for key in EPISODE_END_KEYS:
        if key not in info:
            raise ValueError(f"episode-end info lacks the key {key!r}: {sorted(info)}")
    length = info[EPISODE_LENGTH]
    if length <= 0:
        raise ValueError(f"{EPISODE_LENGTH} must be positive, got {length}")
    if not 0 <= info[NUM_CRITICAL] <= length:
        raise ValueError(f"{NUM_CRITICAL}={info[NUM_CRITICAL]} is outside [0, {length}]")
    expected = info[NUM_CRITICAL] / length
    if abs(info[DECISION_DENSITY] - expected) > 1e-12:
        raise ValueError(f"{DECISION_DENSITY}={info[DECISION_DENSITY]} != {expected}")
