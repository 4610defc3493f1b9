"""Write ``docs/envs/routine_grid.png``, the layout picture of the RoutineGrid-v0 docs page.

Run from the repository root: ``python docs/make_routine_grid_png.py``. A test checks that the
committed picture equals a fresh one.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gymnasium as gym  # noqa: E402

import routine_envs  # noqa: E402
from routine_envs.rendering.grid import save_layout_png  # noqa: E402

PATH = ROOT / "docs" / "envs" / "routine_grid.png"


def main(path: Path = PATH) -> None:
    """Save the default RoutineGrid-v0 maze with the agent at the start."""
    gym.register_envs(routine_envs)
    save_layout_png(gym.make("RoutineGrid-v0").unwrapped.dynamics, path)
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


if __name__ == "__main__":
    main()
