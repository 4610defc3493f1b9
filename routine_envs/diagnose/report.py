"""The report of a diagnosis: the practitioner's reading (prose) and the text table."""

from __future__ import annotations

import json
import math
import textwrap

from routine_envs.diagnose.results import DiagnosisResult
from routine_envs.diagnose.statistics import MDE_POWER, return_variance_warning


def variance_warning(result: DiagnosisResult) -> str | None:
    """The one-line warning of a result whose ``Var(R)`` is 0, undefined or from too small a
    sample to weigh a critic's error against (then the reading gives no ``sigma^2 / Var(R)``
    advice); ``None`` otherwise. See
    :func:`~routine_envs.diagnose.statistics.return_variance_warning` for "too small"."""
    return return_variance_warning(
        result.num_episodes, result.return_variance, result.return_variance_se
    )


def reading(
    result: DiagnosisResult, high_rho: float = 0.5, inconclusive_warning: float = 0.1
) -> str:
    """The practitioner's reading of a diagnosis, as a paragraph of text.

    It rests on the dilution model: a trajectory-level estimator puts the return's noise
    ``Var(R)`` on every step; a turn-level critic puts the advantage's noise only on the critical
    steps (``rho`` of them, about ``Var(R)`` each) plus its own error ``sigma^2`` on every step,
    so ``SNR^2(turn) / SNR^2(trajectory) ~ 1 / (rho + sigma^2 / Var(R))``. A perfect critic gains
    ``rho^(-1/2)`` in SNR; a critic with ``sigma^2 / Var(R) < rho`` keeps at least half of that
    gain in ``SNR^2`` (a gain of at least ``(2 rho)^(-1/2)``); at ``sigma^2 / Var(R) = 1 - rho``
    the two break even. This is a rule of thumb, not a guarantee for a particular estimator.
    Where ``Var(R)`` is 0, undefined or from too small a sample (:func:`variance_warning`), the
    reading gives no ``sigma^2 / Var(R)`` advice, and :func:`format_result` prints the warning.

    Args:
        result: a :class:`DiagnosisResult`.
        high_rho: rho at or above which trajectory-level estimators are said to suffice (a perfect
            critic would gain at most ``high_rho^(-1/2)`` in SNR).
        inconclusive_warning: the reading warns that rho may be underestimated when more states
            were found routine only for lack of significance
            (:attr:`DiagnosisResult.num_inconclusive`) than this fraction of the critical ones
            (of one, when none is critical).
    """
    rho, (low, high) = result.rho, result.ci
    level = f"{result.confidence:.0%}"
    detect = (
        f"States where the action changes the expected return by less than about "
        f"{result.mde.standardized:.3g} standard deviations of the paired return differences"
        f"{_mde_units(result)} count as routine here; more rollouts detect smaller effects."
    )
    if result.num_inconclusive > inconclusive_warning * max(result.num_critical, 1):
        share = result.num_inconclusive / result.num_states
        detect += (
            f" Caution: at {result.num_inconclusive} states ({share:.1%} of those tested) the "
            f"action changed the return in some rollouts without a significant mean effect; if "
            f"those effects are real, rho is up to {result.rho_upper:.3g} (the share of steps "
            f"where the action changed the return at all). Rerun with more rollouts, or with a "
            f"continuation policy closer to the one being trained, to tell."
        )
    detect += " " + _policy_note(result)
    if rho == 0.0:
        return (
            f"No tested step's action measurably changed the return (rho = 0, {level} CI "
            f"[{low:.3g}, {high:.3g}]). Either the environment is routine under this policy, or "
            f"its effects are below what {result.settings['num_rollouts']} rollouts detect. "
            + detect
        )
    gain = rho**-0.5
    if rho >= high_rho:
        sure = "" if low >= high_rho else f" (the CI reaches down to {low:.3g})"
        return (
            f"High decision density: rho = {rho:.3g}{sure}, about 1 step in {1 / rho:.3g} "
            f"decides the return. Trajectory-level estimators (Monte-Carlo returns, GRPO-style "
            f"group advantages) suffice: a perfect turn-level critic would raise the gradient SNR "
            f"by only about rho^(-1/2) = {gain:.2g}x, which a learned critic's error eats into. "
            + detect
        )
    head = (
        f"Low decision density: rho = {rho:.3g} ({level} CI [{low:.3g}, {high:.3g}]), about 1 "
        f"step in {1 / rho:.3g} decides the return, so trajectory-level advantages dilute the "
        f"signal: a perfect turn-level critic would raise the gradient SNR by about "
        f"rho^(-1/2) = {gain:.2g}x (between {high**-0.5:.2g}x and "
        f"{(low**-0.5 if low > 0 else math.inf):.2g}x over the CI). "
    )
    if variance_warning(result) is not None:
        return (
            head + "How small a learned critic's error must be to keep that gain is not said "
            "here: the return's variance of the sampled episodes is no measure to weigh it "
            "against (see the warning above). " + detect
        )
    var_r = result.return_variance
    return (
        head + f"A learned turn-level critic pays if its per-step error variance is small against "
        f"the return's: a critic with sigma^2/Var(R) < rho = {rho:.3g} (with Var(R) = "
        f"{var_r:.3g} over the sampled episodes, sigma^2 < {rho * var_r:.3g} in squared return "
        f"units) keeps at least half of that gain in SNR^2 (SNR at least "
        f"{(2 * rho) ** -0.5:.2g}x the trajectory-level one); it breaks even near "
        f"sigma^2/Var(R) = 1 - rho = {1 - rho:.3g}, above which trajectory-level estimators are "
        f"better. " + detect
    )


def _policy_note(result: DiagnosisResult) -> str:
    """Which policy the diagnosis ran under: rho depends on it."""
    name = result.settings.get("policy", "uniform random")
    note = (
        f"All of this is under the {name} policy, which reached the tested states and continued "
        f"the rollouts; rho depends on the policy"
    )
    if name == "uniform random":
        return note + " (--policy, or diagnose(policy=...), measures it under the one you train)."
    return note + "."


def _mde_units(result: DiagnosisResult) -> str:
    if result.mde.return_units == 0.0:
        return " (every paired difference was constant here, so any effect was detectable)"
    return f" (about {result.mde.return_units:.2g} in return units)"


def format_result(result: DiagnosisResult) -> str:
    """A text report: the estimate, the settings, the agreement table and the reading."""
    s = result.settings
    kwargs = json.dumps(s["env_kwargs"]) if s["env_kwargs"] else ""
    low, high = result.ci
    identical = result.num_states - result.num_critical - result.num_inconclusive
    ci_note = f"cluster-robust Wilson, design effect {result.design_effect:.2f}"
    if result.num_episodes < 10:
        ci_note += f" (only {result.num_episodes} episodes: the clustering is poorly estimated)"
    rows = [
        ("rho (critical share of steps)", f"{result.rho:.4f}   {result.confidence:.0%} CI "
         f"[{low:.4f}, {high:.4f}]"),
        ("share routine", f"{result.share_routine:.4f}"),
        ("rho, any difference seen", f"{result.rho_upper:.4f} (upper bracket: not-significant "
         "states counted critical)"),
        ("per-episode mean rho", f"{result.episode_mean_rho:.4f}"),
        ("policy", s["policy"]),
        ("states tested", f"{result.num_states} (steps of {result.num_episodes} episodes), "
         f"{result.num_critical} critical"),
        ("routine states", f"{identical} with identical branches, {result.num_inconclusive} "
         "not significant"),
        ("rollouts", f"{s['num_rollouts']} per action, {s['num_actions']} actions, common "
         "random numbers"),
        ("test", f"paired t-test vs the first action, Bonferroni over {s['num_actions'] - 1}, "
         f"alpha = {s['alpha']}"),
        (f"min. detectable effect ({MDE_POWER:.0%})", f"{result.mde.standardized:.3g} sd of "
         f"paired differences, ~{result.mde.return_units:.3g} in return units"),
        ("confidence interval", ci_note),
        ("Var(R) of sampled episodes", f"{result.return_variance:.4g} (standard error "
         f"{result.return_variance_se:.2g})"),
        (f"cut at max_steps={s['max_steps']}", f"{result.num_truncated_episodes} episodes, "
         f"{result.num_truncated_rollouts} continuations"),
        ("seed, time", f"{s['seed']}, {result.elapsed_seconds:.1f} s"),
    ]  # fmt: skip
    lines = [f"Decision-density diagnosis: {s['env']} {kwargs}".rstrip()]
    lines += [f"  {label:<31}{value}" for label, value in rows]
    warning = variance_warning(result)
    if warning is not None:
        lines.append(f"warning: {warning}")
    a = result.agreement
    if a is not None:
        lines += [
            "",
            f'Agreement with info["critical"] ({a.num_states} annotated states)',
            "                      annotated critical   annotated routine",
            f"  detected critical   {a.true_positives:>18}   {a.false_positives:>17}",
            f"  detected routine    {a.false_negatives:>18}   {a.true_negatives:>17}",
            f"  accuracy {a.accuracy:.4f}, annotated rho {a.annotated_rho:.4f}, "
            f"detection rate {a.true_positive_rate:.3f}, false-positive rate "
            f"{a.false_positive_rate:.3f}",
        ]
    lines += ["", "Reading", *_wrap(reading(result), 98, "  ")]
    return "\n".join(lines)


def _wrap(text: str, width: int, indent: str) -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent)
