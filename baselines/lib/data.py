"""The data the baselines ship (hyperparameter configs, benchmark protocols, reference results),
found through :mod:`importlib.resources` in the installed package, never through paths
relative to a source checkout: the same files whether the package runs from a checkout, an
editable install or the wheel."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def package_folder(name: str) -> Path:
    """The folder ``name`` of the installed ``baselines`` package (``configs``, ``protocols``,
    ``references``), as a path on the file system (pip installs packages unzipped)."""
    return Path(str(resources.files("baselines").joinpath(name)))


CONFIGS = package_folder("configs")
"""Per-environment hyperparameter YAMLs (``<env id>.yml``)."""
PROTOCOLS = package_folder("protocols")
"""Benchmark protocols (``<version>.yaml``)."""
REFERENCES = package_folder("references")
"""Shipped reference results (``<version>/<tier>/<method slug>.jsonl`` and the manifest)."""
