"""A small causal LM trained by GRPO on the text envs (``python -m baselines.lm``):
``train`` (learning curves), ``dilution`` (GRPO steps to target against rho per estimator)
and ``snr`` (the exact gradient SNR and bias of the LM policy at initialisation)."""
