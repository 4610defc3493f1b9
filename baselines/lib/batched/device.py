"""Where the batched trainer's tensors live, and the two crossings between them and the host.

The parameters, the optimiser's moments, the state tables and a rollout's training arrays live
on the batch's ``device`` (:attr:`baselines.lib.runs.Run.device`); the environments, the
estimators and the exact model's success evaluation are numpy on the host. What crosses, per
rollout: the policy's state tables (or, for a configuration without one, each step's
observations and the network's outputs), the rollout's arrays once before the update, and the
decision states' probabilities at each evaluation. On the CPU both crossings share memory and
copy nothing, so a CPU run's numbers do not depend on this module.
"""

from __future__ import annotations

import numpy as np
import torch


def to_device(array: np.ndarray, device: torch.device) -> torch.Tensor:
    """``array`` as a tensor on ``device`` (on the CPU: sharing its memory)."""
    return torch.from_numpy(array).to(device)


def to_host(tensor: torch.Tensor) -> np.ndarray:
    """``tensor`` as a numpy array (on the CPU: sharing its memory; elsewhere a copy)."""
    return tensor.cpu().numpy()
