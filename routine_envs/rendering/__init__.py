"""Rendering, kept apart from the environments' dynamics: one module per environment.

Only numpy is used, so ``render_mode="rgb_array"`` needs no extra dependency.
"""
