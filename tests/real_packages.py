"""Tests against a trainer's real package: skipped, saying which extra installs it, where the
package is not installed; failed instead where CI requires it (``make test-<extra>`` sets
``ROUTINE_ENVS_REQUIRE=<extra>``), so a job whose package or namespace went missing cannot pass
by skipping everything."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def required(extra: str) -> bool:
    """Whether ``extra``'s tests must run (``ROUTINE_ENVS_REQUIRE`` names it)."""
    return extra in os.environ.get("ROUTINE_ENVS_REQUIRE", "").split(",")


def need(module: str, extra: str, module_level: bool = False) -> ModuleType:
    """``module`` imported; where it does not import, skip (``pip install -e ".[extra]"``), or
    fail when ``extra`` is required. ``module_level``: called at a test module's top."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        if required(extra):
            raise AssertionError(
                f"ROUTINE_ENVS_REQUIRE={extra} but {module} does not import: {err}"
            ) from err
        pytest.skip(
            f'needs the {extra} extra: pip install -e ".[{extra}]"', allow_module_level=module_level
        )


def namespace_or_skip(extra: str) -> None:
    """Skip where no loopback-only network namespace can be made, or fail when ``extra`` is
    required (its servers must run in one)."""
    from baselines.lib import loopback

    reason = loopback.unavailable()
    if reason:
        assert not required(extra), f"ROUTINE_ENVS_REQUIRE={extra} but no namespace: {reason}"
        pytest.skip(f"servers run in a loopback-only network namespace: {reason}")
