"""The one policy-spec grammar: what ``--policy`` (diagnose, the SNR lab) and ``--policies``
(the detectors) accept, parsed once into a :class:`PolicySpec`.

A spec is one of:

- ``uniform``: every valid action alike (all actions where the env has no masks);
- ``random{"seed": S, "scale": C}``: per-state logits drawn ``N(0, C^2)`` (seed 0, scale 1 by
  default), invalid actions masked;
- ``mixture{"eps": E}``: ``(1 - E) optimal + E uniform``, a stand-in for a partly trained
  policy (``optimal`` greedy in the exact ``Q*``);
- a ``.npy`` file: a table of action probabilities ``(num_states, num_actions)``;
- a ``.zip`` file: a saved stable-baselines3 model (PPO or MaskablePPO);
- ``package.module:name``, optionally with JSON arguments: a callable observation -> action
  probabilities (a class or, with arguments, a factory is called to make it; in diagnose also
  a ``(observation, info, rng) -> action`` policy or a model object).

The tabular forms (``random``, ``mixture``, ``.npy``) need an environment with an exact model
(``state_id`` indexes the table); a callable is turned into a table over every state by
calling it on each state's observation (``dynamics.observe``), where one is needed. A spec
knows what it stands for in a run key (:attr:`PolicySpec.identity`: the text, a file's
SHA-256, outside code's fingerprint).
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from routine_envs.plugins import Spec, brief, code_fingerprint, load_object, parse_spec

__all__ = ["POLICY_FORMS", "PolicySpec", "parse_policy"]

TABULAR_KINDS = ("uniform", "random", "mixture")
POLICY_FORMS = (
    "'uniform'; 'random{\"seed\": S, \"scale\": C}' (per-state logits N(0, C^2)); "
    "'mixture{\"eps\": E}' ((1 - E) optimal + E uniform); a .npy table of action "
    "probabilities (num_states, num_actions); a saved stable-baselines3 model (.zip); or "
    "'package.module:callable' (observation -> action probabilities; a class or, with JSON "
    "arguments after it, a factory is called to make one)"
)
"""The forms of a policy spec, as help texts say them."""
ARGUMENTS = {"uniform": set(), "random": {"seed", "scale"}, "mixture": {"eps"}}


def file_digest(path: Path) -> str:
    """A short hash (16 hex digits) of a file's bytes (a saved policy is part of a run's key)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@dataclass(frozen=True)
class PolicySpec(Spec):
    """A policy spec (see the module docstring; :class:`~routine_envs.plugins.Spec`: its
    ``text`` as written, stripped, what tables and run keys name; its ``target``, the name, the
    file path or the import path; its JSON ``kwargs``), resolved.

    Attributes:
        kind: ``uniform``, ``random``, ``mixture``, ``table`` (.npy), ``model`` (.zip) or
            ``callable`` (an import path).
        identity: what the spec stands for in a run key: ``{"spec": text}``, with the file's
            ``sha256`` (16 hex digits) or outside code's ``code`` fingerprint.
        what: the flag it was given as (for messages).
    """

    kind: str = ""
    identity: dict[str, Any] = field(default_factory=dict)
    what: str = "--policy"

    @property
    def path(self) -> Path:
        """The file of a ``table`` or ``model`` spec."""
        return Path(self.target)

    @property
    def is_tabular(self) -> bool:
        """Whether the spec is defined on state ids (needs an env with an exact model)."""
        return self.kind in ("random", "mixture", "table")

    # ------------------------------------------------------------------ on an exact model
    def logits(self, env: Any) -> np.ndarray:
        """Per-state log-probabilities (logits) ``(num_states, num_actions)`` on ``env`` (an
        env of the suite, unwrapped or not), ``-inf`` on invalid actions; ``ValueError`` for a
        model (whose policy is a network: see the SNR lab) or a table of the wrong shape."""
        base = getattr(env, "unwrapped", env)
        num_states, num_actions = base.num_states, base.num_actions
        if self.kind == "uniform":
            return _masked(base, np.zeros((num_states, num_actions)))
        if self.kind == "random":
            rng = np.random.default_rng(int(self.kwargs.get("seed", 0)))
            scale = float(self.kwargs.get("scale", 1.0))
            return _masked(base, scale * rng.standard_normal((num_states, num_actions)))
        if self.kind == "model":
            raise ValueError(
                f"{self.what} {self.text}: a network policy has no table of logits here (the "
                "SNR lab measures it through its Jacobian)"
            )
        with np.errstate(divide="ignore"):
            return np.log(self.probabilities(base))

    def probabilities(self, env: Any) -> np.ndarray:
        """The action probabilities ``(num_states, num_actions)`` of a ``mixture``, ``table`` or
        ``callable`` spec on ``env`` (checked: shape, non-negative, rows summing to 1)."""
        from routine_envs.detectors.policies import mixture_policy

        base = getattr(env, "unwrapped", env)
        shape = (base.num_states, base.num_actions)
        if self.kind == "mixture":
            return mixture_policy(base, float(self.kwargs["eps"]))
        if self.kind == "table":
            table = np.load(self.path)
            where = f"{self.what} {self.path}"
        elif self.kind == "callable":
            function = self.load()
            dynamics = base.dynamics
            table = np.array(
                [function(dynamics.observe(dynamics.state_from_id(i))) for i in range(shape[0])],
                dtype=np.float64,
            )
            where = f"{self.what} {self.text}"
        else:
            return np.exp(self.logits(base))
        if table.shape != shape:
            raise ValueError(f"{where}: a table of shape {shape} is needed, got {table.shape}")
        if np.any(table < 0) or not np.allclose(table.sum(axis=1), 1.0, atol=1e-6):
            raise ValueError(f"{where}: rows must be probabilities (>= 0, summing to 1)")
        return table

    def table(self, env: Any) -> np.ndarray:
        """The probability table ``(num_states, num_actions)`` the spec names on ``env``:
        ``uniform`` over the valid actions, else the softmax of :meth:`logits`."""
        from routine_envs import snr
        from routine_envs.detectors.policies import uniform_policy

        if self.kind == "uniform":
            return uniform_policy(env)
        base = getattr(env, "unwrapped", env)
        logits = self.logits(base)
        return snr.TabularSoftmax.per_state(base.num_states, base.num_actions, logits).probs()

    # ------------------------------------------------------------------ anywhere
    def load(self) -> Any:
        """The object of a ``callable`` spec: imported, called with the arguments when it is a
        class or arguments are given; ``ValueError`` naming the spec otherwise."""
        loaded = load_object(self.target, self.what)
        if isinstance(loaded, type) or self.kwargs:
            try:
                loaded = loaded(**self.kwargs)
            except Exception as error:  # user code: name the spec
                raise ValueError(
                    f"{self.what} {self.text!r}: calling {self.target} with {self.kwargs} "
                    f"failed ({type(error).__name__}: {error})"
                ) from None
        return loaded


def _masked(env: Any, logits: np.ndarray) -> np.ndarray:
    """``logits`` with the invalid actions of each state at ``-inf`` where the env has masks
    (states without a valid action are left alone: they are never decided)."""
    if not getattr(env, "has_action_masks", False):
        return logits
    mask = env.dynamics.mask_table()
    decided = mask.any(axis=1)
    return np.where(~mask & decided[:, None], -np.inf, logits)


def parse_policy(text: str, what: str = "--policy") -> PolicySpec:
    """Parse a policy spec once (see the module docstring): its arguments checked, a file's
    existence and digest read, outside code imported and fingerprinted.

    Raises:
        ValueError: one line naming ``what`` and the spec: unknown arguments, ``eps`` outside
            [0, 1], a missing file, a file that is neither ``.npy`` nor ``.zip``, an import that
            fails.
    """
    spec = parse_spec(text, what)
    target = spec.target
    if target in TABULAR_KINDS:
        unknown = set(spec.kwargs) - ARGUMENTS[target]
        if unknown:
            takes = sorted(ARGUMENTS[target]) or "no arguments"
            raise ValueError(
                f"{what} {brief(spec.text)}: unknown arguments {sorted(unknown)} ('{target}' "
                f"takes {takes})"
            )
        if target == "mixture":
            eps = spec.kwargs.get("eps")
            if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not 0 <= eps <= 1:
                raise ValueError(
                    f"{what} {brief(spec.text)}: a mixture is 'mixture{{\"eps\": E}}', 0<=E<=1"
                )
        return PolicySpec(target, spec.kwargs, spec.text, target, {"spec": spec.text}, what)
    if spec.is_import_path:
        obj = load_object(target, what)
        code = code_fingerprint(inspect.getmodule(obj) or obj)
        identity = {"spec": spec.text, "code": code}
        return PolicySpec(target, spec.kwargs, spec.text, "callable", identity, what)
    path = Path(target)
    if path.suffix.lower() not in (".npy", ".zip") or spec.kwargs:
        raise ValueError(f"{what} {brief(text)}: expected {POLICY_FORMS}")
    if not path.is_file():
        raise ValueError(f"{what} {str(path)!r}: no such file")
    kind = "table" if path.suffix.lower() == ".npy" else "model"
    identity = {"spec": spec.text, "sha256": file_digest(path)}
    return PolicySpec(target, {}, spec.text, kind, identity, what)
