"""Team Diluted Doors v1: the team game on Diluted Doors v1, whose observation hides outcomes."""

from __future__ import annotations

from dataclasses import dataclass

from routine_envs.envs import validation
from routine_envs.envs.diluted_doors_v1 import PathDoorsDynamics, PathState
from routine_envs.multiagent.base import TeamEnv
from routine_envs.multiagent.rendering import render_team_doors_v1
from routine_envs.multiagent.team_doors import TeamDoorsDynamics

#: the observation modes of the core a team may see (``"progress"``, v0's, shows outcomes).
TEAM_OBSERVATIONS = ("actions", "position")


@dataclass(frozen=True)
class TeamPathDoorsDynamics(TeamDoorsDynamics):
    """The exact MDP of Team Diluted Doors v1 (see :class:`TeamDilutedDoorsV1Env` for the
    rules): :class:`TeamDoorsDynamics` (the floor's chooser moves the joint state) on the
    single-agent :class:`PathDoorsDynamics` ``core`` (same joint states, ``state_id``, rewards
    and observation as ``DilutedDoors-v1``); one more field, the core's ``observation`` mode."""

    observation: str = "actions"

    renderer = staticmethod(render_team_doors_v1)
    core_version = "v1"

    def __post_init__(self) -> None:
        validation.choice("observation", self.observation, TEAM_OBSERVATIONS)
        super().__post_init__()

    def make_core(self) -> PathDoorsDynamics:
        """The single-agent dynamics of the configuration (``DilutedDoors-v1``'s)."""
        return PathDoorsDynamics(
            self.num_floors,
            self.num_doors,
            self.routine_length,
            self.reward,
            self.layout_seed,
            self.observation,
        )

    @property
    def hides_outcome(self) -> bool:  # type: ignore[override]
        """The core's (``"actions"`` and ``"position"`` hide every outcome until the end)."""
        return self.core.hides_outcome

    def num_correct(self, state: PathState) -> int:
        """Doors chosen correctly so far (privileged: never observed)."""
        return self.core.num_correct(state)


class TeamDilutedDoorsV1Env(
    TeamEnv[PathState], dynamics=TeamPathDoorsDynamics, name="diluted_doors_v1"
):
    """## Description

    Diluted Doors v1 (``DilutedDoors-v1``) played by a team of ``num_agents`` agents on one
    shared reward. The team crosses ``num_floors`` floors together. On each floor one
    *designated* agent, the floor's chooser, picks the door (one of ``num_doors``, exactly one
    correct, fixed by ``layout_seed``); every other agent's action on that step is ignored.
    Then come ``routine_length`` routine steps in the corridor, in which every agent's action is
    ignored. A wrong door does not end the episode. The chooser of floor ``f`` is agent
    ``f mod num_agents`` (``chooser="rotate"``, the default), one fixed agent (``chooser=k``),
    or given per floor (a sequence).

    The dynamics are the single-agent core's: the team's joint state is a
    :class:`~routine_envs.envs.diluted_doors_v1.PathState` (the doors chosen so far), and a
    joint action moves it exactly as the chooser's action alone moves ``DilutedDoors-v1`` (same
    transition function, same ``state_id``, same reward).

    **Per-agent decision density.** An episode lasts ``T = sum_f (1 + L_f)`` steps; agent ``i``
    is critical only at the doors of the floors it chooses (``n_i`` of them) while the return
    can still change, so in an episode without a wrong door ``rho_i = n_i / T``; with a fixed
    ``L``, ``n_i / (num_floors * (1 + L))``, and ``1 / (num_agents * (1 + L))`` for every agent
    with the rotating chooser and ``num_floors`` a multiple of ``num_agents`` (the default). With
    ``reward="success"`` the doors after a wrong one are not critical.

    ## Agents

    ``possible_agents = ["agent_0", ..., "agent_{num_agents-1}"]``; every agent acts on every
    step and all leave ``env.agents`` together when the episode ends.

    ## Action Space

    ``Discrete(num_doors)`` per agent. The chooser's action ``k`` at the doors opens door ``k``;
    every other action is ignored.

    ## Observation Space

    ``Box(0, 1, (size + num_agents + 1,), float32)`` per agent, with ``size`` the length of
    ``DilutedDoors-v1``'s observation in the ``observation`` mode (``num_floors + 4 +
    num_floors * num_doors`` for ``"actions"``, ``num_floors + 4`` for ``"position"``):

    | index | meaning |
    |---|---|
    | ``0 .. size-1`` | ``DilutedDoors-v1``'s observation of the joint state |
    | ``size .. size+num_agents-1`` | one-hot of the observing agent's index |
    | ``size+num_agents`` | 1 when the observing agent is the chooser of the current floor |

    ``env.state()`` concatenates every agent's observation (``state_space``).

    **What the observation reveals.** Nothing of which door is right before it is chosen, and
    nothing of whether a chosen door was right until the episode ends: every agent sees where
    the team is (floor, at the doors or the corridor cell), the doors chosen so far (in
    ``"actions"``: the choosers' doing, the same whatever the layout) and who chooses; for the
    same joint actions and routine lengths the observations before the last are the same under
    every ``layout_seed`` (the contract suite's leak probes check it). Only the reward at the
    end says how many doors were right. ``TeamDilutedDoors-v0`` is kept for comparison: its
    observation shows the share of doors right so far one step after each door.

    ## Rewards

    The single-agent reward, paid to every agent on the last step: ``"success"`` pays 1 when
    every door was correct, ``"fraction"`` the share of correct doors.

    ## Starting State

    At the doors of floor 0, no door chosen. The only randomness is the routine length of each
    floor when ``routine_length`` is a ``(low, high)`` range, drawn on ``env.np_random``.

    ## Episode End

    Terminated for every agent after the last floor's corridor; truncated for every agent after
    ``max_cycles`` steps when it is set (default ``None``: episodes end within
    ``num_floors * (1 + high)`` steps).

    ## Information

    ``infos[agent]`` on ``reset`` and every ``step``: ``critical`` (can *this agent's* action
    change the expected team return?), ``anchor`` (a stable hash of this agent's observation)
    and ``state_id`` (the canonical id of the joint state, the same for every agent and equal to
    ``DilutedDoors-v1``'s id of that state). At the end, per agent: ``success`` (the team's),
    ``num_critical`` (this agent's critical steps), ``episode_length`` (steps of the team
    episode) and ``decision_density`` (``num_critical / episode_length``). ``turn_score`` on
    every step (the team's, privileged): 1.0 while every door so far was right. Exact definition of
    ``critical``: :meth:`~routine_envs.multiagent.base.TeamDynamics.action_gaps_per_agent`
    ``> 0``.

    ## Arguments

    ```python
    diluted_doors_v1.parallel_env(num_agents=2, num_floors=4, num_doors=3, routine_length=10,
                                  chooser="rotate", reward="success", layout_seed=0,
                                  observation="actions", max_cycles=None, render_mode=None)
    ```

    - ``num_agents`` (int, 1..16): team size.
    - ``num_floors``, ``num_doors``, ``routine_length``, ``reward``, ``layout_seed``: as for
      ``DilutedDoors-v1``.
    - ``chooser`` (``"rotate"``, an agent index, or a sequence of ``num_floors`` agent indices).
    - ``observation`` (``"actions"`` or ``"position"``): the core's observation mode.
    - ``max_cycles`` (int >= 1 or ``None``): truncate after this many steps.
    - ``render_mode`` (``None``, ``"ansi"`` or ``"human"``): the text picture (for people: it
      marks each chosen door right or wrong).

    ## Version History

    - v1: on ``DilutedDoors-v1``'s dynamics and observation: no share of right doors (v0's
      entry ``num_floors + 3``, which showed every agent each door's outcome one step after it).
    - v0: ``TeamDilutedDoors-v0``, kept registered, unchanged, for comparison.
    """
