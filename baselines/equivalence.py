"""``python -m baselines.equivalence``: the batched trainer against the SB3 references (the
experiment: :mod:`baselines.experiments.equivalence`)."""

from baselines.experiments.equivalence.sweep import EquivalenceArgs, cli_main, main, parse_args

__all__ = ["EquivalenceArgs", "cli_main", "main", "parse_args"]

if __name__ == "__main__":
    cli_main()
