"""The layers of ``routine_envs`` (``ARCHITECTURE.md``): arrows point down only, and the info
keys are built in one place.

- ``rendering/`` (pictures, words, text views) imports no other part of the package than the
  info keys and itself: the environments, the dynamics and the text interface may import it;
- ``dynamics`` and ``envs/`` never import the text interface, the registry, the team layer, the
  adapters or the baselines;
- the episode-end keys of every env, vector env, team env and the text env are written by
  :func:`routine_envs.annotations.episode_end_info` alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from routine_envs import annotations as keys

PACKAGE = Path(__file__).resolve().parents[1] / "routine_envs"


def imports_of(path: Path) -> set[str]:
    """Every ``routine_envs``/``baselines`` module ``path`` imports (at any depth of the code)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] in ("routine_envs", "baselines")}


def files(*parts: str) -> list[Path]:
    out = []
    for part in parts:
        target = PACKAGE / part
        out += sorted(target.rglob("*.py")) if target.is_dir() else [target]
    return out


def below(path: Path, allowed: tuple[str, ...]) -> list[str]:
    """The imports of ``path`` outside ``allowed`` (module names or package prefixes)."""
    return sorted(
        name
        for name in imports_of(path)
        if name != "routine_envs"
        and not any(name == a or name.startswith(a + ".") for a in allowed)
        and not any(a.startswith(name + ".") for a in allowed)  # (a package on the way down)
    )


@pytest.mark.parametrize("path", files("rendering"), ids=lambda p: p.name)
def test_rendering_imports_no_environment(path):
    allowed = ("routine_envs.rendering", "routine_envs.annotations")
    assert below(path, allowed) == [], path


@pytest.mark.parametrize("path", files("dynamics.py", "envs"), ids=lambda p: p.name)
def test_dynamics_and_envs_import_nothing_above_them(path):
    above = (
        "routine_envs.text",
        "routine_envs.registration",
        "routine_envs.multiagent",
        "routine_envs.adapters",
        "baselines",
    )
    bad = [name for name in imports_of(path) if any(name.startswith(a) for a in above)]
    assert bad == [], path


def written_episode_end_keys(path: Path) -> list[int]:
    """Lines of ``path`` that write an episode-end key: a dict display or an assignment keyed
    by ``keys.SUCCESS``, ``NUM_CRITICAL``, ``EPISODE_LENGTH``, ``DECISION_DENSITY`` or the
    literal names."""
    names = {"SUCCESS", "NUM_CRITICAL", "EPISODE_LENGTH", "DECISION_DENSITY"}
    literals = set(keys.EPISODE_END_KEYS)

    def is_key(node: ast.AST | None) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in names
        if isinstance(node, ast.Name):
            return node.id in names
        return isinstance(node, ast.Constant) and node.value in literals

    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Dict) and any(is_key(k) for k in node.keys):
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Subscript) and is_key(t.slice) for t in targets):
                lines.append(node.lineno)
    return lines


def test_episode_end_keys_are_built_in_one_place():
    """Every env, vector env, team env and the text env (the adapters translate the keys to
    other frameworks' conventions: not checked here)."""
    writers = {
        str(path.relative_to(PACKAGE)): lines
        for path in files("envs", "multiagent", "text", "dynamics.py", "registration.py")
        if (lines := written_episode_end_keys(path))
    }
    assert writers == {}, writers
    assert written_episode_end_keys(PACKAGE / "annotations.py")  # (the check sees the builder)


def test_the_builder_of_the_episode_end_keys():
    info = keys.episode_end_info(np.bool_(True), 3, 12)
    assert list(info) == list(keys.EPISODE_END_KEYS)
    assert info == {
        "success": True,
        "num_critical": 3,
        "episode_length": 12,
        "decision_density": 0.25,
    }
    assert type(info["success"]) is bool
    keys.check_episode_end_info(info)
    text = keys.episode_end_info(0, 1, 4, num_invalid_turns=2)
    assert list(text) == [*keys.EPISODE_END_KEYS, keys.NUM_INVALID_TURNS]
    assert text["success"] is False and text["num_invalid_turns"] == 2
    ended = np.array([True, False, True])
    batch = keys.episode_end_info(
        np.array([True, False, False]), np.array([1, 0, 2]), np.array([4, 0, 8]), ended=ended
    )
    assert list(batch) == list(keys.EPISODE_END_KEYS)
    np.testing.assert_array_equal(batch["decision_density"], [0.25, 0.0, 0.25])
    assert batch["decision_density"].dtype == np.float64
    assert batch["success"].dtype == bool
