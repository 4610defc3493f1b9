"""A language model as the policy of a text env: what it reads (the context), how it writes
(sampling a reply token by token) and its probabilities of the canonical replies.

**The context.** A chat transcript (``TextEnv.messages``: system, user, assistant, user, ...)
becomes ``<bos> [<system> prompt] (<user> observation <assistant> reply <eos>)* <user>
observation <assistant>``. ``window`` chooses how much of it the model reads: ``0`` the whole
transcript, ``k >= 1`` the last ``k`` observations and the ``k - 1`` replies between them. With
``window=1`` the context is a function of the current observation's text alone, and the text of
a text env is a function of the observation, so the policy is a function of the state
(Markov): that is what makes its table over the exact model (:meth:`LMPolicy.canonical_logits`)
the policy it plays. With ``window != 1`` it depends on the history too.

**Writing.** ``decoding="free"`` (the default) samples a reply token by token from the whole
vocabulary: the model may write anything, and the env reads it as written. ``decoding=
"canonical"`` is constrained decoding (as a tool-calling model's structured output is): the
reply is drawn among the env's canonical replies (:meth:`TextEnv.action_text` of every action)
with the probabilities the model gives them, renormalised, so every reply is valid and the
policy it plays is exactly its table (:meth:`LMPolicy.policy_table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from baselines.lib.lm.model import TinyCausalLM
from baselines.lib.lm.tokenizer import WordTokenizer, observation_texts
from routine_envs.text import Message, TextEnv


def pad_left(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ids ``(B, T)`` and their mask (True on real tokens)."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.bool)
    for i, seq in enumerate(sequences):
        if seq:
            ids[i, width - len(seq) :] = torch.as_tensor(list(seq), dtype=torch.long)
            mask[i, width - len(seq) :] = True
    return ids, mask


@dataclass
class Generated:
    """One sampled reply: its tokens (``<eos>`` included when it was written), its text and the
    sampling log-probability of each token (nats)."""

    tokens: list[int]
    text: str
    log_probs: list[float]


DECODINGS = ("free", "canonical")
"""How :meth:`LMPolicy.generate` writes (the module docstring)."""


class LMPolicy:
    """A :class:`TinyCausalLM` with its tokenizer and context window.

    Args:
        model: the language model.
        tokenizer: its tokenizer.
        window: observations in the context (0: the whole transcript; see the module docstring).
        system_prompt: whether the context starts with the env's system prompt.
        decoding: ``"free"`` or ``"canonical"`` (the module docstring).
        canonical_replies: the texts of the canonical replies, by action (``decoding=
            "canonical"`` draws among them; ``env.action_text(a)`` for every action ``a``).
    """

    def __init__(
        self,
        model: TinyCausalLM,
        tokenizer: WordTokenizer,
        window: int = 1,
        system_prompt: bool = False,
        decoding: str = "free",
        canonical_replies: Sequence[str] = (),
    ) -> None:
        if not isinstance(window, int) or window < 0:
            raise ValueError(f"window must be an int >= 0, got {window!r}")
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {DECODINGS}, got {decoding!r}")
        if decoding == "canonical" and not canonical_replies:
            raise ValueError('decoding="canonical" needs the canonical replies')
        if model.config.vocab_size != tokenizer.vocab_size:
            raise ValueError(
                f"model vocab_size {model.config.vocab_size} != tokenizer vocab_size "
                f"{tokenizer.vocab_size}"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.window = window
        self.system_prompt = system_prompt
        self.decoding = decoding
        self.canonical_replies = tuple(canonical_replies)

    @property
    def markov(self) -> bool:
        """Whether the context is a function of the current observation (``window == 1``)."""
        return self.window == 1

    # ------------------------------------------------------------------------ context
    def prompt(self, messages: Sequence[Message]) -> list[int]:
        """The context of the next reply after ``messages`` (ending with a user message)."""
        tok = self.tokenizer
        system = [m for m in messages if m["role"] == "system"]
        turns = [m for m in messages if m["role"] != "system"]
        if not turns or turns[-1]["role"] != "user":
            raise ValueError("messages must end with a user message (the observation)")
        if self.window:
            users = [i for i, m in enumerate(turns) if m["role"] == "user"]
            turns = turns[users[-self.window] if len(users) >= self.window else 0 :]
        ids = [tok.bos_id]
        if self.system_prompt and system:
            ids += [tok.system_id, *tok.encode(system[0]["content"])]
        for message in turns:
            if message["role"] == "user":
                ids += [tok.user_id, *tok.encode(message["content"]), tok.assistant_id]
            else:
                ids += [*tok.encode(message["content"]), tok.eos_id]
        return ids

    def observation_prompt(self, text: str, system: str = "") -> list[int]:
        """The context of a first turn whose observation reads ``text``."""
        messages: list[Message] = [{"role": "system", "content": system}] if system else []
        return self.prompt([*messages, {"role": "user", "content": text}])

    def reply_tokens(self, text: str) -> list[int]:
        """The tokens of reply ``text``, ``<eos>`` included."""
        return [*self.tokenizer.encode(text), self.tokenizer.eos_id]

    # ------------------------------------------------------------------------ writing
    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        max_new_tokens: int,
        generator: torch.Generator,
        temperature: float = 1.0,
    ) -> list[Generated]:
        """Sample one reply per prompt: token by token until ``<eos>`` or ``max_new_tokens``
        (``decoding="free"``), or one of the canonical replies (``"canonical"``; each token's
        log-probability is then the tempered model's, the draw's probability their sum
        renormalised over the canonical replies)."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if self.decoding == "canonical":
            return self._generate_canonical(prompts, generator, temperature)
        tok = self.tokenizer
        ids, mask = pad_left(prompts, tok.pad_id)
        n = len(prompts)
        done = torch.zeros(n, dtype=torch.bool)
        tokens: list[list[int]] = [[] for _ in range(n)]
        log_probs: list[list[float]] = [[] for _ in range(n)]
        for _ in range(max_new_tokens):
            logits = self.model(ids, mask)[:, -1] / temperature
            dist = torch.log_softmax(logits, dim=-1)
            nxt = torch.multinomial(dist.exp(), 1, generator=generator).squeeze(1)
            for i in np.flatnonzero(~done.numpy()):
                tokens[i].append(int(nxt[i]))
                log_probs[i].append(float(dist[i, nxt[i]]))
            done |= nxt == tok.eos_id
            if bool(done.all()):
                break
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            mask = torch.cat([mask, torch.ones(n, 1, dtype=torch.bool)], dim=1)
        return [
            Generated(t, tok.decode(t[:-1] if t and t[-1] == tok.eos_id else t), lp)
            for t, lp in zip(tokens, log_probs, strict=True)
        ]

    def _generate_canonical(
        self, prompts: Sequence[Sequence[int]], generator: torch.Generator, temperature: float
    ) -> list[Generated]:
        replies = [self.reply_tokens(text) for text in self.canonical_replies]
        k = len(replies)
        sequences = [[*prompt, *reply] for prompt in prompts for reply in replies]
        logp, _ = self.token_log_probs(sequences, temperature)
        out = []
        for i in range(len(prompts)):
            tokens = [logp[i * k + j, logp.shape[1] - len(r) :] for j, r in enumerate(replies)]
            totals = torch.stack([t.sum() for t in tokens])
            j = int(torch.multinomial(torch.softmax(totals, 0), 1, generator=generator))
            out.append(Generated(list(replies[j]), self.canonical_replies[j], tokens[j].tolist()))
        return out

    def token_log_probs(
        self, sequences: Sequence[Sequence[int]], temperature: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``log p(x_t | x_<t)`` of every token but the first, left-padded: shape
        ``(B, T - 1)`` (with gradient), and the mask of real tokens."""
        ids, mask = pad_left(sequences, self.tokenizer.pad_id)
        logits = self.model(ids, mask)[:, :-1] / temperature
        logp = torch.log_softmax(logits, dim=-1).gather(2, ids[:, 1:, None]).squeeze(2)
        return logp, mask[:, 1:]

    # -------------------------------------------------------------------- the table
    def canonical_logits(
        self, env: TextEnv, texts: dict[int, str] | None = None
    ) -> tuple[np.ndarray, torch.Tensor]:
        """``log p(canonical reply of a | context of s)`` for every reachable decision state
        ``s`` of ``env``'s exact model and every action ``a``.

        Needs ``window == 1`` (the policy is then a function of the state). ``texts`` (from
        :func:`~baselines.lib.lm.tokenizer.observation_texts`) is computed when not given.

        Returns:
            The decision ``state_id`` s, shape ``(K,)``, and the log-probabilities, a tensor
            ``(K, num_actions)`` with gradient.
        """
        if not self.markov:
            raise ValueError(
                f"window must be 1 for a policy table over states (got window={self.window}): "
                "a longer context depends on the history, not only on the state"
            )
        texts = observation_texts(env) if texts is None else texts
        ids = np.array(sorted(texts), dtype=np.int64)
        system = env.system_prompt if self.system_prompt else ""
        replies = [self.reply_tokens(env.action_text(a)) for a in range(env.view.num_actions)]
        sequences, spans = [], []
        for sid in ids:
            prompt = self.observation_prompt(texts[int(sid)], system)
            for reply in replies:
                sequences.append(prompt + reply)
                spans.append(len(reply))
        logp, _ = self.token_log_probs(sequences)
        width = logp.shape[1]
        span = torch.as_tensor(spans)
        keep = torch.arange(width)[None, :] >= width - span[:, None]  # the reply tokens
        total = (logp * keep).sum(1)
        return ids, total.view(len(ids), len(replies))

    def policy_table(self, env: TextEnv, texts: dict[int, str] | None = None) -> np.ndarray:
        """The policy over canonical actions, ``pi(a|s) = p(reply_a|s) / sum_b p(reply_b|s)``,
        shape ``(num_states, num_actions)`` (uniform on ids where no action is taken), and
        nothing else: :meth:`canonical_mass` says how much of the model's probability it
        covers."""
        with torch.no_grad():
            ids, logits = self.canonical_logits(env, texts)
        return table_from_logits(env, ids, logits.double().numpy())


def table_from_logits(env: TextEnv, ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """Softmax of ``logits`` (``(K, A)``) at the rows ``ids`` of a ``(num_states, A)`` table,
    uniform elsewhere."""
    base = env.unwrapped
    table = np.full((base.num_states, env.view.num_actions), 1.0 / env.view.num_actions)
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    table[ids] = p / p.sum(axis=1, keepdims=True)
    return table


def canonical_mass(logits: np.ndarray) -> np.ndarray:
    """The model's probability of writing one of the canonical replies, per state: the sum
    of ``exp(logits)`` over actions, shape ``(K,)``."""
    return np.exp(logits).sum(axis=1)
