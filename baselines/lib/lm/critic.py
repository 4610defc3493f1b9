"""A learned turn-level value model for the language-model loop (Turn-PPO, arXiv 2512.17008;
the ``gae_timestep_unit: turn`` of AReaL #1600): ``V(context of turn t)``, one number per turn.

The model is its own :class:`~baselines.lib.lm.model.TinyCausalLM` trunk (the policy's shape,
fresh weights: policy and critic share nothing, as Turn-PPO's separate critic) and a linear head
reading the trunk's hidden state at the last token of a turn's prompt (the context the policy
replies to). Its training schedule: after each batch, ``epochs`` Adam steps on the mean squared
error to the estimator's returns (``A_t + V(s_t)``: with :class:`routine_envs.credit.GAE` the
lambda-returns over turns). It is used on a batch before it is trained on it, as PPO's critic.

The loop (:class:`~baselines.lib.lm.grpo.GRPOTrainer`) builds one when its estimator reads the
batch's ``values`` (``--estimator gae``: PPO's clipped loss on turn-level GAE over the learned
values, the learned-critic counterpart of ``trajectory_mc``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from baselines.lib.lm.model import LMConfig, TinyCausalLM
from baselines.lib.lm.policy import pad_left


@dataclass(frozen=True)
class CriticConfig:
    """How the turn-level value model learns.

    Attributes:
        learning_rate: Adam step size.
        epochs: Adam steps on each batch's returns (full batch).
        max_grad_norm: gradient clipping (``0``: none).
    """

    learning_rate: float = 1e-3
    epochs: int = 4
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.epochs, int) or isinstance(self.epochs, bool) or self.epochs < 1:
            raise ValueError(f"epochs must be an int >= 1, got {self.epochs!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        if not self.max_grad_norm >= 0:
            raise ValueError(f"max_grad_norm must be >= 0, got {self.max_grad_norm!r}")


class TurnCritic(nn.Module):
    """``V(prompt)``: a trunk of the policy's shape and a linear head on its last hidden state.

    Args:
        shape: the trunk's shape (the policy's :class:`LMConfig`).
        pad_id: the tokenizer's padding id.
        config: how it learns.
        seed: seeds its initial weights.
    """

    def __init__(
        self, shape: LMConfig, pad_id: int, config: CriticConfig | None = None, seed: int = 0
    ) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.trunk = TinyCausalLM(shape)
            self.head = nn.Linear(shape.dim, 1)
            nn.init.zeros_(self.head.weight)  # V = 0 before any batch
            nn.init.zeros_(self.head.bias)
        self.pad_id = pad_id
        self.config = config or CriticConfig()
        self.optimizer = torch.optim.Adam(self.parameters(), lr=self.config.learning_rate)

    def forward(self, prompts: Sequence[Sequence[int]]) -> torch.Tensor:
        """The value of each prompt, shape ``(B,)`` (with gradient)."""
        ids, mask = pad_left(prompts, self.pad_id)
        hidden = self.trunk.hidden(ids, mask)[:, -1]  # left-padded: the last token is real
        return self.head(hidden).squeeze(-1)

    def values(self, prompts: Sequence[Sequence[int]]) -> np.ndarray:
        """The value of each prompt as it stands, shape ``(B,)`` float64."""
        if not prompts:
            return np.zeros(0)
        with torch.no_grad():
            return self(prompts).double().numpy()

    def fit(self, prompts: Sequence[Sequence[int]], returns: np.ndarray) -> float:
        """``epochs`` Adam steps of the mean squared error to ``returns`` (shape ``(B,)``);
        the last step's loss (before its update)."""
        if len(prompts) != len(returns):
            raise ValueError(f"{len(prompts)} prompts but {len(returns)} returns")
        if not prompts:
            return 0.0
        target = torch.as_tensor(np.asarray(returns, dtype=np.float32))
        loss = torch.zeros(())
        for _ in range(self.config.epochs):
            loss = torch.mean((self(prompts) - target) ** 2)
            self.optimizer.zero_grad()
            loss.backward()
            if self.config.max_grad_norm:
                nn.utils.clip_grad_norm_(self.parameters(), self.config.max_grad_norm)
            self.optimizer.step()
        return float(loss.detach())


__all__ = ["CriticConfig", "TurnCritic"]
