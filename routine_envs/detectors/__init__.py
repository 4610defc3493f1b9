"""Criticality detectors scored against the truth, and the label-free routine-masked estimator.

A *detector* guesses which steps of a batch are critical (:mod:`~routine_envs.detectors.base`:
the interface, the registry and the factory); this suite can score the guess, because every
step carries ``info["critical"]`` (:mod:`~routine_envs.detectors.scoring`: ROC AUC, average
precision and the implied rho with bootstrap intervals over episodes). Shipped detectors:
the annotations and random scores (the references), the policy's entropy, GiGPO's anchor-group
return variance and a learned critic's advantage (:mod:`~routine_envs.detectors.builtin`,
cost 0), the branching test and the spread of Monte-Carlo Q estimates
(:mod:`~routine_envs.detectors.rollouts`, rollouts on the exact model) and a classifier trained
on another environment's annotations (:mod:`~routine_envs.detectors.classifier`).
``detector_masked`` (:mod:`~routine_envs.detectors.masked`) masks the trajectory advantage with
a detector's labels. See ``docs/detectors.md``.

The core needs numpy only; scoring, the branching test and the classifier need the
``detectors`` extra (scipy, scikit-learn), imported when used.
"""

from routine_envs.detectors.base import (
    DETECTORS,
    Detection,
    Detector,
    build_detector,
    check_detector_batch,
    check_detector_provides,
    detector_cost,
    resolve_detector,
)
from routine_envs.detectors.masked import DetectorMasked
from routine_envs.detectors.policies import mixture_policy, uniform_policy
from routine_envs.detectors.scoring import (
    Detections,
    DetectorScore,
    detect_batches,
    score_detection,
    score_detector,
)

__all__ = [
    "DETECTORS",
    "Detection",
    "Detections",
    "Detector",
    "DetectorMasked",
    "DetectorScore",
    "build_detector",
    "check_detector_batch",
    "check_detector_provides",
    "detect_batches",
    "detector_cost",
    "mixture_policy",
    "resolve_detector",
    "score_detection",
    "score_detector",
    "uniform_policy",
]
