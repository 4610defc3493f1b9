"""``python -m baselines.lm {train,dilution,snr} ...``: a tiny causal language model trained by
GRPO on the text envs on CPU (:mod:`baselines.experiments.lm.train`), token-level dilution
measured (:mod:`baselines.experiments.lm.dilution`) and the exact gradient SNR of the LM policy
(:mod:`baselines.experiments.lm.exact_snr`). See ``docs/llm.md``."""

from baselines.commands import script

__all__ = ["main"]

main = script("lm")

if __name__ == "__main__":
    main()
