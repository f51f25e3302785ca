"""Xiao et al. (2023): the paper's reference numbers, claims (quoted) and settings."""
from __future__ import annotations





# ---------------------------------------------------------------------------------------
# The paper's reference numbers and claims (quoted; the paper's column of the notebooks).
# ---------------------------------------------------------------------------------------

#: Sec. 1 (the symmetry is exact, no number given): notebook 01. The paper gives no accuracy
#: of one trained network; Table 1's nearest numbers are the predictives of 1,000 HMC samples
#: (98.43%) and of an ensemble (98.66%), a different quantity, shown as context only.
XIAO_SEC1_CLAIMS = {
    "max_logit_difference": "0 (exact identity)",
    "prediction_agreement": "1",
    "test_accuracy": "not reported for one network (Table 1's predictives of HMC samples and of an ensemble: "
                     "98.4-98.7%, MNIST, 512 units)",
}

#: Fig. 1 (a figure without numbers): the loss barrier between two independently trained
#: MLPs, before and after re-basin (weight or activation matching): notebook 02.
XIAO_FIG1_CLAIMS = {"barrier_no_matching": "clearly > 0", "barrier_matched": "about 0"}

#: Sec. 2 and Fig. 2 (a figure without numbers; 512 hidden units, MNIST, NoT from 0
#: to 511; the text: "for three random W_init", the caption: "over 5 runs"): notebook 03.
XIAO_FIG2_CLAIMS = {
    "not_after_training": "almost exactly unaffected by training",
    "distance_vs_not": "increases, strongly correlated",
    "barrier_vs_not": "increases, strongly correlated",
    "not_along_path": "flat at both ends, smooth and monotone between",
    "not_over_epochs": "stable",
}

#: Table 1, quoted: agreement and TV to HMC samples, test accuracy (%) of the samples'
#: predictive and of the mean network. Columns as in the paper: notebook 04.
XIAO_TABLE1 = {
    "columns": ["HMC sample", "HMC q_d", "HMC q_r", "Ensemble sample", "Ensemble q_d", "Ensemble q_r", "VI q"],
    "agreement": [1.0, 0.1212, 0.8249, 0.9931, 0.5239, 0.9868, 0.9885],
    "tv": [0.0, 0.8641, 0.6570, 0.0229, 0.7210, 0.0495, 0.0235],
    "accuracy_samples": [98.43, 11.11, 82.34, 98.66, 52.25, 97.72, 98.11],
    "accuracy_mean": [None, 28.06, 92.25, None, 86.40, 97.97, 98.04],
}

#: The setting of Table 1, as the notebooks quote it beside the table.
XIAO_TABLE1_SETTING = "784-512-10 on MNIST (no training-set size given), 1,000 HMC samples"

#: Sec. 3.2 and Fig. 3 (a figure without numbers): (i) re-basin shrinks the standard
#: deviations, (ii) HMC and VI put many weights at the prior's scale, (iii) pruning by
#: HMC's sigma with the ensemble's means beats either alone: notebook 05.
XIAO_FIG3_CLAIMS = {
    "rebasin_shrinks_sigma": "yes",
    "sigma_near_prior": "many for HMC and VI",
    "stitched_pruning_gain": "> 0, significant",
}

MLP_SEEDS = (0, 1)
MATCHING_METHODS = ("no matching", "weight matching", "activation matching")
SPLITS = ("train", "test")
PRUNE_FRACTIONS = (1.0, 0.8, 0.6, 0.4, 0.3, 0.2, 0.15, 0.1, 0.05)
