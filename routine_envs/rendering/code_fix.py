"""Text and RGB pictures of a Code Fix session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from routine_envs.rendering.code_fix_text import (
    NAVIGATE,
    PATCH,
    PATCHED,
    PHASE_NAMES,
    TRIAGE,
    last_applied_patch,
    last_call,
)

CELL = 14  # pixels per cell edge
COLORS = {
    "background": (255, 255, 255),
    "module": (200, 200, 200),
    "open": (30, 80, 200),
    "bug": (210, 60, 50),
    "report": (120, 120, 120),
    "log": (60, 170, 75),
    "section": (225, 225, 225),
    "read": (170, 190, 215),
    "patch": (200, 200, 200),
    "fixed": (60, 170, 75),
    "broken": (210, 60, 50),
    "critical": (250, 200, 0),
}
#: the configuration and seed of the docs page's example episode (:func:`example_transcript`).
EXAMPLE_KWARGS = {"routine_length": 4, "obs_mode": "text", "signal_noise": 0.2}
EXAMPLE_SEED = 8


def render_code_fix(dynamics: Any, state: Any, history: Any, mode: str) -> str | np.ndarray:
    """The renderer of Code Fix: ``render_mode`` ``"ansi"`` or ``"rgb_array"``.

    Args:
        dynamics: a ``CodeFixDynamics``; state: its current ``CodeState``; history: the
            episode's ``EpisodeHistory``.
    """
    if mode == "ansi":
        return render_code_fix_ansi(dynamics, state, history)
    return render_code_fix_rgb(dynamics, state, history)


def render_code_fix_ansi(dynamics: Any, state: Any, history: Any) -> str:
    """A status header (turn, phase, annotation, the hidden truth) and the last tool output."""
    s = state
    names = dynamics.module_names
    modules = []
    for m, name in enumerate(names):
        mark = f"[{name}]" if s.phase != TRIAGE and m == s.module else f" {name} "
        modules.append(mark + ("<report" if m == s.pointer else ""))
    fix = dynamics.correct_patch[s.symptom]
    critical = dynamics.is_critical(s)
    header = (
        f"Code Fix  turn {len(history.actions)}  attempt {s.attempt + 1}/{dynamics.max_attempts}  "
        f"phase {PHASE_NAMES[s.phase]}  {'critical' if critical else 'routine'}  "
        f"rho={dynamics.decision_density:.4f}"
    )
    lines = [
        header,
        "modules: " + " ".join(modules),
        f"hidden:  bug in {names[s.bug]}, patch {fix} ({dynamics.patch_texts[fix]})",
        "-" * 40,
    ]
    text = dynamics.text_observation(s, *last_call(dynamics, history))
    return "\n".join(lines) + "\n" + text


def render_code_fix_rgb(dynamics: Any, state: Any, history: Any) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 picture. Row 0: the modules (grey; blue when open; a red bar under
    the buggy one, a grey bar over the reported one, green when the log was read). Row 1: the
    sections of the open module (read in light blue). Row 2: its candidate patches (the applied
    one green if it fixes the bug, red if not). A yellow frame marks a critical state."""
    s = state
    sections, patches = dynamics.num_sections, dynamics.num_patches
    cols = max(dynamics.num_modules, sections, patches, 1)
    img = np.empty((3 * (CELL + 4) + 8, cols * CELL + 8, 3), dtype=np.uint8)
    img[:] = COLORS["background"]

    def cell(row: int, col: int, color: str, inset: int = 1) -> None:
        y, x = 4 + row * (CELL + 4), 4 + col * CELL
        img[y + inset : y + CELL - inset, x + inset : x + CELL - inset] = COLORS[color]

    def bar(row: int, col: int, color: str, top: bool) -> None:
        y, x = 4 + row * (CELL + 4) + (-3 if top else CELL), 4 + col * CELL
        img[y : y + 3, x + 1 : x + CELL - 1] = COLORS[color]

    is_open = s.phase != TRIAGE
    for m in range(dynamics.num_modules):
        cell(0, m, "open" if is_open and m == s.module else "module")
        if m == s.bug:
            bar(0, m, "bug", top=False)
        if m == s.pointer:
            bar(0, m, "log" if s.log_read else "report", top=True)
    if is_open:
        done = s.progress if s.phase == NAVIGATE else sections
        for n in range(sections):
            cell(1, n, "read" if n < done else "section")
        if s.phase >= PATCH:
            applied = last_applied_patch(dynamics, history) if s.phase >= PATCHED else None
            for j in range(patches):
                color = "patch"
                if applied == j:
                    color = "fixed" if s.fixed else "broken"
                cell(2, j, color)
    if dynamics.is_critical(s):
        img[:3] = img[-3:] = COLORS["critical"]
        img[:, :3] = img[:, -3:] = COLORS["critical"]
    return img


def example_transcript(
    env: Any, calls: Sequence[str] | None = None, seed: int = EXAMPLE_SEED
) -> str:
    """The docs page's example episode: play ``calls`` (default: the page's) from
    ``env.reset(seed=seed)``, ``env`` a fresh ``CodeFixEnv(**EXAMPLE_KWARGS)``. One block per
    turn: the reward, the annotation of the state reached (``critical`` and ``state_id``: of the
    state in which the next call is made) and the text observation of that state."""
    obs, info = env.reset(seed=seed)
    if calls is None:
        bug = env.module_names[env.state.bug]
        fix = env.correct_patch[env.state.symptom]
        calls = [
            "read_log",
            f"open {bug}",
            "scroll",
            "read",
            f"apply_patch {bug} {fix}",
            "run_related_tests",
            "submit",
        ]
    blocks = [f"-- reset: {_annotation(info)}\n{obs}"]
    for turn, call in enumerate(calls, start=1):
        obs, reward, terminated, truncated, info = env.step(env.parse_action(call))
        head = f"-- turn {turn}: reward {reward:g}; {_annotation(info)}"
        if terminated or truncated:
            head += f"; success {info['success']}, rho {info['decision_density']:.4f}"
        blocks.append(f"{head}\n{obs}")
        if terminated or truncated:
            break
    return "\n".join(blocks).rstrip("\n")


def _annotation(info: dict) -> str:
    if "success" in info:
        return f"terminal state {info['state_id']}"
    kind = "critical" if info["critical"] else "routine"
    return f"{kind} state {info['state_id']}"
