"""verifiers v1 (``verifiers>=0.4``): every environment as a taskset, its multi-turn episode and
its annotations as metrics (needs ``verifiers``: the ``verifiers-v1`` extra).

verifiers 0.4 loads a taskset by id, importing the top-level module the id names and taking
the ``Taskset`` (and the default ``Harness`` and ``Env``) its ``__all__`` exports; the package
:mod:`routine_envs_verifiers` is that id (:data:`TASKSET_ID`) and exports this module's:

    vf-eval routine-envs-verifiers --env.taskset.env-id DilutedDoors-v1 \\
        --env.taskset.env-kwargs '{"num_floors": 2}' --env.agent.runtime.type subprocess ...

or in Python, ``vf.load_environment(vf.resolve_env_config({"taskset": {"id": TASKSET_ID,
"env_id": ...}, "agent": {"runtime": {"type": "subprocess"}}}))``.

- :class:`RoutineTaskset`: ``num_tasks`` episodes of one id (:class:`RoutineTasksetConfig`:
  ``env_id``, ``env_kwargs``, ``first_seed``, ``num_tasks``, ``invalid_penalty``,
  ``max_turns``); a task's prompt is the episode's first observation, its system prompt the text
  view's rules, the seed fixes its start.
- :class:`RoutineEnv`: the episode, turn by turn: the model's reply goes to the text env
  (:class:`~routine_envs.text.TextEnv`: any reply is a turn, a malformed one an invalid turn),
  the next observation is the next user message, until the episode ends (or the agent's
  ``max_turns`` stops it first: then it is truncated there).
- :class:`RoutineTask`: the reward ``episode_return`` (weight 1) and the annotations as metrics
  (recorded, never summed into the reward): ``success``, ``decision_density``,
  ``num_critical``, ``num_invalid_turns``, ``critical_turn_fraction``, ``turns``, each from
  the episode's :class:`~routine_envs.adapters.annotations.AnnotationLog`, whose full record
  (per turn ``critical``, ``anchor``, ``state_id``, ``invalid_turn``) is the trace's
  ``info["routine_annotations"]``. ``critical`` and ``state_id`` are privileged (computed from
  the hidden state): a method that reads them is marked so.
- :class:`RoutineChatHarness`: the taskset's default agent program, one chat completion per
  turn through the rollout's endpoint (so verifiers records every turn), in process: no
  container, no package download.

verifiers 0.1.x (``MultiTurnEnv``): :mod:`routine_envs.adapters.verifiers`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from routine_envs.adapters.annotations import AnnotationLog
from routine_envs.text import make_text_env

try:
    import verifiers.v1 as vf
    from pydantic import Field
    from verifiers.v1.runtimes import ProgramResult
except ImportError as err:  # pragma: no cover - the message is the point
    raise ImportError(
        "routine_envs.adapters.verifiers_v1 needs verifiers>=0.4: "
        "pip install 'routine-envs[verifiers-v1]'"
    ) from err

TASKSET_ID = "routine-envs-verifiers"
"""The id verifiers loads the taskset by (``--env.taskset.id``, ``vf-eval <id>``): the package
:mod:`routine_envs_verifiers`."""
INFO_KEY = "routine_annotations"
"""The trace's ``info`` entry holding the episode's annotations (``AnnotationLog.as_dict``)."""
RETURN_KEY = "routine_return"
"""The trace's ``info`` entry holding the episode's return (the sum of its rewards)."""
PRIVILEGED = ("critical", "state_id")
"""The per-turn annotation keys computed from what the observation hides."""


class RoutineTaskData(vf.TaskData):
    """One episode: the id, its arguments and the seed of its start."""

    env_id: str = "DilutedDoors-v1"
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    seed: int = 0
    invalid_penalty: float = 0.0
    max_turns: int | None = None


class RoutineTasksetConfig(vf.TasksetConfig):
    """The episodes of a taskset: ``num_tasks`` seeds from ``first_seed`` of ``env_id``."""

    env_id: str = "DilutedDoors-v1"
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    first_seed: int = 0
    num_tasks: int = 16
    invalid_penalty: float = 0.0
    max_turns: int | None = None


def _episode(trace: vf.Trace) -> dict[str, Any]:
    return (trace.info.get(INFO_KEY) or {}).get("episode") or {}


class RoutineTask(vf.Task[RoutineTaskData, vf.State, vf.TaskConfig]):
    """An episode's scoring: its return, and its annotations as metrics."""

    @vf.reward(weight=1.0)
    async def episode_return(self, trace: vf.Trace) -> float:
        """The sum of the episode's rewards (0 for a success-reward id that failed)."""
        return float(trace.info.get(RETURN_KEY, 0.0))

    @vf.metric
    async def success(self, trace: vf.Trace) -> float:
        """1.0 when the episode reached the goal."""
        return float(bool(_episode(trace).get("success", False)))

    @vf.metric
    async def decision_density(self, trace: vf.Trace) -> float:
        """Critical turns over turns (rho), invalid turns included; 0 before the end."""
        return float(_episode(trace).get("decision_density", 0.0))

    @vf.metric
    async def num_critical(self, trace: vf.Trace) -> float:
        """Turns taken in a critical state."""
        return float(_episode(trace).get("num_critical", 0))

    @vf.metric
    async def num_invalid_turns(self, trace: vf.Trace) -> float:
        """Replies that named no action."""
        return float(_episode(trace).get("num_invalid_turns", 0))

    @vf.metric
    async def critical_turn_fraction(self, trace: vf.Trace) -> float:
        """Critical turns over turns so far (defined for a truncated episode too)."""
        turns = (trace.info.get(INFO_KEY) or {}).get("turns") or []
        return sum(t["critical"] for t in turns) / len(turns) if turns else 0.0

    @vf.metric
    async def turns(self, trace: vf.Trace) -> float:
        """Turns played (replies read by the env)."""
        return float(len((trace.info.get(INFO_KEY) or {}).get("turns") or []))


class RoutineTaskset(vf.Taskset[RoutineTask, RoutineTasksetConfig]):
    """``num_tasks`` episodes of one id, one per seed."""

    def load(self) -> Iterator[RoutineTask]:
        config = self.config
        if config.num_tasks < 1:
            raise ValueError(f"num_tasks must be >= 1, got {config.num_tasks}")
        for seed in range(config.first_seed, config.first_seed + config.num_tasks):
            env = make_text_env(
                config.env_id,
                invalid_penalty=config.invalid_penalty,
                max_turns=config.max_turns,
                **config.env_kwargs,
            )
            text, _ = env.reset(seed=seed)
            data = RoutineTaskData(
                name=f"{config.env_id}-{seed}",
                prompt=text,
                system_prompt=env.system_prompt,
                env_id=config.env_id,
                env_kwargs=dict(config.env_kwargs),
                seed=seed,
                invalid_penalty=config.invalid_penalty,
                max_turns=config.max_turns,
            )
            yield RoutineTask(data, config.task)


class RoutineEnv(vf.SingleAgentEnv):
    """The episode of a :class:`RoutineTask`, played turn by turn with the agent seat."""

    async def run(self, task: RoutineTask, agents: Any) -> None:
        data = task.data
        env = make_text_env(
            data.env_id,
            invalid_penalty=data.invalid_penalty,
            max_turns=data.max_turns,
            **data.env_kwargs,
        )
        _, info = env.reset(seed=data.seed)
        log, total = AnnotationLog(), 0.0
        log.start(info)
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn()  # the prompt (first observation) opens it
            while not segment.terminated:
                text, reward, terminated, truncated, info = env.step(segment.last_reply)
                total += reward
                log.record(info, terminated or truncated)
                if terminated or truncated:
                    break
                segment = await interaction.turn(text)
            # written before the context closes: closing scores the trace
            interaction.trace.info[INFO_KEY] = log.as_dict()
            interaction.trace.info[RETURN_KEY] = total


class RoutineChatConfig(vf.HarnessConfig):
    """The default harness's config."""

    id: str = TASKSET_ID


class RoutineChatHarness(vf.Harness[RoutineChatConfig]):
    """One chat completion per turn through the rollout's endpoint (verifiers records it);
    resumed on the conversation so far for every later turn."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: vf.Trace,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: Any,
        data: vf.TaskData,
        **_: Any,
    ) -> ProgramResult:
        from openai import AsyncOpenAI

        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        else:
            messages += [
                m.model_dump(exclude_none=True)
                for m in prompt or []
                if not (system and m.role == "system")
            ]
        client = AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0)
        try:
            await client.chat.completions.create(model=ctx.model, messages=messages)
        finally:
            await client.close()
        return ProgramResult(exit_code=0, stdout="", stderr="")


__all__ = ["RoutineChatHarness", "RoutineEnv", "RoutineTaskset"]
