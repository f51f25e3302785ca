"""symlib.inference: posterior approximations of any JAX model, in one shape.

Every method is fitted as ``fit_<method>(key, params0, model, data, config)`` and sampled as
``sample(key, posterior, n)`` (:mod:`symlib.inference.shape`); ``fit_modes(key, modes, model, data, config)``
fits one posterior around each of several networks in one compiled loop (VI, SWAG). MAP training and deep
ensembles (many networks at once, optionally sharded over devices), MC dropout, mean-field
variational inference (Bayes by backprop), SWAG, Laplace (full Hessian or GGN; last-layer
KFAC), SGHMC (scale-adapted, minibatches) and full-batch HMC (BlackJAX; multi-chain, sharded,
resumable) with its diagnostics. A ``model`` is :class:`Model` (``apply_fn``, its likelihood,
:class:`Categorical` or :class:`Gaussian`, and which entries of the params pytree are state), ``data`` is :class:`Data` (``x``, ``y``). Each fit is
written in its method's module, beside the loop it drives (private there); the helpers of each method (SWAG from
snapshots, KFAC sampling, dropout masks, the HMC store and log density) stay importable from
its module (``symlib.inference.swag``, ``.laplace``, ``.dropout``, ``.hmc``, ...).

Names (and submodules such as ``symlib.inference.hmc``) are loaded on first use, from the
table ``_EXPORTS``, so that ``import symlib.inference`` is cheap."""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    # the shape every fit shares (DiagonalGaussian is symlib.core.gaussian's, imported there)
    "shape": ["Model", "Data", "PointEstimate", "Samples", "DiagonalGaussian", "NonFiniteFitError", "sample",
              "fit_modes"],
    # the likelihood of a Model (every fit uses it)
    "likelihood": ["Categorical", "Gaussian"],
    # each method: its configuration, its fit, its posterior (and a few helpers)
    "training": ["TrainConfig", "fit_map", "fit_ensemble", "evaluate"],
    "ensembles": ["multi_mode_samples"],
    "vi": ["VIConfig", "fit_vi"],
    "laplace": ["LaplaceConfig", "fit_laplace", "LaplacePosterior", "LastLayerLaplace", "KFACPosterior",
                "LaplaceWarning"],
    "swag": ["SWAGConfig", "fit_swag", "SWAGPosterior"],
    "sgmcmc": ["SGHMCConfig", "fit_sghmc", "sghmc_epochs", "SGHMCState"],
    "dropout": ["DropoutConfig", "fit_dropout", "DropoutPosterior", "DropoutDraw", "dropout_apply"],
    "posterior": ["fit_hmc", "FITS"],
    # full-batch HMC: its configuration, result and errors (the store, log density and kernel under symlib.inference.hmc)
    "hmc": ["HMCConfig", "HMCResult", "HMCWarning", "CorruptRunError"],
    "diagnostics": ["ess", "rhat", "function_space_diagnostics", "summarize_hmc"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
