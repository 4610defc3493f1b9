"""The policy a diagnosis runs under: the uniform random policy, a callable from observation to
action probabilities, a stable-baselines3 model (an object or a saved ``.zip``), or a spec naming
one of these (``python -m routine_envs diagnose --policy``).

rho depends on the policy: it is the density of the states the policy visits, with "critical"
meaning that ``Q^pi(s, .)`` is not constant for that policy. :func:`as_policy` turns any of the
accepted forms into the :data:`~routine_envs.diagnose.algorithm.ContinuationPolicy` form
``(observation, info, rng) -> action`` that :func:`~routine_envs.diagnose.diagnose` calls. Every
policy it builds samples its action from the probabilities with one draw on ``rng`` (the
diagnosis's generator), so a diagnosis stays reproducible bit for bit from its seed and keeps its
common random numbers.

stable-baselines3 (and torch) are imported only when a model is loaded from a file: the core
package needs neither.
"""

from __future__ import annotations

import inspect
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from routine_envs import annotations as keys
from routine_envs.policy_specs import POLICY_FORMS, parse_policy

__all__ = [
    "POLICY_FORMS",
    "UNIFORM",
    "DiagnosisPolicy",
    "ModelPolicy",
    "ProbabilityPolicy",
    "TablePolicy",
    "UniformPolicy",
    "as_policy",
    "check_probabilities",
    "load_model",
    "policy_name",
    "with_action_mask",
]

#: the spec of the uniform random policy (the default).
UNIFORM = "uniform"
#: how far from 1 the probabilities a policy returns may sum.
PROBABILITY_TOLERANCE = 1e-6


class DiagnosisPolicy:
    """Base of the policies :func:`as_policy` builds: ``policy(obs, info, rng) -> action``.

    Subclasses give :meth:`probabilities`; sampling is one ``rng.random()`` draw, inverted
    through the cumulative probabilities (actions of probability 0 are never taken).

    Attributes:
        name: what the diagnosis's reading and results call the policy.
        action_space: the environment's action space (actions are ``start + index``).
    """

    def __init__(self, name: str, action_space: gym.spaces.Discrete) -> None:
        self.name = name
        self.action_space = action_space

    def probabilities(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        """The action probabilities at ``observation``, shape ``(n,)``."""
        raise NotImplementedError

    def __call__(self, observation: Any, info: dict[str, Any], rng: np.random.Generator) -> int:
        cumulative = np.cumsum(self.probabilities(observation, info))
        index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
        if index >= len(cumulative):  # rounding at the top end: the last action with mass
            index = int(np.flatnonzero(np.diff(cumulative, prepend=0.0) > 0)[-1])
        return int(self.action_space.start) + index

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class UniformPolicy(DiagnosisPolicy):
    """Every action with the same probability (invalid ones included: the environment decides
    what an invalid action does)."""

    def __init__(self, action_space: gym.spaces.Discrete) -> None:
        super().__init__("uniform random", action_space)
        self._n = int(action_space.n)

    def __call__(self, observation: Any, info: dict[str, Any], rng: np.random.Generator) -> int:
        return int(self.action_space.start) + int(rng.integers(self._n))

    def probabilities(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        return np.full(self._n, 1.0 / self._n)


class ProbabilityPolicy(DiagnosisPolicy):
    """A callable ``observation -> probabilities`` (shape ``(n,)``, non-negative, summing to 1
    within :data:`PROBABILITY_TOLERANCE`), checked on every call. The probabilities are used as
    they are (no action mask is applied: give invalid actions probability 0 where that matters).

    ``what`` names the parameter in the error for a bad output (``"--policy"``, ``"policy"``).
    """

    def __init__(
        self,
        function: Callable[[Any], Any],
        action_space: gym.spaces.Discrete,
        name: str | None = None,
        what: str = "policy",
    ) -> None:
        super().__init__(name or _object_name(function), action_space)
        self.function = function
        self.what = what

    def probabilities(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        return check_probabilities(
            self.function(observation), observation, int(self.action_space.n), self.name, self.what
        )


class ModelPolicy(DiagnosisPolicy):
    """A stable-baselines3 model's action distribution: the probabilities of
    ``model.policy.get_distribution(obs)`` (Categorical), as ``model.predict(obs,
    deterministic=False)`` samples them but with the diagnosis's generator. A policy whose
    ``get_distribution`` takes ``action_masks`` (sb3-contrib's ``MaskablePPO``) gets the mask of
    the current state (``info["action_mask"]``, which :func:`diagnose` fills from
    ``env.unwrapped.action_masks()`` where the environment has it), as in its ``predict``. The
    probabilities of small array observations are cached (the network is a function of the
    observation and the mask), so tabular environments pay one forward pass per state.

    Accepts the model (anything with ``.policy``) or its policy network (``get_distribution``
    and ``obs_to_tensor``).
    """

    def __init__(
        self,
        model: Any,
        action_space: gym.spaces.Discrete,
        name: str | None = None,
        what: str = "policy",
    ) -> None:
        super().__init__(name or type(model).__name__, action_space)
        self.network = model.policy if hasattr(model, "policy") else model
        self.what = what
        model_space = getattr(model, "action_space", None)
        if not isinstance(model_space, gym.spaces.Discrete) or int(model_space.n) != int(
            action_space.n
        ):
            raise ValueError(
                f"{what} {self.name}: the model's action space is {model_space}, the "
                f"environment's {action_space}"
            )
        parameters = inspect.signature(self.network.get_distribution).parameters
        self.masked = "action_masks" in parameters
        self.network.set_training_mode(False)  # as model.predict does
        import torch  # present wherever an SB3 model is: imported only for one

        self._no_grad = torch.no_grad
        self._cache: dict[tuple[bytes, ...], np.ndarray] = {}

    def probabilities(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        mask = info.get(keys.ACTION_MASK) if self.masked else None
        mask = None if mask is None else np.asarray(mask, dtype=bool)
        key = _cache_key(observation, mask)
        cached = self._cache.get(key) if key is not None else None
        if cached is not None:
            return cached
        tensor, _ = self.network.obs_to_tensor(observation)
        kwargs = {} if mask is None else {"action_masks": mask[None]}
        with self._no_grad():
            distribution = self.network.get_distribution(tensor, **kwargs).distribution
            probs = distribution.probs.cpu().numpy().astype(np.float64).reshape(-1)
        probs = check_probabilities(
            probs, observation, int(self.action_space.n), self.name, self.what
        )
        if key is not None and len(self._cache) < _CACHE_SIZE:
            self._cache[key] = probs
        return probs


#: observations (plus mask) of at most this many bytes have their probabilities cached.
_CACHE_BYTES = 4096
_CACHE_SIZE = 1 << 16


def _cache_key(observation: Any, mask: np.ndarray | None) -> tuple[bytes, ...] | None:
    """A key for a small array observation (the network is a function of it and the mask), or
    ``None`` (not cached) for a dict or a large observation."""
    if isinstance(observation, dict):
        return None
    array = np.asarray(observation)
    if array.dtype == object or array.nbytes > _CACHE_BYTES:
        return None
    parts = (str(array.dtype).encode(), str(array.shape).encode(), array.tobytes())
    return parts if mask is None else (*parts, mask.tobytes())


def check_probabilities(
    output: Any, observation: Any, num_actions: int, name: str, what: str = "policy"
) -> np.ndarray:
    """``output`` as float64 probabilities of ``num_actions`` actions, renormalized; a
    ``ValueError`` naming ``what``, the policy and the observation when it is not of shape
    ``(num_actions,)``, not finite, negative somewhere, or does not sum to 1 within
    :data:`PROBABILITY_TOLERANCE`."""
    try:
        probs = np.asarray(output, dtype=np.float64)
    except (TypeError, ValueError):
        probs = None
    problem = None
    if probs is None or probs.shape != (num_actions,):
        shape = "no array" if probs is None else f"shape {probs.shape}"
        problem = f"{shape}, not ({num_actions},)"
    elif not np.isfinite(probs).all():
        problem = "values that are not finite"
    elif (probs < 0).any():
        problem = "negative values"
    elif abs(probs.sum() - 1.0) > PROBABILITY_TOLERANCE:
        problem = f"values summing to {probs.sum():.6g}, not 1"
    if problem is not None:
        raise ValueError(
            f"{what} {name}: returned {problem} for observation {_short(observation)} "
            f"({_short(output)}); a policy returns the probabilities of the {num_actions} actions "
            "(non-negative, summing to 1)"
        )
    return probs / probs.sum()


def load_model(path: str | Path, what: str = "policy") -> Any:
    """Load a stable-baselines3 model saved to ``path`` (a ``.zip``) on the CPU: ``MaskablePPO``
    (sb3-contrib) when the file's policy class is sb3-contrib's, else ``PPO``, trying the other
    when the first fails. ``ValueError`` naming ``what`` for a missing file, missing packages
    (the ``baselines`` extra) or a file neither loads."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what} {str(path)!r}: no such file")
    try:
        import stable_baselines3
    except ImportError:
        raise ValueError(
            f"{what} {str(path)!r}: loading a saved model needs stable-baselines3 and torch: "
            'pip install "routine-envs[baselines]"'
        ) from None
    try:
        import sb3_contrib
    except ImportError:
        sb3_contrib = None
    classes = [stable_baselines3.PPO]
    if sb3_contrib is not None:
        classes.append(sb3_contrib.MaskablePPO)
        if _says_maskable(path):
            classes.reverse()
    failures = []
    for algorithm in classes:
        try:
            return algorithm.load(path, device="cpu")
        except Exception as error:  # a file of another class, or not a model: try the next
            reason = " ".join(str(error).split())  # one line
            failures.append(f"{algorithm.__name__}: {type(error).__name__}: {reason}")
    raise ValueError(
        f"{what} {str(path)!r}: not a saved PPO or MaskablePPO model ({'; '.join(failures)})"
    )


def _says_maskable(path: Path) -> bool:
    """Whether the saved model's ``data`` names an sb3-contrib policy class."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return False
    policy_class = data.get("policy_class", {})
    module = policy_class.get("__module__", "") if isinstance(policy_class, dict) else ""
    return module.startswith("sb3_contrib")


def as_policy(
    policy: Any, action_space: gym.spaces.Space, what: str = "policy", env: gym.Env | None = None
) -> Callable[[Any, dict[str, Any], np.random.Generator], int]:
    """Turn ``policy`` into the ``(observation, info, rng) -> action`` form of :func:`diagnose`.

    Accepted (``what`` names the parameter in errors, e.g. ``"--policy"``):

    - ``None`` or any policy spec of :mod:`routine_envs.policy_specs` (one grammar with the SNR
      lab and the detectors): ``"uniform"``; a saved stable-baselines3 model (``.zip``, also a
      :class:`~pathlib.Path`), loaded with :func:`load_model`; ``"package.module:Name"``,
      optionally followed by keyword arguments as a JSON object
      (``'my_lab.policies:Softmax{"temperature": 0.5}'``: the imported object is a class or,
      with arguments, a factory, called with the arguments to make the policy; otherwise it is
      the policy itself; the result is then taken as below); the tabular ``random{...}``,
      ``mixture{...}`` and ``.npy`` forms on an environment of the suite (``env``: its
      ``state_id`` indexes the table; :class:`TablePolicy`);
    - a stable-baselines3 model (anything with ``.policy.get_distribution``) or policy network:
      :class:`ModelPolicy`;
    - a callable ``(observation, info, rng) -> action`` (three required positional parameters, the
      ``continuation_policy`` form, and every :class:`DiagnosisPolicy`): returned as it is;
    - any other callable: ``observation -> action probabilities`` of shape ``(n,)``,
      :class:`ProbabilityPolicy`.

    Raises:
        ValueError: a spec that cannot be parsed or loaded, a tabular spec without an env with an
            exact model, a model whose action space does not match, or an object that is none
            of these.
    """
    space = _discrete(action_space)
    if policy is None:
        return UniformPolicy(space)
    if isinstance(policy, Path):
        policy = str(policy)
    if not isinstance(policy, str):
        return _from_object(policy, space, None, what)
    spec = parse_policy(policy, what)
    if spec.kind == "uniform":
        return UniformPolicy(space)
    if spec.kind == "model":
        model = load_model(spec.target, what)
        return ModelPolicy(model, space, f"{type(model).__name__} {spec.target}", what)
    if spec.kind == "callable":
        return _from_object(spec.load(), space, spec.text, what)
    base = getattr(env, "unwrapped", None)
    if base is None or not hasattr(base, "dynamics"):
        raise ValueError(
            f"{what} {spec.text!r}: a tabular policy needs an environment with an exact model "
            "(state ids), such as the suite's"
        )
    return TablePolicy(spec.table(base), space, spec.text)


class TablePolicy(DiagnosisPolicy):
    """A probability table ``(num_states, num_actions)`` indexed by ``info["state_id"]`` (the
    tabular policy specs on an environment of the suite)."""

    def __init__(self, table: np.ndarray, action_space: gym.spaces.Discrete, name: str) -> None:
        super().__init__(name, action_space)
        self.table = np.asarray(table, dtype=np.float64)

    def probabilities(self, observation: Any, info: dict[str, Any]) -> np.ndarray:
        return self.table[int(info[keys.STATE_ID])]


def _from_object(
    obj: Any, space: gym.spaces.Discrete, name: str | None, what: str
) -> Callable[[Any, dict[str, Any], np.random.Generator], int]:
    if isinstance(obj, DiagnosisPolicy):
        return obj
    network = getattr(obj, "policy", obj)
    if hasattr(network, "get_distribution") and hasattr(network, "obs_to_tensor"):
        return ModelPolicy(obj, space, name, what)
    if not callable(obj):
        raise ValueError(
            f"{what} {name or _object_name(obj)}: not a policy (a stable-baselines3 model, a "
            "callable observation -> action probabilities, or (obs, info, rng) -> action)"
        )
    if _required_positional(obj) >= 3:
        return obj
    return ProbabilityPolicy(obj, space, name, what)


def with_action_mask(env: gym.Env, info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with ``info["action_mask"]`` from ``env.unwrapped.action_masks()`` where the
    environment has masks but does not put them in ``info`` (what a masked policy reads)."""
    if keys.ACTION_MASK in info:
        return info
    masks = getattr(env.unwrapped, "action_masks", None)
    return {**info, keys.ACTION_MASK: np.asarray(masks())} if callable(masks) else info


def policy_name(policy: Any) -> str:
    """What the reading and the results call ``policy`` (``None``: the uniform random one)."""
    if policy is None:
        return "uniform random"
    if isinstance(policy, DiagnosisPolicy):
        return policy.name
    return _object_name(policy)


def _object_name(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name is None:
        return type(obj).__name__
    module = getattr(obj, "__module__", None)
    return f"{module}:{name}" if module and module != "__main__" else name


def _required_positional(function: Any) -> int:
    """The number of positional parameters of ``function`` without a default (1 when its
    signature cannot be read)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds and p.default is inspect.Parameter.empty for p in parameters)


def _discrete(space: gym.spaces.Space) -> gym.spaces.Discrete:
    if not isinstance(space, gym.spaces.Discrete):
        raise ValueError(f"a diagnosis policy needs a discrete action space, got {space}")
    return space


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
