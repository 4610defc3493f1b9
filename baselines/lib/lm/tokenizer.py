"""A small word-level tokenizer built locally from an environment's own text, with a
character fallback, so that every printable-ASCII text round-trips exactly.

The text is cut into pieces (a word with its leading space, a digit with its leading space, one
punctuation mark with its leading space, or one whitespace character); a piece in the
vocabulary is one token, any other piece is spelled with one token per character (every
character of :data:`routine_envs.text.env.TEXT_CHARSET` is in the vocabulary). Digits are pieces
of their own, so ``open_door 2`` is the two tokens ``open_door`` and `` 2``.

The vocabulary is made from a corpus (:func:`env_corpus`: the system prompt, the text of every
reachable observation of the exact model, the canonical replies and the tool names), never
downloaded. It is saved and loaded as JSON (:meth:`WordTokenizer.save`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from routine_envs.text import TextEnv
from routine_envs.text.env import TEXT_CHARSET

#: the special tokens, in id order: padding, start of text, end of a reply, the three roles.
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<system>", "<user>", "<assistant>")
_PIECE = re.compile(r" ?[A-Za-z_]+| ?\d| ?[^\sA-Za-z_\d]|\s")


def pieces(text: str) -> list[str]:
    """``text`` cut into pieces (their concatenation is ``text``)."""
    return _PIECE.findall(text)


class WordTokenizer:
    """Special tokens, then every character of the text charset, then the corpus' words.

    Args:
        words: the multi-character pieces of the vocabulary (in id order after the characters).
    """

    def __init__(self, words: Sequence[str] = ()) -> None:
        chars = sorted(TEXT_CHARSET)
        extra = [w for w in dict.fromkeys(words) if len(w) > 1]
        self.tokens: list[str] = [*SPECIAL_TOKENS, *chars, *extra]
        self.index: dict[str, int] = {t: i for i, t in enumerate(self.tokens)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2
        self.system_id, self.user_id, self.assistant_id = 3, 4, 5

    @classmethod
    def build(cls, corpus: Iterable[str], min_count: int = 1) -> WordTokenizer:
        """A tokenizer whose words are the pieces of ``corpus`` seen at least ``min_count``
        times (most frequent first)."""
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        counts = Counter(p for text in corpus for p in pieces(text) if len(p) > 1)
        words = [
            w for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if c >= min_count
        ]
        return cls(words)

    @property
    def vocab_size(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; a character outside the charset is dropped (the text spaces
        of :class:`~routine_envs.text.TextEnv` hold only charset characters)."""
        out: list[int] = []
        for piece in pieces(text):
            token = self.index.get(piece)
            if token is not None:
                out.append(token)
            else:
                out.extend(self.index[c] for c in piece if c in self.index)
        return out

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; special tokens are left out."""
        special = len(SPECIAL_TOKENS)
        return "".join(self.tokens[i] for i in ids if special <= i < len(self.tokens))

    def to_json(self) -> dict[str, Any]:
        return {"words": self.tokens[len(SPECIAL_TOKENS) + len(TEXT_CHARSET) :]}

    def save(self, path: Path) -> None:
        """Write the vocabulary as JSON."""
        Path(path).write_text(json.dumps(self.to_json()))

    @classmethod
    def load(cls, path: Path) -> WordTokenizer:
        """The tokenizer saved at ``path``."""
        return cls(json.loads(Path(path).read_text())["words"])


def observation_texts(env: TextEnv) -> dict[int, str]:
    """The text of every reachable non-terminal ``state_id`` of ``env``'s exact model
    (``view.observation_text(dynamics.observe(state))``: what the agent reads there)."""
    base = env.unwrapped
    model = base.model()
    return {
        int(sid): env.view.observation_text(base.observe(model.states[int(sid)]))
        for sid in range(model.num_states)
        if model.decision_states[sid]
    }


def env_corpus(env: TextEnv) -> list[str]:
    """What the vocabulary is built from: the system prompt, every reachable observation's
    text (terminal ones included), the canonical replies and the tool names."""
    base = env.unwrapped
    model = base.model()
    texts = [env.system_prompt]
    texts += [
        env.view.observation_text(base.observe(model.states[int(sid)]))
        for sid in range(model.num_states)
        if model.reachable[sid]
    ]
    texts += [env.action_text(a) for a in range(env.view.num_actions)]
    texts += [tool.name for tool in env.view.tools]
    texts.append("Invalid reply: no action found in. Nothing changed.")
    return texts
