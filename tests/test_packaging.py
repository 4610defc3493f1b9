"""The project's own metadata installs without a setuptools warning (issue 30): ``license`` is an
SPDX expression (PEP 639), which needs setuptools >= 77 at build time."""

from __future__ import annotations

import gc
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"

setuptools = pytest.importorskip("setuptools")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


@pytest.mark.skipif(
    _version(setuptools.__version__) < (77,), reason="PEP 639 licenses need setuptools >= 77"
)
def test_metadata_applies_without_a_warning():
    """setuptools reads pyproject.toml as a build does, with no deprecation or other warning;
    the license lands in the metadata as the expression ``MIT``."""
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    # other tests' garbage (e.g. a file SB3's logger left open) must not be collected, and warn,
    # inside the block: collect it first and hold the collector while setuptools reads
    gc.collect()
    gc.disable()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dist = apply_configuration(Distribution(), PYPROJECT)
    finally:
        gc.enable()
    assert [str(w.message).splitlines()[0] for w in caught] == []
    assert dist.metadata.license_expression == "MIT"


def test_build_requirement_supports_the_license_form():
    """The build system asks for a setuptools that reads ``license = "MIT"`` (>= 77)."""
    text = PYPROJECT.read_text()
    assert re.search(r'^license = "MIT"$', text, re.MULTILINE)
    requires = re.search(r"^requires = \[(.*)\]$", text, re.MULTILINE)[1]
    floor = re.search(r'"setuptools>=([\d.]+)"', requires)
    assert floor is not None and _version(floor[1]) >= (77,)
