"""Before any test module is collected: register the environments of outside code (every module
of ``tests/contributed/`` and the worked example of ``docs/contributing-an-env.md``), so the
tests that read the registry (the contract suite, the registry-wide and text tests) take them as
they take the package's own ids."""

import signal

import pytest

from tests.utils import register_outside_envs

register_outside_envs()


@pytest.fixture(autouse=True)
def _ctrl_c_is_left_as_it_was(request):
    """A test that leaves Ctrl-C ignored (SIGINT ``SIG_IGN``) in the test process makes every
    command a later test starts ignore it too (an ignored signal is inherited): the Ctrl-C tests
    then see the command run to its end. Fail the test that did it, and restore it."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"{request.node.nodeid} left SIGINT as {after!r} (was {before!r})")
