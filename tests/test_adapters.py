"""The trainer adapters: each played as its trainer drives it, against the real package where it
is installed (skyrl-gym, the ``llm`` extra; transformers' tool-schema parser for TRL when
present) and against the documented signatures otherwise."""

from __future__ import annotations

import asyncio
import inspect
import json

import numpy as np
import pytest

import routine_envs
from routine_envs import annotations as keys
from routine_envs.adapters import gem, openrlhf, ragen, trl, verifiers, verl_agent
from tests.real_packages import need

IDS = ["DilutedDoors-v1", "CodeFix-v1", "RoutineGrid-v0"]
SMALL = {"DilutedDoors-v1": {"routine_length": 2}, "CodeFix-v1": {"routine_length": 4}}


def test_import_routine_envs_imports_no_llm_library() -> None:
    import sys

    from tests import children

    code = (
        "import sys, routine_envs, routine_envs.text; "
        "bad = [m for m in ('trl', 'transformers', 'verifiers', 'skyrl_gym', 'openai', 'torch',"
        " 'openrlhf', 'gem', 'routine_envs.adapters') if m in sys.modules]; print(bad)"
    )
    out = children.run([sys.executable, "-c", code], timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.describe()
    assert routine_envs.__version__


# ---------------------------------------------------------------------------------- TRL
def _trl_tools(instance: object) -> tuple[bool, bool, list]:
    """What TRL's GRPOTrainer does with an environment instance (trl 1.16)."""
    has_reset = has_reward = False
    methods = []
    for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction):
        if name == "reset":
            has_reset = True
        elif name == "get_reward":
            has_reward = True
        elif not name.startswith("_"):
            methods.append(getattr(instance, name))
    return has_reset, has_reward, methods


@pytest.mark.parametrize("env_id", IDS)
def test_trl_environment_factory(env_id: str) -> None:
    factory = trl.environment_factory(env_id, **SMALL.get(env_id, {}))
    env = factory()
    has_reset, has_reward, methods = _trl_tools(env)
    assert has_reset and has_reward
    view = env.text_env.view
    assert sorted(m.__name__ for m in methods) == sorted(t.name for t in view.tools)
    for method in methods:
        doc = inspect.getdoc(method)
        signature = inspect.signature(method)
        assert doc and "Returns:" in doc
        for name, param in signature.parameters.items():
            assert param.annotation in (int, str) and f"{name}:" in doc
    prompt = env.reset(seed=0)
    assert env.text_env.system_prompt in prompt
    tools = {m.__name__: m for m in methods}
    rng = np.random.default_rng(0)
    done, total = False, 0.0
    for _ in range(200):
        action = int(rng.integers(view.num_actions))
        name, args = view.calls[action]
        tool = next(t for t in view.tools if t.name == name)
        text = tools[name](**{p.name: v for p, v in zip(tool.params, args, strict=True)})
        assert isinstance(text, str)
        if "The episode is over." in text:
            done = True
            break
    assert done
    total = env.get_reward()
    assert isinstance(total, float)
    assert tools[view.tools[0].name](**{p.name: p.choices[0] for p in view.tools[0].params}) == (
        "The episode is over: nothing changed."
    )


def test_trl_schemas_parse_with_transformers() -> None:
    """TRL turns each method into a tool with transformers' get_json_schema."""
    utils = need("transformers.utils", "trl")
    env = trl.environment_factory("CodeFix-v1")()
    for method in _trl_tools(env)[2]:
        schema = utils.get_json_schema(method)
        assert schema["function"]["name"] == method.__name__
        params = schema["function"]["parameters"]["properties"]
        assert set(params) == set(inspect.signature(method).parameters)


def _play_doors_through_tools(env: object, doors: list[int]) -> list[str]:
    """Call the generated tools of a DilutedDoors env: ``open_door`` with each door in turn
    (a door outside 0..2 is an invalid turn), then ``walk`` until the episode ends."""
    _, _, methods = _trl_tools(env)
    tools = {m.__name__: m for m in methods}
    texts = [tools["open_door"](door=d) for d in doors]
    while "The episode is over." not in texts[-1]:
        texts.append(tools["walk"]())
    return texts


def test_trl_annotations_reach_a_reward_function() -> None:
    """TRL gives reward functions the rollouts' environments and a ``log_metric``; the
    adapter's public annotations and its reward helper hand each turn's and each episode's
    annotations over, and ``annotations`` is not taken for a tool."""
    factory = trl.environment_factory("DilutedDoors-v1", num_floors=1, routine_length=3)
    envs = [factory(), factory()]
    for env in envs:
        _, _, methods = _trl_tools(env)
        assert "annotations" not in {m.__name__ for m in methods}
        env.reset(seed=0)
        assert env.annotations.turns() == [] and env.annotations.episode() is None
    _play_doors_through_tools(envs[0], [1])  # 1 door turn + 3 corridor turns
    _play_doors_through_tools(envs[1], [7, 2])  # an invalid door, then a door
    logged: dict[str, list[float]] = {}
    rewards = trl.routine_return(
        prompts=["p", "p"],
        completions=["c", "c"],
        environments=envs,
        log_metric=lambda name, value: logged.setdefault(name, []).append(value),
        trainer_state=None,
    )
    assert rewards == [e.get_reward() for e in envs]
    first, second = trl.annotations_of(envs)
    assert [t["step"] for t in first["turns"]] == [0, 1, 2, 3]
    assert [t["critical"] for t in first["turns"]] == [True, False, False, False]
    assert first["episode"] == {
        "decision_density": 0.25,
        "num_critical": 1,
        "num_invalid_turns": 0,
        "episode_length": 4,
        "success": bool(rewards[0]),
    }
    # the invalid turn is a turn of the critical state: it counts in rho (2 of 5 turns)
    assert [t["invalid_turn"] for t in second["turns"]] == [True, False, False, False, False]
    assert [t["critical"] for t in second["turns"]] == [True, True, False, False, False]
    assert second["turns"][0]["anchor"] == second["turns"][1]["anchor"]  # same state, same text
    assert len({t["anchor"] for t in second["turns"]}) == 4
    assert second["episode"]["num_invalid_turns"] == 1
    assert second["episode"]["decision_density"] == pytest.approx(2 / 5)
    assert logged["routine/decision_density"] == [pytest.approx((0.25 + 0.4) / 2)]
    assert logged["routine/num_invalid_turns"] == [0.5]
    assert logged["routine/unfinished"] == [0.0]
    assert trl.annotations_of([object()]) == [{}]


# ------------------------------------------------------------------------------- SkyRL
def test_skyrl_base_text_env_with_the_real_package() -> None:
    pytest.importorskip("skyrl_gym")
    import skyrl_gym

    from routine_envs.adapters import skyrl

    env_id = skyrl.register()
    env = skyrl_gym.make(
        env_id,
        env_config={"max_turns": 40},
        extras={"env_id": "CodeFix-v1", "seed": 3, "env_kwargs": {"routine_length": 4}},
    )
    assert isinstance(env, skyrl.BaseTextEnv)
    messages, meta = env.init([])
    assert [m["role"] for m in messages] == ["system", "user"]
    keys.check_step_info(meta["info"])
    out = env.step("not a tool call")
    assert out["metadata"]["info"][keys.INVALID_TURN] and not out["done"]
    assert out["observations"][0]["role"] == "user"
    for reply in ["read_log", "open parser", "scroll", "read", "apply_patch parser 0"]:
        out = env.step(reply)
    for reply in ["run_tests", "submit"]:
        out = env.step(reply)
    assert out["done"] and out["observations"] == []
    metrics = env.get_metrics()
    assert metrics[keys.EPISODE_LENGTH] == 8 and metrics[keys.NUM_INVALID_TURNS] == 1


def test_skyrl_keeps_the_system_prompt_with_a_dataset_prompt() -> None:
    """A SkyRL dataset row's prompt (a user message) keeps the env's system prompt: roles
    ['system', 'user'] with the rules and the first observation; the step metadata and
    ``get_metrics`` carry the annotations to SkyRL's aggregation of episode metrics."""
    pytest.importorskip("skyrl_gym")
    import skyrl_gym

    from routine_envs.adapters import skyrl

    env_id = skyrl.register()
    extras = {
        "env_id": "DilutedDoors-v1",
        "seed": 1,
        "env_kwargs": {"num_floors": 1, "routine_length": 2},
    }
    env = skyrl_gym.make(env_id, env_config={}, extras=extras)
    dataset_prompt = [{"role": "user", "content": "Cross the building."}]
    messages, _ = env.init(dataset_prompt)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == env.text_env.system_prompt
    assert messages[1]["content"].startswith("Cross the building.")
    assert env.text_env.observation_text in messages[1]["content"]
    assert dataset_prompt == [{"role": "user", "content": "Cross the building."}]  # not mutated
    # a prompt with its own system message keeps it; one that already shows the observation
    # is not repeated
    own = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."}]
    assert env.init(own)[0][0]["content"] == "Be brief."
    shown = [{"role": "user", "content": env.text_env.observation_text}]
    again, _ = env.init(shown)
    assert again[1]["content"] == env.text_env.observation_text
    metrics = []
    for replies in (["open_door 0", "walk", "walk"], ["nothing", "open_door 2", "walk", "walk"]):
        env.init(dataset_prompt)
        for reply in replies:
            out = env.step(reply)
        assert out["done"]
        annotations = out["metadata"]["annotations"]
        assert [t["step"] for t in annotations["turns"]] == list(range(len(replies)))
        assert annotations["turns"][0]["critical"] and not annotations["turns"][-1]["critical"]
        metrics.append(env.get_metrics())
    assert metrics[0]["decision_density"] == pytest.approx(1 / 3)
    assert metrics[1]["num_invalid_turns"] == 1.0 and metrics[1]["num_critical"] == 2.0
    pooled = skyrl.RoutineSkyRLEnv.aggregate_metrics(metrics)  # what SkyRL's generator calls
    assert pooled["decision_density"] == pytest.approx((1 / 3 + 2 / 4) / 2)
    assert pooled["num_invalid_turns"] == pytest.approx(0.5)


# --------------------------------------------------------------------------------- GEM
def test_gem_env_groups_and_spawn() -> None:
    env = gem.RoutineGemEnv("CodeFix-v1", routine_length=4, signal_noise=0.5)
    obs, info = env.reset(seed=1)
    assert obs.startswith(env.text_env.system_prompt)
    start = env.get_initial_state()
    first = [env.step(env.sample_random_action())[0] for _ in range(3)]
    other = gem.RoutineGemEnv("CodeFix-v1", routine_length=4, signal_noise=0.5)
    obs2, info2 = other.reset_to_initial_state(start)
    assert obs2 == obs and info2[keys.STATE_ID] == info[keys.STATE_ID]
    branch = env.spawn(same_state=True)
    a, b = branch.step("read_log"), env.step("read_log")
    assert a[:4] == b[:4] and a[4][keys.STATE_ID] == b[4][keys.STATE_ID]
    assert len(first) == 3
    fresh = env.spawn(routine_length=6)
    assert fresh.text_env.unwrapped.routine_length == 6


# -------------------------------------------------------------------------- verl-agent
def test_verl_agent_manager_projects_and_groups() -> None:
    manager = verl_agent.RoutineEnvironmentManager(
        "DilutedDoors-v1", num_groups=2, group_n=3, routine_length=1
    )
    obs, infos = manager.reset()
    assert len(obs["text"]) == 6 and obs["image"] is None
    assert obs["anchor"][0] == obs["anchor"][1] == obs["anchor"][2]
    steps = 0
    while not manager.done.all():
        replies = ["open_door 1", "garbage", "2", "1", "walk", "{bad"]
        obs, rewards, dones, infos = manager.step(replies)
        steps += 1
        assert rewards.dtype == np.float32 and dones.dtype == bool
        assert [int(i["is_action_valid"]) for i in infos] == [1, 0, 1, 1, 1, 0]
        assert all(keys.ANCHOR in i for i in infos)
        if steps > 30:
            break
    assert manager.done[[0, 2, 3, 4]].all() and not manager.done[[1, 5]].any()
    assert "won" in infos[0] and manager.success_evaluator()["success_rate"].shape == (6,)
    with pytest.raises(ValueError, match="group_n"):
        verl_agent.RoutineEnvironmentManager("DilutedDoors-v1", group_n=0)


# ------------------------------------------------------------------------------- RAGEN
def test_ragen_base_env() -> None:
    env = ragen.RoutineRagenEnv("CodeFix-v1", routine_length=4)
    text = env.reset(seed=0)
    assert env.render("text") == text and "read_log" in env.get_all_actions()
    _, _, done, info = env.step("<answer>read</answer>")  # well formed, not valid now
    assert info["action_is_valid"] and not info["action_is_effective"] and not done
    _, _, _, info = env.step("???")
    assert not info["action_is_valid"] and not info["action_is_effective"]
    with pytest.raises(ValueError, match="mode"):
        env.render("rgb_array")
    branch = env.copy()
    assert branch.step(0)[:3] == env.step("read_log")[:3]  # an index is an action too
    assert not env.success()


# ---------------------------------------------------------------------------- OpenRLHF
def test_openrlhf_agent_instance() -> None:
    async def play() -> list[dict]:
        agent = openrlhf.AgentInstance(env_id="DilutedDoors-v1")
        label = json.dumps(
            {"env_id": "DilutedDoors-v1", "seed": 0, "env_kwargs": {"num_floors": 1}}
        )
        first = await agent.reset({"label": label})
        assert "Floor 1 of 1" in first["observation"]
        outs = []
        for reply in ["0", "hmm"] + ["walk"] * 20:
            out = await agent.step({"action_text": reply, "label": label})
            outs.append(out)
            if out["done"]:
                break
        return outs

    outs = asyncio.run(play())
    assert outs[-1]["done"] and outs[-1]["environment_feedback"] == ""
    assert float(outs[1]["extra_logs"][keys.INVALID_TURN]) == 1.0
    assert all(isinstance(o["rewards"].item(), float) for o in outs)
    assert "Invalid reply" in outs[1]["environment_feedback"]
    assert float(np.asarray(outs[-1]["rewards"]).sum()) in (0.0, 1.0)


# --------------------------------------------------------------------------- verifiers
def test_verifiers_multi_turn_signatures() -> None:
    logic = verifiers.RoutineMultiTurn("DilutedDoors-v1", routine_length=1, num_floors=2)

    async def rollout() -> dict:
        messages = logic.initial_prompt(seed=0)
        state = await logic.setup_state({"info": {"seed": 0}})
        while not await logic.episode_done(state):
            messages.append({"role": "assistant", "content": "open_door 1"})
            messages += await logic.env_response(messages, state)
        assert state["final_env_response"] == messages[-1:]
        return state

    state = asyncio.run(rollout())
    assert await_result(logic.episode_done(state))
    assert logic.episode_return(state) in (0.0, 1.0)
    assert logic.episode_success(state) == logic.episode_return(state)
    params = inspect.signature(verifiers.RoutineMultiTurn.env_response).parameters
    assert list(params)[:3] == ["self", "messages", "state"]


def _score_like_a_rubric(func: object, state: dict) -> float:
    """Call a rubric function as verifiers does: the standard arguments it names (or all of
    them when it takes ``**kwargs``)."""
    offered = {"prompt": [], "completion": [], "answer": "", "state": state, "task": "", "info": {}}
    params = inspect.signature(func).parameters
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return func(**{k: v for k, v in offered.items() if takes_all or k in params})


def test_verifiers_rubric_metrics_carry_the_annotations() -> None:
    logic = verifiers.RoutineMultiTurn("DilutedDoors-v1", routine_length=2, num_floors=1)

    async def rollout(replies: list[str]) -> dict:
        messages = logic.initial_prompt(seed=0)
        state = await logic.setup_state({"info": {"seed": 0}})
        for reply in replies:
            messages.append({"role": "assistant", "content": reply})
            messages += await logic.env_response(messages, state)
        assert await logic.episode_done(state)
        return state

    state = asyncio.run(rollout(["not an action", "open_door 2", "walk", "walk"]))
    scores = {m: _score_like_a_rubric(getattr(logic, m), state) for m in verifiers.RUBRIC_METRICS}
    assert scores["decision_density"] == pytest.approx(2 / 4)
    assert scores["num_critical"] == 2.0 and scores["num_invalid_turns"] == 1.0
    assert scores["critical_turn_fraction"] == pytest.approx(0.5)
    assert scores["episode_success"] == logic.episode_return(state)
    turns = state["routine_annotations"].turns()
    assert [t["invalid_turn"] for t in turns] == [True, False, False, False]
    assert [t["critical"] for t in turns] == [True, True, False, False]


def await_result(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def test_verifiers_load_environment_says_what_it_needs() -> None:
    try:
        import verifiers as vf
    except ImportError:
        with pytest.raises(ImportError, match="verifiers"):
            verifiers.load_environment()
        return
    if not hasattr(vf, "MultiTurnEnv"):
        with pytest.raises(ImportError, match="MultiTurnEnv"):
            verifiers.load_environment()


# ----------------------------------------------------------------------------- example
def test_example_plays_every_id_through_two_adapters() -> None:
    from examples import text_agents

    results = text_agents.main(num_groups=2, group_size=3, p_invalid=0.2, seed=1)
    played = {(s.env_id, s.adapter) for s, _, _ in results}
    assert {env_id for env_id, _ in played} == set(text_agents.env_ids())
    assert {adapter for _, adapter in played} == {"gem", "verl-agent"}
    for summary, batch, advantages in results:
        assert summary.invalid_share > 0  # invalid turns were played and recorded
        assert batch.anchors is not None and batch.critical is not None
        starts = batch.episode_starts[:-1]
        for g in np.unique(batch.groups):  # identical starts within a group
            first = starts[batch.groups == g]
            assert len(set(batch.state_ids[first])) == 1 and len(set(batch.anchors[first])) == 1
        assert np.all(advantages["routine_masked"][~batch.critical] == 0)
        for adv in advantages.values():
            assert adv.shape == (batch.num_steps,) and np.all(np.isfinite(adv))


def test_verifiers_rollout_with_the_real_multi_turn_env() -> None:
    """A whole verifiers (0.1.x) rollout with a scripted client in place of a model."""
    vf = pytest.importorskip("verifiers")
    if not hasattr(vf, "MultiTurnEnv"):
        pytest.skip(f"verifiers {vf.__version__} has no MultiTurnEnv")
    from verifiers.types import Response, ResponseMessage

    replies = iter(["open_door 1", "not an action", "walk", "walk"])
    asked = []

    class ScriptedClient(vf.Client):
        def setup_client(self, config):
            return None

        async def to_native_tool(self, tool):
            return tool

        async def to_native_prompt(self, messages):
            return messages, {}

        async def get_native_response(self, prompt, model, sampling_args, tools=None, **kwargs):
            asked.append(prompt)
            return next(replies)

        async def raise_from_native_response(self, response):
            return None

        async def from_native_response(self, response):
            message = ResponseMessage(content=response, finish_reason="stop", is_truncated=False)
            return Response(id="r", created=0, model="scripted", message=message)

        async def close(self):
            return None

    env = verifiers.load_environment(
        "DilutedDoors-v1", num_examples=2, num_floors=1, routine_length=2
    )
    row = env.get_dataset()[0]
    state = asyncio.run(
        env.rollout(
            dict(row),
            ScriptedClient(object()),
            "scripted",
            {},
        )
    )
    assert state["stop_condition"] == "has_final_env_response"
    assert len(asked) == 4  # the model is not asked again after the last turn
    infos = state["routine_infos"]
    assert [i[keys.INVALID_TURN] for i in infos] == [False, True, False, False]
    assert infos[-1][keys.EPISODE_LENGTH] == 4 and infos[-1][keys.NUM_INVALID_TURNS] == 1
    assert env.episode_return(state) == float(infos[-1][keys.SUCCESS])
    names = env.rubric.get_reward_func_names()
    weights = env.rubric.get_reward_weights()
    assert names == ["episode_return", *verifiers.RUBRIC_METRICS]
    assert weights == [1.0] + [0.0] * len(verifiers.RUBRIC_METRICS)
    assert env.decision_density(state) == pytest.approx(2 / 4)


def test_gem_with_the_real_package() -> None:
    """GEM's registry, ``make_vec`` (its SyncVectorEnv, autoreset) and episode tracking."""
    gem_pkg = need("gem", "gem")
    from gem.wrappers.episode_tracking_wrapper import EpisodeTrackingWrapper

    names = gem.register()
    env = gem_pkg.make("routine_envs:DilutedDoors-v1", routine_length=1, num_floors=1)
    obs, _ = env.reset(seed=0)
    assert "Floor 1 of 1" in obs and env.routine_env_id == "DilutedDoors-v1"
    assert "routine_envs:CodeFix-v1" in names
    vec = gem_pkg.make_vec(
        ["routine_envs:DilutedDoors-v1"] * 3,
        wrappers=[EpisodeTrackingWrapper],
        seed=5,
        routine_length=1,
        num_floors=1,
    )
    observations, infos = vec.reset(seed=[5, 5, 5])
    assert observations[0] == observations[1] == observations[2]
    infos = vec.step(["0", "oops", "2"])[4]
    assert [i[keys.INVALID_TURN] for i in infos] == [False, True, False]
    terminated = vec.step(["walk", "1", "walk"])[2]
    assert terminated.tolist() == [True, False, True]


def test_openrlhf_multi_turn_executor_with_the_real_package() -> None:
    """OpenRLHF's own MultiTurnAgentExecutor plays an episode, with a scripted engine and a
    character tokenizer in place of vLLM and a model (where OpenRLHF is installed)."""
    agent = pytest.importorskip("openrlhf.utils.agent")
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    assert issubclass(openrlhf.AgentInstance, agent.AgentInstanceBase)
    replies = iter(["0", "no idea", "walk", "walk"])

    class Engine:
        async def generate(self, token_ids, params, **kwargs):
            text = next(replies)
            output = SimpleNamespace(
                token_ids=[ord(c) for c in text], text=text, finish_reason="stop", logprobs=None
            )
            return SimpleNamespace(outputs=[output])

    def tokenizer(text, **kwargs):
        return {"input_ids": torch.tensor([[ord(c) for c in text]])}

    kwargs = {"num_floors": 1, "routine_length": 2}
    label = json.dumps({"env_id": "DilutedDoors-v1", "seed": 0, "env_kwargs": kwargs})
    response = asyncio.run(
        agent.MultiTurnAgentExecutor(openrlhf.AgentInstance).execute(
            "", label, SimpleNamespace(max_tokens=None, logprobs=None), 100_000, tokenizer, Engine()
        )
    )
    assert len(response["action_ranges"]) == 4  # 0, invalid turn, two corridor cells
    assert response["reward"] in (0.0, 1.0)
    assert float(response["extra_logs"][keys.EPISODE_LENGTH]) == 4
