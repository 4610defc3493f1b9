"""Every environment as a multi-turn text task for language-model agents.

- :class:`TextEnv` (and :func:`make_text_env`): a Gymnasium env with ``Text`` observation and
  action spaces, chat ``messages``, a system prompt and an OpenAI-style tool schema; any reply is
  read leniently and a malformed one is an invalid turn, never an exception.
- :func:`make_group`: a group of envs with identical starts (GRPO); ``get_initial_state`` /
  ``reset_to_initial_state`` by deep copy.
- :func:`spread_advantages`: turn-level advantages onto the tokens of each assistant turn.
- :func:`view_for`, :class:`TextView`: what each environment tells the agent.

Numpy and Gymnasium only; the trainer adapters are in :mod:`routine_envs.adapters`. See
``docs/text.md``.
"""

from routine_envs.text.env import InitialState, Message, TextEnv, make_text_env
from routine_envs.text.groups import make_group
from routine_envs.text.parsing import ActionParser, Parsed, parse_action
from routine_envs.text.tokens import spread_advantages
from routine_envs.text.views import Param, TextView, Tool, view_for

__all__ = [
    "ActionParser",
    "InitialState",
    "Message",
    "Param",
    "Parsed",
    "TextEnv",
    "TextView",
    "Tool",
    "make_group",
    "make_text_env",
    "parse_action",
    "spread_advantages",
    "view_for",
]
