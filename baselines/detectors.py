"""``python -m baselines.detectors score ...``: criticality detectors scored against the
annotations (the experiment: :mod:`baselines.experiments.detectors.score`)."""

import sys
from typing import Any

from baselines.experiments.detectors import score
from baselines.experiments.detectors.score import ScoreArgs, parse_args

__all__ = ["ScoreArgs", "main", "parse_args"]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``score`` and its flags (see ``python -m baselines.detectors score --help``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["score"]:
        print("usage: python -m baselines.detectors score [--help] ...", file=sys.stderr)
        raise SystemExit(2)
    return score.cli_main(argv[1:])


if __name__ == "__main__":
    main()
