"""The records of the SNR lab: one setting's results (:class:`LabRecord`, the paper's
experiments) and one density value of the open lab (:class:`MeasureRecord`, the same with its
environment and every estimator's bias, cosine and MSE), and what each results file checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from baselines.lib.records import Record


@dataclass
class LabRecord(Record):
    """One setting of a lab experiment: its estimators' SNR results on shared episodes and the
    ratio of each to the reference (``results``: one row per estimator, :func:`measure_setting`;
    ``ratios``: ``"name/reference" -> [ratio, low, high]``); the setting's other fields, the
    exact ``J`` and ``std_R`` and the time taken in ``extra``."""

    estimators: list[Any]
    reference: str
    results: list[Any]
    ratios: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    unit: ClassVar[str] = "setting"

    @staticmethod
    def check(record: dict[str, Any]) -> None:
        """Every estimator has a result with its SNR, and a ratio to the reference wherever the
        reference's SNR is not zero (as :func:`~.sweep.measure_setting` writes)."""
        check_lab_record(record)


LAB_REQUIRED = {"key": "str", **LabRecord.schema()}
"""The fields every setting's record of a lab experiment has, and their kinds."""


def check_lab_record(record: dict[str, Any]) -> None:
    """A setting's record: one result (with its SNR) per estimator, and the ratio of each to
    the reference wherever the reference's SNR is not zero (as
    :func:`~.sweep.measure_setting` writes)."""
    results = record["results"]
    if not all(isinstance(r, dict) and isinstance(r.get("snr"), (int, float)) for r in results):
        raise ValueError("every result must be an object with a number 'snr'")
    snrs = {r.get("estimator"): r["snr"] for r in results}
    if sorted(snrs, key=str) != sorted(record["estimators"], key=str):
        raise ValueError(f"results for {sorted(snrs, key=str)}, estimators {record['estimators']}")
    ref = record["reference"]
    if ref not in snrs:
        raise ValueError(f"no result for the reference {ref!r}")
    for name in snrs:
        ratio = record["ratios"].get(f"{name}/{ref}")
        if name != ref and snrs[ref] != 0 and ratio is None:
            raise ValueError(f"no ratio {name}/{ref}")
        if ratio is not None and not (
            isinstance(ratio, list)
            and len(ratio) == 3
            and all(isinstance(x, (int, float)) for x in ratio)
        ):
            raise ValueError(f"ratio {name}/{ref} must be [ratio, low, high], got {ratio!r:.60}")


@dataclass
class MeasureRecord(LabRecord):
    """One density value of the open lab (a :class:`LabRecord` with its environment): every
    estimator's SNR, bias, cosine and MSE on the same episodes (``results``), the ratio of each
    SNR to the reference's (``ratios``); the setting's other fields (policy identity, sample,
    code) in ``extra``."""

    env_id: str = field(kw_only=True)

    @staticmethod
    def check(record: dict[str, Any]) -> None:
        """One result per estimator, each with its SNR and bias columns."""
        check_measure_record(record)


MEASURE_REQUIRED = {"key": "str", **MeasureRecord.schema()}
"""The fields every record of the open lab has, and their kinds."""


def check_measure_record(record: dict[str, Any]) -> None:
    """One result per estimator, each with its SNR and bias columns."""
    names = [r.get("estimator") for r in record["results"]]
    if sorted(map(str, names)) != sorted(map(str, record["estimators"])):
        raise ValueError(f"results for {names}, estimators {record['estimators']}")
    for r in record["results"]:
        for key in ("snr", "relative_bias", "cosine", "mse"):
            if not isinstance(r.get(key), (int, float)):
                raise ValueError(f"result {r.get('estimator')!r} has no number {key!r}")
