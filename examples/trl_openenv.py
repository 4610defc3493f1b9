"""TRL through OpenEnv: a local Qwen2 learns DilutedDoors-v1 by GRPO, every episode served.

``python -m examples.trl_openenv --help`` (needs the ``trl-openenv`` extra: ``trl>=1.16`` and
``openenv>=0.10``; see ``docs/text.md``, "Training with TRL through OpenEnv"). The recipe of
``examples/trl_grpo.py`` (the same local tokenizer, model and warm start), except that the
episodes are not played in process: the recipe starts ``python -m routine_envs.adapters.openenv``
on 127.0.0.1 (or uses the server at ``--url``) and TRL's ``GRPOTrainer(environment_factory=...)``
plays it through OpenEnv's own client, as TRL's OpenEnv guide wires a served environment into
the trainer: a class whose instance holds one WebSocket session (``RoutineEnvClient.sync()``),
whose ``reset`` starts an episode on the server and whose tool methods (``open_door(door)``,
``walk()``) send the model's tool call as one ``RoutineAction`` reply and return the served
observation; ``get_reward`` is the served episode's return.

**A GRPO group shares its start.** Each dataset row carries a ``group_id`` (the run's seed and
the row); TRL repeats a row for the ``num_generations`` rollouts of its group and passes its
fields to ``reset``, which calls ``reset(group_id=...)``: the server starts every episode of the
group from the seed it derives from the group id, on as many sessions as there are rollouts.

Writes into ``--out``: ``curve.csv`` (per GRPO step: ``step``, ``reward`` (TRL's batch mean),
``success`` (the served episodes' success, an unfinished one counting 0), CPU seconds, ...),
``rollouts.jsonl`` (per step, each rollout's group id, seed, replies sent and served return:
enough to replay it locally) and ``summary.json``.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lib import cli
from examples import trl_grpo
from routine_envs.adapters.annotations import AnnotationLog
from routine_envs.adapters.trl import RoutineToolEnv, routine_return, tool_method
from routine_envs.text import make_text_env

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class OpenEnvRecipeSettings:
    """TRL's GRPOTrainer on a routine-envs OpenEnv server, a local model and tokenizer."""

    env_id: str = field(default="DilutedDoors-v1", metadata={"help": "text env id"})
    env_kwargs: dict = field(
        default_factory=lambda: dict(trl_grpo.ENV_KWARGS),
        metadata={"help": "env keyword arguments"},
    )
    url: str = field(
        default="", metadata={"help": "an OpenEnv server to use (default: start one here)"}
    )
    steps: int = field(default=20, metadata={"help": "GRPO steps (TRL max_steps)", "min": 1})
    warm_start_steps: int = field(default=150, metadata={"help": "supervised steps", "min": 0})
    temperature: float = field(default=0.7, metadata={"help": "sampling temperature", "min": 0.0})
    num_generations: int = field(default=8, metadata={"help": "rollouts per group", "min": 2})
    learning_rate: float = field(default=1e-3, metadata={"help": "GRPO Adam step", "min": 0.0})
    vocab_size: int = field(default=1024, metadata={"help": "BPE vocabulary", "min": 300})
    hidden_size: int = field(default=64, metadata={"help": "model width", "min": 8})
    num_layers: int = field(default=2, metadata={"help": "transformer blocks", "min": 1})
    seed: int = field(default=0, metadata={"help": "seed"})
    threads: int = field(default=1, metadata={"help": "torch threads", "min": 1})
    out: Path = field(default=Path("results/lm/trl_openenv"), metadata={"help": "output folder"})
    over_seeds: bool = field(
        default=False,
        metadata={"help": "train nothing: statistics over the runs in --out's seed*/ folders"},
    )


# ----------------------------------------------------------------------------- server
def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(env_id: str, env_kwargs: dict, sessions: int, patience: float = 60) -> Iterator[str]:
    """``python -m routine_envs.adapters.openenv`` on a free port of 127.0.0.1 while the block
    runs; its base URL. Ended (and waited for) on the way out."""
    port = free_port()
    argv = [sys.executable, "-m", "routine_envs.adapters.openenv", "--env-id", env_id]
    argv += ["--env-kwargs", json.dumps(env_kwargs), "--port", str(port)]
    argv += ["--max-sessions", str(sessions)]
    proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + patience
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the OpenEnv server exited with status {proc.returncode}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no OpenEnv server on {url} after {patience} s") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------- the client side
class ServedToolEnv(RoutineToolEnv):
    """Base of :func:`served_environment_class`'s classes: one OpenEnv WebSocket session per
    instance; ``reset(group_id=...)`` on the server, one reply per tool call."""

    _url = ""

    def __init__(self) -> None:
        from routine_envs.adapters.openenv import RoutineEnvClient

        self._client = RoutineEnvClient(base_url=self._url).sync()
        self._client.connect()
        self._return, self._done = 0.0, True
        self._log = AnnotationLog()
        self._group_id: str | None = None
        self._seed: int | None = None
        self._replies: list[str] = []

    def reset(self, **kwargs: Any) -> str:
        """Start a served episode from the row's ``group_id`` (its group's shared start);
        returns the rules and the first observation, appended to the prompt by TRL."""
        self._group_id = kwargs.get("group_id")
        result = self._client.reset(group_id=self._group_id)
        meta = result.metadata
        self._seed = meta["seed"]
        self._return, self._done, self._replies = 0.0, False, []
        self._log.start(_info(meta))
        return f"{result.observation.system_prompt}\n\n{result.observation.text}"

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        from routine_envs.adapters.openenv import RoutineAction

        if self._done:
            return "The episode is over: nothing changed."
        reply = json.dumps({"name": name, "arguments": arguments})
        self._replies.append(reply)
        result = self._client.step(RoutineAction(reply=reply))
        self._return += float(result.reward or 0.0)
        self._done = bool(result.done)
        self._log.record(_info(result.metadata), self._done)
        return result.observation.text + ("\nThe episode is over." if self._done else "")

    @property
    def rollout(self) -> dict[str, Any]:
        """The rollout as played: group id, served seed, replies sent, return, done (a
        property: TRL takes only functions as tools)."""
        episode = self._log.episode() or {}
        return {
            "group_id": self._group_id,
            "seed": self._seed,
            "replies": list(self._replies),
            "return": self._return,
            "done": self._done,
            "success": bool(episode.get("success", False)),
        }


def _info(metadata: dict[str, Any]) -> dict[str, Any]:
    """A served result's metadata as the text env's flat ``info`` (annotations, turn,
    episode)."""
    return {
        **metadata.get("annotations", {}),
        **metadata.get("turn", {}),
        **metadata.get("episode", {}),
    }


def served_environment_class(url: str, env_id: str, **kwargs: Any) -> type[ServedToolEnv]:
    """What ``GRPOTrainer(environment_factory=...)`` takes: a class playing ``env_id`` on the
    OpenEnv server at ``url``, one public method per tool of its text view."""
    view = make_text_env(env_id, **kwargs).view
    methods: dict[str, Any] = {tool.name: tool_method(tool) for tool in view.tools}
    attributes = {"_url": url, "_env_id": env_id, "_kwargs": dict(kwargs), "__doc__": view.task}
    return type("Served" + env_id.replace("-", "") + "Env", (ServedToolEnv,), attributes | methods)


# ------------------------------------------------------------------------- training
def run(settings: OpenEnvRecipeSettings) -> dict[str, Any]:
    """Start (or use) the server, build, warm-start and train; write the outputs; the
    summary."""
    if settings.url:
        return _train(settings, settings.url)
    before = _children_cpu()
    with served(settings.env_id, settings.env_kwargs, 4 * settings.num_generations) as url:
        summary = _train(settings, url)
    summary["server_cpu_seconds"] = _children_cpu() - before  # the server, once it ended
    (settings.out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's ended and waited-for children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _train(settings: OpenEnvRecipeSettings, url: str) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from routine_envs.adapters.trl import environment_factory

    torch.set_num_threads(settings.threads)
    start_cpu = time.process_time()
    local = environment_factory(settings.env_id, **settings.env_kwargs)  # warm-start data only
    factory = served_environment_class(url, settings.env_id, **settings.env_kwargs)
    probe = local()
    turns = int(probe.text_env.unwrapped.max_episode_length)
    tools = [getattr(probe, t.name) for t in probe.text_env.view.tools]
    rng = np.random.default_rng(settings.seed)
    conversations = [trl_grpo.canonical_conversation(local(), rng, s) for s in range(96)]
    tokenizer = trl_grpo.build_tokenizer(conversations, tools, settings.vocab_size)
    model = trl_grpo.build_model(
        tokenizer, settings.hidden_size, settings.num_layers, settings.seed
    )
    losses = trl_grpo.warm_start(
        model, tokenizer, conversations, tools, settings.warm_start_steps, settings.seed
    )
    warm_cpu = time.process_time() - start_cpu
    prompt_len = len(trl_grpo.assistant_mask(tokenizer, conversations[0][:1], tools)[0])
    full_len = max(len(trl_grpo.assistant_mask(tokenizer, c, tools)[0]) for c in conversations[:8])
    budget = int(2 * (full_len - prompt_len) + 32)
    rows: list[dict[str, Any]] = []
    batches: list[list[dict[str, Any]]] = []

    def served_rollouts(environments: Sequence[Any] | None = None, **kwargs: Any) -> list[float]:
        """Weight 0: keeps each batch's rollouts as played (the reward is ``get_reward``)."""
        envs = list(environments or [])
        batches.append([e.rollout for e in envs])
        return [0.0] * len(envs)

    class Curve(TrainerCallback):
        def on_log(
            self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any
        ) -> None:
            if logs and "reward" in logs and batches:
                batch = batches[-1]
                rows.append(
                    {
                        "step": state.global_step,
                        "reward": logs.get("reward"),
                        "success": float(np.mean([r["success"] for r in batch])),
                        "unfinished": float(np.mean([not r["done"] for r in batch])),
                        "frac_reward_zero_std": logs.get("frac_reward_zero_std"),
                        "decision_density": logs.get("routine/decision_density"),
                        "cpu_seconds": time.process_time() - start_cpu,
                    }
                )

    tag = f"s{settings.seed}"
    dataset = Dataset.from_list(
        [
            {
                "prompt": [{"role": "user", "content": trl_grpo.INSTRUCTION}],
                "group_id": f"{tag}-{i}",
            }
            for i in range(4096)
        ]
    )
    # both reward functions only observe: the served return is the reward
    config = trl_grpo.grpo_config(settings, budget, turns, reward_funcs=2)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[routine_return, served_rollouts],
        train_dataset=dataset,
        args=config,
        environment_factory=factory,
        callbacks=[Curve()],
    )
    trainer.train()
    settings.out.mkdir(parents=True, exist_ok=True)
    from baselines.lib.tables import write_csv

    write_csv(settings.out / "curve.csv", rows)
    with (settings.out / "rollouts.jsonl").open("w") as f:
        for step, batch in enumerate(batches, start=1):
            f.write(json.dumps({"step": step, "rollouts": batch}) + "\n")
    summary = {
        "env_id": settings.env_id,
        "env_kwargs": settings.env_kwargs,
        "url": url,
        "seed": settings.seed,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "max_completion_length": budget,
        "max_tool_calling_iterations": turns + 1,
        "warm_start_steps": settings.warm_start_steps,
        "warm_start_loss": losses[-1] if losses else None,
        "warm_start_cpu_seconds": warm_cpu,
        "steps": settings.steps,
        "num_generations": settings.num_generations,
        "first_success": trl_grpo._mean([r["success"] for r in rows[:5]]),
        "last_success": trl_grpo._mean([r["success"] for r in rows[-5:]]),
        "cpu_seconds": time.process_time() - start_cpu,
        "versions": _versions(),
    }
    (settings.out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {p: version(p) for p in ("trl", "openenv", "transformers", "torch")}


# ---------------------------------------------------------------------- over seeds
def over_seeds(root: Path, window: int = 5, resamples: int = 10_000) -> dict[str, Any]:
    """The runs in ``root``'s ``seed*/`` folders, over seeds: per seed the success of the
    first and of the last ``window`` GRPO steps (every rollout of those steps; an unfinished
    one counts 0) and the CPU seconds; their means with 95 % bootstrap intervals over seeds
    (``scipy.stats.bootstrap``, BCa, percentile where BCa is degenerate). Written to
    ``root/seeds.json``."""
    from scipy import stats

    runs = []
    for folder in sorted(root.glob("seed*/")):
        if not (folder / "summary.json").exists():
            continue
        summary = json.loads((folder / "summary.json").read_text())
        with (folder / "curve.csv").open() as f:
            success = [float(r["success"]) for r in csv.DictReader(f)]
        runs.append(
            {
                "seed": summary["seed"],
                "before": float(np.mean(success[:window])),
                "after": float(np.mean(success[-window:])),
                "steps": len(success),
                "cpu_seconds": summary["cpu_seconds"],
                "server_cpu_seconds": summary.get("server_cpu_seconds"),
            }
        )
    if not runs:
        raise ValueError(f"no seed*/summary.json under {root}")
    out: dict[str, Any] = {"window": window, "runs": runs, "seeds": [r["seed"] for r in runs]}
    rng = np.random.default_rng(0)
    for name, values in (
        ("before", [r["before"] for r in runs]),
        ("after", [r["after"] for r in runs]),
        ("gain", [r["after"] - r["before"] for r in runs]),
        ("cpu_seconds", [r["cpu_seconds"] for r in runs]),
    ):
        data = np.asarray(values, dtype=float)
        low = high = float(data.mean())
        if len(data) > 1 and np.ptp(data) > 0:
            for method in ("BCa", "percentile"):
                ci = stats.bootstrap(
                    (data,), np.mean, n_resamples=resamples, method=method, random_state=rng
                ).confidence_interval
                if np.isfinite(ci.low) and np.isfinite(ci.high):
                    low, high = float(ci.low), float(ci.high)
                    break
        out[name] = {"mean": float(data.mean()), "ci95": [low, high]}
    (root / "seeds.json").write_text(json.dumps(out, indent=2))
    return out


def parse_args(argv: list[str] | None = None) -> OpenEnvRecipeSettings:
    """The settings from the command line (one flag per :class:`OpenEnvRecipeSettings`
    field)."""
    return cli.parse_settings(OpenEnvRecipeSettings, argv, description=__doc__.splitlines()[0])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Parse ``argv``; train and print the summary, or (``--over-seeds``) print the runs'
    statistics over seeds."""
    settings = parse_args(argv)
    if settings.over_seeds:
        summary = over_seeds(settings.out)
        print(json.dumps(summary, indent=2))
        return summary
    summary = run(settings)
    print(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
