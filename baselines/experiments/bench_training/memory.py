"""Peak memory of the batched trainer on a protocol tier: ``python -m baselines bench_training
--memory-tier full``.

For every setting of the tier, one batch of up to ``max_batch`` of its runs (its densities x
seeds, in the protocol's order: the largest batch :func:`baselines.lib.batched.train_runs`
would form) is trained for ``rollouts`` rollouts in a fresh process, and that process's peak
resident set size (``ru_maxrss``) is reported. Memory does not grow with the budget (curves
only), so a short budget measures a full run's peak; settings run one after the other, so the
tier's peak is the largest of them.
"""

from __future__ import annotations

import multiprocessing
import resource
from typing import Any


def _batch_peak(jobs: list[dict[str, Any]], queue: Any) -> None:
    from baselines.lib.batched import RunSpec, train_runs

    specs = [
        RunSpec(
            j["env_id"],
            j["env_kwargs"],
            j["method"],
            j["seed"],
            j["budget"],
            j["budget"],
            hyperparameters=j["hyperparameters"],
        )
        for j in jobs
    ]
    train_runs(specs, max_batch=len(specs))
    queue.put(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def tier_peaks(
    protocol: str, tier: str, method: str, max_batch: int = 64, rollouts: int = 2
) -> list[dict[str, Any]]:
    """Peak bytes of every batch that :func:`baselines.lib.batched.train_runs` forms from the
    tier's runs of ``method`` (see the module docstring), in order."""
    import tempfile
    from pathlib import Path

    from baselines.lib import protocol_runs
    from baselines.lib.batched import RunSpec, group_runs
    from baselines.lib.protocol import load_protocol

    proto = load_protocol(protocol)
    jobs = protocol_runs.plan(
        proto, proto.tier(tier), method, Path(tempfile.mkdtemp(prefix="memory_"))
    )
    specs = [
        RunSpec(j["env_id"], j["env_kwargs"], j["method"], j["seed"], j["budget"], j["budget"],
                hyperparameters=j["hyperparameters"])
        for j in jobs
    ]  # fmt: skip
    rows = []
    context = multiprocessing.get_context("spawn")
    for group in group_runs(specs, max_batch):
        mine = [jobs[i] for i in group]
        hyper = mine[0]["hyperparameters"]
        steps = rollouts * hyper.get("n_steps", 2048) * hyper.get("n_envs", 8)
        short = [{**j, "budget": steps} for j in mine]
        queue = context.Queue()
        process = context.Process(target=_batch_peak, args=(short, queue))
        process.start()
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"the batch of {mine[0]['setting']} failed (see above)")
        peak = queue.get()
        rows.append(
            {
                "setting": ", ".join(sorted({j["setting"] for j in short})),
                "runs": len(short),
                "densities": len({(j["setting"], j["density_value"]) for j in short}),
                "peak_bytes": int(peak),
            }
        )
    return rows
