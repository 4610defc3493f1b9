"""Hypothesis strategies of configurations, shared by the per-environment property tests of the
environments' rules and the contract's property test of determinism and branching."""

from __future__ import annotations

from hypothesis import strategies as st

doors_configs = st.fixed_dictionaries(
    {
        "num_floors": st.integers(1, 4),
        "num_doors": st.integers(2, 4),
        "routine_length": st.one_of(
            st.integers(0, 6),
            st.tuples(st.integers(0, 3), st.integers(0, 3)).map(lambda t: (min(t), max(t))),
        ),
        "reward": st.sampled_from(["success", "fraction"]),
        "layout_seed": st.integers(0, 1000),
    }
)
"""DilutedDoors-v0 configurations."""


def _room_to_turn(kwargs: dict) -> dict:
    """branching=3 needs corridors of at least 2 cells: shift the drawn lengths by 2."""
    if kwargs["branching"] == 2:
        return kwargs
    length = kwargs["corridor_length"]
    shifted = length + 2 if isinstance(length, int) else (length[0] + 2, length[1] + 2)
    return {**kwargs, "corridor_length": shifted}


grid_configs = st.fixed_dictionaries(
    {
        "num_junctions": st.integers(1, 5),
        "branching": st.sampled_from([2, 3]),
        "corridor_length": st.one_of(
            st.integers(0, 6),
            st.tuples(st.integers(0, 4), st.integers(0, 4)).map(lambda t: (min(t), max(t))),
        ),
        "layout_seed": st.integers(0, 10_000),
        "soft_routine": st.sampled_from([False, 0.01, 0.05]),
    }
).map(_room_to_turn)
"""RoutineGrid-v0 configurations."""

code_fix_configs = st.fixed_dictionaries(
    {
        "num_modules": st.integers(2, 4),
        "num_patches": st.integers(2, 3),
        "routine_length": st.integers(2, 6),
        "signal_noise": st.sampled_from([0.0, 0.1, 0.5, 1.0]),
        "max_attempts": st.integers(1, 2),
        "layout_seed": st.integers(0, 100),
    }
).map(lambda kw: {**kw, "step_cost": 0.0 if kw["max_attempts"] == 1 else 0.01})
"""CodeFix-v0 configurations (a step cost where retries are allowed, as the env requires)."""
