"""``python -m baselines.detectors score ...``: criticality detectors scored against the
annotations (the experiment: :mod:`baselines.experiments.detectors.score`);
``python -m baselines.detectors policy ...``: a short training run's policy table as .npy, a
partly trained policy to score under (:mod:`baselines.experiments.detectors.trained_policy`)."""

import sys
from typing import Any

from baselines.experiments.detectors import score, trained_policy
from baselines.experiments.detectors.score import ScoreArgs, parse_args

__all__ = ["ScoreArgs", "main", "parse_args"]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``score`` or ``policy`` and its flags (``python -m baselines.detectors score --help``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"score": score.cli_main, "policy": trained_policy.cli_main}
    if argv[:1] not in [[c] for c in commands]:
        print("usage: python -m baselines.detectors {score,policy} [--help] ...", file=sys.stderr)
        raise SystemExit(2)
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    main()
