"""The paper tier's own quantities ("Drowning in Routine", arXiv 2606.22164): the gradient SNR
ratio of turn-level over trajectory-level advantages at initialisation against rho with its
fitted slope, and the steps to target against rho per method with the trajectory-level
method's ratio to each turn-level one.

The SNR (:func:`snr_rows`): at every density of the tier, the initial policy of the tier's
network (the causal Transformer over the turn history, seed ``snr.seed``: the parameters a run
with that seed starts from, :func:`baselines.lib.batched.transformer.initial_policy`), episodes
sampled from the exact model in groups of ``snr.group_size``, ``snr.episodes`` in all; each
estimator's group gradient in parameter space is ``J^T g`` (``J`` the Jacobian of every state's
logits, ``g`` the per-state gradient), so the SNR is measured in the metric ``J J^T``
(:func:`routine_envs.snr.measure_snr`), per episode, with jackknife intervals. The signal is the
exact policy gradient's norm (computed from the model), the noise the trace of the gradient's
covariance measured on the episodes: ``||grad J|| / sqrt(tr Cov g)``
(:attr:`routine_envs.snr.SNRResult.gradient_snr`), so the ratio of two estimators is
``sqrt(tr Cov g_trajectory / tr Cov g_turn)``, which 1,024 episodes measure to a few per cent
where an estimate of ``||E g||^2`` from the same episodes drowns in its own noise at low rho (at
3 floors, rho 1/51, the trajectory advantage's signal along the gradient is 0.03 [-0.12, 0.18]
per group of 16 over 64 groups). It is the SNR of an unbiased estimator: the perfect and
the Monte-Carlo critics are unbiased; the group-mean trajectory advantage has mean ``(G - 1) /
G`` times the gradient, a constant factor (15/16) that leaves the slope as it is. The ratio of
each turn-level estimator's SNR to ``snr.trajectory``'s on the same episodes, and the
least-squares slope of its log against log rho (the paper: -0.508, R^2 0.999, perfect critic,
rho 1 to 1/51).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from baselines.experiments.benchmark import scores
from baselines.lib import protocol as protocols
from baselines.lib.results import write_atomic
from baselines.lib.tables import pyplot, write_csv

PAPER_SLOPE = -0.508
"""The paper's fitted slope of log SNR ratio (perfect critic / trajectory) on log rho."""


def snr_rows(
    protocol: protocols.Protocol,
    tier: protocols.Tier,
    methods: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One row per setting, density and estimator of ``tier.snr.estimators`` plus ``methods``
    (estimator methods only; ``ppo`` has no advantage to measure): the SNR per episode with its
    interval and, but for the trajectory estimator itself, its ratio to the trajectory one."""
    import gymnasium as gym

    import routine_envs
    from baselines.experiments.benchmark.lab import estimator_arguments
    from baselines.lib.batched.transformer import initial_policy
    from baselines.lib.specs import parse_method
    from routine_envs import credit, snr
    from routine_envs.sampler import ModelSampler

    spec = tier.snr
    if spec is None:
        raise ValueError(f"tier {tier.name} measures no SNR at initialisation")
    gym.register_envs(routine_envs)
    names = list(dict.fromkeys([*spec.estimators, *methods]))
    names = [n for n in names if parse_method(n).target != "ppo"]
    rows = []
    cells = [
        (st, value, seed) for st in tier.settings for value in st.values for seed in spec.seeds
    ]
    for setting, value, seed in cells:  # one (setting, density, network initialisation)
        hyper = protocol.method_hyperparameters(setting.section, "trajectory_mc")
        kwargs = {**setting.env_kwargs, setting.density_kwarg: value}
        env = gym.make(setting.env_id, **kwargs).unwrapped
        init = initial_policy(setting.env_id, kwargs, hyper, seed)
        logits = np.asarray(init.logits, dtype=np.float64)
        log_probs = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        policy = snr.TabularSoftmax.per_state(env.num_states, env.num_actions, log_probs)
        probs = policy.probs()
        jac = init.jacobian()
        sampler = ModelSampler(env)
        values = env.oracle(probs)
        context = credit.EstimatorContext(
            env=env,
            policy_table=probs,
            sampler=sampler,
            gamma=hyper.get("gamma", 1.0),
            gae_lambda=hyper.get("gae_lambda", 0.95),
            seed=seed,
        )
        estimators = {
            n: credit.build_estimator(
                parse_method(n).target,
                context,
                **estimator_arguments(protocol, setting.section, n),
            )
            for n in names
        }
        result = snr.measure_snr(
            env,
            policy,
            estimators,
            num_groups=spec.episodes // spec.group_size,
            group_size=spec.group_size,
            seed=seed,
            sampler=sampler,
            metric=jac @ jac.T,
            values=values.v,
            exact_gradient=True,
        )
        scale = 1 / np.sqrt(spec.group_size)  # per episode
        for name in names:
            res = result.results[name]
            row = {
                "setting": setting.name,
                "density_value": value,
                "rho": float(env.decision_density),
                "estimator": name,
                "snr": res.gradient_snr * scale,
                "snr_low": res.gradient_snr_low * scale,
                "snr_high": res.gradient_snr_high * scale,
                "snr_bias_corrected": res.snr * scale,
                "cosine": res.cosine,
                "episodes": spec.episodes,
                "group_size": spec.group_size,
                "parameters": int(jac.shape[1]),
            }
            if len(spec.seeds) > 1:  # rows of one initialisation (rb2's) stay as they were
                row["init_seed"] = seed
            if name != spec.trajectory:
                ratio, low, high = result.gradient_ratios[(name, spec.trajectory)]
                row.update(ratio=ratio, ratio_low=low, ratio_high=high)
            rows.append(row)
    return rows


FIT_RESAMPLES = 4000
"""Bootstrap resamples of the slope's interval (:func:`snr_fits`)."""


def snr_fits(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per setting and turn-level estimator: the least-squares slope of log(SNR ratio) on
    log(rho), through each density's log ratio averaged over the network initialisations
    (rows' ``init_seed``; one where rows name none), its intercept and R^2
    (:func:`routine_envs.snr.fit_loglog`), and two 95% intervals:

    - ``jackknife_low``/``jackknife_high``: each density's jackknife standard error
      (``(log high - log low) / (2 * 1.96)``, averaged over the initialisations and divided by
      the square root of their number) propagated as independent through the slope
      ``sum c_i y_i`` (``c_i = (x_i - mean x) / Sxx``): rb2's interval, the episodes' noise
      alone, narrower than the data where the points do not lie on the line;
    - ``slope_low``/``slope_high``: the envelope of that interval, of the least-squares
      t interval from the residuals of the fit through the mean (``scipy.stats.linregress``'s
      standard error, ``n - 2`` degrees of freedom: the scatter of the densities about the line,
      R^2 below 1) and of a percentile bootstrap that resamples the initialisations, fits the
      line through their mean, then resamples that fit's residuals (scaled by
      ``sqrt(n / (n - 2))``) and fits again (the scatter between initialisations): never
      narrower than any of the three (a percentile bootstrap of 7 residuals alone is too
      narrow, the t interval alone ignores the initialisations)."""
    from routine_envs.snr import fit_loglog

    out = []
    keys = dict.fromkeys((r["setting"], r["estimator"]) for r in rows if "ratio" in r)
    for setting, name in keys:
        mine = [r for r in rows if r["setting"] == setting and r["estimator"] == name]
        rho = np.array(sorted({r["rho"] for r in mine}, reverse=True))
        if len(rho) < 2:
            continue
        seeds = sorted({r.get("init_seed", 0) for r in mine})
        at = {(r.get("init_seed", 0), r["rho"]): r for r in mine}
        if len(at) != len(seeds) * len(rho):
            raise ValueError(f"{setting} {name}: not every initialisation has every density")
        logs = np.log([[at[(s, x)]["ratio"] for x in rho] for s in seeds])  # (S, D)
        mean = logs.mean(axis=0)
        slope, intercept, r2 = fit_loglog(rho, np.exp(mean))
        x = np.log(rho)
        c = (x - x.mean()) / ((x - x.mean()) ** 2).sum()
        rng = np.random.default_rng(0)
        picked = logs[rng.integers(len(seeds), size=(FIT_RESAMPLES, len(seeds)))].mean(axis=1)
        b = picked @ c  # (B,) slopes through each resample's mean
        fitted = picked.mean(axis=1, keepdims=True) + b[:, None] * (x - x.mean())
        residuals = (picked - fitted) * np.sqrt(len(x) / max(1, len(x) - 2))
        drawn = np.take_along_axis(
            residuals, rng.integers(len(x), size=(FIT_RESAMPLES, len(x))), axis=1
        )
        low, high = np.percentile((fitted + drawn) @ c, [2.5, 97.5])
        se = np.array(
            [
                np.mean(
                    [(np.log(at[(s, v)]["ratio_high"]) - np.log(at[(s, v)]["ratio_low"]))
                     / (2 * 1.959964) for s in seeds]
                ) / np.sqrt(len(seeds))
                for v in rho
            ]
        )  # fmt: skip
        half = 1.959964 * float(np.sqrt((c**2 * se**2).sum()))
        line = stats.linregress(x, mean)
        t_half = float(stats.t.ppf(0.975, len(x) - 2) * line.stderr) if len(x) > 2 else 0.0
        low = min(low, slope - half, slope - t_half)
        high = max(high, slope + half, slope + t_half)
        out.append(
            {
                "setting": setting,
                "estimator": name,
                "slope": slope,
                "slope_low": float(low),
                "slope_high": float(high),
                "jackknife_low": slope - half,
                "jackknife_high": slope + half,
                "intercept": intercept,
                "r2": r2,
                "densities": len(rho),
                "initialisations": len(seeds),
                "rho_range": [float(rho.max()), float(rho.min())],
            }
        )
    return out


def steps_rows(
    computed: Mapping[str, Mapping[str, Any]], trajectory: str = "trajectory_mc"
) -> list[dict[str, Any]]:
    """Per setting, density and method of ``computed`` (:func:`~.scores.method_scores` by
    method): the IQM steps to target and, for every method but ``trajectory``, the ratio of
    ``trajectory``'s steps to its own (how many times the steps the trajectory-level method
    needs) with its bootstrap interval and bound."""
    out = []
    base = computed.get(trajectory, {}).get("settings", {})
    for name, sc in computed.items():
        for setting, entry in sc["settings"].items():
            theirs = {r["density_value"]: r for r in base.get(setting, {}).get("rows", [])}
            for row in entry["rows"]:
                item = {
                    "setting": setting,
                    "method": name,
                    "density_value": row["density_value"],
                    "rho": row["rho"],
                    "steps_iqm": row["steps_iqm"],
                    "steps_low": row["steps_low"],
                    "steps_high": row["steps_high"],
                    "steps_bound": row["steps_bound"],
                    "reached": row["reached"],
                    "runs": row["runs"],
                }
                if name != trajectory and row["density_value"] in theirs:
                    ratio = scores.ratio_to(theirs[row["density_value"]], row)
                    item.update(
                        {f"{trajectory}_over_this": ratio["ratio"], "ratio_low": ratio["low"],
                         "ratio_high": ratio["high"], "ratio_bound": ratio["bound"],
                         "ratio_text": scores.ratio_text(ratio)}
                    )  # fmt: skip
                out.append(item)
    return out


def plot(
    snr: Sequence[Mapping[str, Any]],
    fits: Sequence[Mapping[str, Any]],
    steps: Sequence[Mapping[str, Any]],
    path: Path,
) -> None:
    """Two panels, the paper's figures: the SNR ratio at initialisation against rho (log-log,
    jackknife bars, the fitted lines and the paper's slope), and the steps to target against
    rho per method (IQM, bootstrap bars; hollow markers: censored, a lower bound)."""
    from baselines.experiments.benchmark.figures import method_colours, save_figure
    from baselines.lib import plotting

    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    names = list(dict.fromkeys(r["estimator"] for r in snr if "ratio" in r))
    methods = list(dict.fromkeys(r["method"] for r in steps))
    colours = method_colours([*names, *methods])  # one colour per method in both panels
    for i, name in enumerate(names):
        mine = sorted(
            (r for r in snr if r["estimator"] == name and "ratio" in r), key=lambda r: r["rho"]
        )
        rho = np.array([r["rho"] for r in mine])
        y = np.array([r["ratio"] for r in mine])
        err = [y - [r["ratio_low"] for r in mine], [r["ratio_high"] for r in mine] - y]
        fit = next((f for f in fits if f["estimator"] == name), None)
        label = name if fit is None else f"{name}: slope {fit['slope']:.3f}, R^2 {fit['r2']:.3f}"
        line = left.errorbar(
            rho, y, yerr=err, capsize=2, ms=4, label=label, color=colours[name],
            **plotting.style(i),
        )  # fmt: skip
        if fit is not None:
            xs = np.geomspace(rho.min(), rho.max(), 50)
            left.plot(xs, np.exp(fit["intercept"]) * xs ** fit["slope"], lw=0.8,
                      color=line[0].get_color())  # fmt: skip
    if fits:  # the paper's slope through the first fit's value at rho = 1, for comparison
        first = fits[0]
        rho = np.geomspace(first["rho_range"][1], first["rho_range"][0], 50)
        left.plot(
            rho,
            np.exp(first["intercept"]) * rho**PAPER_SLOPE,
            "k:",
            lw=1,
            label=f"the paper's slope {PAPER_SLOPE} (through {first['estimator']}'s fit at rho 1)",
        )
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("decision density rho")
    left.set_ylabel("SNR ratio, turn-level / trajectory-level\n(at initialisation, per episode)")
    left.set_title("Gradient SNR at initialisation", fontsize=9)
    left.legend(fontsize=6)
    for i, name in enumerate(methods):
        mine = sorted((r for r in steps if r["method"] == name), key=lambda r: r["rho"])
        x = plotting.dodged([r["rho"] for r in mine], i, len(methods))
        y = np.array([r["steps_iqm"] for r in mine])
        err = [y - [r["steps_low"] for r in mine], [r["steps_high"] for r in mine] - y]
        line = right.errorbar(
            x, y, yerr=err, capsize=2, ms=4, label=name, color=colours[name], **plotting.style(i)
        )
        for xi, r in zip(x, mine, strict=True):
            if r["steps_bound"] != "exact":
                right.plot(xi, r["steps_iqm"], "^", mfc="none", color=line[0].get_color())
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("decision density rho")
    if len(methods) > 1:
        right.text(0.0, -0.2, plotting.dodge_note(len(methods)).strip(" ()"), fontsize=6,
                   transform=right.transAxes)  # fmt: skip
    right.set_ylabel("steps to target (IQM; ^ = censored, lower bound)")
    right.set_title("Training steps to the target", fontsize=9)
    right.legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def write(
    folder: Path,
    snr: Sequence[Mapping[str, Any]],
    computed: Mapping[str, Mapping[str, Any]],
    trajectory: str = "trajectory_mc",
) -> dict[str, Any]:
    """Write ``paper.png`` and its numbers (``paper_snr.csv``, ``paper_steps.csv``,
    ``paper.json``: the SNR rows, fits and steps rows) into ``folder``; the JSON's content."""
    fits = snr_fits(snr)
    steps = steps_rows(computed, trajectory)
    folder.mkdir(parents=True, exist_ok=True)
    if snr:
        write_csv(folder / "paper_snr.csv", list(snr))
    if steps:
        write_csv(folder / "paper_steps.csv", steps)
    plot(snr, fits, steps, folder / "paper.png")
    result = {"snr": list(snr), "fits": fits, "steps": steps, "paper_slope": PAPER_SLOPE}
    write_atomic(folder / "paper.json", json.dumps(result, indent=1, allow_nan=False))
    return result


def markdown(result: Mapping[str, Any], trajectory: str = "trajectory_mc") -> list[str]:
    """The card's and leaderboard's section on the paper's quantities."""
    lines = [
        "## The paper's quantities",
        "",
        "Gradient SNR at initialisation (the tier's network; per episode, jackknife 95% "
        "intervals), ratio of each turn-level estimator to the trajectory-level one, and the "
        f"least-squares slope of its log on log rho (the paper: {PAPER_SLOPE}, R^2 0.999), "
        "with a 95% interval that resamples the network initialisations and the fit's "
        "residuals, and beside it the per-density jackknife errors propagated alone (which "
        "ignore both scatters):",
        "",
        "| estimator | slope [95% CI] | jackknife only | R^2 | rho range | densities | "
        "initialisations |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in result["fits"]:
        lo, hi = f["slope_low"], f["slope_high"]
        lines.append(
            f"| {f['estimator']} | {f['slope']:.3f} [{lo:.3f}, {hi:.3f}] | "
            f"[{f['jackknife_low']:.3f}, {f['jackknife_high']:.3f}] | {f['r2']:.4f} | "
            f"{f['rho_range'][0]:.3g} .. {f['rho_range'][1]:.3g} | {f['densities']} | "
            f"{f.get('initialisations', 1)} |"
        )
    key = f"{trajectory}_over_this"
    rows = [r for r in result["steps"] if key in r]
    if rows:
        lowest = min(r["rho"] for r in rows)
        lines += [
            "",
            f"Steps to target of `{trajectory}` over each method's, at every density (`>=`/`<=`: "
            "bounds from censored runs); the paper: about 2 at rho 1/51:",
            "",
            "| method | "
            + " | ".join(f"rho {rho:.3g}" for rho in sorted({r["rho"] for r in rows}, reverse=True))
            + " |",
            "|---" * (1 + len({r["rho"] for r in rows})) + "|",
        ]
        for name in dict.fromkeys(r["method"] for r in rows):
            mine = {r["rho"]: r for r in rows if r["method"] == name}
            cells = [
                mine[rho]["ratio_text"] if rho in mine else "n/a"
                for rho in sorted({r["rho"] for r in rows}, reverse=True)
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines += ["", f"(lowest rho {lowest:.3g}; figure `paper.png`, numbers `paper.json`)"]
    return lines
