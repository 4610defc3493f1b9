"""Before any test module is collected: register the environments of outside code (every module
of ``tests/contributed/`` and the worked example of ``docs/contributing-an-env.md``), so the
tests that read the registry (the contract suite, the registry-wide and text tests) take them as
they take the package's own ids."""

from tests.utils import register_outside_envs

register_outside_envs()
