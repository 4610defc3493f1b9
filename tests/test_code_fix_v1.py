"""CodeFix-v1: the words of the symptoms and the patches give nothing away.

In CodeFix-v0 a patch's description says the fix its symptom's error calls for, so a script that
matches words picks the right patch without a single test run. CodeFix-v1
(``vocabulary="arbitrary"``) names both by opaque codes: these tests show that the same script is
then at chance, that the observations (vector and text) and descriptions are the same under every
``layout_seed`` until a test run shows the result of a patch, and that nothing else changed.
"""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import routine_envs  # noqa: F401  (registers the ids)
from routine_envs.envs import CodeFixEnv, CodeState
from routine_envs.envs.code_fix import CodeFixDynamics
from routine_envs.rendering.code_fix_text import (
    ARBITRARY_PATCHES,
    ARBITRARY_SYMPTOMS,
    DONE,
    PATCH,
    PATCHED,
    SUBMIT,
    SYMPTOMS,
    TESTED,
)

# ------------------------------------------------------------------------- the word matcher
STOPWORDS = frozenset(
    {"a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "is", "are", "was", "not"}
    | {"no", "has", "have", "when", "before", "against", "object", "error", "got"}
)
#: words any programmer relates, for the three v0 symptoms whose fix shares no word with the
#: error (plain word overlap already links the other five): the matcher's "prior knowledge".
RELATED = {"index": "bound", "range": "bound", "recursion": "base", "depth": "base"}
RELATED |= {"expected": "sign"}


def words(text: str, related: bool = True) -> set[str]:
    """The content words of ``text``: CamelCase split, lower case, stop words dropped, each
    also standing for the word it is related to (``RELATED``)."""
    text = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    out = {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS}
    if related:
        out |= {RELATED[w] for w in out if w in RELATED}
    return out


def best_patch(symptom: str, candidates: list[str], related: bool = True) -> int:
    """The candidate sharing the most words with the symptom (the first one on a tie)."""
    target = words(symptom, related)
    scores = [len(target & words(c, related)) for c in candidates]
    return int(np.argmax(scores))


def matcher_call(obs: str, related: bool = True) -> str:
    """The word matcher's next tool call, read off the text observation alone: read the log,
    open the module it names, scroll to the failing code, apply the candidate patch whose words
    best match the error, run the tests, submit."""
    valid = obs.strip().splitlines()[-1].removeprefix("valid: ").split(" | ")
    if "read_log" in valid:
        return "read_log"
    if valid[0].startswith("open "):
        (module,) = re.findall(r'File "src/(\w+)\.py"', obs)
        return f"open {module}"
    if valid[0].startswith("apply_patch"):
        symptom = re.search(r"The failing test raises (.*)", obs).group(1)
        candidates = re.findall(r"^  \d+: (.*)$", obs, flags=re.M)
        module = valid[0].split()[1]
        return f"apply_patch {module} {best_patch(symptom, candidates, related)}"
    return valid[0]  # scroll | run_tests | submit


def matcher_success(dynamics: CodeFixDynamics, related: bool = True) -> float:
    """The exact success probability of the word matcher: one deterministic episode from every
    initial state, weighted by its probability."""
    total = 0.0
    for p, state in dynamics.initial_outcomes():
        obs = dynamics.text_observation(state)
        while state.phase != DONE:
            action = dynamics.parse_action(matcher_call(obs, related))
            assert dynamics.action_mask(state)[action]
            ((_, state, _, _),) = dynamics.outcomes(state, action)
            obs = dynamics.text_observation(state, action)
        total += p * dynamics.is_success(state)
    return total


def dynamics_of(vocabulary: str, layout_seed: int, **kwargs) -> CodeFixDynamics:
    return CodeFixDynamics(layout_seed=layout_seed, vocabulary=vocabulary, **kwargs)


def covering_layouts(**kwargs) -> list[int]:
    """The first layout seeds that together list every symptom's patch at every candidate
    position (6 seeds for 3 patches, 32 for 8). A layout only orders the candidates, so these
    show every tie the matcher could break wrongly on v0 (each right patch is listed last in
    one of them) and, on v1, every symptom meeting every position the matcher could pick."""
    seen: set[tuple[int, int]] = set()
    layouts = []
    while len(seen) < kwargs["num_patches"] ** 2:
        dynamics = dynamics_of("meaningful", len(layouts), **kwargs)
        seen |= set(enumerate(dynamics.correct_patch))
        layouts.append(len(layouts))
    return layouts


@pytest.mark.parametrize("num_patches", [3, 8])
def test_word_matcher_solves_v0_and_is_at_chance_on_v1(num_patches):
    kwargs = {"num_modules": 4, "num_patches": num_patches, "routine_length": 3}
    layouts = covering_layouts(**kwargs)
    v0 = [matcher_success(dynamics_of("meaningful", s, **kwargs)) for s in layouts]
    v1 = [matcher_success(dynamics_of("arbitrary", s, **kwargs)) for s in layouts]
    assert min(v0) == pytest.approx(1.0)  # every episode of every layout, no test run needed
    # v1: its choice is the same in every layout, so exactly one symptom in P gets its patch
    assert np.mean(v1) == pytest.approx(1.0 / num_patches)
    assert max(v1) <= 1.0 / num_patches + 1e-9
    # plain word overlap, without the three related words, already beats chance on v0
    plain = [matcher_success(dynamics_of("meaningful", s, **kwargs), False) for s in layouts]
    assert np.mean(plain) > 1.0 / num_patches + 0.3


def test_word_matcher_through_the_registered_envs():
    """Monte-Carlo episodes of the registered ids: ~100% on v0, chance (1/3) on v1."""
    rates = {}
    for env_id in ("CodeFix-v0", "CodeFix-v1"):
        wins = episodes = 0
        for layout_seed in range(20):
            env = gym.make(env_id, obs_mode="text", routine_length=3, layout_seed=layout_seed)
            for seed in range(15):
                obs, _ = env.reset(seed=1000 * layout_seed + seed)
                done = False
                while not done:
                    obs, _, terminated, truncated, info = env.step(
                        env.unwrapped.parse_action(matcher_call(obs))
                    )
                    done = terminated or truncated
                wins += info["success"]
                episodes += 1
        rates[env_id] = wins / episodes
    assert rates["CodeFix-v0"] == 1.0
    # 300 episodes at p = 1/3: a standard deviation of 0.027; the bound is 4 of them
    assert abs(rates["CodeFix-v1"] - 1 / 3) < 0.11, rates


def test_arbitrary_names_share_no_word_and_replace_every_meaningful_one():
    assert len(set(ARBITRARY_SYMPTOMS)) == len(set(ARBITRARY_PATCHES)) == len(SYMPTOMS)
    patch_words = set().union(*(words(p) for p in ARBITRARY_PATCHES))
    for symptom in ARBITRARY_SYMPTOMS:
        assert not words(symptom) & patch_words
    env = gym.make("CodeFix-v1", obs_mode="text", num_patches=8, render_mode="ansi")
    meaningful = [w for pair in SYMPTOMS for w in pair]
    rng = np.random.default_rng(0)
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        seen = [obs, env.render()]
        done = False
        while not done:
            u = env.unwrapped
            obs, _, terminated, truncated, _ = env.step(int(rng.choice(u.valid_actions())))
            seen += [obs, env.render(), u.dynamics.describe(u.state)]
            done = terminated or truncated
        text = "\n".join(seen)
        assert not any(m in text for m in meaningful)
        assert any(p in text for p in ARBITRARY_PATCHES)


# ------------------------------------------------- the observations before a test run
ALLOWED_TO_DIFFER = (TESTED, DONE)  # the phases after a test run, until a revert


def vector_test_entries(dynamics: CodeFixDynamics) -> list[int]:
    """The two vector entries that show the test result (passed, failed)."""
    base = 3 * dynamics.num_modules + dynamics.num_patches + 8
    return [base, base + 1]


configs = st.fixed_dictionaries(
    {
        "num_modules": st.integers(2, 5),
        "num_patches": st.integers(2, 8),
        "routine_length": st.integers(2, 5),
        "max_attempts": st.integers(1, 3),
    }
)


@settings(max_examples=40, deadline=None)
@given(
    configs,
    st.lists(st.integers(0, 2**16), min_size=2, max_size=4, unique=True),
    st.integers(0, 2**16),
    st.lists(st.integers(0, 2**16), min_size=1, max_size=40),
)
def test_v1_observations_are_the_same_in_every_layout_until_a_test_run(
    config, layout_seeds, start, choices
):
    """For the same hidden bug, report and symptom and the same calls (valid ones, and an
    invalid one now and then), the vector and text observations, ``describe()`` and the masks of
    CodeFix-v1 are identical under every ``layout_seed`` in every state but those after a test
    run (phases tested and done). There only the test result differs: the two test entries of
    the vector, the test output, the submit's verdict and ``describe()``'s pass/fail; and the
    states differ only in ``fixed``. So no observation before a test run depends on the layout,
    which alone sets which patch fixes which symptom."""
    step_cost = 0.0 if config["max_attempts"] == 1 else 0.001
    dyns = [dynamics_of("arbitrary", seed, step_cost=step_cost, **config) for seed in layout_seeds]
    ref = dyns[0]
    initial = [state for _, state in ref.initial_outcomes()]
    states = [initial[start % len(initial)]] * len(dyns)
    for d in dyns:  # the same hidden start is possible in every layout
        assert states[0] in [s for _, s in d.initial_outcomes()]
    action, invalid = None, False
    for choice in choices:
        masks = [d.action_mask(s) for d, s in zip(dyns, states, strict=True)]
        texts = [d.text_observation(s, action, invalid) for d, s in zip(dyns, states, strict=True)]
        vectors = [d.observe(s) for d, s in zip(dyns, states, strict=True)]
        descriptions = [d.describe(s) for d, s in zip(dyns, states, strict=True)]
        for s in states:
            assert s._replace(fixed=0) == states[0]._replace(fixed=0)
        assert all(np.array_equal(m, masks[0]) for m in masks)
        if states[0].phase not in ALLOWED_TO_DIFFER:
            assert states[0].phase == PATCHED or {s.fixed for s in states} == {0}
            assert texts == [texts[0]] * len(dyns)
            assert descriptions == [descriptions[0]] * len(dyns)
            assert all(np.array_equal(v, vectors[0]) for v in vectors)
        else:
            keep = np.setdiff1d(np.arange(vectors[0].size), vector_test_entries(ref))
            assert all(np.array_equal(v[keep], vectors[0][keep]) for v in vectors)
            for d, s, t, v in zip(dyns, states, texts, vectors, strict=True):
                # what differs is a function of the test result alone
                twin = states[0]._replace(fixed=s.fixed)
                assert np.array_equal(v, ref.observe(twin))
                assert d.describe(s) == ref.describe(twin)
                failed_submit = action == SUBMIT and s.phase == DONE and not s.fixed
                if not failed_submit:  # that one names the right patch: the episode is over
                    assert t == ref.text_observation(twin, action, invalid)
        if states[0].phase == DONE:
            break
        valid = np.flatnonzero(masks[0])
        if choice % 7 == 0:  # now and then an invalid call: a no-op
            invalid_actions = np.flatnonzero(~masks[0])
            action = int(invalid_actions[choice % invalid_actions.size])
        else:
            action = int(valid[choice % valid.size])
        invalid = not masks[0][action]
        states = [d.outcomes(s, action)[0][1] for d, s in zip(dyns, states, strict=True)]


def test_v1_layouts_differ_only_through_the_test_result():
    """The other side: the layout does show, after a test run. Applying candidate 0 to the
    buggy module passes in the layouts where it fixes the symptom and fails in the others."""
    results = set()
    for layout_seed in range(20):
        d = dynamics_of("arbitrary", layout_seed, routine_length=2)
        state = CodeState(1, 1, 0, 0, 0, PATCH, 1, 0, 0)
        action = d.first_patch_action + 1 * d.num_patches + 0
        ((_, state, _, _),) = d.outcomes(state, action)
        ((_, state, _, _),) = d.outcomes(state, d.parse_action("run_tests"))
        results.add(d.text_observation(state, d.parse_action("run_tests")))
    assert len(results) == 2  # passed in some layouts, failed in the others


# -------------------------------------------------------------------- the same rules as v0
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"num_modules": 3, "num_patches": 5, "routine_length": 4, "layout_seed": 7},
        {"max_attempts": 2, "step_cost": 0.01, "signal_noise": 0.3, "routine_length": 3},
    ],
)
def test_v1_rewards_annotations_masks_and_vectors_are_v0s(kwargs):
    v0 = CodeFixDynamics(**kwargs)
    v1 = CodeFixDynamics(**kwargs, vocabulary="arbitrary")
    assert v0.vocabulary == "meaningful" and v1.vocabulary == "arbitrary"
    assert v1.correct_patch == v0.correct_patch and v1.num_states == v0.num_states
    m0, m1 = v0.model(), v1.model()
    for name in ("initial", "state", "action", "prob", "next_state", "reward", "terminated"):
        assert np.array_equal(getattr(m0, name), getattr(m1, name)), name
    assert np.array_equal(v0.action_gaps(), v1.action_gaps())
    assert np.array_equal(v0.mask_table(), v1.mask_table())
    for sid in np.flatnonzero(m0.reachable):
        state = v0.state_from_id(int(sid))
        assert v1.is_critical(state) == v0.is_critical(state)
        assert v1.is_success(state) == v0.is_success(state)
        assert np.array_equal(v1.observe(state), v0.observe(state))
    # critical exactly where the gap over the valid actions is positive, as for v0
    gaps = v1.action_gaps()
    for sid in np.flatnonzero(m1.reachable & ~m1.terminal):
        assert v1.is_critical(v1.state_from_id(int(sid))) == (gaps[sid] > 1e-9)


def test_registered_v1_episodes_equal_v0s_but_for_the_words():
    """Same seed, same calls: the same rewards, annotations and info, and in vector mode the
    same observations (anchors included); in text mode only the words differ."""
    rng = np.random.default_rng(3)
    for obs_mode in ("vector", "text"):
        e0 = gym.make("CodeFix-v0", obs_mode=obs_mode)
        e1 = gym.make("CodeFix-v1", obs_mode=obs_mode)
        assert isinstance(e1.unwrapped, CodeFixEnv)
        assert e1.unwrapped.dynamics.vocabulary == "arbitrary"
        assert e0.unwrapped.dynamics.vocabulary == "meaningful"
        for seed in range(10):
            o0, i0 = e0.reset(seed=seed)
            o1, i1 = e1.reset(seed=seed)
            done = False
            while True:
                if obs_mode == "vector":
                    assert np.array_equal(o0, o1) and i0["anchor"] == i1["anchor"]
                else:
                    assert o0.count("\n") == o1.count("\n")
                strip = ("anchor",) if obs_mode == "text" else ()
                same = {k: v for k, v in i0.items() if k not in strip}
                other = {k: v for k, v in i1.items() if k not in strip}
                assert same.keys() == other.keys()
                for k in same:
                    assert np.array_equal(same[k], other[k]), k
                if done:
                    break
                action = int(rng.choice(e0.unwrapped.valid_actions()))
                o0, r0, t0, u0, i0 = e0.step(action)
                o1, r1, t1, u1, i1 = e1.step(action)
                assert (r0, t0, u0) == (r1, t1, u1)
                done = t0 or u0


def test_vocabulary_is_validated_and_in_the_repr():
    with pytest.raises(ValueError, match="vocabulary"):
        CodeFixDynamics(vocabulary="random")
    assert "vocabulary='arbitrary'" in repr(gym.make("CodeFix-v1").unwrapped)
