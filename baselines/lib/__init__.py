"""The baselines library: the resumable runner (:mod:`.runner`), the results file
(:mod:`.results`), hyperparameter configs (:mod:`.config`), the CLI generator for settings
dataclasses (:mod:`.cli`), the SB3 methods (:mod:`.training`, :mod:`.trajectory_ppo`,
:mod:`.sb3_vec_env`), statistics (:mod:`.stats`) and output helpers (:mod:`.tables`)."""
