"""Every environment returns, bit for bit, what it returned when ``tests/env_fingerprints.json``
was written: observations, rewards, ends, infos (keys in order), random draws, pictures, the
native vector env, the text interface and the exact model (see :mod:`tests.env_fingerprints`)."""

from __future__ import annotations

import json

import pytest

from tests import env_fingerprints as fp


def test_every_id_returns_what_it_returned() -> None:
    pytest.importorskip("pettingzoo")  # (the team ids are fingerprinted too)
    expected = json.loads(fp.PATH.read_text())
    found = fp.fingerprints()
    assert sorted(found) == sorted(expected)
    changed = [
        f"{label} {part}"
        for label, parts in expected.items()
        for part, digest in parts.items()
        if found[label][part] != digest
    ]
    assert not changed, (
        f"these changed: {changed}; if the change is meant, rewrite the file with "
        "`python -m tests.env_fingerprints --write` and say why in the commit"
    )
