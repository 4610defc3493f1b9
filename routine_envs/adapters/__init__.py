"""Adapters of the text interface (:mod:`routine_envs.text`) for the trainers of LLM agents.

One small module per trainer; none is imported by ``import routine_envs`` or by this package, and
each imports its trainer's package (if it needs it at all) only when used:

- :mod:`~routine_envs.adapters.trl`: TRL ``GRPOTrainer(environment_factory=...)``.
- :mod:`~routine_envs.adapters.verifiers_v1`: a verifiers 0.4 (v1) taskset, loaded by the id
  ``routine-envs-verifiers`` (the package :mod:`routine_envs_verifiers`).
- :mod:`~routine_envs.adapters.verifiers`: verifiers ``MultiTurnEnv`` (the 0.1.x API).
- :mod:`~routine_envs.adapters.skyrl`: SkyRL-gym ``BaseTextEnv`` (needs ``skyrl-gym``: the
  ``llm`` extra).
- :mod:`~routine_envs.adapters.gem`: GEM's ``Env`` (``reset``/``step``, ``spawn``,
  ``get_initial_state``/``reset_to_initial_state``).
- :mod:`~routine_envs.adapters.verl_agent`: verl-agent's ``EnvironmentManagerBase`` with a
  text projection that marks ``is_action_valid`` and a GiGPO anchor.
- :mod:`~routine_envs.adapters.ragen`: RAGEN's ``BaseEnv``.
- :mod:`~routine_envs.adapters.openrlhf`: OpenRLHF's ``AgentInstanceBase`` (async).
- :mod:`~routine_envs.adapters.openenv`: an OpenEnv server for any id (``python -m
  routine_envs.adapters.openenv``) and its client (needs ``openenv>=0.10``: the ``openenv``
  extra).

See ``docs/text.md`` for how each is used and tested.
"""
