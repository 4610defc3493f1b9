"""Turn-level advantages spread onto the tokens of each assistant turn."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def spread_advantages(
    turn_advantages: Sequence[float] | np.ndarray,
    spans: Sequence[tuple[int, int]] | np.ndarray,
    num_tokens: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Give every token of assistant turn ``t`` the advantage of turn ``t``.

    Args:
        turn_advantages: one advantage per assistant turn, shape ``(T,)`` (e.g. one episode's
            slice of an estimator's output).
        spans: the token positions of each assistant turn in the sequence, ``(start, end)``
            half-open, shape ``(T, 2)``, in order and not overlapping.
        num_tokens: length of the token sequence.

    Returns:
        ``(advantages, mask)``, both shape ``(num_tokens,)``: float64 advantages (0 outside the
        assistant turns) and a bool mask, True exactly on the assistant turns' tokens (the
        tokens the policy loss counts; prompt, observation and template tokens are False).

    Raises:
        ValueError: ``spans`` and ``turn_advantages`` differ in length, or a span is empty,
            reversed, overlapping, out of order or outside ``[0, num_tokens)``.
    """
    adv = np.asarray(turn_advantages, dtype=np.float64).reshape(-1)
    bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    if num_tokens < 0:
        raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
    if len(bounds) != len(adv):
        raise ValueError(
            f"spans must have one (start, end) per turn advantage: {len(bounds)} spans, "
            f"{len(adv)} advantages"
        )
    out = np.zeros(num_tokens, dtype=np.float64)
    mask = np.zeros(num_tokens, dtype=bool)
    previous_end = 0
    for t, (start, end) in enumerate(bounds.tolist()):
        if not previous_end <= start < end <= num_tokens:
            raise ValueError(
                f"spans[{t}] = ({start}, {end}) must be non-empty, in order, not overlapping "
                f"the previous span (ending at {previous_end}) and inside [0, {num_tokens})"
            )
        out[start:end] = adv[t]
        mask[start:end] = True
        previous_end = end
    return out, mask
