"""``python -m baselines.equivalence``: the batched trainer against the SB3 references, the
protocol's cross-check of trainers (:mod:`baselines.experiments.benchmark.equivalence`)."""

from baselines.experiments.benchmark.equivalence import EquivalenceArgs, cli_main, main, parse_args

__all__ = ["EquivalenceArgs", "cli_main", "main", "parse_args"]

if __name__ == "__main__":
    cli_main()
