"""Experiments of Laurent et al. (2024), "A symmetry-aware exploration of Bayesian neural
network posteriors", and the paper's reference numbers: one package.

Parts:

- :mod:`~symlib.experiments.laurent.perceptrons`: Fig. 1 and App. A (``toy_perceptrons``), with its claims;
- :mod:`~symlib.experiments.laurent.mlps`: Figs. 2 and 4 on MLPs (``laurent_mlps``), the
  min-mass problem and the swaps of Sec. 5.2, with their claims;
- :mod:`~symlib.experiments.laurent.toy`: the toy perceptrons' problem and its densities;
- :mod:`~symlib.experiments.laurent.optunet`: Fig. 2 and Sec. 5.2 on OptuNet (``laurent_optunets``);
- :mod:`~symlib.experiments.laurent.posteriors`: Sec. 4 on OptuNet (``optunet_bank``,
  ``posterior_samples``, ``laurent_posteriors``);
- :mod:`~symlib.experiments.laurent.collapse`: Sec. 5.1 on the same bank (``functional_collapse``);
- :mod:`~symlib.experiments.laurent.posteriors_resnet`: the same at ResNet-18 scale.

Every public name of :mod:`~symlib.experiments.laurent.perceptrons` and :mod:`~symlib.experiments.laurent.mlps` is also here
(loaded on first use, from the table ``_EXPORTS``). Importing the package imports every part: they
register their experiments and claims.
"""
from __future__ import annotations

from symlib.core.exports import lazy_exports

_EXPORTS = {
    "perceptrons": ["TOY_MAX_LOSS", "TOY_NETS", "LAURENT_FIG1_CLAIMS", "OUTPUT_WEIGHT_FORMS", "ToyPerceptronsResult",
                    "toy_symmetry_tests", "TOY_BOOTSTRAP", "toy_bootstrap", "toy_perceptrons", "SYMMETRY_TEST_LEVEL"],
    "mlps": ["LAURENT_FIG2_CLAIMS", "LAURENT_FIG4_CLAIMS", "LaurentMLPsResult", "laurent_train_config",
             "LAURENT_MLP_BLOCK", "mass_hessian", "mass_along_line", "LINE_T", "min_mass_entry", "MARGINALS_MAX_SHARE",
             "UNFEASIBLE_RATIO", "swap_summary", "SWAP_RATE_DROP", "BURST_WINDOW", "LATE_NET_FRACTION", "laurent_mlps"],
}
__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


# the parts register their experiments and claims when imported: eagerly, in this order (the MLPs'
# claims before the others')
from symlib.experiments.laurent import (perceptrons, mlps, optunet, posteriors, collapse,  # noqa: E402,F401
                                        posteriors_resnet, toy)
