"""Argument checks shared by the environments: each failure is a ``ValueError`` naming it."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any


def integer(name: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int``; ``ValueError`` unless it is an integer in the bounds.

    Booleans and floats (even ``3.0``) are rejected: they are almost always a mistake.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def int_or_range(
    name: str,
    value: Any,
    minimum: int = 0,
    maximum: int | None = None,
    max_width: int | None = None,
) -> tuple[int, int]:
    """An int ``n``, or a pair ``(low, high)`` with ``minimum <= low <= high <= maximum`` and
    ``high - low <= max_width``; as a pair."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be an integer or a (low, high) pair, got {value!r}")
        low = integer(f"{name}[0] (low)", value[0], minimum=minimum, maximum=maximum)
        high = integer(f"{name}[1] (high)", value[1], minimum=minimum, maximum=maximum)
        if low > high:
            raise ValueError(f"{name} must have low <= high, got {value!r}")
        if max_width is not None and high - low > max_width:
            raise ValueError(
                f"{name} must span at most {max_width} values above low (high - low <= "
                f"{max_width}), got {value!r}"
            )
        return low, high
    try:
        n = integer(name, value, minimum=minimum, maximum=maximum)
    except ValueError:
        if isinstance(value, (bool, numbers.Integral)):
            raise
        raise ValueError(
            f"{name} must be an integer or a (low, high) pair of integers, "
            f"got {value!r} ({type(value).__name__})"
        ) from None
    return n, n


def probability(name: str, value: Any) -> float:
    """``value`` as a float in ``[0, 1]``; ``ValueError`` naming ``name`` otherwise (NaN too)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number in [0, 1], got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value


def choice(name: str, value: Any, options: tuple[str, ...]) -> str:
    """``value`` if it is one of ``options``, else ``ValueError``."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


class RenderModeError(ValueError, TypeError):
    """A ``render_mode`` the environment does not draw. A ``ValueError`` like every bad argument,
    and a ``TypeError`` so that callers that ask every env for a mode and fall back on
    ``TypeError`` keep working: SB3's ``make_vec_env`` asks for ``"rgb_array"`` first."""


class RenderModes(list):
    """The ``metadata["render_modes"]`` of an environment of the suite: a list of mode names
    whose membership test refuses a non-string mode with a ``ValueError`` naming
    ``render_mode``.

    ``gym.make`` tests ``render_mode not in metadata["render_modes"]`` of the entry point before
    it calls the env, and then calls ``render_mode.endswith("_list")``, which fails with an
    ``AttributeError`` (or a bytes ``TypeError``) on a non-string mode before the env can check
    it: this test is the only code of the env that runs first. A mode it does not know is then
    named in a warning that Gymnasium formats with ``%`` (``msg % ()``): a string holding ``%``
    would fail there with a ``TypeError``, so such a mode is refused here, as a
    :class:`RenderModeError`.
    """

    def __contains__(self, mode: object) -> bool:
        if mode is not None and not isinstance(mode, str):
            raise ValueError(
                f"render_mode must be None or one of {list(self)}, got {mode!r} "
                f"({type(mode).__name__})"
            )
        found = super().__contains__(mode)
        if not found and isinstance(mode, str) and "%" in mode:
            raise RenderModeError(
                f"render_mode must be None or one of {list(self)}, got {mode[:60]!r}"
            )
        return found


def render_mode(value: Any, modes: Sequence[str]) -> str | None:
    """``value`` if it is ``None`` or one of ``modes``; a ``ValueError`` naming ``render_mode``
    for a non-string and a :class:`RenderModeError` for a mode not offered."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(
            f"render_mode must be None or one of {list(modes)}, got {value!r} "
            f"({type(value).__name__})"
        )
    if value not in list(modes):
        raise RenderModeError(f"render_mode must be None or one of {list(modes)}, got {value!r}")
    return value
