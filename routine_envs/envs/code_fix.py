"""Code Fix: a mock multi-turn bug-fix session with exact annotations of which turns matter: the
MDP :class:`CodeFixDynamics` and the env :class:`CodeFixEnv` (its words: code_fix_text)."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import InvalidActionError, RoutineEnv, check_discrete_action
from routine_envs.oracle import Outcome
from routine_envs.rendering import code_fix_text as text
from routine_envs.rendering.code_fix import render_code_fix
from routine_envs.rendering.code_fix_text import DONE, NAVIGATE, PATCH, PATCHED, TESTED, TRIAGE
from routine_envs.rendering.text_view import TextView

OBS_MODES = ("vector", "text")


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
    """Computed once per state: id, annotation, mask, vector (read-only), every outcome."""

    state_id: int
    critical: bool
    mask: np.ndarray
    vector: np.ndarray
    row: tuple[tuple[Outcome, ...], ...]


@dataclass(frozen=True)
class CodeFixDynamics(Dynamics[CodeState, np.ndarray]):
    """The exact MDP of Code Fix over the hidden state (see :class:`CodeFixEnv` for the rules).

    The fields are the configuration. ``state_id`` layout: blocks of ``(bug, pointer, symptom,
    log_read, attempt)``, each with the positions triage | navigate ``(module, progress)`` |
    patch ``module`` | patched, tested, done ``(module, fixed)``. Each state's id, annotation,
    mask, vector observation and outcomes are computed once and kept (shared by every env).
    ``critical`` is the optimal action gap over the *valid* actions (:meth:`action_gaps`).
    ``vocabulary`` only changes the words of the symptoms and patches (``symptom_texts``,
    ``patch_texts``; see :func:`~routine_envs.rendering.code_fix_text.vocabulary_texts`): the MDP,
    the ids, the annotations, the masks and the vector observation are the same for both.
    """

    num_modules: int = 4
    num_patches: int = 3
    routine_length: int = 10
    signal_noise: float = 0.05
    max_attempts: int = 1
    step_cost: float = 0.0
    layout_seed: int = 0
    vocabulary: str = "meaningful"

    has_action_masks: ClassVar[bool] = True
    density_kwarg = "routine_length"
    density_rule = "routine_length L: rho = 2/(2+L) per fix, 3/(3+L) when the log is read"
    small_config: ClassVar[dict[str, Any]] = {
        "num_modules": 2,
        "num_patches": 2,
        "routine_length": 3,
    }
    text_kwargs: ClassVar[dict[str, Any]] = {"obs_mode": "text"}  # the transcript is the text
    render_modes = ("ansi", "rgb_array", "human")
    renderer = staticmethod(render_code_fix)

    def __post_init__(self) -> None:
        M = validation.integer(
            "num_modules", self.num_modules, minimum=2, maximum=len(text.MODULE_NAMES)
        )
        P = validation.integer(
            "num_patches", self.num_patches, minimum=2, maximum=len(text.SYMPTOMS)
        )
        L = validation.integer("routine_length", self.routine_length, minimum=2, maximum=1000)
        noise = validation.probability("signal_noise", self.signal_noise)
        A = validation.integer("max_attempts", self.max_attempts, minimum=1, maximum=20)
        seed = validation.integer("layout_seed", self.layout_seed, minimum=0)
        vocabulary = validation.choice("vocabulary", self.vocabulary, text.VOCABULARIES)
        longest = A * (L + 2) + 1
        step_cost = self.step_cost
        if isinstance(step_cost, bool) or not isinstance(step_cost, numbers.Real):
            raise ValueError(f"step_cost must be a real number >= 0, got {step_cost!r}")
        limit = 1.0 / longest
        if not 0.0 <= float(step_cost) < limit:  # NaN fails too
            raise ValueError(
                f"step_cost must be >= 0 and < 1 / (max_attempts * (routine_length + 2) + 1) "
                f"= {limit:.6g}, so that a success always returns more than a failure; "
                f"got {step_cost!r}"
            )
        if A > 1 and float(step_cost) == 0.0:
            raise ValueError(
                f"max_attempts={A} needs step_cost > 0: with free retries a mistake on an early "
                "attempt costs nothing, so its optimal action gap (the critical annotation) "
                "would be 0 although the choice matters to any other policy"
            )
        names = text.MODULE_NAMES[:M]
        patch_order = tuple(int(x) for x in np.random.default_rng(seed).permutation(P))
        patch0 = 1 + M * (L - 2)
        symptom_texts, patch_texts = text.vocabulary_texts(vocabulary, patch_order)
        self._derive(
            num_modules=M,
            num_patches=P,
            routine_length=L,
            signal_noise=noise,
            max_attempts=A,
            step_cost=float(step_cost),
            layout_seed=seed,
            module_names=names,  # MODULE_NAMES[:num_modules]
            patch_order=patch_order,  # [j]: the symptom candidate patch j addresses
            correct_patch=tuple(patch_order.index(k) for k in range(P)),  # [k]: fixes symptom k
            symptom_texts=symptom_texts,  # [k]: the error symptom k raises
            patch_texts=patch_texts,  # [j]: the description of candidate patch j
            num_sections=L - 2,  # navigation turns per fix
            first_patch_action=text.OPEN + M,  # apply_patch <module 0> 0 (open <m>: OPEN + m)
            tool_calls=text.tool_calls(names, P),  # the text form of every action
            max_text_length=1024 + 48 * (M + 2 * P),  # bound on a text observation's length
            _longest=longest,
            _num_actions=text.OPEN + M + M * P,
            _obs_dim=3 * M + P + 11,
            _patch0=patch0,  # state_id layout: see the class docstring
            _patched0=patch0 + M,
            _tested0=patch0 + 3 * M,
            _done0=patch0 + 5 * M,
            _positions=patch0 + 7 * M,
            _num_states=M * M * P * 2 * A * (patch0 + 7 * M),
        )
        initial = []  # bug and symptom uniform; the report right with probability 1 - noise
        for bug, symptom, pointer in itertools.product(range(M), range(P), range(M)):
            p = (1.0 - noise) if pointer == bug else noise / (M - 1)
            if p > 0.0:
                state = CodeState(bug, pointer, symptom, 0, 0, TRIAGE, 0, 0, 0)
                initial.append((p / (M * P), state))
        self._derive(_initial=tuple(initial), _records={}, _last=[(None, None)])

    # ----------------------------------------------------------------------------- sizes
    @property
    def num_states(self) -> int:
        return self._num_states

    @property
    def num_actions(self) -> int:
        return self._num_actions

    @property
    def observation_space(self) -> gym.spaces.Box:
        """The vector observation (``obs_mode="vector"``), ``Box(0, 1, (3M + P + 11,))``."""
        return gym.spaces.Box(0.0, 1.0, (self._obs_dim,), np.float32)

    @property
    def decision_density(self) -> float:
        """rho of a first-attempt fix without the log, ``K / (routine_length + 2)``: ``K = 2``
        critical turns (module, patch), 3 when a retry is allowed (the submit decides too)."""
        return (2 + (self.max_attempts > 1)) / (self.routine_length + 2)

    @property
    def max_episode_length(self) -> int:
        """The longest episode of valid actions, ``max_attempts * (routine_length + 2) + 1``."""
        return self._longest

    # ----------------------------------------------------------------------- the dynamics
    def initial_outcomes(self) -> Sequence[tuple[float, CodeState]]:
        """The hidden state: bug and symptom uniform, the report right w.p. ``1 - noise``."""
        return self._initial

    def transitions(self, state: CodeState) -> list[tuple[int, CodeState]]:
        """The valid actions of ``state`` and the (deterministic) next state of each."""
        bug, pointer, symptom, log_read, attempt, phase, module, progress, _ = state
        if phase == TRIAGE:
            read = CodeState(bug, pointer, symptom, 1, attempt, TRIAGE, 0, 0, 0)
            out = [] if log_read else [(text.READ_LOG, read)]
            to = NAVIGATE if self.num_sections > 0 else PATCH
            return out + [
                (text.OPEN + m, CodeState(bug, pointer, symptom, log_read, attempt, to, m, 0, 0))
                for m in range(self.num_modules)
            ]
        head = (bug, pointer, symptom, log_read, attempt)
        if phase == NAVIGATE:
            if progress + 1 < self.num_sections:
                nxt = CodeState(*head, NAVIGATE, module, progress + 1, 0)
            else:
                nxt = CodeState(*head, PATCH, module, 0, 0)
            return [(text.SCROLL, nxt), (text.READ, nxt)]
        if phase == PATCH:
            P = self.num_patches
            fix = self.correct_patch[symptom] if module == bug else -1
            first = self.first_patch_action + module * P
            return [
                (first + j, CodeState(*head, PATCHED, module, 0, int(j == fix))) for j in range(P)
            ]
        if phase == PATCHED:
            nxt = CodeState(*head, TESTED, module, 0, state.fixed)
            return [(text.RUN_TESTS, nxt), (text.RUN_RELATED, nxt)]
        if phase == TESTED:
            out = [(text.SUBMIT, CodeState(*head, DONE, module, 0, state.fixed))]
            if attempt + 1 < self.max_attempts:
                back = CodeState(bug, pointer, symptom, log_read, attempt + 1, TRIAGE, 0, 0, 0)
                out.append((text.REVERT, back))
            return out
        return []  # done: terminal

    def _record(self, state: CodeState) -> _Record:
        """Everything a step needs about ``state``, computed once (a step asks about the state it
        reaches several times: the last one is kept at hand, as one tuple so threads may share)."""
        last, record = self._last[0]
        if last is not state:
            record = self._records.get(state)
            if record is None:
                record = self._records[state] = self._build_record(state)
            self._last[0] = (state, record)
        return record

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "_records": {}, "_last": [(None, None)]}  # caches

    def _build_record(self, state: CodeState) -> _Record:
        n = self.num_actions
        cost = 0.0 - self.step_cost  # 0.0, not -0.0, without a cost
        stay: tuple[Outcome, ...] = ((1.0, state, cost, False),)
        row = [stay] * n  # invalid actions: self-loops
        mask = np.zeros(n, dtype=bool)
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

    def outcomes(self, state: CodeState, action: int) -> Sequence[Outcome]:
        """Deterministic; an invalid action is a no-op self-loop (costing ``step_cost``)."""
        return self._record(state).row[action]

    def state_id(self, state: CodeState) -> int:
        return self._record(state).state_id

    def _compute_id(self, state: CodeState) -> int:
        bug, pointer, symptom, log_read, attempt, phase, module, progress, fixed = state
        M, P, A = self.num_modules, self.num_patches, self.max_attempts
        block = (((bug * M + pointer) * P + symptom) * 2 + log_read) * A + attempt
        if phase == TRIAGE:
            pos = 0
        elif phase == NAVIGATE:
            pos = 1 + module * self.num_sections + progress
        elif phase == PATCH:
            pos = self._patch0 + module
        else:
            base = (self._patched0, self._tested0, self._done0)[phase - PATCHED]
            pos = base + 2 * module + fixed
        return block * self._positions + pos

    def state_from_id(self, state_id: int) -> CodeState:
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
            module, progress = divmod(pos - 1, self.num_sections)
        elif pos < self._patched0:
            phase, module = PATCH, pos - self._patch0
        else:
            phase = PATCHED + (pos - self._patched0) // (2 * M)
            module, fixed = divmod((pos - self._patched0) % (2 * M), 2)
        return CodeState(bug, pointer, symptom, log_read, attempt, phase, module, progress, fixed)

    def _vector(self, state: CodeState) -> np.ndarray:
        """The vector observation of ``state`` (see the env's docstring), ``(3M + P + 11,)``."""
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

    def observe(self, state: CodeState) -> np.ndarray:
        """The vector observation of ``state`` (a fresh array)."""
        return self._record(state).vector.copy()

    def is_critical(self, state: CodeState) -> bool:
        """Triage, the patch in the buggy module, and the submit-or-revert choice with an attempt
        left (by the rules, cheaper than the model; a test checks it against the exact gap)."""
        return self._record(state).critical

    def is_success(self, state: CodeState) -> bool:
        return state.phase == DONE and state.fixed == 1

    def turn_score(self, state: CodeState) -> float:
        """1.0 while the applied patch fixes the bug (until a ``revert``), else 0.0."""
        return float(state.fixed)

    @property
    def hides_outcome(self) -> bool:  # type: ignore[override]
        """v0's words (``"meaningful"``) match each symptom to its patch in the text view."""
        return self.vocabulary == "arbitrary"

    def reveals_outcome(self, state: CodeState) -> bool:
        """The test report (tested, done) says whether the applied patch works, by design."""
        return state.phase in (TESTED, DONE)

    def describe(self, state: CodeState) -> str:
        """What the agent knows of ``state`` (nothing hidden: a function of its observation)."""
        return text.describe(self, state)

    # ------------------------------------------------------------------- masks and the model
    def action_mask(self, state: CodeState) -> np.ndarray:
        """The valid actions of ``state``, shape ``(num_actions,)`` bool, read-only."""
        return self._record(state).mask

    # -------------------------------------------------------------------------- tool calls
    def action_text(self, action: int) -> str:
        """The text form of ``action`` (e.g. ``"apply_patch parser 2"``)."""
        return self.tool_calls[check_discrete_action(action, self.num_actions)]

    def parse_action(self, call: str) -> int:
        """Map a tool call written as text (``"open parser"``) to its action; a malformed call
        raises ``InvalidActionError`` naming the problem (see ``code_fix_text.parse_tool_call``)."""
        try:
            return text.parse_tool_call(self, call)
        except text.MalformedCallError as error:
            raise InvalidActionError(str(error)) from None

    def text_observation(
        self, state: CodeState, action: int | None = None, invalid: bool = False
    ) -> str:
        """The text observation of ``state`` reached by the call ``action`` (``None``: the
        episode start), ``invalid`` when that call was a no-op."""
        return text.text_observation(self, state, action, invalid)

    def build_text_view(self) -> TextView:
        """The tools of a session and its transcript as the text (for ``obs_mode="text"``:
        :func:`~routine_envs.rendering.code_fix_text.code_fix_view`)."""
        return text.code_fix_view(self)


class CodeFixEnv(RoutineEnv[Any, CodeState], dynamics=CodeFixDynamics):
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
    information in them does not). The words of the symptoms and of the candidate patches are
    set by ``vocabulary``: ``"meaningful"`` (CodeFix-v0) writes the error message
    (``IndexError: list index out of range``) and the fix each patch makes (``fix the off-by-one
    loop bound``); ``"arbitrary"`` (CodeFix-v1) writes opaque codes (``Failure F-3a``,
    ``change set P-17``), the same in every layout, sharing no word.

    **What the observation reveals.** Of the hidden part of the state (the buggy module ``bug``,
    whether the applied patch works ``fixed``, and the layout's map from symptom to fixing
    patch), in both modes and both versions: from the start, the module the report points to
    (the buggy one with probability ``1 - signal_noise``) and the symptom; once ``read_log``
    ran, the buggy module itself; once the tests ran on a patch (phases tested and done, until a
    ``revert``), whether it fixes the bug; after a failed ``submit`` (the episode is over), the
    buggy module and the index of the right patch (the text only). Also the agent's own doing:
    the open module, the phase, the attempt (the text also echoes each call, the applied patch
    included; the vector does not show which patch was applied). Nothing else: the annotation,
    the state id and the layout are never shown. The vector mode names the symptom and the
    candidates by their indices only, so it tells nothing of which patch fixes which symptom in
    either version: the map is set by ``layout_seed`` and is learned from the test results. The
    text of CodeFix-v0 gives it away: a patch's words match its symptom's, and a script that
    matches words (read the log, open the module it names, apply the candidate sharing the most
    words with the error) fixes every bug without learning anything
    (``tests/test_code_fix_v1.py`` measures it). In CodeFix-v1, for the same hidden bug, report
    and symptom and the same calls, the observations (vector and text) and ``describe()`` are
    the same under every ``layout_seed`` in every state but those after a test run (tested,
    done), where only the test result differs (and, after a failed submit, the right patch it
    names); the state reached differs only in ``fixed``. So the right patch shows only through
    interaction, and the word matcher succeeds at chance, ``1 / num_patches``.

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
    ``state_id`` on every ``reset``/``step``, with ``anchor`` (a stable hash of the observation);
    ``success`` (the submitted patch fixes the bug), ``num_critical``, ``episode_length`` and
    ``decision_density`` at the end. Also, on every ``reset``/``step``: ``invalid_action`` (bool:
    the action just taken was a no-op) and ``action_mask`` (the valid actions of the state just
    observed: ``action_masks()`` then). ``turn_score`` (privileged): 1.0 while the applied
    patch makes the failing test pass (even before the agent runs the tests), else 0.0.

    ``critical`` is the optimal action gap *over the valid actions* at ``gamma = 1``. In the model
    an invalid action is the no-op it is in ``step``: a self-loop paying ``-step_cost``. With
    ``step_cost = 0`` its ``Q*`` equals ``V*`` of the state, so ``optimal().action_gap > 0`` on
    exactly the critical states; with ``step_cost > 0`` use ``valid_action_gap(optimal())``, which
    is ``dynamics.action_gaps()`` (``optimal().action_gap`` also counts the self-loop, which costs
    a step). The masks of every state are ``env.unwrapped.mask_table()``, shape ``(num_states,
    num_actions)``, or ``action_masks_of(state_id)``; ``masked_uniform_policy()`` is a tabular
    policy for ``oracle``. ``oracle(policy)`` is exact after finitely many sweeps for policies
    that give invalid actions probability 0 (as ``MaskablePPO``'s do); a policy that takes no-ops
    with positive probability has self-loops, and its values converge only geometrically.

    ## Arguments

    ```python
    gym.make("CodeFix-v0", num_modules=4, num_patches=3, routine_length=10, signal_noise=0.05,
             max_attempts=1, step_cost=0.0, obs_mode="vector", max_steps=None, layout_seed=0,
             vocabulary="meaningful", render_mode=None)  # CodeFix-v1: vocabulary="arbitrary"
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
      module), so the patch for each symptom can be learned (in CodeFix-v1, only by trying).
    - ``vocabulary`` (``"meaningful"`` or ``"arbitrary"``): the words of the symptoms and the
      patches in the text observation, ``describe()`` and ``render()`` (see Observation Space).
      CodeFix-v0 registers ``"meaningful"`` (the class default), CodeFix-v1 ``"arbitrary"``.
    - ``render_mode`` (``None``, ``"ansi"``, ``"rgb_array"`` or ``"human"``: the text picture
      printed at every reset and step).

    The MDP is public: ``env.unwrapped.dynamics`` is an immutable :class:`CodeFixDynamics` over
    the hidden state (outcomes, ``state_id`` and its inverse, the vector observation, criticality,
    masks, ``decision_density``, ``max_episode_length`` (the longest valid episode),
    ``tool_calls`` (the text form of every action), ``text_observation(state, action)``, state
    descriptions), with the exact model ``dynamics.model()`` and the perfect critic
    ``dynamics.oracle(policy)`` (exact ``Q^pi``, ``V^pi``, ``A^pi``), all forwarded by the env,
    as is ``describe_state(state_id)`` (a :class:`CodeState`). ``copy.deepcopy(env)`` is an
    independent branch with the same future for the same actions.

    ## Example Episode

    ``gym.make("CodeFix-v0", routine_length=4, obs_mode="text", signal_noise=0.2)``,
    ``reset(seed=8)`` (CodeFix-v0's words; CodeFix-v1 shows the same episode with ``Failure
    F-3a`` for the error and ``change set P-17``, ``P-42``, ``P-08`` for the candidates): the
    report points to ``codegen``; the log shows that the bug is in ``optimizer``. After each
    call: the reward, the annotation of the state reached (in which the next call is made) and
    its text observation. Reading the log adds a critical turn: ``rho = 3 / (3 + 4)``.
    (Generated by ``example_transcript(CodeFixEnv(**EXAMPLE_KWARGS))`` of
    ``routine_envs.rendering.code_fix``; a test keeps it up to date.)

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
    - v1: ``vocabulary="arbitrary"``. In v0 the text of each candidate patch said the fix its
      symptom's error calls for, so the text observation gave away which patch is right and a
      word-matching script solved every episode without a test run, while in the tasks this
      stands for only the tests tell whether a fix works. v1 names the symptoms and patches by
      opaque codes, the same in every layout, so the right patch shows only through interaction.
      The dynamics, state ids, annotations, masks, rewards, info and vector observation are v0's.
    """

    def __init__(
        self,
        *args: Any,
        obs_mode: str = "vector",
        max_steps: int | None = None,
        render_mode: str | None = None,
        **config: Any,
    ) -> None:
        dynamics = self.make_dynamics(*args, **config)
        #: ``"vector"`` (``dynamics.observe``) or ``"text"`` (the transcript of the last call).
        self.obs_mode = validation.choice("obs_mode", obs_mode, OBS_MODES)
        if max_steps is None:
            max_steps = 4 * dynamics.max_episode_length
        super().__init__(dynamics, render_mode=render_mode, max_steps=max_steps)
        if self.obs_mode == "text":
            self.observation_space = gym.spaces.Text(
                dynamics.max_text_length, min_length=1, charset=text.TEXT_CHARSET
            )
            self.observation_shows_history = True  # the text echoes the last call

    def _observation(self) -> Any:
        if self.obs_mode == "vector":
            return self.dynamics.observe(self._state)
        action, invalid = text.last_call(self.dynamics, self.history)
        return self.dynamics.text_observation(self._state, action, invalid)

    # ------------------------------------------------------------------ masks and tool calls
    def action_masks(self) -> np.ndarray:
        """Valid actions of the current state, shape ``(num_actions,)`` bool (a fresh array;
        the protocol of sb3-contrib's ``MaskablePPO``)."""
        return self.dynamics.action_mask(self.state).copy()

    def action_masks_of(self, state_id: int) -> np.ndarray:
        """Valid actions of the state with id ``state_id``, shape ``(num_actions,)`` bool."""
        dynamics = self.dynamics
        return dynamics.action_mask(dynamics.state_from_id(state_id)).copy()

    def valid_actions(self) -> list[int]:
        """The valid actions of the current state, ascending."""
        return np.flatnonzero(self.dynamics.action_mask(self.state)).tolist()

    def valid_tool_calls(self) -> list[str]:
        """The text forms of the valid actions of the current state."""
        return [self.dynamics.tool_calls[a] for a in self.valid_actions()]
