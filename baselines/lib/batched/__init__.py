"""Batched PPO (placeholder docstring, completed below)."""

from baselines.lib.batched.api import RunSpec, batch_key, group_runs, train_runs

__all__ = ["RunSpec", "batch_key", "group_runs", "train_runs"]
