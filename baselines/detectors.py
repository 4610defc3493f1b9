"""``python -m baselines.detectors score ...``: criticality detectors scored against the
annotations (the experiment: :mod:`baselines.experiments.detectors.score`);
``python -m baselines.detectors policy ...``: a short training run's policy table as .npy, a
partly trained policy to score under (:mod:`baselines.experiments.detectors.trained_policy`)."""

from baselines.commands import script
from baselines.experiments.detectors.score import ScoreArgs, parse_args

__all__ = ["ScoreArgs", "main", "parse_args"]

main = script("detectors")

if __name__ == "__main__":
    main()
