"""``python -m baselines.lm {train,dilution,snr} ...``: a tiny causal language model trained by
GRPO on the text envs on CPU (:mod:`baselines.experiments.lm.train`), token-level dilution
measured (:mod:`baselines.experiments.lm.dilution`) and the exact gradient SNR of the LM policy
(:mod:`baselines.experiments.lm.exact_snr`). See ``docs/llm.md``."""

import sys
from typing import Any

from baselines.experiments.lm import dilution, exact_snr, train

__all__ = ["main"]

COMMANDS = {"train": train.cli_main, "dilution": dilution.cli_main, "snr": exact_snr.cli_main}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``train``, ``dilution`` or ``snr`` and its flags (``... train --help``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] not in [[c] for c in COMMANDS]:
        print("usage: python -m baselines.lm {train,dilution,snr} [--help] ...", file=sys.stderr)
        raise SystemExit(2)
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main()
