"""Command line: ``python -m routine_envs <command> ...``.

Commands:

- ``diagnose ENV_ID``: estimate the decision density rho of any registered Gymnasium
  environment by counterfactual branching (:mod:`routine_envs.diagnose`).

Each command is a module with ``add_arguments(parser)`` and ``run(args) -> int``; add a row to
:data:`COMMANDS` to add one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import routine_envs  # registers the suite's ids with Gymnasium
from routine_envs import diagnose

#: name -> (module with add_arguments/run, one-line help).
COMMANDS = {
    "diagnose": (diagnose, "estimate the decision density rho of an environment"),
}


def build_parser() -> argparse.ArgumentParser:
    """The parser with one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="python -m routine_envs", description=f"routine-envs {routine_envs.__version__}"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, text) in COMMANDS.items():
        sub = commands.add_parser(
            name, help=text, description=(module.__doc__ or "").split("\n")[0]
        )
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) and run the command; the exit status."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
