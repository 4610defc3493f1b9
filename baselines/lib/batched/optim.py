"""Per-run gradient clipping and Adam over stacked parameters ``(R, P)``.

:func:`clip_by_global_norm` is ``torch.nn.utils.clip_grad_norm_`` applied to each row (run) on
its own; :class:`StackedAdam` is ``torch.optim.Adam`` (its single-tensor algorithm: ``lerp`` of
the first moment, ``addcmul`` of the second, bias corrections, ``addcdiv``) with one step count
per run, so a run that skips a step (its epoch has fewer minibatches than another run's) keeps
its moments and its count untouched.
"""

from __future__ import annotations

import numpy as np
import torch


def clip_by_global_norm(grad: torch.Tensor, max_norm: float) -> torch.Tensor:
    """Scale each row of ``grad`` ``(R, P)`` in place so its L2 norm is at most ``max_norm``
    (``clip_grad_norm_``'s rule: factor ``max_norm / (norm + 1e-6)`` clamped to 1); returns the
    norms before clipping, shape ``(R,)``."""
    norms = torch.linalg.vector_norm(grad, dim=1)
    factor = torch.clamp(max_norm / (norms + 1e-6), max=1.0)
    grad.mul_(factor[:, None])
    return norms


class StackedAdam:
    """Adam (``torch.optim.Adam`` semantics, no weight decay, no amsgrad) for the rows of
    ``theta`` ``(R, P)``, each with its own moments and step count.

    Args:
        theta: the parameters, updated in place.
        lr: learning rate; betas, eps: as ``torch.optim.Adam`` (SB3 uses ``eps=1e-5``).
    """

    def __init__(
        self,
        theta: torch.Tensor,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-5,
    ) -> None:
        self.theta = theta
        self.lr, self.betas, self.eps = float(lr), betas, float(eps)
        self.exp_avg = torch.zeros_like(theta)
        self.exp_avg_sq = torch.zeros_like(theta)
        self.steps = np.zeros(theta.shape[0], dtype=np.int64)
        self._scratch: tuple[torch.Tensor, torch.Tensor] | None = None

    def select(self, rows: np.ndarray) -> None:
        """Keep only the runs ``rows`` (the others left the batch); ``theta`` must be replaced
        by the caller the same way (:meth:`bind`)."""
        index = torch.as_tensor(rows, dtype=torch.long, device=self.theta.device)
        self.exp_avg = self.exp_avg.index_select(0, index)
        self.exp_avg_sq = self.exp_avg_sq.index_select(0, index)
        self.steps = self.steps[rows]

    def bind(self, theta: torch.Tensor) -> None:
        self.theta = theta

    def step(self, grad: torch.Tensor, active: np.ndarray | None = None) -> None:
        """One Adam step of the runs where ``active`` (bool ``(R,)``; all when ``None``) with
        their rows of ``grad`` ``(R, P)``."""
        beta1, beta2 = self.betas
        if active is None or active.all():
            rows = None
            self.steps += 1
            steps = self.steps
        else:
            rows = np.flatnonzero(active)
            self.steps[rows] += 1
            steps = self.steps[rows]
        # bias corrections in float64 per run (torch computes them as Python floats)
        device = self.theta.device
        step_size = torch.as_tensor(
            self.lr / (1.0 - beta1**steps), dtype=torch.float32, device=device
        )[:, None]
        correction2_sqrt = torch.as_tensor(
            np.sqrt(1.0 - beta2**steps), dtype=torch.float32, device=device
        )
        if rows is None:
            m, v, p, g = self.exp_avg, self.exp_avg_sq, self.theta, grad
        else:
            index = torch.as_tensor(rows, dtype=torch.long, device=device)
            m, v = self.exp_avg[index], self.exp_avg_sq[index]
            p, g = self.theta[index], grad[index]
        # two scratch arrays of the step's shape, kept between steps: the same kernels as
        # allocating ones (same numbers), without a fresh megabyte each
        if self._scratch is None or self._scratch[0].shape != m.shape:
            self._scratch = (torch.empty_like(m), torch.empty_like(m))
        denom, scaled = self._scratch
        m.lerp_(g, 1.0 - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
        torch.sqrt(v, out=denom).div_(correction2_sqrt[:, None]).add_(self.eps)
        p.addcdiv_(torch.mul(m, step_size, out=scaled), denom, value=-1.0)
        if rows is not None:
            self.exp_avg[index], self.exp_avg_sq[index], self.theta[index] = m, v, p
