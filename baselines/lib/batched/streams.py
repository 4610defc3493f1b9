"""Per-run random streams: every run draws from its own generators, seeded from its own seed
only, so what it draws never depends on the other runs of a batch.

A run's :class:`numpy.random.SeedSequence` is ``SeedSequence([seed, STREAM_TAG])``; its children
are, in order: parameter initialisation (a torch generator), action sampling (uniforms), minibatch
shuffling, group seeds (trajectory methods) and the estimator's own seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

STREAM_TAG = 26
"""Mixed into every run's seed sequence (fixes the streams of this trainer version)."""
UNIFORM_BLOCK = 4096
"""Uniforms drawn ahead per run at a time (the values do not depend on it: blocks are drawn in
order from the run's generator)."""


@dataclass
class RunStreams:
    """The generators of one run (see the module docstring)."""

    init: torch.Generator
    actions: np.random.Generator
    shuffle: np.random.Generator
    groups: np.random.Generator
    estimator_seed: int
    env_seed: int

    @classmethod
    def of(cls, seed: int) -> RunStreams:
        children = np.random.SeedSequence([int(seed), STREAM_TAG]).spawn(4)
        init = torch.Generator().manual_seed(int(children[0].generate_state(1, np.uint64)[0] >> 1))
        return cls(
            init=init,
            actions=np.random.default_rng(children[1]),
            shuffle=np.random.default_rng(children[2]),
            groups=np.random.default_rng(children[3]),
            estimator_seed=int(seed),
            env_seed=int(seed),
        )


class Uniforms:
    """Uniforms in ``[0, 1)`` for many runs, each run's from its own generator, in order."""

    def __init__(self, generators: list[np.random.Generator]) -> None:
        self.generators = list(generators)
        self.buffer = np.zeros((len(generators), UNIFORM_BLOCK))
        self.cursor = np.full(len(generators), UNIFORM_BLOCK, dtype=np.int64)

    def take(self, rows: np.ndarray, count: int) -> np.ndarray:
        """The next ``count`` uniforms of each run in ``rows``, shape ``(len(rows), count)``."""
        if count > UNIFORM_BLOCK:
            raise ValueError(f"count must be <= {UNIFORM_BLOCK}, got {count}")
        cursor = self.cursor[rows]
        if np.all(cursor + count <= UNIFORM_BLOCK):  # the common case, vectorised
            self.cursor[rows] = cursor + count
            return self.buffer[rows[:, None], cursor[:, None] + np.arange(count)]
        out = np.empty((len(rows), count))
        for j, r in enumerate(rows.tolist()):
            c = int(self.cursor[r])
            if c + count <= UNIFORM_BLOCK:
                out[j] = self.buffer[r, c : c + count]
                self.cursor[r] = c + count
                continue
            head = UNIFORM_BLOCK - c
            out[j, :head] = self.buffer[r, c:]
            self.buffer[r] = self.generators[r].random(UNIFORM_BLOCK)
            out[j, head:] = self.buffer[r, : count - head]
            self.cursor[r] = count - head
        return out
