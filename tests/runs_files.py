"""Reading and writing a runs file in tests whatever its format: JSON lines, or the compact
``.jsonl.gz`` the references ship in (:mod:`baselines.lib.compact_runs`)."""

from __future__ import annotations

from pathlib import Path

from baselines.lib import compact_runs


def text(path: Path) -> str:
    """The JSON lines of a runs file."""
    if compact_runs.is_compact(path):
        return compact_runs.read_lines(path).decode()
    return Path(path).read_text()


def write(path: Path, lines: str) -> None:
    """Write JSON lines ``lines`` to ``path``, compacted where ``path`` names a compact file
    (the rows as they are, not checked: a test's damaged rows stay damaged)."""
    data = lines.encode()
    if compact_runs.is_compact(path):
        data = compact_runs.compress(compact_runs.encode(data))
    Path(path).write_bytes(data)
