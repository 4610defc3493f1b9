"""Runnable examples (``python -m examples.<name>``); not shipped in the wheel."""
