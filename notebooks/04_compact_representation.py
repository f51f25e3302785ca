# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext,-all
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (symlib)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A compact representation of BNN posteriors: $q_d$ versus $q_r$
#
# Reproduces Section 3.1 and Table 1 of {cite:t}`xiao2023compact`.
#
# **Core idea.** Sampling methods such as HMC, and deep ensembles, give a set of networks
# but no explicit per-weight uncertainty. The obvious summary, a diagonal Gaussian with
# the samples' per-weight mean and standard deviation ($q_d$, "direct"), mixes networks
# whose hidden units are in different orders, so its mean is not a sensible network and
# its standard deviations are inflated. Matching every sample to one shared reference
# first (re-basin) and then taking mean and standard deviation gives $q_r$, a compact
# summary in the same form as mean-field VI. The paper measures how well each summary
# reproduces the HMC predictive.
#
# This notebook shows:
#
# - HMC samples (BlackJAX, full batch), a deep ensemble and mean-field VI for the same MLP
#   on the same training examples;
# - $q_d$ and $q_r$ for the HMC samples and for the ensemble ($q_r$ by activation matching,
#   as in the paper, and by weight matching);
# - the paper's Table 1: agreement and total variation with the HMC predictive, test
#   accuracy of each predictive (100 Monte-Carlo samples for every Gaussian), and test
#   accuracy of the mean network, beside the paper's numbers.

# %% tags=["hide-cell"]
import numpy as np
from IPython.display import display

from symlib import experiments
from symlib.experiments import plotting
from symlib.experiments import results
from symlib.experiments.profiles import get_profile
from symlib.experiments.report import PaperProfile, Table, paper_vs_ours

plotting.set_style()
profile = get_profile()
print(profile.describe())
print(f"posterior approximations: {profile.bnn_n_train} training examples; HMC {profile.hmc_chains} chains x "
      f"{profile.hmc_samples} kept samples ({profile.hmc_burnin} burn-in iterations, {profile.hmc_leapfrog} leapfrog "
      f"steps each, thinning {profile.hmc_thin}); ensemble of {profile.ensemble_members}; VI; "
      f"{profile.mc_samples} Monte-Carlo samples per Gaussian predictive")

# %% [markdown]
# ## The three posterior approximations
#
# All of them are experiments of `symlib` (`hmc`, `ensemble`, `vi`) computed once and
# shared through the artifact cache with the next chapter. The HMC chains start from
# independent random initialisations; their diagnostics are computed on function-space
# quantities (test log-likelihood and the predictive probability of the true class of
# ten fixed test points), where R-hat is meaningful despite the symmetries.

# %%
res = experiments.run("compact_representation", profile)
diag = res.hmc_diagnostics
print(f"HMC: mean acceptance {diag.mean_acceptance:.3f}, divergences {diag.num_divergences}, "
      f"R-hat(test log-lik) {float(diag.rhat_test_loglik):.3f}, ESS(test log-lik) {float(diag.ess_test_loglik):.1f}")
print(f"HMC predictive on the test set: accuracy {res.hmc_test.accuracy:.4f}, "
      f"NLL {res.hmc_test.nll:.4f}")

# %% [markdown]
# ## Table 1

# %%
paper = experiments.XIAO_TABLE1
paper_col = {c: i for i, c in enumerate(paper["columns"])}
order = ["HMC sample", "HMC q_d", "HMC q_r", "HMC q_r (weight)", "HMC q_r (per chain)", "Ensemble sample", "Ensemble q_d", "Ensemble q_r",
         "Ensemble q_r (weight)", "VI q"]


def cell(col, metric, scale="{:.4f}"):
    ours = getattr(res.table[col], metric)
    ours = "N/A" if ours is None else scale.format(float(ours))
    i = paper_col.get(col)
    theirs = "" if i is None or paper[metric][i] is None else scale.format(paper[metric][i])
    return f"{ours} ({theirs})" if theirs else ours


rows = [[col, cell(col, "agreement"), cell(col, "tv"), cell(col, "accuracy_samples", "{:.2f}"),
         cell(col, "accuracy_mean", "{:.2f}")] for col in order]
display(Table(["approximation", "agreement with HMC (up)", "TV to HMC (down)", "test acc. % of predictive",
               "test acc. % of the mean"], rows))
print(f"ours: {profile.name} profile; (in brackets): Xiao et al. (2023), Table 1, {experiments.XIAO_TABLE1_SETTING}"
      ". 'q_r' is activation matching (the paper's choice); '(weight)' is weight matching; "
      "'(per chain)' matches each HMC chain's mean once and applies that permutation to all its samples.")

# %%
import matplotlib.pyplot as plt  # noqa: E402

cols = [c for c in order if c in paper_col]
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), constrained_layout=True)
for ax, metric, label in ((axes[0], "agreement", "agreement with HMC (higher is better)"),
                          (axes[1], "tv", "total variation to HMC (lower is better)")):
    plotting.grouped_bars(ax, cols, {f"ours ({profile.name})": [getattr(res.table[c], metric) for c in cols],
                                     "Xiao et al. (2023)": [paper[metric][paper_col[c]] for c in cols]},
                          ylabel=label)
fig.suptitle("Table 1 as a figure: how close each approximation's predictive is to HMC's");

# %% [markdown]
# ### Paper profile
#
# The paper's setting (784-512-10 on 50,000 MNIST images; HMC with 500 leapfrog steps per
# iteration, 600 burn-in iterations and 1,000 kept samples, about 5.6 million gradient
# evaluations over the full training set) needs a GPU: on the 2-core CPU this book is
# built on, one leapfrog step takes about 0.65 s (`benchmarks/hmc_throughput.py`), i.e.
# weeks. On a GPU machine run
#
# ```bash
# SYMLIB_PROFILE=paper python -m symlib run compact_representation --out book/results
# ```
#
# (resumable: the HMC chains are written to disk chunk by chunk), commit
# `book/results/compact_representation-paper.json`, and the table below shows it.

# %%
paper_run = results.load("compact_representation", "paper")
saved = {} if paper_run is None else paper_run["summary"]["table"]
metric_labels = {"agreement": ("agreement with HMC", "{:.4f}"), "tv": ("TV to HMC", "{:.4f}"),
                 "accuracy_samples": ("test acc. % of predictive", "{:.2f}"),
                 "accuracy_mean": ("test acc. % of the mean", "{:.2f}")}
rows, paper_profile = [], []
for col in order:
    for metric, (label, fmt) in metric_labels.items():
        ours = getattr(res.table[col], metric)
        if ours is None:
            continue
        i = paper_col.get(col)
        rows.append((f"{col}: {label}", "not in the paper" if i is None else fmt.format(paper[metric][i]),
                     fmt.format(ours)))
        paper_profile.append(fmt.format(saved[col][metric]) if metric in saved.get(col, {}) else None)
display(paper_vs_ours(rows, profile.name, PaperProfile.from_saved(paper_run, paper_profile)))
if paper_run is None:
    print("no paper-profile run saved in book/results/ yet (see the command above)")
else:
    print(f"paper profile: `{paper_run['command']}` on {paper_run['device']}, {paper_run['date']}")

# %% [markdown]
# Two rows go beyond the paper. Weight matching gives a different $q_r$ from activation
# matching, and for noisy HMC samples not always a better one. The per-chain summary
# uses the fact that an HMC chain does not hop between permutation modes: within a chain
# the matching permutation is the identity, so the only permutation to remove is the one
# between chains, estimated once from the chains' mean networks (the next chapter shows
# what this does to the standard deviations).

# %% [markdown]
# ## Synthesis
#
# The paper's findings (Sec. 3.1): (i) $q_r$ is far better than $q_d$ for both HMC and
# the ensemble, so re-basin is what makes a compact Gaussian summary work; (ii) the
# ensemble's $q_r$ is closer to HMC than HMC's own $q_r$, which the authors attribute to
# activation matching between networks of different loss levels within HMC; (iii) the
# ensemble's $q_r$ is a parameter-efficient representation with competitive accuracy.

# %%
t = res.table
checks = []
for d, r, m in ((t["HMC q_d"], t["HMC q_r"], "HMC"), (t["Ensemble q_d"], t["Ensemble q_r"], "Ensemble")):
    checks += [(f"{m}: agreement q_r > q_d", f"{r.agreement:.3f} vs {d.agreement:.3f}", r.agreement > d.agreement),
               (f"{m}: TV q_r < q_d", f"{r.tv:.3f} vs {d.tv:.3f}", r.tv < d.tv),
               (f"{m}: accuracy of mu_r > mu_d", f"{r.accuracy_mean:.2f}% vs {d.accuracy_mean:.2f}%",
                r.accuracy_mean > d.accuracy_mean)]
ens_better = t["Ensemble q_r"].agreement > t["HMC q_r"].agreement
checks.append(("(ii) ensemble q_r agrees with HMC more than HMC q_r does",
               f"{t['Ensemble q_r'].agreement:.3f} vs {t['HMC q_r'].agreement:.3f}", ens_better))
display(Table(["claim", "ours", "holds"], [(c, v, "yes" if ok else "no") for c, v, ok in checks]))

# %% [markdown]
# The cell below asserts finding (i), which the issue that planned this chapter requires
# at quick scale: for HMC and for the ensemble, $q_r$ beats $q_d$ on agreement, on total
# variation, and on the accuracy of its mean. Finding (ii) is reported above, not
# asserted: it is the paper's observation about its own setting, not a property we expect
# at every scale.

# %% tags=["nbval-check-output"]
failed = [c for c, _, ok in checks[:6] if not ok]
assert not failed, failed
print("claim verified: re-basin (q_r) beats the direct summary (q_d) for HMC and for the ensemble")

# %% [markdown]
# Citations link to the book's {doc}`../book/references`.
