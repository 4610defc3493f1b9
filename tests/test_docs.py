"""Docs pages agree with the code they describe."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_environment_pages_are_generated_from_docstrings():
    for path, text in load_generator().pages().items():
        assert path.exists(), f"{path} is missing: run python docs/generate.py"
        assert path.read_text() == text, f"{path} is stale: run python docs/generate.py"


def test_docstrings_have_gymnasium_sections():
    sections = [
        "Description",
        "Action Space",
        "Observation Space",
        "Rewards",
        "Episode End",
        "Information",
        "Arguments",
        "Version History",
    ]
    for path in (ROOT / "docs" / "envs").glob("*.md"):
        text = path.read_text()
        for section in sections:
            assert f"## {section}" in text, (path.name, section)
