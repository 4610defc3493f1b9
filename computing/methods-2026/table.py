"""The Diluted Doors tables of docs/estimators.md ("The 2025-26 methods"): per method scored on
an rb3 tier, its dilution exponent and its steps ratio to ppo and to trajectory_mc at the lowest
density, for every Diluted Doors setting of the tier (lite: 1, 2 and 4 floors; paper: 3 floors
of 3 doors), read from its report card's scores.json (censoring as the card shows it).

    python computing/methods-2026/table.py computing/methods-2026/rb3-lite/rb3/lite
    python computing/methods-2026/table.py computing/methods-2026/rb3-paper/rb3/paper
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from baselines.experiments.benchmark.scores import exponent_text, ratio_text

METHODS = ("empg", "spa", "asymmetric_critic", "tree_grpo")


def main(folder: Path) -> None:
    print(
        "| method | floors | dilution exponent [95% CI] | lowest rho | steps / ppo's there "
        "[95% CI] | steps / trajectory_mc's |"
    )
    print("|---|---|---|---|---|---|")
    for method in METHODS:
        path = folder / method / "report" / "scores.json"
        if not path.is_file():
            print(f"| `{method}` | | not scored yet | | | |")
            continue
        scores = json.loads(path.read_text())
        privileged = scores["header"]["privileged fields read"]
        label = f"`{method}`" + ("" if privileged == "none" else f" (privileged: {privileged})")
        for setting in sorted(s for s in scores["ratios"] if s.startswith("DilutedDoors-v1")):
            kwargs = json.loads(setting.removeprefix("DilutedDoors-v1"))
            floors = str(kwargs["num_floors"])
            if "num_doors" in kwargs:
                floors += f" ({kwargs['num_doors']} doors)"
            exponent = scores["method"]["settings"][setting]["exponent"]
            ratios = scores["ratios"][setting]
            cells = [
                label,
                floors,
                exponent_text(exponent, why=False),
                f"1/{round(1 / ratios['ppo']['rho'])}",
                ratio_text(ratios["ppo"]),
                ratio_text(ratios["trajectory_mc"]),
            ]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
