"""The built-in language-model loop (baselines.lib.lm): tokenizer, model, policy, TRL's GRPO
loss, turn advantages onto tokens, the exact gradient through the policy table, a CPU smoke
run of the documented command, and the TRL recipe where ``trl`` is installed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from baselines.lib.lm import GRPOConfig, GRPOTrainer, build_policy, grpo_loss, warm_start  # noqa: E402
from baselines.lib.lm.exact import exact_objective, policy_gradient  # noqa: E402
from baselines.lib.lm.grpo import token_batch, turn_advantages  # noqa: E402
from baselines.lib.lm.policy import pad_left  # noqa: E402
from baselines.lib.lm.rollout import mdp_batch, play_groups  # noqa: E402
from baselines.lib.lm.tokenizer import WordTokenizer, env_corpus, pieces  # noqa: E402
from routine_envs import credit, snr  # noqa: E402
from routine_envs.text import make_text_env  # noqa: E402
from routine_envs.text.env import TEXT_CHARSET  # noqa: E402

torch.set_num_threads(1)
ROOT = Path(__file__).resolve().parents[1]
DOORS = {"num_floors": 1, "routine_length": 1}


def doors(max_turns: int = 8, **kwargs: int) -> object:
    return make_text_env("DilutedDoors-v1", max_turns=max_turns, **{**DOORS, **kwargs})


@pytest.fixture(scope="module")
def tokenizer() -> WordTokenizer:
    return WordTokenizer.build(env_corpus(doors()))


# ----------------------------------------------------------------------------- tokenizer
@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=sorted(TEXT_CHARSET), max_size=80))
def test_tokenizer_round_trips_every_text(text: str) -> None:
    tok = WordTokenizer.build(["open_door 2", "Floor 1 of 1: you stand before 3 doors"])
    assert "".join(pieces(text)) == text
    assert tok.decode(tok.encode(text)) == text


def test_tokenizer_words_and_save(tokenizer: WordTokenizer, tmp_path: Path) -> None:
    ids = tokenizer.encode("open_door 2")
    assert [tokenizer.tokens[i] for i in ids] == ["open_door", " 2"]
    tokenizer.save(tmp_path / "vocab.json")
    again = WordTokenizer.load(tmp_path / "vocab.json")
    assert again.tokens == tokenizer.tokens
    assert tokenizer.decode([tokenizer.eos_id, *ids]) == "open_door 2"  # specials left out
    with pytest.raises(ValueError, match="min_count"):
        WordTokenizer.build(["a"], min_count=0)


# ---------------------------------------------------------------------------- the model
def test_left_padding_changes_no_logit() -> None:
    policy = build_policy(doors(), dim=32, seed=3)
    short, long = [5, 9, 11], [7, 8, 5, 9, 11, 12]
    ids, mask = pad_left([short, long], policy.tokenizer.pad_id)
    batched = policy.model(ids, mask)
    alone = policy.model(torch.tensor([short]))
    assert torch.allclose(batched[0, -3:], alone[0], atol=1e-5)
    assert policy.model.num_parameters < 300_000
    with pytest.raises(ValueError, match="max_positions"):
        policy.model(torch.zeros((1, 10_000), dtype=torch.long))


def test_sampled_log_probs_are_the_models() -> None:
    """The log-probabilities recorded while sampling are the model's for the sampled tokens
    (so the ratio of TRL's loss is exactly 1 before the first update)."""
    policy = build_policy(doors(), dim=32, seed=1)
    env = doors()
    env.reset(seed=0)
    prompt = policy.prompt(env.messages)
    replies = policy.generate([prompt, prompt[2:]], 5, torch.Generator().manual_seed(0))
    for context, reply in zip([prompt, prompt[2:]], replies, strict=True):
        logp, _ = policy.token_log_probs([context + reply.tokens])
        recorded = torch.tensor(reply.log_probs)
        assert torch.allclose(logp[0, -len(reply.tokens) :], recorded, atol=1e-5)


def test_context_window(tokenizer: WordTokenizer) -> None:
    env = doors()
    env.reset(seed=0)
    env.step("open_door 1")
    whole = build_policy(env, dim=16, window=0).prompt(env.messages)
    markov = build_policy(env, dim=16, window=1).prompt(env.messages)
    assert len(whole) > len(markov)
    assert tokenizer.decode(markov).strip() == env.observation_text.strip()
    with pytest.raises(ValueError, match="window"):
        build_policy(env, window=-1)
    with pytest.raises(ValueError, match="window must be 1"):
        build_policy(env, window=2).canonical_logits(env)


# ------------------------------------------------------------------------------ the loss
def test_grpo_loss_is_trls_formula() -> None:
    """Per token ``-min(r A, clip(r, 1-eps, 1+eps_high) A) + beta k3``, aggregated as TRL's
    ``dapo`` / ``grpo`` / ``dr_grpo``, on numbers worked by hand."""
    logp = torch.tensor([[-1.0, -0.5, -2.0], [-0.1, -3.0, -0.7]])
    old = torch.tensor([[-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]])
    adv = torch.tensor([[1.0, 1.0, 1.0], [-2.0, -2.0, -2.0]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    ref = torch.tensor([[-1.2, -0.5, -2.0], [-0.1, -2.0, -0.7]])
    r = torch.exp(logp - old)
    clip = torch.clamp(r, 0.8, 1.3)
    per = -torch.min(r * adv, clip * adv) + 0.1 * (torch.exp(ref - logp) - (ref - logp) - 1)
    m = mask.float()
    expected = {
        "dapo": (per * m).sum() / m.sum(),
        "grpo": ((per * m).sum(1) / m.sum(1)).mean(),
        "dr_grpo": (per * m).sum() / (2 * 8),
    }
    for loss_type, want in expected.items():
        cfg = GRPOConfig(epsilon=0.2, epsilon_high=0.3, beta=0.1, loss_type=loss_type)
        got, stats = grpo_loss(logp, old, adv, mask, cfg, ref)
        assert float(got) == pytest.approx(float(want), rel=1e-6)
    assert stats["clip_fraction"] == pytest.approx(4 / 5)  # only r = 1 (token 0) is inside
    with pytest.raises(ValueError, match="reference"):
        grpo_loss(logp, old, adv, mask, GRPOConfig(beta=0.1))


@pytest.mark.parametrize(
    ("field", "value"),
    [("group_size", 0), ("loss_type", "ppo"), ("epsilon", -0.1), ("learning_rate", 0.0)],
)
def test_grpo_config_names_a_bad_setting(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        GRPOConfig(**{field: value})


# -------------------------------------------------------------- turn advantages, tokens
def test_turn_advantages_reach_the_reply_tokens() -> None:
    """Groups from identical starts; the estimator sees the MDP's valid turns; routine turns
    get 0 from routine_masked, invalid turns the format advantage; every reply token carries
    its turn's advantage and no context token counts."""
    env = doors(routine_length=2)
    policy = build_policy(env, dim=32, seed=0)
    warm_start(policy, doors, 10, seed=0, episodes=8)  # short: some replies are invalid
    episodes = play_groups(
        policy, lambda: doors(routine_length=2), [5, 6], 4, torch.Generator().manual_seed(2), 6
    )
    assert len(episodes) == 8 and {p.group for p in episodes} == {0, 1}
    for estimator in ("routine_masked", "trajectory_mc"):
        adv = turn_advantages(credit.build_estimator(estimator), episodes, invalid_advantage=-0.5)
        batch, rows = mdp_batch(episodes)
        returns = {p.group: [] for p in episodes}
        for p in episodes:
            returns[p.group].append(p.episode_return)
        for played, turn_adv in zip(episodes, adv, strict=True):
            baseline = np.mean(returns[played.group])
            for turn, a in zip(played.turns, turn_adv, strict=True):
                if not turn.valid:
                    assert a == -0.5
                elif estimator == "routine_masked" and not turn.info["critical"]:
                    assert a == 0.0
                else:
                    assert a == pytest.approx(played.episode_return - baseline)
        _, token_adv, mask, sampled = token_batch(episodes, adv)
        flat = [a for turn_adv in adv for a in turn_adv]
        turns = [t for p in episodes for t in p.turns]
        for i, (turn, a) in enumerate(zip(turns, flat, strict=True)):
            n = len(turn.reply.tokens)
            assert mask[i].sum() == n and bool(mask[i, -n:].all())
            assert torch.allclose(token_adv[i, -n:], torch.tensor(a, dtype=torch.float32))
            assert float(token_adv[i, :-n].abs().sum()) == 0.0
            assert torch.allclose(sampled[i, -n:], torch.tensor(turn.reply.log_probs))
    assert batch is not None and rows


# --------------------------------------------------------------------------- exactness
def test_exact_gradient_of_the_lm_policy() -> None:
    """J through the canonical-reply table equals the oracle's; autograd's dJ/dlogits is the
    lab's exact policy gradient; autograd end to end through the LM equals J^T dJ/dlogits."""
    env = doors(routine_length=2)
    policy = build_policy(env, dim=16, seed=4)
    grad = policy_gradient(policy, env)
    base = env.unwrapped
    table = snr.TabularSoftmax.per_state(base.num_states, 3, grad.log_probs)
    probs = table.probs()
    j = float(base.model().initial @ base.oracle(probs).v)
    assert grad.objective == pytest.approx(j, abs=1e-12)
    assert grad.objective == pytest.approx(base.success_probability(probs), abs=1e-12)
    np.testing.assert_allclose(
        grad.logit_gradient, snr.exact_policy_gradient(base, table), atol=1e-12
    )
    chain = grad.jacobian.T @ grad.logit_gradient
    assert np.linalg.norm(chain - grad.parameter_gradient) < 1e-5 * np.linalg.norm(chain)
    assert np.linalg.norm(chain) > 0
    logits = torch.tensor(grad.log_probs, requires_grad=True)
    assert float(exact_objective(base.model(), logits).detach()) == pytest.approx(j)


def test_exact_snr_of_the_lm_policy_orders_the_estimators(tmp_path: Path) -> None:
    """``python -m baselines lm snr`` on two short corridors: the perfect critic's SNR over
    the trajectory advantage's is 1 without routine turns and grows with them, sampled and
    exact, and the exact gradient the estimators are scored against is the oracle's."""
    from baselines import commands

    out = tmp_path / "snr"
    args = ["snr", "--routine-lengths", "0", "3", "--episodes", "800", "--warm-start-steps", "10"]
    commands.main(["lm", *args, "--dim", "16", "--out", str(out)])
    lines = (out / "results.jsonl").read_text().splitlines()
    rows = {int(r["density_value"]): r for r in map(json.loads, lines)}
    assert all(r["density_kwarg"] == "routine_length" for r in rows.values())
    assert rows[0]["ratio"] == pytest.approx(1.0, abs=1e-9)
    assert rows[3]["ratio"] > 1.8
    assert rows[3]["logit_gradient_error"] < 1e-12
    # the ratio's two estimators' noise, exact: unbiased, 1 without routine turns, and within
    # the sampled interval's reach (800 episodes: a wide one)
    assert rows[3]["exact_mean_error"] < 1e-12
    assert rows[0]["ratio_exact"] == pytest.approx(1.0, abs=1e-9)
    assert abs(rows[3]["ratio_exact"] / rows[3]["ratio"] - 1) < 0.25
    summary = json.loads((out / "summary.json").read_text())
    assert summary["slope"] < -0.3 and (out / "snr.png").stat().st_size > 0
    assert summary["exact_slope"] < -0.3
    assert "also exact" in (out / "snr.csv").read_text()


# ------------------------------------------------------------------------------- smoke
def test_grpo_learns_on_cpu() -> None:
    """Warm start to the format at chance, then GRPO steps with the perfect critic raise the
    exact success probability of the LM's policy well above chance (seeded, one thread)."""
    policy = build_policy(doors(), dim=32, seed=0)
    warm_start(policy, doors, 100, seed=0, episodes=8)
    trainer = GRPOTrainer(policy, doors, "oracle", GRPOConfig(learning_rate=3e-3), seed=0)
    start = trainer.evaluate()
    assert start["canonical_mass"] > 0.9  # the format is learned ...
    assert abs(start["exact_success"] - 1 / 3) < 0.05  # ... at chance: one door of three
    rows = trainer.train(10)
    assert rows[-1]["exact_success"] > start["exact_success"] + 0.3
    assert all(math.isfinite(r["loss"]) for r in rows)


def test_the_train_command_runs_and_refuses_bad_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from baselines import commands

    out = tmp_path / "train"
    args = ["train", "--seeds", "0", "--steps", "2", "--warm-start-steps", "5", "--dim", "16"]
    summary = commands.main(["lm", *args, "--out", str(out)])
    assert summary["reached"] == "0/1" or summary["steps_to_target"][0] <= 2
    names = {p.name for p in out.iterdir()}
    assert {"curve.csv", "curve.png", "summary.json", "results.jsonl"} <= names
    assert len((out / "curve.csv").read_text().splitlines()) == 1 + 3  # header, step 0, 2 steps
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        commands.main(["lm", "train", "--loss-type", "ppo"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--loss-type" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------- TRL
def test_trl_recipe_learns_with_real_tool_calls(tmp_path: Path) -> None:
    """The TRL recipe (examples/trl_grpo.py) with trl's own GRPOTrainer: the local model
    makes tool calls, episodes finish within the budgets, the annotations reach TRL's logs.
    Runs where ``trl`` is installed (not in CI: it is not a dependency of the project)."""
    pytest.importorskip("trl", reason="the TRL recipe needs trl>=1.16 (pip install trl)")
    from examples import trl_grpo

    settings_ = trl_grpo.RecipeSettings(steps=2, warm_start_steps=150, out=tmp_path / "trl")
    summary = trl_grpo.run(settings_)
    rows = [json.loads(json.dumps(r)) for r in _read_csv(tmp_path / "trl" / "curve.csv")]
    assert len(rows) == 2
    assert all(float(r["tool_calls"]) > 0 for r in rows)  # TRL parsed and ran the calls
    assert np.mean([float(r["unfinished"]) for r in rows]) < 0.5  # episodes end in the budget
    assert all(r["decision_density"] not in ("", None) for r in rows)  # annotations logged
    assert summary["parameters"] < 1_000_000


def _read_csv(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open() as f:
        return list(csv.DictReader(f))


# ------------------------------------------------------- options for tasks that need reading
def test_init_std_scales_the_linear_layers_only() -> None:
    default = build_policy(doors(), dim=32, seed=2)
    same = build_policy(doors(), dim=32, seed=2, init_std=0.02)
    wide = build_policy(doors(), dim=32, seed=2, init_std=0.2)
    for a, b in zip(default.model.parameters(), same.model.parameters(), strict=True):
        assert torch.equal(a, b)  # the default is the model as it was
    assert torch.equal(default.model.embed.weight, wide.model.embed.weight)
    qkv = wide.model.blocks[0].qkv.weight.detach()
    assert float(qkv.std()) == pytest.approx(0.2, rel=0.05)
    with pytest.raises(ValueError, match="init_std"):
        build_policy(doors(), dim=32, init_std=0.0)


def test_canonical_decoding_plays_the_policy_table() -> None:
    """Constrained decoding writes only canonical replies, drawn with the table's
    probabilities, each token's log-probability the model's."""
    env = doors()
    policy = build_policy(env, dim=32, seed=1, decoding="canonical")
    env.reset(seed=0)
    prompt = policy.prompt(env.messages)
    replies = policy.generate([prompt] * 3000, 8, torch.Generator().manual_seed(0))
    texts = [env.action_text(a) for a in range(env.view.num_actions)]
    assert {r.text for r in replies} <= set(texts)
    with torch.no_grad():
        logp = [
            float(policy.token_log_probs([prompt + policy.reply_tokens(t)])[0][0, -3:].sum())
            for t in texts
        ]
    table = np.exp(logp) / np.exp(logp).sum()
    counts = np.array([sum(r.text == t for r in replies) for t in texts]) / len(replies)
    assert np.abs(counts - table).max() < 0.04
    for reply in replies[:5]:
        full, _ = policy.token_log_probs([prompt + reply.tokens])
        recorded = torch.tensor(reply.log_probs)
        assert torch.allclose(full[0, -len(reply.tokens) :], recorded, atol=1e-5)
    with pytest.raises(ValueError, match="decoding"):
        build_policy(env, decoding="greedy")


def test_the_format_only_warm_start_teaches_the_format_not_a_policy() -> None:
    factory = doors
    policy = build_policy(doors(), dim=32, seed=0)
    losses = warm_start(policy, factory, 60, seed=0, target="canonical_mass")
    assert losses[-1] < losses[0] / 4
    trainer = GRPOTrainer(policy, factory, "trajectory_mc", GRPOConfig(), seed=0)
    assert trainer.evaluate()["canonical_mass"] > 0.5
    with pytest.raises(ValueError, match="target"):
        warm_start(policy, factory, 1, seed=0, target="right")


def test_old_run_rows_get_the_settings_added_since() -> None:
    from baselines.experiments.lm import train
    from baselines.experiments.lm.records import ADDED_SETTINGS, upgrade

    job = train.job_of(train.TrainSettings(), 0)
    old = {k: v for k, v in job.items() if k not in ADDED_SETTINGS}
    row = {"key": json.dumps(old, sort_keys=True), "env_id": job["env_id"], "curve": []}
    assert upgrade(row)["key"] == train.key(job)  # a rerun of its command finds it done
    assert upgrade(upgrade(row)) == upgrade(row)
