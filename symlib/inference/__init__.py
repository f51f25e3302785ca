"""symlib.inference: MAP training of many networks at once, deep ensembles and multi-mode
sampling, MC dropout (last-layer masks, in training and as weight-space samples), mean-field
variational inference (Bayes by backprop), SWAG (diagonal + low rank), Laplace
approximations (full Hessian or GGN; last-layer KFAC), SGHMC (BlackJAX, minibatches),
full-batch HMC (BlackJAX; multi-chain, sharded, resumable) and its diagnostics. Every
sampler returns its samples in the network's pytree layout, stacked on a leading axis.

Every posterior approximation is fitted as ``fit_<method>(key, params0, model, data, config)``
and sampled as ``sample(key, posterior, n)`` (:mod:`symlib.inference.posterior`); the
training loops they call (``train_map``, ``train_vi``, ``train_swag``, ``train_dropout``,
``laplace_posterior``, ``run_sghmc``) stay public for their diagnostics and for banks of
many networks at once.

Names (and submodules such as ``symlib.inference.hmc``) are loaded on first use, from the
table ``_EXPORTS``, so that ``import symlib.inference`` is cheap."""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    # one shape for every posterior approximation (DiagonalGaussian is symlib.core.gaussian's, imported there)
    "posterior": ["Model", "Data", "DiagonalGaussian", "PointEstimate", "Samples", "DropoutPosterior", "DropoutDraw",
                  "LastLayerLaplace", "VIConfig", "LaplaceConfig", "SGHMCConfig", "DropoutConfig", "fit_map",
                  "fit_ensemble", "fit_vi", "fit_laplace", "fit_swag", "fit_sghmc", "fit_hmc", "fit_dropout", "sample", "FITS",
                  "NonFiniteFitError"],
    # the training loops and samplers they call, and the banks of many networks
    "training": ["AUGMENTATIONS", "CROP_PADDING", "OPTIMIZERS", "TrainConfig", "learning_rate_at", "make_optimizer",
                 "sq_norm", "map_objective", "epoch_steps", "train_map", "train_mlp", "train_map_many", "train_many",
                 "random_crop", "random_flip", "evaluate"],
    "ensembles": ["EnsembleResult", "member_keys", "train_ensemble", "multi_mode_samples"],
    "dropout": ["DropoutApply", "check_rate", "check_dropout_layer", "dropout_masks", "dropout_apply", "train_dropout",
                "dropout_samples"],
    "vi": ["DEFAULT_STD_INIT", "DEFAULT_PRIOR_VAR", "inverse_softplus", "gaussian_kl", "MeanField", "MeanFieldMLP",
           "VIResult", "train_vi", "categorical_loglik", "CategoricalLogLik", "categorical_loglik_fn", "check_loglik",
           "train_mlp_vi"],
    "swag": ["SWAGConfig", "SWAGPosterior", "train_swag", "stacked_leading_axis", "swag_covariance",
             "swag_from_snapshots", "swag_sample"],
    "laplace": ["HESSIANS", "KFACPosterior", "LaplacePosterior", "LaplaceWarning", "kfac_precision", "kfac_sample",
                "laplace_covariance", "laplace_posterior", "laplace_sample", "last_layer_kfac"],
    "sgmcmc": ["SGHMCResult", "sghmc_schedule", "run_sghmc"],
    # full-batch HMC: the names below (the rest under symlib.inference.hmc)
    "hmc": ["SAMPLER_VERSION", "CorruptRunError", "HMCConfig", "HMCResult", "HMCWarning", "JitteredHMC", "LogDensity",
            "iter_sample_chunks", "jittered_hmc", "load_result", "load_samples", "log_prior", "make_logdensity",
            "run_fingerprint", "run_hmc"],
    "diagnostics": ["ess", "function_space_diagnostics", "rhat", "summarize_hmc"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
