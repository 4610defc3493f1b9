"""Experiments, bsuite style: each a package with ``sweep.py`` (its settings dataclass, the
sweep's data and the jobs) and ``analysis.py`` (tables, scores and plots of the records)."""
