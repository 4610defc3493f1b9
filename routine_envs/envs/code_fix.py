"""Code Fix: a mock multi-turn bug-fix session with tool actions, action masks, text observations
and exact annotations of which turns matter."""

from __future__ import annotations

import numbers
import string
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs import annotations as keys
from routine_envs.annotations import ACTION_MASK, INVALID_ACTION
from routine_envs.envs import validation
from routine_envs.envs.base import InvalidActionError
from routine_envs.envs.legacy_base import RoutineEnv
from routine_envs.oracle import OracleValues, Outcome

OBS_MODES = ("vector", "text")

#: module names, in order; ``num_modules`` takes the first ones.
MODULE_NAMES: Final = (
    "parser",
    "optimizer",
    "codegen",
    "runtime",
    "lexer",
    "linker",
    "typechecker",
    "scheduler",
    "allocator",
    "profiler",
)
#: the function on the failing code path of each module (for the transcripts).
FUNCTION_NAMES: Final = (
    "parse_expr",
    "fold_constants",
    "emit_call",
    "dispatch",
    "next_token",
    "resolve_symbol",
    "unify",
    "pick_next",
    "alloc_block",
    "sample_stack",
)
#: symptom ``k``: the error the failing test raises, and the patch that fixes it.
SYMPTOMS: Final = (
    ("IndexError: list index out of range", "fix the off-by-one loop bound"),
    ("TypeError: 'NoneType' object is not subscriptable", "add the missing None check"),
    ("KeyError: 'scope'", "use the enclosing scope when the key is missing"),
    ("ZeroDivisionError: division by zero", "guard the division against empty input"),
    ("RecursionError: maximum recursion depth exceeded", "add the missing base case"),
    ("AssertionError: expected 3, got -3", "restore the sign of the result"),
    ("UnboundLocalError: cannot access local variable 'node'", "initialize node before the loop"),
    ("AttributeError: 'Token' object has no attribute 'value'", "read the renamed Token.text"),
)
TESTS_PER_MODULE: Final = 12

# phases of a session
TRIAGE, NAVIGATE, PATCH, PATCHED, TESTED, DONE = range(6)
PHASE_NAMES: Final = ("triage", "navigate", "patch", "patched", "tested", "done")

# fixed tool actions; then ``open <module>`` and ``apply_patch <module> <k>`` (see the class doc)
READ_LOG, SCROLL, READ, RUN_TESTS, RUN_RELATED, REVERT, SUBMIT = range(7)
SIMPLE_TOOLS: Final = (
    "read_log",
    "scroll",
    "read",
    "run_tests",
    "run_related_tests",
    "revert",
    "submit",
)
OPEN = len(SIMPLE_TOOLS)
#: characters of the text observations (printable ASCII, tab and newline).
TEXT_CHARSET: Final = frozenset(string.printable) - {"\r", "\x0b", "\x0c"}


class CodeState(NamedTuple):
    """The underlying (partly hidden) state of a Code Fix session.

    Hidden from the agent: ``bug`` (the buggy module, in ``[0, num_modules)``) and, until the
    tests run, ``fixed``. Observed: ``pointer`` (the module the failing-test report points to),
    ``symptom`` (the error the failing test raises, in ``[0, num_patches)``: the patch addressing
    it fixes the bug), ``log_read`` (0/1), ``attempt`` (attempts used, in ``[0, max_attempts)``),
    ``phase`` (one of ``PHASE_NAMES``), ``module`` (the open module; 0 in triage), ``progress``
    (navigation turns taken in the open module; 0 outside ``navigate``), ``fixed`` (0/1: the
    applied patch fixes the bug; 0 before a patch).
    """

    bug: int
    pointer: int
    symptom: int
    log_read: int
    attempt: int
    phase: int
    module: int
    progress: int
    fixed: int


class _Record(NamedTuple):
    """What the environment computes once per state: its id, annotation, mask ``(n,)`` (read-only),
    vector observation (read-only) and the outcomes of every action."""

    state_id: int
    critical: bool
    mask: np.ndarray
    vector: np.ndarray
    row: tuple[tuple[Outcome, ...], ...]


def _probability(name: str, value: Any) -> float:
    """``value`` as a float in ``[0, 1]``; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number in [0, 1], got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value


class CodeFixEnv(RoutineEnv[Any, CodeState]):
    """## Description

    A mock multi-turn code-fix task: the suite's stand-in for an LLM coding agent, with the
    structure of a real bug-fix session, exact ground truth for which turns matter, and no
    containers (thousands of episodes per second).

    A repository has ``num_modules`` modules (``parser``, ``optimizer``, ``codegen``,
    ``runtime``, ...), one of which, hidden, has a bug. The session opens on a failing-test
    report: the failing test's file points to a module, the wrong one with probability
    ``signal_noise``, and its error message names the *symptom*. The full traceback
    (``read_log``) always ends in the buggy module. The agent opens a module (one per attempt),
    navigates to the failing code path (``routine_length - 2`` turns of ``scroll`` or ``read``,
    whichever), applies one of the module's ``num_patches`` candidate patches (each addresses one
    symptom, listed in an order fixed by ``layout_seed``; exactly one fixes the bug, and only in
    the buggy module), runs the tests (``run_tests`` or ``run_related_tests``, whichever:
    both report whether the failing test now passes) and submits.

    *Critical* turns (the optimal action gap over the valid actions is positive): triage (which
    module to open, or first ``read_log``: reading the log and opening the buggy module are both
    optimal, opening another module is not), the patch choice in the buggy module, and, when an
    attempt is left, the choice between ``submit`` and ``revert``. *Routine* turns: navigation,
    the test run and, on the last attempt, the submit (the only valid call); also the patch choice
    in a wrong module, where no patch can help. The ground truth is defined on the underlying
    state, which includes the hidden buggy module: triage is critical even when the agent cannot
    yet tell which module is right, and once a wrong module is open on the last attempt nothing
    matters any more (every later turn is routine), though the agent does not know it.

    Decision density. A fix on the first attempt takes ``T = routine_length + 2`` turns (open,
    ``routine_length - 2`` navigation turns, apply, test run, submit) of which ``K = 2`` are
    critical, so ``rho = 2 / (2 + routine_length)`` (``env.unwrapped.decision_density``).
    Reading the log first adds a critical turn: ``rho = 3 / (3 + routine_length)``. With
    ``max_attempts > 1`` the submit of a non-final attempt is a decision too:
    ``rho = 3 / (2 + routine_length)`` (and ``4 / (3 + routine_length)`` with the log).

    ## Action Space

    ``Discrete(7 + M + M * P)`` with ``M = num_modules``, ``P = num_patches``; each action is a
    tool call with a text form (``env.unwrapped.action_text(a)``, parsed back by
    ``env.unwrapped.parse_action(text)``):

    | action | text form | valid when | effect |
    |---|---|---|---|
    | 0 | ``read_log`` | triage, log not read | shows the traceback (it names the buggy module) |
    | 1 | ``scroll`` | navigating | next section of the open module |
    | 2 | ``read`` | navigating | same as ``scroll`` (reads the next function) |
    | 3 | ``run_tests`` | a patch is applied, not tested | runs the whole suite |
    | 4 | ``run_related_tests`` | a patch is applied, not tested | same as ``run_tests`` |
    | 5 | ``revert`` | tested, an attempt left | undoes the patch, back to triage |
    | 6 | ``submit`` | tested | ends the episode; the hidden tests decide the reward |
    | 7 + m | ``open <module m>`` | triage | opens module ``m`` (the attempt's module) |
    | 7+M+mP+j | ``apply_patch <module m> <j>`` | at the failing code of ``m`` | patches ``m`` |

    ``env.unwrapped.action_masks()`` gives the valid actions of the current state, shape
    ``(7 + M + M * P,)`` bool (the protocol of sb3-contrib's ``MaskablePPO``);
    ``env.unwrapped.valid_tool_calls()`` lists them as text. An invalid action (in the space but
    masked out) is a no-op: the state does not change, the step costs ``step_cost`` like any
    other, ``info["invalid_action"]`` is ``True`` and the text observation shows an error. An
    action outside the space raises ``InvalidActionError``. ``parse_action`` raises
    ``InvalidActionError`` (a ``ValueError``) naming the problem for a malformed call (unknown
    tool, module or patch, wrong number of arguments); a well-formed call that is not valid now
    parses to its action, which is then a no-op.

    ## Observation Space

    ``obs_mode="vector"``: ``Box(0, 1, (3 M + P + 11,), float32)``, a function of the state:

    | index | meaning |
    |---|---|
    | ``0 .. M-1`` | one-hot module the failing-test report points to |
    | ``M .. M+P-1`` | one-hot symptom (the failing test's error) |
    | ``M+P`` | 1 once the log is read |
    | ``M+P+1 .. 2M+P`` | one-hot suspect: the module the log names once read, else the report |
    | ``2M+P+1 .. 2M+P+6`` | one-hot phase: triage, navigate, patch, patched, tested, done |
    | ``2M+P+7 .. 3M+P+6`` | one-hot open module (zeros in triage) |
    | ``3M+P+7`` | navigation progress: sections read / (routine_length - 2), 1 once at the code |
    | ``3M+P+8``, ``3M+P+9`` | the tests ran and passed / failed |
    | ``3M+P+10`` | attempts left after this one / (max_attempts - 1) (0 when max_attempts = 1) |

    ``obs_mode="text"``: ``Text`` (printable ASCII, up to ``env.unwrapped.max_text_length``
    characters): what an LLM agent sees after each tool call, the call echoed as ``$ <call>``,
    its output, and a last line listing the valid calls. It is a function of the state and of the
    last call (whose echo and wording differ between variants such as ``scroll``/``read``; the
    information in them does not).

    ## Rewards

    ``submit`` pays 1 when the applied patch fixes the bug (the right patch in the buggy module),
    else 0. Every step, invalid ones included, also pays ``-step_cost`` (default 0). The return of
    a successful episode of ``T`` steps is ``1 - step_cost * T``.

    ## Starting State

    Triage, with the hidden state drawn on ``self.np_random``: the buggy module uniformly, the
    symptom uniformly, and the report's module equal to the buggy one with probability
    ``1 - signal_noise``, else uniform among the others.

    ## Episode End

    Terminated on ``submit``. Truncated after ``max_steps`` steps (the step limit; reachable only
    with invalid actions or retries when ``max_steps`` is at least the longest valid episode,
    ``max_attempts * (routine_length + 2) + 1`` steps). The model and the oracle describe the
    environment without the step limit (Gymnasium's convention: truncation is not part of the MDP).

    ## Information

    The keys of :mod:`routine_envs.annotations`, exact from the hidden state: ``critical`` and
    ``state_id`` on every ``reset``/``step``; ``success`` (the submitted patch fixes the bug),
    ``num_critical``, ``episode_length`` and ``decision_density`` at the end. Also, on every
    ``reset``/``step``: ``invalid_action`` (bool: the action just taken was a no-op) and
    ``action_mask`` (the valid actions of the state just observed: ``action_masks()`` then).

    ``critical`` is the optimal action gap *over the valid actions* at ``gamma = 1``. In the model
    an invalid action is the no-op it is in ``step``: a self-loop paying ``-step_cost``. With
    ``step_cost = 0`` its ``Q*`` equals ``V*`` of the state, so ``optimal().action_gap > 0`` on
    exactly the critical states; with ``step_cost > 0`` use ``valid_action_gap(optimal())``
    (``action_gap`` also counts the self-loop, which costs a step). The masks of every state are
    ``env.unwrapped.mask_table()``, shape ``(num_states, num_actions)``, or
    ``action_masks_of(state_id)``; ``masked_uniform_policy()`` is a tabular policy for
    ``oracle``. ``oracle(policy)`` is exact after finitely many sweeps for policies that give
    invalid actions probability 0 (as ``MaskablePPO``'s do); a policy that takes no-ops with
    positive probability has self-loops, and its values converge only geometrically.

    ## Arguments

    ```python
    gym.make("CodeFix-v0", num_modules=4, num_patches=3, routine_length=10, signal_noise=0.05,
             max_attempts=1, step_cost=0.0, obs_mode="vector", max_steps=None, layout_seed=0,
             render_mode=None)
    ```

    - ``num_modules`` (int, 2..10): modules in the repository.
    - ``num_patches`` (int, 2..8): candidate patches per module (and symptoms).
    - ``routine_length`` (int >= 2): routine turns of a fix: ``routine_length - 2`` navigation
      turns, one test run and the submit; sets rho (see Description).
    - ``signal_noise`` (float in [0, 1]): probability that the report points to a wrong module.
      The default 0.05 keeps reading the log a real (critical) decision while MaskablePPO
      learns the task within about 15k steps; 0.2 needs two to three times that.
    - ``max_attempts`` (int >= 1): patches that may be tried; ``revert`` starts the next attempt.
      More than one needs ``step_cost > 0``: with free retries a clairvoyant critic recovers from
      any first-attempt mistake, so its action gaps there would be 0 while the choices still
      matter to every other policy.
    - ``step_cost`` (float >= 0, below ``1 / (max_attempts * (routine_length + 2) + 1)``, so that
      a success always beats a failure): cost per step.
    - ``obs_mode`` (``"vector"`` or ``"text"``): see Observation Space.
    - ``max_steps`` (int >= 1 or ``None``): the step limit; ``None`` is four times the longest
      valid episode.
    - ``layout_seed`` (int >= 0): fixes the order of the candidate patches (the same in every
      module), so the patch for each symptom can be learned.
    - ``render_mode`` (``None``, ``"ansi"`` or ``"rgb_array"``).

    Also exposed on ``env.unwrapped``: ``model()``, ``oracle(policy)``, ``optimal()`` (exact, over
    the hidden state), ``describe_state(state_id)`` (a :class:`CodeState`), ``decision_density``,
    ``max_episode_length`` (the longest valid episode), ``tool_calls`` (the text form of every
    action), ``text_observation(state, action)``; and ``copy.deepcopy(env)`` branches (an
    independent env with the same future for the same actions).

    ## Example Episode

    ``gym.make("CodeFix-v0", routine_length=4, obs_mode="text", signal_noise=0.2)``,
    ``reset(seed=8)``: the report points to ``codegen``; the log shows that the bug is in
    ``optimizer``. After each call: the reward, the annotation of the state reached (in which
    the next call is made) and its text observation. Reading the log adds a critical turn:
    ``rho = 3 / (3 + 4)``. (Generated by ``routine_envs.rendering.code_fix.example_transcript()``;
    a test keeps it up to date.)

    ```text
    -- reset: critical state 1332
    $ pytest -q
    FAILED tests/test_codegen.py::test_main - IndexError: list index out of range
    1 failed, 47 passed
    valid: read_log | open parser | open optimizer | open codegen | open runtime

    -- turn 1: reward 0; critical state 1369
    $ read_log
    Traceback (most recent call last):
      File "tests/test_codegen.py", line 27, in test_main
      File "src/optimizer.py", line 118, in fold_constants
    IndexError: list index out of range
    valid: open parser | open optimizer | open codegen | open runtime

    -- turn 2: reward 0; routine state 1372
    $ open optimizer
    Opened src/optimizer.py (120 lines). The failing code path is 2 sections down.
    valid: scroll | read

    -- turn 3: reward 0; routine state 1373
    $ scroll
    src/optimizer.py lines 1-40 (section 1/2): nothing suspicious.
    valid: scroll | read

    -- turn 4: reward 0; critical state 1379
    $ read
    Read helper_2() in src/optimizer.py (section 2/2): looks correct.
    Reached fold_constants() in src/optimizer.py, on the failing test's code path.
    The failing test raises IndexError: list index out of range
    Candidate patches for src/optimizer.py:
      0: use the enclosing scope when the key is missing
      1: fix the off-by-one loop bound
      2: add the missing None check
    valid: apply_patch optimizer 0 | apply_patch optimizer 1 | apply_patch optimizer 2

    -- turn 5: reward 0; routine state 1385
    $ apply_patch optimizer 1
    Applied patch 1 to src/optimizer.py: fix the off-by-one loop bound.
    valid: run_tests | run_related_tests

    -- turn 6: reward 0; routine state 1393
    $ run_related_tests
    tests/test_codegen.py: 12 passed
    valid: submit

    -- turn 7: reward 1; terminal state 1401; success True, rho 0.4286
    $ submit
    Submitted. Hidden tests passed: the bug is fixed.
    ```

    ## Version History

    - v0: initial release.
    """

    def __init__(
        self,
        num_modules: int = 4,
        num_patches: int = 3,
        routine_length: int = 10,
        signal_noise: float = 0.05,
        max_attempts: int = 1,
        step_cost: float = 0.0,
        obs_mode: str = "vector",
        max_steps: int | None = None,
        layout_seed: int = 0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode=render_mode)
        self.num_modules = validation.integer(
            "num_modules", num_modules, minimum=2, maximum=len(MODULE_NAMES)
        )
        self.num_patches = validation.integer(
            "num_patches", num_patches, minimum=2, maximum=len(SYMPTOMS)
        )
        self.routine_length = validation.integer("routine_length", routine_length, minimum=2)
        self.signal_noise = _probability("signal_noise", signal_noise)
        self.max_attempts = validation.integer("max_attempts", max_attempts, minimum=1)
        self.obs_mode = validation.choice("obs_mode", obs_mode, OBS_MODES)
        self.layout_seed = validation.integer("layout_seed", layout_seed, minimum=0)
        M, P, A = self.num_modules, self.num_patches, self.max_attempts
        #: navigation turns per fix.
        self.num_sections = self.routine_length - 2
        #: the longest episode of valid actions (steps).
        self.max_episode_length = A * (self.routine_length + 2) + 1
        if isinstance(step_cost, bool) or not isinstance(step_cost, numbers.Real):
            raise ValueError(f"step_cost must be a real number >= 0, got {step_cost!r}")
        self.step_cost = float(step_cost)
        limit = 1.0 / self.max_episode_length
        if not 0.0 <= self.step_cost < limit:  # NaN fails too
            raise ValueError(
                f"step_cost must be >= 0 and < 1 / (max_attempts * (routine_length + 2) + 1) "
                f"= {limit:.6g}, so that a success always returns more than a failure; "
                f"got {step_cost!r}"
            )
        if A > 1 and self.step_cost == 0.0:
            raise ValueError(
                f"max_attempts={A} needs step_cost > 0: with free retries a mistake on an early "
                "attempt costs nothing, so its optimal action gap (the critical annotation) "
                "would be 0 although the choice matters to any other policy"
            )
        if max_steps is None:
            self.max_steps = 4 * self.max_episode_length
        else:
            self.max_steps = validation.integer("max_steps", max_steps, minimum=1)

        self.module_names: tuple[str, ...] = MODULE_NAMES[:M]
        rng = np.random.default_rng(self.layout_seed)
        #: ``patch_order[j]``: the symptom that candidate patch ``j`` addresses (in every module).
        self.patch_order: tuple[int, ...] = tuple(int(x) for x in rng.permutation(P))
        #: ``correct_patch[k]``: the candidate that fixes symptom ``k`` (in the buggy module).
        self.correct_patch: tuple[int, ...] = tuple(self.patch_order.index(k) for k in range(P))
        self._apply0 = OPEN + M
        self._module_index = {name: m for m, name in enumerate(self.module_names)}

        # state_id layout: blocks of (bug, pointer, symptom, log_read, attempt), each with the
        # positions triage | navigate (m, n) | patch m | patched, tested, done (m, fixed)
        N = self.num_sections
        self._nav0 = 1
        self._patch0 = 1 + M * N
        self._patched0 = self._patch0 + M
        self._tested0 = self._patched0 + 2 * M
        self._done0 = self._tested0 + 2 * M
        self._positions = self._done0 + 2 * M
        self._num_blocks = M * M * P * 2 * A
        self.num_states = self._num_blocks * self._positions

        n = OPEN + M + M * P
        self.action_space = gym.spaces.Discrete(n)
        #: the text form of every action, ``(n,)``.
        self.tool_calls: tuple[str, ...] = (
            *SIMPLE_TOOLS,
            *(f"open {name}" for name in self.module_names),
            *(f"apply_patch {name} {j}" for name in self.module_names for j in range(P)),
        )
        self._obs_dim = 3 * M + P + 11
        #: upper bound on the length of a text observation (characters).
        self.max_text_length = 1024 + 48 * (M + 2 * P)
        if self.obs_mode == "vector":
            self.observation_space = gym.spaces.Box(0.0, 1.0, (self._obs_dim,), np.float32)
        else:
            self.observation_space = gym.spaces.Text(
                self.max_text_length, min_length=1, charset=TEXT_CHARSET
            )
        # per-state records, shared by deep copies (they depend on the configuration only)
        self._records: dict[CodeState, _Record] = {}
        self._last_state: CodeState | None = None
        self._last_record: _Record | None = None
        self._initial: tuple[tuple[float, CodeState], ...] = self._build_initial()
        # episode-level attributes (for the text observation and rendering)
        self._last_action: int | None = None
        self._invalid = False
        self._last_applied: int | None = None

    _shared_attributes = RoutineEnv._shared_attributes | {
        "_records",
        "_last_state",  # a cache of a pure function of the state: safe to share
        "_last_record",
        "_initial",
        "tool_calls",
        "module_names",
        "patch_order",
        "correct_patch",
        "_module_index",
    }

    # ---------------------------------------------------------------------------- config
    @property
    def decision_density(self) -> float:
        """rho of a fix on the first attempt without reading the log: ``K / (routine_length + 2)``
        with ``K = 2`` critical turns (module, patch), ``K = 3`` when a retry is allowed (the
        submit is then a decision too). Reading the log adds one critical turn and one step."""
        critical = 2 + (self.max_attempts > 1)
        return critical / (self.routine_length + 2)

    # ----------------------------------------------------------------------------- hooks
    def _build_initial(self) -> tuple[tuple[float, CodeState], ...]:
        M, P, eps = self.num_modules, self.num_patches, self.signal_noise
        out = []
        for bug in range(M):
            for symptom in range(P):
                for pointer in range(M):
                    p = (1.0 - eps) if pointer == bug else eps / (M - 1)
                    if p > 0.0:
                        state = CodeState(bug, pointer, symptom, 0, 0, TRIAGE, 0, 0, 0)
                        out.append((p / (M * P), state))
        return tuple(out)

    def _initial_outcomes(self) -> Sequence[tuple[float, CodeState]]:
        return self._initial

    def transitions(self, state: CodeState) -> list[tuple[int, CodeState]]:
        """The valid actions of ``state`` and the (deterministic) next state of each."""
        phase = state.phase
        if phase == TRIAGE:
            out = [] if state.log_read else [(READ_LOG, state._replace(log_read=1))]
            if self.num_sections > 0:
                out += [
                    (OPEN + m, state._replace(phase=NAVIGATE, module=m))
                    for m in range(self.num_modules)
                ]
            else:
                out += [
                    (OPEN + m, state._replace(phase=PATCH, module=m))
                    for m in range(self.num_modules)
                ]
            return out
        if phase == NAVIGATE:
            if state.progress + 1 < self.num_sections:
                nxt = state._replace(progress=state.progress + 1)
            else:
                nxt = state._replace(phase=PATCH, progress=0)
            return [(SCROLL, nxt), (READ, nxt)]
        if phase == PATCH:
            m, P = state.module, self.num_patches
            fix = self.correct_patch[state.symptom] if m == state.bug else -1
            first = self._apply0 + m * P
            return [
                (first + j, state._replace(phase=PATCHED, fixed=int(j == fix))) for j in range(P)
            ]
        if phase == PATCHED:
            nxt = state._replace(phase=TESTED)
            return [(RUN_TESTS, nxt), (RUN_RELATED, nxt)]
        if phase == TESTED:
            out = [(SUBMIT, state._replace(phase=DONE))]
            if state.attempt + 1 < self.max_attempts:
                back = state._replace(phase=TRIAGE, attempt=state.attempt + 1, module=0, fixed=0)
                out.append((REVERT, back))
            return out
        return []  # done: terminal

    def _record(self, state: CodeState) -> _Record:
        """Everything ``step`` needs about ``state``, computed once (the last one is kept at hand:
        ``step`` asks about the state it reaches three times)."""
        if state is self._last_state:
            return self._last_record
        record = self._records.get(state)
        if record is None:
            record = self._records[state] = self._build_record(state)
        self._last_state, self._last_record = state, record
        return record

    def _build_record(self, state: CodeState) -> _Record:
        cost = 0.0 - self.step_cost  # 0.0, not -0.0, without a cost
        stay: tuple[Outcome, ...] = ((1.0, state, cost, False),)
        row = [stay] * self.action_space.n  # invalid actions: self-loops
        mask = np.zeros(self.action_space.n, dtype=bool)
        for action, nxt in self.transitions(state):
            mask[action] = True
            if nxt.phase == DONE:
                row[action] = ((1.0, nxt, float(nxt.fixed) - self.step_cost, True),)
            else:
                row[action] = ((1.0, nxt, cost, False),)
        mask.flags.writeable = False
        vector = self._vector(state)
        vector.flags.writeable = False
        phase = state.phase
        critical = (
            phase == TRIAGE
            or (phase == PATCH and state.module == state.bug)
            or (phase == TESTED and state.attempt + 1 < self.max_attempts)
        )
        return _Record(self._compute_id(state), critical, mask, vector, tuple(row))

    def _outcomes(self, state: CodeState, action: int) -> Sequence[Outcome]:
        return self._record(state).row[action]

    def _mask(self, state: CodeState) -> np.ndarray:
        """The valid actions of ``state``, shape ``(num_actions,)`` bool, read-only."""
        return self._record(state).mask

    def _state_id(self, state: CodeState) -> int:
        return self._record(state).state_id

    def _compute_id(self, state: CodeState) -> int:
        bug, pointer, symptom, log_read, attempt, phase, module, progress, fixed = state
        M, P, A = self.num_modules, self.num_patches, self.max_attempts
        block = (((bug * M + pointer) * P + symptom) * 2 + log_read) * A + attempt
        if phase == TRIAGE:
            pos = 0
        elif phase == NAVIGATE:
            pos = self._nav0 + module * self.num_sections + progress
        elif phase == PATCH:
            pos = self._patch0 + module
        else:
            base = (self._patched0, self._tested0, self._done0)[phase - PATCHED]
            pos = base + 2 * module + fixed
        return block * self._positions + pos

    def describe_state(self, state_id: int) -> CodeState:
        """Inverse of ``state_id``: the :class:`CodeState` with that id."""
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        M, P, A = self.num_modules, self.num_patches, self.max_attempts
        block, pos = divmod(int(state_id), self._positions)
        block, attempt = divmod(block, A)
        block, log_read = divmod(block, 2)
        block, symptom = divmod(block, P)
        bug, pointer = divmod(block, M)
        module = progress = fixed = 0
        if pos == 0:
            phase = TRIAGE
        elif pos < self._patch0:
            phase = NAVIGATE
            module, progress = divmod(pos - self._nav0, self.num_sections)
        elif pos < self._patched0:
            phase, module = PATCH, pos - self._patch0
        else:
            phase = PATCHED + (pos - self._patched0) // (2 * M)
            module, fixed = divmod((pos - self._patched0) % (2 * M), 2)
        return CodeState(bug, pointer, symptom, log_read, attempt, phase, module, progress, fixed)

    def _vector(self, state: CodeState) -> np.ndarray:
        """The vector observation of ``state`` (see the class docstring), ``(3M + P + 11,)``."""
        M, P = self.num_modules, self.num_patches
        obs = np.zeros(self._obs_dim, dtype=np.float32)
        obs[state.pointer] = 1.0
        obs[M + state.symptom] = 1.0
        obs[M + P] = state.log_read
        obs[M + P + 1 + (state.bug if state.log_read else state.pointer)] = 1.0
        base = 2 * M + P + 1
        obs[base + state.phase] = 1.0
        if state.phase != TRIAGE:
            obs[base + 6 + state.module] = 1.0
        if state.phase == NAVIGATE:
            obs[3 * M + P + 7] = state.progress / self.num_sections
        elif state.phase != TRIAGE:
            obs[3 * M + P + 7] = 1.0
        if state.phase in (TESTED, DONE):
            obs[3 * M + P + 9 - state.fixed] = 1.0
        if self.max_attempts > 1:
            obs[3 * M + P + 10] = (self.max_attempts - 1 - state.attempt) / (self.max_attempts - 1)
        return obs

    def _observe(self, state: CodeState) -> Any:
        if self.obs_mode == "vector":
            return self._record(state).vector.copy()
        return self.text_observation(state, self._last_action, self._invalid)

    def _is_critical(self, state: CodeState) -> bool:
        return self._record(state).critical

    def _is_success(self, state: CodeState) -> bool:
        return state.phase == DONE and state.fixed == 1

    def _after_reset(self) -> None:
        self._last_action = None
        self._invalid = False
        self._last_applied = None

    def _after_step(self, state: CodeState, action: int, next_state: CodeState) -> None:
        self._last_action = action
        self._invalid = invalid = next_state == state  # every valid action changes the state
        if not invalid and action >= self._apply0:
            self._last_applied = (action - self._apply0) % self.num_patches

    def _step_info(self, state: CodeState) -> dict[str, Any]:
        record = self._record(state)
        return {
            keys.CRITICAL: self._critical_now,
            keys.STATE_ID: record.state_id,
            INVALID_ACTION: self._invalid,
            ACTION_MASK: record.mask.copy(),
        }

    # ------------------------------------------------------------------ masks and the model
    def action_masks(self) -> np.ndarray:
        """Valid actions of the current state, shape ``(num_actions,)`` bool (a fresh array;
        the protocol of sb3-contrib's ``MaskablePPO``)."""
        return self._mask(self.state).copy()

    def action_masks_of(self, state_id: int) -> np.ndarray:
        """Valid actions of the state with id ``state_id``, shape ``(num_actions,)`` bool."""
        return self._mask(self.describe_state(state_id)).copy()

    def valid_actions(self) -> list[int]:
        """The valid actions of the current state, ascending."""
        return [a for a, _ in sorted(self.transitions(self.state))]

    def mask_table(self) -> np.ndarray:
        """The mask of every state id, shape ``(num_states, num_actions)`` bool; all-False rows
        for terminal and unreachable ids."""
        table = np.zeros((self.num_states, self.action_space.n), dtype=bool)
        model = self.model()
        for sid in np.flatnonzero(model.decision_states):
            table[sid] = self._mask(self.describe_state(int(sid)))
        return table

    def valid_action_gap(self, values: OracleValues) -> np.ndarray:
        """``max - min`` of ``values.q`` over each state's valid actions, shape
        ``(num_states,)`` (0 where no action is valid); positive exactly on critical states for
        ``values = self.optimal()``."""
        mask = self.mask_table()
        hi = np.where(mask, values.q, -np.inf).max(axis=1)
        lo = np.where(mask, values.q, np.inf).min(axis=1)
        return np.where(mask.any(axis=1), hi - lo, 0.0)

    def masked_uniform_policy(self) -> np.ndarray:
        """Uniform over the valid actions of each state, shape ``(num_states, num_actions)``
        (uniform over all actions where none is valid), for :meth:`oracle`."""
        mask = self.mask_table().astype(np.float64)
        counts = mask.sum(axis=1, keepdims=True)
        return np.where(counts > 0, mask / np.maximum(counts, 1), 1.0 / mask.shape[1])

    # -------------------------------------------------------------------------- text mode
    def action_text(self, action: int) -> str:
        """The text form of ``action`` (e.g. ``"apply_patch parser 2"``)."""
        return self.tool_calls[self._check_action(action)]

    def valid_tool_calls(self) -> list[str]:
        """The text forms of the valid actions of the current state."""
        return [self.tool_calls[a] for a in self.valid_actions()]

    def parse_action(self, call: str) -> int:
        """Map a tool call written as text to its action.

        Tokens are separated by whitespace; tool and module names are case-insensitive:
        ``"read_log"``, ``"open parser"``, ``"apply_patch parser 2"``. A well-formed call that is
        not valid in the current state still parses (the step is then a flagged no-op).

        Raises:
            InvalidActionError: (a ``ValueError``) for a malformed call, naming the problem.
        """
        if not isinstance(call, str):
            raise InvalidActionError(
                f"a tool call must be a string, got {call!r} of type {type(call).__name__}"
            )
        tokens = call.split()
        if not tokens:
            raise InvalidActionError(f"empty tool call; tools: {self._tool_summary()}")
        tool, args = tokens[0].lower(), tokens[1:]
        if tool in SIMPLE_TOOLS:
            if args:
                raise InvalidActionError(f"{tool} takes no arguments, got {len(args)} in {call!r}")
            return SIMPLE_TOOLS.index(tool)
        if tool == "open":
            if len(args) != 1:
                raise InvalidActionError(
                    f"open takes 1 argument (a module: {', '.join(self.module_names)}), "
                    f"got {len(args)} in {call!r}"
                )
            return OPEN + self._parse_module(args[0], call)
        if tool == "apply_patch":
            if len(args) != 2:
                raise InvalidActionError(
                    "apply_patch takes 2 arguments (a module and a patch index 0.."
                    f"{self.num_patches - 1}), got {len(args)} in {call!r}"
                )
            m = self._parse_module(args[0], call)
            j = args[1]
            if not (j.isascii() and j.isdigit()) or int(j) >= self.num_patches:
                raise InvalidActionError(
                    f"patch index must be an integer in 0..{self.num_patches - 1}, "
                    f"got {j!r} in {call!r}"
                )
            return self._apply0 + m * self.num_patches + int(j)
        raise InvalidActionError(
            f"unknown tool {tokens[0]!r} in {call!r}; tools: {self._tool_summary()}"
        )

    def _parse_module(self, name: str, call: str) -> int:
        m = self._module_index.get(name.lower())
        if m is None:
            raise InvalidActionError(
                f"unknown module {name!r} in {call!r}; modules: {', '.join(self.module_names)}"
            )
        return m

    def _tool_summary(self) -> str:
        return ", ".join((*SIMPLE_TOOLS, "open <module>", "apply_patch <module> <k>"))

    def text_observation(
        self, state: CodeState, action: int | None = None, invalid: bool = False
    ) -> str:
        """The text observation of ``state`` reached by the call ``action`` (``None``: the
        episode start), ``invalid`` when that call was a no-op."""
        if action is None:
            lines = ["$ pytest -q", *self._failure_lines(state), self._summary(state, False)]
        else:
            call = self.tool_calls[action]
            lines = [f"$ {call}"]
            if invalid:
                lines.append(
                    f"error: `{call}` is not valid now ({self._why_invalid(state, action)})"
                    "; nothing changed."
                )
            else:
                lines += self._output(state, action)
        if state.phase != DONE:
            valid = [self.tool_calls[a] for a, _ in sorted(self.transitions(state))]
            lines.append("valid: " + " | ".join(valid))
        return "\n".join(lines) + "\n"

    def _failure_lines(self, state: CodeState) -> list[str]:
        name = self.module_names[state.pointer]
        error = SYMPTOMS[state.symptom][0]
        return [f"FAILED tests/test_{name}.py::test_main - {error}"]

    def _summary(self, state: CodeState, passed: bool) -> str:
        total = TESTS_PER_MODULE * self.num_modules
        return f"{total} passed" if passed else f"1 failed, {total - 1} passed"

    def _listing(self, state: CodeState) -> list[str]:
        m = state.module
        name = self.module_names[m]
        lines = [
            f"Reached {FUNCTION_NAMES[m]}() in src/{name}.py, on the failing test's code path.",
            f"The failing test raises {SYMPTOMS[state.symptom][0]}",
            f"Candidate patches for src/{name}.py:",
        ]
        lines += [f"  {j}: {SYMPTOMS[k][1]}" for j, k in enumerate(self.patch_order)]
        return lines

    def _output(self, state: CodeState, action: int) -> list[str]:
        name = self.module_names[state.module]
        N = self.num_sections
        if action == READ_LOG:
            reported = self.module_names[state.pointer]
            buggy = self.module_names[state.bug]
            return [
                "Traceback (most recent call last):",
                f'  File "tests/test_{reported}.py", line 27, in test_main',
                f'  File "src/{buggy}.py", line 118, in {FUNCTION_NAMES[state.bug]}',
                SYMPTOMS[state.symptom][0],
            ]
        if action in (SCROLL, READ) or OPEN <= action < self._apply0:
            if action >= OPEN:
                head = f"Opened src/{name}.py ({40 * (N + 1)} lines)."
                if state.phase == NAVIGATE:
                    head += f" The failing code path is {N} section{'s' * (N > 1)} down."
            else:
                n = state.progress if state.phase == NAVIGATE else N
                if action == SCROLL:
                    head = (
                        f"src/{name}.py lines {40 * n - 39}-{40 * n} (section {n}/{N}): "
                        "nothing suspicious."
                    )
                else:
                    head = f"Read helper_{n}() in src/{name}.py (section {n}/{N}): looks correct."
            return [head, *self._listing(state)] if state.phase == PATCH else [head]
        if action >= self._apply0:
            j = (action - self._apply0) % self.num_patches
            desc = SYMPTOMS[self.patch_order[j]][1]
            return [f"Applied patch {j} to src/{name}.py: {desc}."]
        if action == RUN_TESTS:
            if state.fixed:
                return [self._summary(state, True)]
            return [*self._failure_lines(state), self._summary(state, False)]
        if action == RUN_RELATED:
            reported = self.module_names[state.pointer]
            if state.fixed:
                return [f"tests/test_{reported}.py: {TESTS_PER_MODULE} passed"]
            return [
                *self._failure_lines(state),
                f"tests/test_{reported}.py: 1 failed, {TESTS_PER_MODULE - 1} passed",
            ]
        if action == REVERT:
            return [
                f"Reverted the patch. Attempt {state.attempt + 1} of {self.max_attempts}; "
                "still failing:",
                *self._failure_lines(state),
            ]
        # submit
        if state.fixed:
            return ["Submitted. Hidden tests passed: the bug is fixed."]
        buggy = self.module_names[state.bug]
        fix = self.correct_patch[state.symptom]
        return [
            f"Submitted. Hidden tests failed: the bug was in src/{buggy}.py (patch {fix} fixes it)."
        ]

    def _why_invalid(self, state: CodeState, action: int) -> str:
        phase = PHASE_NAMES[state.phase]
        if action == READ_LOG:
            return "the log was already read" if state.log_read else "only during triage"
        if action in (SCROLL, READ):
            return f"only while navigating an open module; phase is {phase}"
        if action in (RUN_TESTS, RUN_RELATED):
            return f"only right after a patch is applied; phase is {phase}"
        if action == REVERT:
            if self.max_attempts == 1:
                return "this session allows a single attempt"
            return f"only after the tests ran, with an attempt left; phase is {phase}"
        if action == SUBMIT:
            return f"apply a patch and run the tests first; phase is {phase}"
        if action < self._apply0:
            return f"only during triage (one module per attempt); phase is {phase}"
        m = (action - self._apply0) // self.num_patches
        if state.phase == PATCH:
            return (
                f"the open module is {self.module_names[state.module]}, not {self.module_names[m]}"
            )
        return f"only at the failing code of the open module; phase is {phase}"

    # ------------------------------------------------------------------------- rendering
    def _render_ansi(self) -> str:
        from routine_envs.rendering.code_fix import render_code_fix_ansi

        return render_code_fix_ansi(self)

    def _render_rgb(self) -> np.ndarray:
        from routine_envs.rendering.code_fix import render_code_fix_rgb

        return render_code_fix_rgb(self)

    # --------------------------------------------------------------------------- internals
    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_records"] = {}  # a cache: rebuilt on demand
        state["_last_state"] = state["_last_record"] = None
        return state

    def __repr__(self) -> str:
        return (
            f"CodeFixEnv(num_modules={self.num_modules}, num_patches={self.num_patches}, "
            f"routine_length={self.routine_length}, signal_noise={self.signal_noise}, "
            f"max_attempts={self.max_attempts}, step_cost={self.step_cost}, "
            f"obs_mode={self.obs_mode!r}, max_steps={self.max_steps}, "
            f"layout_seed={self.layout_seed})"
        )
