"""A small causal language model trained by GRPO on the suite's text envs, torch only.

- :mod:`.tokenizer`: a word-level tokenizer built from an env's own text (character fallback);
- :mod:`.model`: :class:`TinyCausalLM`, a GPT-style decoder of a few hundred thousand
  parameters at most;
- :mod:`.policy`: :class:`LMPolicy`, what the model reads (a window of the chat transcript),
  how it writes, and its table of canonical-reply probabilities over the exact model;
- :mod:`.rollout`: groups of episodes from identical starts, the supervised warm start;
- :mod:`.grpo`: :class:`GRPOTrainer`, TRL's GRPO loss with turn advantages from any estimator
  spread onto the reply tokens;
- :mod:`.exact`: the exact objective and gradient of the LM policy through its table, and the
  gradient SNR of the lab's estimators against it.

See ``docs/llm.md``.
"""

from baselines.lib.lm.grpo import GRPOConfig, GRPOTrainer, grpo_loss
from baselines.lib.lm.model import LMConfig, TinyCausalLM
from baselines.lib.lm.policy import LMPolicy
from baselines.lib.lm.rollout import play_groups, warm_start
from baselines.lib.lm.tokenizer import WordTokenizer, env_corpus
from routine_envs.text import TextEnv

__all__ = [
    "GRPOConfig",
    "GRPOTrainer",
    "LMConfig",
    "LMPolicy",
    "TinyCausalLM",
    "WordTokenizer",
    "build_policy",
    "env_corpus",
    "grpo_loss",
    "play_groups",
    "warm_start",
]


def build_policy(
    env: TextEnv,
    dim: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    window: int = 1,
    system_prompt: bool = False,
    max_positions: int = 256,
    seed: int = 0,
    init_std: float = 0.02,
    decoding: str = "free",
) -> LMPolicy:
    """A freshly initialised :class:`LMPolicy` for the text env ``env`` (its tokenizer built
    from :func:`env_corpus`; the weights seeded by ``seed``, the linear layers' drawn at
    ``init_std``: :class:`LMConfig`; ``decoding`` and the env's canonical replies as
    :class:`LMPolicy` takes them)."""
    import torch

    tokenizer = WordTokenizer.build(env_corpus(env))
    torch.manual_seed(seed)
    config = LMConfig(
        tokenizer.vocab_size, max_positions, dim, num_layers, num_heads, init_std=init_std
    )
    return LMPolicy(
        TinyCausalLM(config),
        tokenizer,
        window=window,
        system_prompt=system_prompt,
        decoding=decoding,
        canonical_replies=[env.action_text(a) for a in range(env.view.num_actions)],
    )
