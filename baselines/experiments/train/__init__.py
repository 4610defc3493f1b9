"""``python -m baselines train``: one training run (:mod:`.command`)."""
