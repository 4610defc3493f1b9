"""Stacked tanh MLPs for R runs at once, with a hand-written backward pass.

Every run's parameters live in one row of a flat float32 buffer ``theta`` of shape ``(R, P)``
(``P`` padded to a multiple of 64 floats, so element-wise kernels never see a run's block at a
vector tail); each weight matrix is a strided view ``(R, in, out)`` of it and each bias a view
``(R, 1, out)``. Forward and backward are batched matrix products (``torch.bmm``, one per layer
and direction) over the R runs, so run r's numbers never depend on the other rows: run r alone
and inside a batch get bit-identical results (``tests/test_batched.py`` checks it).

The layout is SB3's ``MlpPolicy`` with separate policy and value networks (``net_arch`` a list,
or ``{"pi": [...], "vf": [...]}``), ``tanh`` activations, orthogonal initialisation with SB3's
gains (``sqrt(2)`` for hidden layers, 0.01 for the policy head, 1 for the value head) and zero
biases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

ALIGN = 64
"""Every run's parameter block is padded to a multiple of this many floats."""


class FlopCounter:
    """Floating-point operations of the matrix products done here (``2 * m * k * n`` each,
    summed over runs): what ``python -m baselines bench_training`` divides by CPU time."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, runs: int, m: int, k: int, n: int) -> None:
        self.count += 2 * runs * m * k * n


FLOPS = FlopCounter()
_ONES: dict[torch.device, torch.Tensor] = {}


def _one(device: torch.device) -> torch.Tensor:
    """The scalar 1 on ``device`` (made once per device)."""
    if device not in _ONES:
        _ONES[device] = torch.ones((), device=device)
    return _ONES[device]


class Workspace:
    """Arrays reused from one call to the next (an update's minibatch steps): an array written
    again is still in cache, a fresh one must be fetched first, and at these sizes (half a
    megabyte per 16 runs' activations) that doubles an element-wise kernel's time (measured
    with the profiler on rb1's Doors, R = 40). The kernels are the allocating ones' ``out=``
    forms, so the numbers are the same. ``key`` names a use; a use's array lives until the
    next call with that key. The arrays are on ``device``."""

    def __init__(self, device: torch.device | str = "cpu") -> None:
        self.device = torch.device(device)
        self._arrays: dict[tuple[Any, ...], torch.Tensor] = {}

    def array(self, key: tuple[Any, ...], shape: tuple[int, ...]) -> torch.Tensor:
        """An uninitialised float32 array of ``shape`` for ``key`` (the last one if it fits)."""
        found = self._arrays.get(key)
        if found is None or tuple(found.shape) != tuple(shape):
            found = torch.empty(shape, device=self.device)
            self._arrays[key] = found
        return found


@dataclass(frozen=True)
class FrozenNet:
    """One network's weights ``(R, in, out)`` and biases ``(R, 1, out)`` copied out of ``theta``
    once, for the many small forward passes of a rollout (the parameters do not change during
    it); :meth:`rows` selects runs."""

    layers: tuple[Layer, ...]
    weights: tuple[torch.Tensor, ...]
    biases: tuple[torch.Tensor, ...]

    @classmethod
    def of(cls, theta: torch.Tensor, layers: tuple[Layer, ...]) -> FrozenNet:
        return cls(
            layers,
            tuple(weight(theta, layer).contiguous() for layer in layers),
            tuple(bias(theta, layer).contiguous() for layer in layers),
        )

    def rows(self, index: torch.Tensor) -> FrozenNet:
        return FrozenNet(
            self.layers,
            tuple(w.index_select(0, index) for w in self.weights),
            tuple(b.index_select(0, index) for b in self.biases),
        )

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """The network on ``x`` ``(R, B, in)``: ``(R, B, out)`` (as :func:`forward`)."""
        h = x
        for layer, w, b in zip(self.layers, self.weights, self.biases, strict=True):
            FLOPS.add(x.shape[0], x.shape[1], layer.fan_in, layer.fan_out)
            h = _affine(h, w, b, layer.fan_out)
            if layer.activation:
                tanh_(h)
        return h


@dataclass(frozen=True)
class Layer:
    """One affine layer of one network: ``x @ W + b`` with ``W`` at ``theta[:, w:w + i*o]``."""

    net: str
    fan_in: int
    fan_out: int
    w: int
    b: int
    gain: float
    activation: bool  # tanh after it (hidden layers)


@dataclass(frozen=True)
class MLPLayout:
    """Where every layer of the policy (``"pi"``) and value (``"vf"``) networks lives in a run's
    parameter row, shape ``(P,)``; ``vf`` is absent for a critic-free learner (its value head
    is never used nor trained, so it is not built)."""

    obs_dim: int
    num_actions: int
    layers: tuple[Layer, ...]
    size: int

    def net(self, name: str) -> tuple[Layer, ...]:
        return tuple(layer for layer in self.layers if layer.net == name)

    @property
    def has_value(self) -> bool:
        return any(layer.net == "vf" for layer in self.layers)

    @property
    def num_parameters(self) -> int:
        """Parameters per run (without the padding)."""
        return sum(layer.fan_in * layer.fan_out + layer.fan_out for layer in self.layers)


def hidden_sizes(net_arch: object) -> tuple[list[int], list[int]]:
    """``(pi, vf)`` hidden sizes from SB3's ``net_arch`` (a list for both, or a dict)."""
    if isinstance(net_arch, dict):
        unknown = sorted(set(net_arch) - {"pi", "vf"})
        if unknown:
            raise ValueError(f"policy_kwargs.net_arch: unknown keys {unknown} (expected pi, vf)")
        pi, vf = net_arch.get("pi", []), net_arch.get("vf", [])
    elif isinstance(net_arch, (list, tuple)):
        pi = vf = list(net_arch)
    else:
        raise ValueError(f"policy_kwargs.net_arch must be a list or a dict, got {net_arch!r}")
    for size in [*pi, *vf]:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"policy_kwargs.net_arch: sizes must be ints >= 1, got {net_arch!r}")
    return list(pi), list(vf)


def make_layout(obs_dim: int, num_actions: int, pi: list[int], vf: list[int] | None) -> MLPLayout:
    """The layout of a policy network ``obs_dim -> pi... -> num_actions`` and, unless ``vf`` is
    ``None``, a value network ``obs_dim -> vf... -> 1``."""
    layers: list[Layer] = []
    offset = 0
    nets = [("pi", pi, num_actions, 0.01)] + ([] if vf is None else [("vf", vf, 1, 1.0)])
    for name, sizes, out, head_gain in nets:
        dims = [obs_dim, *sizes, out]
        for k in range(len(dims) - 1):
            hidden = k < len(dims) - 2
            w = offset
            offset += dims[k] * dims[k + 1]
            layers.append(
                Layer(
                    name,
                    dims[k],
                    dims[k + 1],
                    w,
                    offset,
                    math.sqrt(2) if hidden else head_gain,
                    hidden,
                )
            )
            offset += dims[k + 1]
    size = -(-offset // ALIGN) * ALIGN
    return MLPLayout(obs_dim, num_actions, tuple(layers), size)


def weight(theta: torch.Tensor, layer: Layer) -> torch.Tensor:
    """The view ``(R, fan_in, fan_out)`` of a layer's weights in ``theta`` ``(R, P)``."""
    n = layer.fan_in * layer.fan_out
    return theta[:, layer.w : layer.w + n].view(-1, layer.fan_in, layer.fan_out)


def bias(theta: torch.Tensor, layer: Layer) -> torch.Tensor:
    """The view ``(R, 1, fan_out)`` of a layer's bias in ``theta`` ``(R, P)``."""
    return theta[:, layer.b : layer.b + layer.fan_out].view(-1, 1, layer.fan_out)


def init_parameters(layout: MLPLayout, generator: torch.Generator) -> torch.Tensor:
    """One run's parameters ``(P,)``: SB3's orthogonal initialisation (``nn.init.orthogonal_``
    of the ``(out, in)`` weight with the layer's gain), zero biases, zero padding; on the CPU
    (``generator`` is a CPU generator: a run starts from the same parameters on any device)."""
    theta = torch.zeros(1, layout.size, device="cpu")
    for layer in layout.layers:
        w = torch.empty(layer.fan_out, layer.fan_in, device="cpu")
        torch.nn.init.orthogonal_(w, gain=layer.gain, generator=generator)
        weight(theta, layer)[0].copy_(w.T)
    return theta[0]


def tanh_(x: torch.Tensor) -> torch.Tensor:
    """In-place ``tanh``: on the CPU by numpy's vectorised float32 kernel (several times faster
    than ``torch.tanh`` there, and, like it, the same value for an element wherever it sits);
    elsewhere by torch's, on the device."""
    if x.device.type != "cpu":
        return x.tanh_()
    np.tanh(x.numpy(), out=x.numpy())
    return x


NARROW = 32
"""Layers with at most this many outputs (the heads) are multiplied transposed,
``(3, 64) @ (64, B)`` instead of ``(B, 64) @ (64, 3)``: 3-4x faster on the build this trainer
was first written on. On torch 2.13 here it is about 3x slower (147 us against 50 us for 16
runs of 128 rows), but another product computes other bits, and the shipped numbers come from
this one (docs/batched.md, "Where the time goes")."""


def _affine(
    h: torch.Tensor,
    w: torch.Tensor,
    b: torch.Tensor,
    fan_out: int,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """``h @ w + b`` for ``h`` ``(R, B, in)``, ``w`` ``(R, in, out)``, ``b`` ``(R, 1, out)``;
    ``out`` (when given) holds the products: ``(R, B, in)`` for a one-column layer, else
    ``(R, B, out)`` for a wide layer (a narrow one returns its own)."""
    if fan_out == 1:  # one column: BLAS would take a gemv path whose summation order depends
        # on the batch size; a row sum does not
        products = (
            h * w.transpose(1, 2) if out is None else torch.mul(h, w.transpose(1, 2), out=out)
        )
        return products.sum(-1, keepdim=True) + b
    if fan_out <= NARROW:
        result = torch.baddbmm(b.transpose(1, 2), w.transpose(1, 2), h.transpose(1, 2))
        return result.transpose(1, 2).contiguous()
    if out is None:
        return torch.baddbmm(b, h, w)
    return torch.baddbmm(b, h, w, out=out)


def forward(
    theta: torch.Tensor,
    layers: tuple[Layer, ...],
    x: torch.Tensor,
    keep: bool = False,
    work: Workspace | None = None,
    tag: tuple[Any, ...] = (),
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One network on ``x`` ``(R, B, in)``: its output ``(R, B, out)`` and, with ``keep``, the
    input of every layer (for :func:`backward`). With ``work``, the hidden layers' outputs are
    its arrays under ``tag`` (valid until the next call with that tag)."""
    inputs = []
    h = x
    runs, rows = x.shape[0], x.shape[1]
    for k, layer in enumerate(layers):
        FLOPS.add(runs, rows, layer.fan_in, layer.fan_out)
        if keep:
            inputs.append(h)
        out = None
        if work is not None and layer.fan_out == 1:
            out = work.array((*tag, "products", k), (runs, rows, layer.fan_in))
        elif work is not None and layer.fan_out > NARROW:
            out = work.array((*tag, "h", k), (runs, rows, layer.fan_out))
        h = _affine(h, weight(theta, layer), bias(theta, layer), layer.fan_out, out)
        if layer.activation:
            tanh_(h)
    return h, inputs


def backward(
    theta: torch.Tensor,
    grad: torch.Tensor,
    layers: tuple[Layer, ...],
    inputs: list[torch.Tensor],
    d_out: torch.Tensor,
    work: Workspace | None = None,
    tag: tuple[Any, ...] = (),
) -> None:
    """Write the gradient of one network's parameters into ``grad`` ``(R, P)`` given the
    gradient ``d_out`` ``(R, B, out)`` of the loss with respect to its output, and the layer
    inputs kept by :func:`forward` (each layer's input after ``tanh`` is the previous layer's
    activation, whose derivative is ``1 - h**2``). With ``work``, the hidden activations in
    ``inputs`` are overwritten (they are used up) and the back-propagated gradients are its
    arrays under ``tag``."""
    d = d_out
    runs, rows = d_out.shape[0], d_out.shape[1]
    for k in range(len(layers) - 1, -1, -1):
        layer, h = layers[k], inputs[k]
        FLOPS.add(runs, rows, layer.fan_in, layer.fan_out * (2 if k else 1))
        if layer.fan_out == 1:  # as in forward: no gemv
            if work is None:
                products = h * d
            else:
                products = torch.mul(h, d, out=work.array((*tag, "products", k), h.shape))
            weight(grad, layer).copy_(products.sum(1)[..., None])
        elif layer.fan_out <= NARROW:  # as in forward: transposed, (out, B) @ (B, in)
            weight(grad, layer).copy_(torch.bmm(d.transpose(1, 2), h).transpose(1, 2))
        else:
            torch.bmm(h.transpose(1, 2), d, out=weight(grad, layer))
        torch.sum(d, dim=1, keepdim=True, out=bias(grad, layer))
        if k:
            w_t = weight(theta, layer).transpose(1, 2)
            if work is None:
                d = d * w_t if layer.fan_out == 1 else torch.bmm(d, w_t)
                d.mul_(torch.addcmul(_one(h.device), h, h, value=-1.0))  # tanh' = 1 - h**2
            else:
                buffer = work.array((*tag, "d", k), (runs, rows, layer.fan_in))
                if layer.fan_out == 1:
                    d = torch.mul(d, w_t, out=buffer)
                else:
                    d = torch.bmm(d, w_t, out=buffer)
                d.mul_(torch.addcmul(_one(h.device), h, h, value=-1.0, out=h))  # h used up
