"""A tiny decoder-only causal language model (GPT-style, pre-LayerNorm), torch only.

Token and learned position embeddings, ``num_layers`` blocks of causal multi-head attention
(``torch.nn.functional.scaled_dot_product_attention``) and a GELU MLP, a final LayerNorm and an
output layer tied to the token embedding. Sequences may be left-padded: ``attention_mask``
(True on real tokens) hides the padding from every query and positions count real tokens only,
so a left-padded sequence gives the same logits as the unpadded one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class LMConfig:
    """Shape of :class:`TinyCausalLM`.

    Attributes:
        vocab_size: number of tokens.
        max_positions: the longest sequence (tokens).
        dim: width of the residual stream.
        num_layers: transformer blocks.
        num_heads: attention heads (``dim`` must be a multiple).
        mlp_ratio: width of the MLP over ``dim``.
        init_std: standard deviation of the linear layers' initial weights (normal, biases 0;
            the embeddings are always drawn at 0.02). The default 0.02 is GPT-2's.
    """

    vocab_size: int
    max_positions: int = 256
    dim: int = 64
    num_layers: int = 2
    num_heads: int = 4
    mlp_ratio: int = 4
    init_std: float = 0.02

    def __post_init__(self) -> None:
        for name in ("vocab_size", "max_positions", "dim", "num_layers", "num_heads", "mlp_ratio"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if isinstance(self.init_std, bool) or not (
            isinstance(self.init_std, (int, float)) and self.init_std > 0
        ):
            raise ValueError(f"init_std must be a number > 0, got {self.init_std!r}")
        if self.dim % self.num_heads:
            raise ValueError(f"dim ({self.dim}) must be a multiple of num_heads ({self.num_heads})")


class _Block(nn.Module):
    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        self.heads = config.num_heads
        self.norm1 = nn.LayerNorm(config.dim)
        self.qkv = nn.Linear(config.dim, 3 * config.dim)
        self.proj = nn.Linear(config.dim, config.dim)
        self.norm2 = nn.LayerNorm(config.dim)
        self.mlp = nn.Sequential(
            nn.Linear(config.dim, config.mlp_ratio * config.dim),
            nn.GELU(),
            nn.Linear(config.mlp_ratio * config.dim, config.dim),
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        attn = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask
        )
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.norm2(x))


class TinyCausalLM(nn.Module):
    """The language model: ``forward(ids, attention_mask) -> logits`` of shape ``(B, T, V)``."""

    def __init__(self, config: LMConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.dim)
        self.position = nn.Embedding(config.max_positions, config.dim)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.num_layers))
        self.norm = nn.LayerNorm(config.dim)
        self.apply(self._init)

    def _init(self, module: nn.Module) -> None:
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=self.config.init_std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def hidden(self, ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The last layer's normalised hidden states, shape ``(B, T, dim)`` (what the logits
        and :class:`~baselines.lib.lm.critic.TurnCritic`'s value head read).

        Args:
            ids: token ids, shape ``(B, T)`` int64.
            attention_mask: True on real tokens, shape ``(B, T)``; ``None``: no padding.
        """
        t = ids.shape[1]
        if t > self.config.max_positions:
            raise ValueError(
                f"a sequence of {t} tokens is longer than max_positions={self.config.max_positions}"
            )
        if attention_mask is None:
            attention_mask = torch.ones_like(ids, dtype=torch.bool)
        positions = (attention_mask.long().cumsum(1) - 1).clamp(min=0)
        causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()
        mask = causal[None] & attention_mask[:, None, :]
        mask = mask | torch.eye(t, dtype=torch.bool, device=ids.device)[None]  # pads see themselves
        x = self.embed(ids) + self.position(positions)
        for block in self.blocks:
            x = block(x, mask[:, None])
        return self.norm(x)

    def forward(
        self, ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Next-token logits.

        Args:
            ids: token ids, shape ``(B, T)`` int64.
            attention_mask: True on real tokens, shape ``(B, T)``; ``None``: no padding.

        Returns:
            Logits, shape ``(B, T, vocab_size)``: row ``t`` predicts token ``t + 1``.
        """
        return self.hidden(ids, attention_mask) @ self.embed.weight.T

    def state(self) -> dict[str, object]:
        """The config and weights, for ``torch.save``."""
        return {"config": asdict(self.config), "weights": self.state_dict()}

    @classmethod
    def from_state(cls, state: dict[str, object]) -> TinyCausalLM:
        """The model saved by :meth:`state`."""
        model = cls(LMConfig(**state["config"]))  # type: ignore[arg-type]
        model.load_state_dict(state["weights"])  # type: ignore[arg-type]
        return model
