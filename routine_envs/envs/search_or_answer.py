"""Search or Answer: the agent decides when to stop, so the episode length is the policy's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np

from routine_envs.dynamics import Dynamics
from routine_envs.envs import validation
from routine_envs.envs.base import RoutineEnv
from routine_envs.oracle import Outcome

#: the largest configuration built: ``num_candidates * (max_searches + 1) * 2 *
#: (reading_length + 4)`` state ids (the exact model is searched state by state).
MAX_STATES = 2_000_000
RUNNING, RIGHT, WRONG, GAVE_UP = range(4)
SEARCH = 0


class SearchState(NamedTuple):
    """The underlying state: ``answer`` the hidden right candidate; ``searches`` used so far;
    ``found`` (0/1) whether a search has turned it up; ``reading`` 0 at a decision, ``1..L``
    while reading a search's results; ``outcome`` ``RUNNING``, ``RIGHT``, ``WRONG`` or
    ``GAVE_UP`` (the last three terminal)."""

    answer: int
    searches: int
    found: int
    reading: int
    outcome: int


@dataclass(frozen=True)
class SearchDynamics(Dynamics[SearchState, np.ndarray]):
    """## Description
    A search agent answers a question whose answer is one of ``num_candidates`` candidates,
    hidden and uniform. At every decision it either **searches** again (a tool call that costs
    ``search_cost`` and turns the answer up with probability ``find_probability``; the agent
    then reads the results for ``reading_length`` routine turns) or **answers** a candidate,
    which ends the episode. So the number of turns is the policy's choice: the setting of search,
    tool-use and SWE agents, where per-turn normalisations that assume a fixed turn count are
    biased (verl RFC #7244; ``docs/estimators.md``). After ``max_searches`` searches, searching
    again gives up (the episode ends unanswered).

    Decision density. Every decision is critical (the exact optimal action gap is positive) and
    every reading turn routine, so an episode of ``n`` searches has ``n (1 + reading_length) + 1``
    turns of which ``n + 1`` are critical: ``rho = (n + 1) / (n (1 + L) + 1)``, ``1`` for an
    immediate answer and towards ``1 / (1 + L)`` for long searches. ``decision_density`` is its
    exact expectation under the best policy an agent can follow (``agent_plan()``: it sees the
    answer only once found).

    ## Action Space
    ``Discrete(1 + num_candidates)``: ``0`` searches (at a decision; gives up once the
    ``max_searches`` are used), ``1 + k`` answers candidate ``k``. While reading, every action
    reads on.

    ## Observation Space
    ``Box(0, 1, (num_candidates + 7,), float32)``: ``[0]`` searches used / ``max_searches``;
    ``[1]`` 1 at a decision; ``[2]`` reading progress (turns read / ``reading_length``); ``[3]``
    1 once the answer was found; ``[4 : 4 + K]`` one-hot the found candidate (zeros until found);
    ``[4 + K]`` 1 once the episode is over; ``[5 + K]`` 1 if it ended with the right answer;
    ``[6 + K]`` 1 if it ended by giving up.

    **What the observation reveals.** The hidden answer only once a search has found it (that
    is the point of searching: the evidence an agent reads; it still has to answer, and the
    outcome is decided by that answer), and whether the answer given was right only when the
    episode is over. Until the answer is found the observation is the same whatever the hidden
    answer, so a guess is right with probability ``1 / num_candidates``.

    ## Rewards
    ``-search_cost`` for every search (an intermediate reward), ``1`` for the right answer, ``0``
    for a wrong one or for giving up.

    ## Starting State
    At the first decision, no search made; the answer drawn uniformly on ``self.np_random``.

    ## Episode End
    Terminated by an answer or by giving up: at most ``max_searches (1 + reading_length) + 1``
    turns.

    ## Information
    The keys of :mod:`routine_envs.annotations`: ``critical``, ``state_id``, ``anchor`` and
    ``turn_score`` on every ``reset``/``step``; ``success`` (answered right), ``num_critical``,
    ``episode_length`` and ``decision_density`` at the end. ``turn_score`` (privileged) is the
    default one, the exact probability of answering right from the state under the optimal
    policy: ``1`` once the answer is found, before that the chance to find it with the searches
    the optimal policy still makes, or else to guess it.

    ## Arguments
    ```python
    gym.make("SearchOrAnswer-v0", num_candidates=4, max_searches=6, find_probability=0.4,
             search_cost=0.05, reading_length=2, max_steps=None, render_mode=None)
    ```

    - ``num_candidates`` (int, 2..50): the possible answers.
    - ``max_searches`` (int, 1..200): the search budget.
    - ``find_probability`` (in (0, 1]): the chance that a search turns the answer up.
    - ``search_cost`` (float, 0..1): the cost of a search (the intermediate reward is its
      negative). Below ``find_probability (1 - 1 / num_candidates)`` (the default) the optimal
      policy searches until it finds the answer or the budget is used up; above it, it answers at
      once.
    - ``reading_length`` (int, 0..10000): routine turns after each search; sets rho.
    - ``max_steps``, ``render_mode`` (``None``, ``"ansi"``, ``"human"``) as every env.
    At most 2,000,000 state ids (``num_candidates (max_searches + 1) 2 (reading_length + 4)``).

    ## Version History
    - v0: initial release.
    """

    num_candidates: int = 4
    max_searches: int = 6
    find_probability: float = 0.4
    search_cost: float = 0.05
    reading_length: int = 2

    density_kwarg = "reading_length"
    density_rule = "reading_length L: rho = (n + 1)/(n (1 + L) + 1) for n searches"
    small_config: ClassVar[dict[str, Any]] = {
        "num_candidates": 2,
        "max_searches": 2,
        "reading_length": 1,
    }

    def __post_init__(self) -> None:
        k = validation.integer("num_candidates", self.num_candidates, minimum=2, maximum=50)
        n = validation.integer("max_searches", self.max_searches, minimum=1, maximum=200)
        length = validation.integer("reading_length", self.reading_length, 0, 10_000)
        if validation.probability("find_probability", self.find_probability) == 0:
            raise ValueError(f"find_probability must be in (0, 1], got {self.find_probability!r}")
        cost = validation.probability("search_cost", self.search_cost)
        block = (n + 1) * 2
        if k * block * (length + 4) > MAX_STATES:
            raise ValueError(
                f"num_candidates * (max_searches + 1) * 2 * (reading_length + 4) must be at most "
                f"{MAX_STATES:,} state ids, got {k * block * (length + 4):,}"
            )
        self._derive(
            num_candidates=k,
            max_searches=n,
            reading_length=length,
            find_probability=float(self.find_probability),
            search_cost=cost,
            _running=k * block * (length + 1),  # the ids of running states come first
        )

    # ----------------------------------------------------------------------------- sizes
    num_states = property(
        lambda self: self._running + 3 * self.num_candidates * (self.max_searches + 1) * 2
    )
    num_actions = property(lambda self: 1 + self.num_candidates)
    observation_space = property(
        lambda self: gym.spaces.Box(0.0, 1.0, (self.num_candidates + 7,), np.float32)
    )

    @property
    def max_episode_length(self) -> int:
        """``max_searches (1 + reading_length) + 1`` turns: every search, then the answer."""
        return self.max_searches * (1 + self.reading_length) + 1

    @property
    def decision_density(self) -> float:
        """The exact expected rho (critical turns / turns) of the episodes of the best policy
        an agent can follow (:meth:`agent_plan`): ``E[(n + 1) / (n (1 + L) + 1)]`` over its
        number of searches ``n`` (every decision is critical)."""
        return self._cached("decision_density", self._expected_density)

    def _expected_density(self) -> float:
        search, _ = self.agent_plan()
        p, length = self.find_probability, self.reading_length

        def rho(n: int) -> float:
            return (n + 1) / (n * (1 + length) + 1)

        density, alive = 0.0, 1.0  # alive: P(at decision n with the answer not found)
        for n in range(self.max_searches + 1):
            if not search[n]:  # it answers now (at max_searches always)
                return density + alive * rho(n)
            density += alive * p * rho(n + 1)  # found by this search: answered after it
            alive *= 1.0 - p
        raise AssertionError("agent_plan searches at max_searches")  # pragma: no cover

    def agent_plan(self) -> tuple[np.ndarray, np.ndarray]:
        """The best policy an agent can follow (it sees the answer only once found): at a
        decision with ``n`` searches used and the answer not found, search again iff that is
        worth strictly more than guessing (``-search_cost + p + (1 - p) W(n + 1) > 1/K``, ``W``
        the value of such decisions, ``W(max_searches) = 1/K``); once found, answer it. Returns
        ``(search[n], success[n])``, shapes ``(max_searches + 1,)``: whether it searches at
        ``n`` (False at ``max_searches``) and its exact probability of answering right from
        there (1 once found)."""

        def build() -> tuple[np.ndarray, np.ndarray]:
            n_max, p, guess = self.max_searches, self.find_probability, 1.0 / self.num_candidates
            value, success = np.full(n_max + 1, guess), np.full(n_max + 1, guess)
            search = np.zeros(n_max + 1, dtype=bool)
            for n in range(n_max - 1, -1, -1):
                worth = -self.search_cost + p + (1.0 - p) * value[n + 1]
                if worth > guess:
                    search[n] = True
                    value[n] = worth
                    success[n] = p + (1.0 - p) * success[n + 1]
            search.setflags(write=False)
            success.setflags(write=False)
            return search, success

        return self._cached("agent_plan", build)

    def turn_score(self, state: SearchState) -> float:
        """The exact probability of answering right from ``state`` under :meth:`agent_plan`:
        1.0 once found, the plan's chance before (a reading turn scores as the decision it leads
        to); at the end 1.0 for the right answer, else 0.0."""
        if state.outcome != RUNNING:
            return float(state.outcome == RIGHT)
        return 1.0 if state.found else float(self.agent_plan()[1][state.searches])

    # ----------------------------------------------------------------------- the dynamics
    def action_names(self) -> tuple[str, ...]:
        return ("search", *(f"answer_{k}" for k in range(self.num_candidates)))

    def initial_outcomes(self) -> Sequence[tuple[float, SearchState]]:
        share = 1.0 / self.num_candidates
        return tuple((share, SearchState(a, 0, 0, 0, RUNNING)) for a in range(self.num_candidates))

    def outcomes(self, state: SearchState, action: int) -> Sequence[Outcome]:
        answer, searches, found, reading, _ = state
        if reading > 0:  # reading the results: routine, every action reads on
            after = reading + 1 if reading < self.reading_length else 0
            return ((1.0, SearchState(answer, searches, found, after, RUNNING), 0.0, False),)
        if action != SEARCH:
            right = action - 1 == answer
            end = SearchState(answer, searches, found, reading, RIGHT if right else WRONG)
            return ((1.0, end, float(right), True),)
        if searches == self.max_searches:  # no search left: giving up
            return ((1.0, SearchState(answer, searches, found, reading, GAVE_UP), 0.0, True),)
        reading = 1 if self.reading_length > 0 else 0
        cost = 0.0 - self.search_cost  # 0.0, not -0.0, without a cost
        hit = SearchState(answer, searches + 1, 1, reading, RUNNING)
        p = 1.0 if found else self.find_probability
        if p == 1.0:
            return ((1.0, hit, cost, False),)
        miss = SearchState(answer, searches + 1, 0, reading, RUNNING)
        return ((p, hit, cost, False), (1.0 - p, miss, cost, False))

    def state_id(self, state: SearchState) -> int:
        answer, searches, found, reading, outcome = state
        block = (answer * (self.max_searches + 1) + searches) * 2 + found
        if outcome == RUNNING:
            return block * (self.reading_length + 1) + reading
        return self._running + block * 3 + outcome - 1

    def state_from_id(self, state_id: int) -> SearchState:
        if not 0 <= state_id < self.num_states:
            raise ValueError(f"state_id must be in [0, {self.num_states}), got {state_id}")
        if state_id < self._running:
            block, reading = divmod(int(state_id), self.reading_length + 1)
            outcome = RUNNING
        else:
            block, end = divmod(int(state_id) - self._running, 3)
            reading, outcome = 0, end + 1
        rest, found = divmod(block, 2)
        answer, searches = divmod(rest, self.max_searches + 1)
        return SearchState(answer, searches, found, reading, outcome)

    def observe(self, state: SearchState) -> np.ndarray:
        answer, searches, found, reading, outcome = state
        k = self.num_candidates
        obs = np.zeros(k + 7, dtype=np.float32)
        obs[0] = searches / self.max_searches
        obs[1] = float(outcome == RUNNING and reading == 0)
        obs[2] = reading / self.reading_length if reading else 0.0
        if found:
            obs[3] = 1.0
            obs[4 + answer] = 1.0
        if outcome != RUNNING:
            obs[4 + k] = 1.0
            obs[5 + k] = float(outcome == RIGHT)
            obs[6 + k] = float(outcome == GAVE_UP)
        return obs

    def is_success(self, state: SearchState) -> bool:
        return state.outcome == RIGHT

    def describe(self, state: SearchState) -> str:
        """What the observation shows: the searches used, what was found, the outcome at the
        end (never the hidden answer before a search finds it)."""
        answer, searches, found, reading, outcome = state
        used = f"{searches} of {self.max_searches} searches used"
        seen = f"the answer is candidate {answer}" if found else "the answer is not found yet"
        if outcome == RIGHT:
            return f"answered right after {used}"
        if outcome == WRONG:
            return f"answered wrong after {used}" + (f" ({seen})" if found else "")
        if outcome == GAVE_UP:
            return f"gave up unanswered after {used}"
        if reading:
            return f"reading search {searches} ({reading} of {self.reading_length}): {seen}"
        return f"deciding: {used}; {seen}"


class SearchOrAnswerEnv(RoutineEnv[np.ndarray, SearchState], dynamics=SearchDynamics):
    """The env of :class:`SearchDynamics` (its docstring is the env's documentation), a module
    attribute so that its registered entry point is the string
    ``routine_envs.envs.search_or_answer:SearchOrAnswerEnv`` like every package env's."""

    __doc__ = SearchDynamics.__doc__
