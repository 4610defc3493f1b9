"""The batched trainer's ``device`` setting (issue 42): every tensor it makes is made on the
runs' device, a run on another device is keyed apart and batched apart, and a device this
machine lacks is refused in one line before any work. This machine has no GPU: the CPU runs
are checked under a default device that cannot compute (``meta``), so a tensor made without
the runs' device fails the run; the test on a real GPU runs where there is one."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from baselines.lib import batched
from baselines.lib.runs import Run, key
from tests.utils import run_spec

DOORS = {"num_floors": 2, "routine_length": 3}
PER_STEP = {"n_steps": 2, "batch_size": 8}
"""Rollouts of 16 steps (8 envs) and minibatches of 8 rows: below the 32-row state table, so acting
and the update run the networks per step, not on the table (tabular.py)."""


def _runs(hyper_extra: dict | None = None) -> list[Run]:
    runs = []
    for method in ("ppo", "trajectory_mc", "gigpo"):
        for kwargs in (DOORS, {"num_floors": 1, "routine_length": 0}):
            run = run_spec("DilutedDoors-v1", kwargs, method, seed=1, budget=2048, eval_every=512)
            if hyper_extra:  # rollouts of 16 steps: 32 of them are enough
                hyper = {**run.trained_with, **hyper_extra}
                run = dataclasses.replace(run, hyperparameters=hyper, budget=512, eval_every=128)
            runs.append(run)
    runs.append(run_spec("CodeFix-v1", None, "ppo", seed=0, budget=1024, eval_every=512))
    return runs


@pytest.mark.parametrize("hyper", [None, PER_STEP], ids=["state tables", "per step"])
def test_every_tensor_is_made_on_the_runs_device(hyper):
    """Trained with torch's default device set to ``meta`` (tensors there hold no numbers), a
    CPU run gives the same curve as without: every tensor of the rollout, the update, the
    optimiser and the evaluation was made on the runs' device, none on the default. Checked on
    both paths: the state tables and the per-step networks (masked CodeFix among them)."""
    runs = _runs(hyper)
    plain = batched.train(runs)
    torch.set_default_device("meta")
    try:
        on_meta = batched.train(runs)
    finally:
        torch.set_default_device(None)
    for a, b in zip(plain, on_meta, strict=True):
        assert (a.timesteps, a.success) == (b.timesteps, b.success)
    assert torch.empty(1).device.type == "cpu"


def test_a_run_on_another_device_is_keyed_and_batched_apart(monkeypatch):
    """The CPU is the default: a CPU run's row and key are as before the setting existed; a
    run on another device records and keys it, and is never batched with a CPU run."""
    cpu = run_spec("DilutedDoors-v1", DOORS, "ppo")
    assert "device" not in cpu.row() and "device" not in key(cpu)
    gpu = dataclasses.replace(cpu, device="cuda")
    assert gpu.row()["device"] == "cuda" and '"device": "cuda"' in key(gpu)
    assert key(gpu) != key(cpu)
    assert batched.group_runs([cpu, gpu, cpu]) == [[0, 2], [1]]


def test_a_device_this_machine_lacks_is_refused_in_one_line(monkeypatch):
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"^--device cuda: torch .* has no cuda here$"):
            Run.of("DilutedDoors-v1", "ppo", DOORS, device="cuda")
    with pytest.raises(ValueError, match=r"^--device 'gpu0': not a torch device"):
        Run.of("DilutedDoors-v1", "ppo", DOORS, device="gpu0")
    # the Transformer policy stays on the CPU (refused before anything is built)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    transformer = run_spec(
        "DilutedDoors-v1", DOORS, "trajectory_mc", hyperparameters={"policy": "transformer"}
    )
    with pytest.raises(ValueError, match="Transformer policy runs on the CPU only"):
        batched.check(dataclasses.replace(transformer, device="cuda"))
    with pytest.raises(ValueError, match="has 1 cuda device"):
        Run.of("DilutedDoors-v1", "ppo", DOORS, device="cuda:3")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_a_gpu_run_learns_as_the_cpu_run():
    """On a GPU the numbers differ in their last bits, which training amplifies: the curves
    are not identical, but every method still reaches the target on a dense setting."""
    runs = [
        dataclasses.replace(
            run_spec("DilutedDoors-v1", {"num_floors": 1, "routine_length": 0}, m, seed=s,
                     budget=20480, eval_every=1024),
            device="cuda",
        )
        for m in ("ppo", "trajectory_mc")
        for s in range(3)
    ]  # fmt: skip
    for result in batched.train(runs):
        assert result.steps_to_target is not None
