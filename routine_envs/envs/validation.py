"""Argument checks shared by the environments: each failure is a ``ValueError`` naming it."""

from __future__ import annotations

import numbers
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
