"""The words of Code Fix: names, tool calls, error messages, the text an agent reads and its
text view for language-model agents.

Kept apart from the dynamics (:mod:`routine_envs.envs.code_fix`), which decide what happens; this
module only says it. Everything here is a function of a ``CodeFixDynamics`` (read through its
public attributes), a ``CodeState`` and an episode's history (``states`` and ``actions``); like
every module of :mod:`routine_envs.rendering` it imports no environment, so the dynamics, the
renderer and the text interface can all use it.
"""

from __future__ import annotations

import string
from typing import Any, Final

from routine_envs.rendering.text_view import Call, Param, TextView, Tool

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
#: the vocabularies of the symptoms and patches (``CodeFixDynamics.vocabulary``).
VOCABULARIES: Final = ("meaningful", "arbitrary")
#: ``vocabulary="arbitrary"`` (CodeFix-v1): the error of symptom ``k`` and the description of
#: candidate patch ``j`` (by its place in the list, whichever symptom it addresses). Opaque codes
#: with no word in common, the same in every layout: which patch fixes which symptom is set by
#: ``layout_seed`` alone and shows only through interaction (the test run, the submit).
ARBITRARY_SYMPTOMS: Final = tuple(
    f"Failure F-{code}" for code in ("3a", "c1", "7e", "0b", "d9", "4f", "e2", "6c")
)
ARBITRARY_PATCHES: Final = tuple(
    f"change set P-{code}" for code in ("17", "42", "08", "93", "61", "25", "70", "34")
)
TESTS_PER_MODULE: Final = 12

# phases of a session
TRIAGE, NAVIGATE, PATCH, PATCHED, TESTED, DONE = range(6)
PHASE_NAMES: Final = ("triage", "navigate", "patch", "patched", "tested", "done")

# fixed tool actions; then ``open <module>`` and ``apply_patch <module> <k>``
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


class MalformedCallError(ValueError):
    """A tool call written as text that names no action (``CodeFixDynamics.parse_action``
    raises it as an ``InvalidActionError``)."""


def vocabulary_texts(
    vocabulary: str, patch_order: tuple[int, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The symptom texts (``[k]``: the error symptom ``k`` raises) and the patch texts (``[j]``:
    the description of candidate ``j``) of ``vocabulary``, for the candidate order
    ``patch_order`` (``[j]``: the symptom candidate ``j`` addresses).

    ``"meaningful"`` (CodeFix-v0): the error message and the fix it calls for, so the words of a
    patch match its symptom's. ``"arbitrary"`` (CodeFix-v1): opaque codes that depend neither on
    the symptom a patch addresses nor on the layout."""
    P = len(patch_order)
    if vocabulary == "meaningful":
        return (
            tuple(SYMPTOMS[k][0] for k in range(P)),
            tuple(SYMPTOMS[k][1] for k in patch_order),
        )
    return ARBITRARY_SYMPTOMS[:P], ARBITRARY_PATCHES[:P]


def tool_calls(module_names: tuple[str, ...], num_patches: int) -> tuple[str, ...]:
    """The text form of every action, in action order."""
    return (
        *SIMPLE_TOOLS,
        *(f"open {name}" for name in module_names),
        *(f"apply_patch {name} {j}" for name in module_names for j in range(num_patches)),
    )


def last_call(dynamics: Any, history: Any) -> tuple[int | None, bool]:
    """The last call of an episode (``None`` at its start) and whether it was invalid (masked
    out in the state it was made in: a no-op)."""
    if not history.actions:
        return None, False
    action = history.actions[-1]
    return action, not bool(dynamics.action_mask(history.states[-2])[action])


def last_applied_patch(dynamics: Any, history: Any) -> int | None:
    """The candidate index of the last patch applied in the episode (``None``: none yet)."""
    first = dynamics.first_patch_action
    for i in range(len(history.actions) - 1, -1, -1):
        action = history.actions[i]
        if action >= first and history.states[i + 1] != history.states[i]:  # valid: applied
            return (action - first) % dynamics.num_patches
    return None


# ------------------------------------------------------------------------------- parsing
#: the longest piece of a malformed call echoed in an error message (characters).
MAX_ECHO = 80


def _shown(call: str) -> str:
    """``call`` as quoted in an error message: its repr, cut to :data:`MAX_ECHO` characters
    (a 1 MB input must not become a 2 MB message)."""
    text = repr(call)
    return text if len(text) <= MAX_ECHO else f"{text[: MAX_ECHO - 20]}... ({len(call):,} chars)"


def parse_tool_call(dynamics: Any, call: str) -> int:
    """Map a tool call written as text to its action.

    Tokens are separated by whitespace; tool and module names are case-insensitive:
    ``"read_log"``, ``"open parser"``, ``"apply_patch parser 2"``. A well-formed call that is not
    valid in the current state still parses (the step is then a flagged no-op).

    Raises:
        MalformedCallError: (a ``ValueError``) for a malformed call, naming the problem.
    """
    if not isinstance(call, str):
        raise MalformedCallError(
            f"a tool call must be a string, got {_shown(call)} of type {type(call).__name__}"
        )
    tokens = call.split()
    if not tokens:
        raise MalformedCallError(f"empty tool call; tools: {_tool_summary()}")
    tool, args = tokens[0].lower(), tokens[1:]
    modules = ", ".join(dynamics.module_names)
    if tool in SIMPLE_TOOLS:
        if args:
            raise MalformedCallError(
                f"{tool} takes no arguments, got {len(args)} in {_shown(call)}"
            )
        return SIMPLE_TOOLS.index(tool)
    if tool == "open":
        if len(args) != 1:
            raise MalformedCallError(
                f"open takes 1 argument (a module: {modules}), got {len(args)} in {_shown(call)}"
            )
        return OPEN + _parse_module(dynamics, args[0], call)
    if tool == "apply_patch":
        P = dynamics.num_patches
        if len(args) != 2:
            raise MalformedCallError(
                "apply_patch takes 2 arguments (a module and a patch index 0.."
                f"{P - 1}), got {len(args)} in {_shown(call)}"
            )
        m = _parse_module(dynamics, args[0], call)
        j = args[1]
        if not (j.isascii() and j.isdigit()) or len(j) > 6 or int(j) >= P:
            raise MalformedCallError(
                f"patch index must be an integer in 0..{P - 1}, got {_shown(j)} in {_shown(call)}"
            )
        return dynamics.first_patch_action + m * P + int(j)
    raise MalformedCallError(
        f"unknown tool {_shown(tokens[0])} in {_shown(call)}; tools: {_tool_summary()}"
    )


def _parse_module(dynamics: Any, name: str, call: str) -> int:
    names = dynamics.module_names
    lowered = name.lower()
    if lowered not in names:
        raise MalformedCallError(
            f"unknown module {_shown(name)} in {_shown(call)}; modules: {', '.join(names)}"
        )
    return names.index(lowered)


def _tool_summary() -> str:
    return ", ".join((*SIMPLE_TOOLS, "open <module>", "apply_patch <module> <k>"))


# -------------------------------------------------------------------- what the agent reads
def text_observation(dynamics: Any, state: Any, action: int | None, invalid: bool) -> str:
    """The text observation of ``state`` reached by the call ``action`` (``None``: the episode
    start), ``invalid`` when that call was a no-op."""
    calls = dynamics.tool_calls
    if action is None:
        lines = ["$ pytest -q", *_failure_lines(dynamics, state), _summary(dynamics, False)]
    else:
        call = calls[action]
        lines = [f"$ {call}"]
        if invalid:
            lines.append(
                f"error: `{call}` is not valid now ({_why_invalid(dynamics, state, action)})"
                "; nothing changed."
            )
        else:
            lines += _output(dynamics, state, action)
    if state.phase != DONE:
        valid = [calls[a] for a, ok in enumerate(dynamics.action_mask(state)) if ok]
        lines.append("valid: " + " | ".join(valid))
    return "\n".join(lines) + "\n"


def describe(dynamics: Any, state: Any) -> str:
    """What the agent knows about ``state`` (everything its observation shows, nothing hidden:
    the buggy module only once the log is read, whether the patch works only once tested)."""
    names = dynamics.module_names
    parts = [
        f"attempt {state.attempt + 1}/{dynamics.max_attempts}",
        f"the failing test is tests/test_{names[state.pointer]}.py "
        f"({dynamics.symptom_texts[state.symptom]})",
        f"the log names src/{names[state.bug]}.py" if state.log_read else "the log is unread",
    ]
    name, phase = names[state.module], state.phase
    if phase == TRIAGE:
        parts.append("triage: no module open")
    elif phase == NAVIGATE:
        parts.append(f"src/{name}.py open, {state.progress}/{dynamics.num_sections} sections read")
    elif phase == PATCH:
        parts.append(f"at the failing code of src/{name}.py, no patch applied")
    elif phase == PATCHED:
        parts.append(f"a patch applied to src/{name}.py, not tested")
    else:
        result = "pass" if state.fixed else "fail"
        done = "submitted" if phase == DONE else "not submitted"
        parts.append(f"a patch applied to src/{name}.py, the tests {result}, {done}")
    return "; ".join(parts)


def _failure_lines(dynamics: Any, state: Any) -> list[str]:
    name = dynamics.module_names[state.pointer]
    return [f"FAILED tests/test_{name}.py::test_main - {dynamics.symptom_texts[state.symptom]}"]


def _summary(dynamics: Any, passed: bool) -> str:
    total = TESTS_PER_MODULE * dynamics.num_modules
    return f"{total} passed" if passed else f"1 failed, {total - 1} passed"


def _listing(dynamics: Any, state: Any) -> list[str]:
    m = state.module
    name = dynamics.module_names[m]
    lines = [
        f"Reached {FUNCTION_NAMES[m]}() in src/{name}.py, on the failing test's code path.",
        f"The failing test raises {dynamics.symptom_texts[state.symptom]}",
        f"Candidate patches for src/{name}.py:",
    ]
    lines += [f"  {j}: {desc}" for j, desc in enumerate(dynamics.patch_texts)]
    return lines


def _output(dynamics: Any, state: Any, action: int) -> list[str]:
    names = dynamics.module_names
    name = names[state.module]
    N = dynamics.num_sections
    first_patch = dynamics.first_patch_action
    if action == READ_LOG:
        return [
            "Traceback (most recent call last):",
            f'  File "tests/test_{names[state.pointer]}.py", line 27, in test_main',
            f'  File "src/{names[state.bug]}.py", line 118, in {FUNCTION_NAMES[state.bug]}',
            dynamics.symptom_texts[state.symptom],
        ]
    if action in (SCROLL, READ) or OPEN <= action < first_patch:
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
        return [head, *_listing(dynamics, state)] if state.phase == PATCH else [head]
    if action >= first_patch:
        j = (action - first_patch) % dynamics.num_patches
        return [f"Applied patch {j} to src/{name}.py: {dynamics.patch_texts[j]}."]
    if action == RUN_TESTS:
        if state.fixed:
            return [_summary(dynamics, True)]
        return [*_failure_lines(dynamics, state), _summary(dynamics, False)]
    if action == RUN_RELATED:
        reported = names[state.pointer]
        if state.fixed:
            return [f"tests/test_{reported}.py: {TESTS_PER_MODULE} passed"]
        return [
            *_failure_lines(dynamics, state),
            f"tests/test_{reported}.py: 1 failed, {TESTS_PER_MODULE - 1} passed",
        ]
    if action == REVERT:
        return [
            f"Reverted the patch. Attempt {state.attempt + 1} of {dynamics.max_attempts}; "
            "still failing:",
            *_failure_lines(dynamics, state),
        ]
    # submit
    if state.fixed:
        return ["Submitted. Hidden tests passed: the bug is fixed."]
    fix = dynamics.correct_patch[state.symptom]
    return [
        f"Submitted. Hidden tests failed: the bug was in src/{names[state.bug]}.py "
        f"(patch {fix} fixes it)."
    ]


def _why_invalid(dynamics: Any, state: Any, action: int) -> str:
    phase = PHASE_NAMES[state.phase]
    if action == READ_LOG:
        return "the log was already read" if state.log_read else "only during triage"
    if action in (SCROLL, READ):
        return f"only while navigating an open module; phase is {phase}"
    if action in (RUN_TESTS, RUN_RELATED):
        return f"only right after a patch is applied; phase is {phase}"
    if action == REVERT:
        if dynamics.max_attempts == 1:
            return "this session allows a single attempt"
        return f"only after the tests ran, with an attempt left; phase is {phase}"
    if action == SUBMIT:
        return f"apply a patch and run the tests first; phase is {phase}"
    if action < dynamics.first_patch_action:
        return f"only during triage (one module per attempt); phase is {phase}"
    m = (action - dynamics.first_patch_action) // dynamics.num_patches
    if state.phase == PATCH:
        names = dynamics.module_names
        return f"the open module is {names[state.module]}, not {names[m]}"
    return f"only at the failing code of the open module; phase is {phase}"


# ---------------------------------------------------------------------------- text view
def code_fix_view(dynamics: Any) -> TextView:
    """The text view of a ``CodeFixDynamics`` (for the env in ``obs_mode="text"``, whose
    observation is the transcript an agent reads: the view shows it as it is)."""
    modules = tuple(dynamics.module_names)
    patches = tuple(range(dynamics.num_patches))
    module = Param("module", "string", modules, "a module of the repository")
    descriptions = {
        "read_log": "Read the failing test's log (in triage).",
        "scroll": "Scroll to the next section of the open module.",
        "read": "Read the next function of the open module.",
        "run_tests": "Run the whole test suite (after a patch).",
        "run_related_tests": "Run the tests of the failing module (after a patch).",
        "revert": "Undo the patch and start the next attempt (after the tests ran).",
        "submit": "Submit the fix; the hidden tests decide the reward (after the tests ran).",
    }
    tools = (
        *(Tool(name, descriptions[name]) for name in SIMPLE_TOOLS),
        Tool("open", "Open a module (in triage).", (module,)),
        Tool(
            "apply_patch",
            "Apply a candidate patch to the open module (at its failing code).",
            (module, Param("patch", "integer", patches, "the candidate patch's index")),
        ),
    )
    calls: list[Call] = []
    for text in dynamics.tool_calls:  # the env's own text form of each action
        name, *args = text.split()
        calls.append((name, tuple(int(x) if x.isdigit() else x for x in args)))
    return TextView(
        name="Code Fix",
        task=(
            "You are a coding agent fixing a bug in a repository: one test fails. Find the "
            "buggy module, apply the patch that fixes it, run the tests and submit."
        ),
        rules=(
            "Each reply is one tool call; its output is shown to you, with the calls valid now.",
            "A call that is not valid now changes nothing.",
            f"You may try {dynamics.max_attempts} patch(es); submitting ends the episode.",
            "The reward is 1 when the submitted patch fixes the bug, else 0"
            + (f", minus {dynamics.step_cost:g} per call." if dynamics.step_cost else "."),
        ),
        tools=tools,
        calls=tuple(calls),
        describe=str,
    )
