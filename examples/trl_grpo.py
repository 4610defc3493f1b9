"""TRL recipe: a locally built Qwen2 learns DilutedDoors-v1 by GRPO through real tool calls.

``python -m examples.trl_grpo --help`` (needs ``trl>=1.16``; see ``docs/llm.md``). Nothing is
downloaded: the tokenizer is a byte-level BPE trained here on the env's own conversations
(rendered with TRL's bundled Qwen2.5 chat template, so that TRL knows how to parse the model's
tool calls), the model a ``Qwen2ForCausalLM`` of a few hundred thousand parameters built from a
config. What it takes to learn:

1. **a warm start**: a few supervised steps on canonical episodes (the door drawn uniformly
   at random, then ``walk`` through the corridor, then a short closing message) rendered
   exactly as TRL renders a rollout, the loss on the assistant's tokens only. Without it the
   model makes no tool call at all and every reward is 0.
2. **generation budgets that let episodes finish**: ``max_completion_length`` covers every
   tool call and tool response of an episode (TRL counts both), and
   ``max_tool_calling_iterations`` is the episode's turns plus one.
3. **the env's return as the reward**: ``get_reward`` of the adapter's class, which TRL adds as
   a reward source of weight 1 by itself; :func:`routine_envs.adapters.trl.routine_return`
   (weight 0, so the return is not counted twice) logs the annotations
   (``routine/decision_density``, ``routine/success``, ...) with ``log_metric``.

Writes ``curve.csv`` (one row per logged step: reward, success, CPU seconds, ...),
``curve.png`` and ``summary.json`` into ``--out``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib import cli

ENV_KWARGS = {"num_floors": 1, "routine_length": 1}
INSTRUCTION = "Play the game with the tools.\n\n"  # TRL appends reset()'s text right after it
CLOSING = "Done."


@dataclass
class RecipeSettings:
    """TRL's GRPOTrainer with environment_factory on a text env, a local model and tokenizer."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "text env id"})
    env_kwargs: dict = field(
        default_factory=lambda: dict(ENV_KWARGS), metadata={"help": "env keyword arguments"}
    )
    steps: int = field(default=60, metadata={"help": "GRPO steps (TRL max_steps)", "min": 1})
    warm_start_steps: int = field(default=250, metadata={"help": "supervised steps", "min": 0})
    temperature: float = field(default=0.7, metadata={"help": "sampling temperature", "min": 0.0})
    num_generations: int = field(default=8, metadata={"help": "rollouts per prompt", "min": 2})
    learning_rate: float = field(default=1e-3, metadata={"help": "GRPO Adam step", "min": 0.0})
    vocab_size: int = field(default=1024, metadata={"help": "BPE vocabulary", "min": 300})
    hidden_size: int = field(default=64, metadata={"help": "model width", "min": 8})
    num_layers: int = field(default=2, metadata={"help": "transformer blocks", "min": 1})
    seed: int = field(default=0, metadata={"help": "seed"})
    threads: int = field(default=1, metadata={"help": "torch threads", "min": 1})
    out: Path = field(default=Path("results/lm/trl"), metadata={"help": "output folder"})


# --------------------------------------------------------------------- conversations
def canonical_conversation(env: Any, rng: np.random.Generator, seed: int) -> list[dict[str, Any]]:
    """One canonical Diluted Doors episode as TRL renders a rollout: the user message (the
    instruction with ``reset``'s text appended, as TRL appends it), then per turn an assistant
    message with one tool call (``open_door`` with a uniformly drawn door before the doors,
    ``walk`` in the corridor) and the tool's answer, then a closing assistant message."""
    first = env.reset(seed=seed)
    messages: list[dict[str, Any]] = [{"role": "user", "content": INSTRUCTION + first}]
    while not env.done:
        if "stand before" in env.text_env.observation_text:  # the doors of a floor
            name, arguments = "open_door", {"door": int(rng.integers(3))}
        else:
            name, arguments = "walk", {}
        result = getattr(env, name)(**arguments)
        call = {"type": "function", "function": {"name": name, "arguments": arguments}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "name": name, "content": result})
    messages.append({"role": "assistant", "content": CLOSING})
    return messages


# ------------------------------------------------------------------ tokenizer, model
def build_tokenizer(
    conversations: Sequence[list[dict[str, Any]]], tools: list, vocab_size: int
) -> Any:
    """A byte-level BPE trained on the rendered ``conversations``, with Qwen2.5's special
    tokens and TRL's bundled Qwen2.5 chat template (so ``add_response_schema`` parses its tool
    calls)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    probe = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()))
    probe.chat_template = qwen2_5_chat_template
    texts = [probe.apply_chat_template(c, tools=tools, tokenize=False) for c in conversations]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
    )
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


def build_model(tokenizer: Any, hidden_size: int, num_layers: int, seed: int) -> Any:
    """A ``Qwen2ForCausalLM`` from a config (no weights downloaded), tied embeddings."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    return model


def assistant_mask(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list
) -> tuple[list[int], list[int]]:
    """Token ids of the rendered conversation and a mask, 1 on the assistant's own tokens
    (what the model writes: each assistant message after its generation prompt)."""

    def ids(upto: int, prompt: bool) -> list[int]:
        return tokenizer.apply_chat_template(
            messages[:upto],
            tools=tools,
            tokenize=True,
            add_generation_prompt=prompt,
            return_dict=False,
        )

    full = ids(len(messages), False)
    mask = [0] * len(full)
    for k, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        start, end = len(ids(k, True)), len(ids(k + 1, False))
        end = min(end, len(full))
        for i in range(start, end):
            mask[i] = 1
    return full, mask


def warm_start(
    model: Any, tokenizer: Any, conversations: list, tools: list, steps: int, seed: int
) -> list[float]:
    """Supervised steps (Adam, lr 3e-3, batches of 16) on the assistant tokens of the
    canonical conversations; the losses."""
    import torch

    data = [assistant_mask(tokenizer, c, tools) for c in conversations]
    rng = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    model.train()
    for _ in range(steps):
        batch = [data[i] for i in rng.choice(len(data), size=min(16, len(data)), replace=False)]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.full((len(batch), width), tokenizer.pad_token_id)
        labels = torch.full((len(batch), width), -100)
        attention = torch.zeros((len(batch), width), dtype=torch.long)
        for row, (seq, mask) in enumerate(batch):
            ids[row, : len(seq)] = torch.tensor(seq)
            attention[row, : len(seq)] = 1
            labels[row, : len(seq)] = torch.where(torch.tensor(mask) > 0, torch.tensor(seq), -100)
        loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def first_door_probabilities(
    model: Any, tokenizer: Any, conversation: list, tools: list
) -> list[float]:
    """The model's probability of each canonical first call ``open_door(d)`` (the whole
    assistant message, its end included) after the first prompt of ``conversation``, per door
    (the policy at the decision, as far as it writes a well-formed call)."""
    import torch

    prompt = tokenizer.apply_chat_template(
        conversation[:1], tools=tools, add_generation_prompt=True, return_dict=False
    )
    out = []
    for door in range(3):
        call = {"type": "function", "function": {"name": "open_door", "arguments": {"door": door}}}
        full = tokenizer.apply_chat_template(
            [*conversation[:1], {"role": "assistant", "content": "", "tool_calls": [call]}],
            tools=tools,
            return_dict=False,
        )
        ids = torch.tensor([full])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), dim=-1)
        reply = torch.arange(len(prompt) - 1, len(full) - 1)
        out.append(float(logp[reply, ids[0, 1:][reply]].sum().exp()))
    return out


def right_door(factory: Any) -> int:
    """The door of the first floor that wins (one-floor Diluted Doors): each tried once."""
    for door in range(3):
        env = factory()
        env.reset(seed=0)
        env.open_door(door=door)
        while not env.done:
            env.walk()
        if env.get_reward() > 0:
            return door
    raise ValueError("no door of the first floor wins (num_floors must be 1)")


# ------------------------------------------------------------------------- training
def grpo_config(settings: Any, budget: int, turns: int, reward_funcs: int) -> Any:
    """TRL's ``GRPOConfig`` of a recipe (``settings``: its ``out``, ``num_generations``,
    ``learning_rate``, ``steps``, ``seed`` and ``temperature``): one batch is one group, at
    most ``budget`` completion tokens and ``turns + 1`` tool-calling iterations, on the CPU,
    no checkpoints or reports; every one of the ``reward_funcs`` reward functions has weight 0
    (they only log: the environment's ``get_reward`` is the reward)."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(settings.out / "trainer"),
        per_device_train_batch_size=settings.num_generations,
        num_generations=settings.num_generations,
        max_completion_length=budget,
        max_tool_calling_iterations=turns + 1,
        learning_rate=settings.learning_rate,
        max_steps=settings.steps,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        seed=settings.seed,
        reward_weights=[0.0] * reward_funcs,
        temperature=settings.temperature,
        disable_tqdm=True,
    )


def run(settings: RecipeSettings) -> dict[str, Any]:
    """Build, warm-start and train; write the curve; the summary."""
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from routine_envs.adapters.trl import environment_factory, routine_return

    torch.set_num_threads(settings.threads)
    start_cpu = time.process_time()
    factory = environment_factory(settings.env_id, **settings.env_kwargs)
    probe = factory()
    turns = int(probe.text_env.unwrapped.max_episode_length)
    tools = [getattr(probe, t.name) for t in probe.text_env.view.tools]
    rng = np.random.default_rng(settings.seed)
    conversations = [canonical_conversation(factory(), rng, seed) for seed in range(96)]
    tokenizer = build_tokenizer(conversations, tools, settings.vocab_size)
    model = build_model(tokenizer, settings.hidden_size, settings.num_layers, settings.seed)
    losses = warm_start(
        model, tokenizer, conversations, tools, settings.warm_start_steps, settings.seed
    )
    warm_cpu = time.process_time() - start_cpu
    doors_before = first_door_probabilities(model, tokenizer, conversations[0], tools)
    right = right_door(factory)
    lengths = [sum(assistant_mask(tokenizer, c, tools)[1]) for c in conversations[:4]]
    prompt_len = len(assistant_mask(tokenizer, conversations[0][:1], tools)[0])
    full_len = max(len(assistant_mask(tokenizer, c, tools)[0]) for c in conversations[:8])
    budget = int(2 * (full_len - prompt_len) + 32)  # every call and answer of an episode, twice
    rows: list[dict[str, Any]] = []

    class Curve(TrainerCallback):
        def on_log(
            self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any
        ) -> None:
            if logs and "reward" in logs:
                rows.append(
                    {
                        "step": state.global_step,
                        "reward": logs.get("reward"),
                        # the env's return over every rollout (an unfinished one counts 0)
                        "success": logs.get(f"rewards/{type(probe).__name__}/mean"),
                        "success_of_finished": logs.get("routine/success"),
                        "tool_calls": logs.get("tools/call_frequency"),
                        "decision_density": logs.get("routine/decision_density"),
                        "unfinished": logs.get("routine/unfinished"),
                        "num_invalid_turns": logs.get("routine/num_invalid_turns"),
                        "frac_reward_zero_std": logs.get("frac_reward_zero_std"),
                        "completion_length": logs.get("completions/mean_length"),
                        "cpu_seconds": time.process_time() - start_cpu,
                    }
                )

    dataset = Dataset.from_list(
        [{"prompt": [{"role": "user", "content": INSTRUCTION}], "seed": i} for i in range(4096)]
    )
    # routine_return only logs: the env's get_reward is the reward
    config = grpo_config(settings, budget, turns, reward_funcs=1)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[routine_return],
        train_dataset=dataset,
        args=config,
        environment_factory=factory,
        callbacks=[Curve()],
    )
    trainer.train()
    doors_after = first_door_probabilities(model, tokenizer, conversations[0], tools)
    settings.out.mkdir(parents=True, exist_ok=True)
    summary = {
        "env_id": settings.env_id,
        "env_kwargs": settings.env_kwargs,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "vocab_size": len(tokenizer),
        "prompt_tokens": prompt_len,
        "assistant_tokens_per_episode": lengths,
        "max_completion_length": budget,
        "max_tool_calling_iterations": turns + 1,
        "warm_start_steps": settings.warm_start_steps,
        "warm_start_loss": losses[-1] if losses else None,
        "warm_start_cpu_seconds": warm_cpu,
        "steps": settings.steps,
        "temperature": settings.temperature,
        "num_generations": settings.num_generations,
        "right_door": right,
        "first_door_probabilities_before": doors_before,
        "first_door_probabilities_after": doors_after,
        "first_success": _mean([r["success"] for r in rows[:5]]),
        "last_success": _mean([r["success"] for r in rows[-5:]]),
        "cpu_seconds": time.process_time() - start_cpu,
    }
    write_outputs(rows, summary, settings.out)
    return summary


def _mean(values: list[Any]) -> float | None:
    kept = [float(v) for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def write_outputs(rows: list[dict[str, Any]], summary: dict[str, Any], out: Path) -> None:
    """``curve.csv``, ``curve.png`` and ``summary.json``."""
    from baselines.lib.tables import pyplot, write_csv

    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "curve.csv", rows)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, x, label in zip(
        axes,
        ("step", "cpu_seconds"),
        ("GRPO step", "CPU seconds (warm start included)"),
        strict=True,
    ):
        xs = [r[x] for r in rows if r["success"] is not None]
        ys = [r["success"] for r in rows if r["success"] is not None]
        ax.plot(xs, ys, ".", ms=4, label="batch success rate")
        if len(ys) >= 5:
            smooth = np.convolve(ys, np.ones(5) / 5, mode="valid")
            ax.plot(xs[4:], smooth, "-", lw=1.5, label="mean of 5 steps")
        ax.axhline(1 / 3, color="k", lw=0.8, ls=":", label="chance (1/3)")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success")
    axes[0].set_ylim(0, 1.02)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"TRL GRPOTrainer(environment_factory) on {summary['env_id']} {summary['env_kwargs']}: "
        f"local {summary['parameters']:,}-parameter Qwen2, real tool calls",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out / "curve.png", dpi=120)
    plt.close(fig)


def parse_args(argv: list[str] | None = None) -> RecipeSettings:
    """The settings from the command line (one flag per :class:`RecipeSettings` field)."""
    return cli.parse_settings(RecipeSettings, argv, description=__doc__.splitlines()[0])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``, train, print and return the summary."""
    settings = parse_args(argv)
    summary = run(settings)
    print(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
