"""Baselines, experiments and the demo of routine-envs.

Run from the repository root (``python -m baselines.<script>``); not shipped in the wheel.
"""
