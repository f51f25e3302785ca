"""The registered precision study (xiao.posteriors.hmc_precision, the GPU queue's job
hmc-precision) on a tiny reduction of the quick profile: its summary is JSON and carries the
decision."""
import json

from symlib import experiments
from symlib.experiments.profiles import get_profile, reduced


def test_hmc_precision_summary(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    profile = reduced(get_profile("quick"), {"bnn_n_train": "200", "hidden": "8", "hmc_leapfrog": "3"}, "quick-tiny")
    res = experiments.run("hmc_precision", profile, verbose=False)
    summary = json.loads(json.dumps(experiments.SUMMARIES["hmc_precision"](res.artifact)))
    assert summary["chosen"] in ("highest", "tensorfloat32", "bfloat16") and len(summary["reasons"]) == 3
    for p in ("highest", "tensorfloat32", "bfloat16"):
        assert summary["at_start"][p]["logdensity_abs_error_max"] == 0.0  # a CPU computes them all in float32
        run = summary["runs"][p]
        assert 0 < run["acceptance"] <= 1 and len(run["step_size"]) == 2 and isinstance(run["warnings"], list)


def test_the_study_runs_one_precision_a_step_and_joins_them_as_the_library_study(tmp_path, monkeypatch):
    """Each precision's run is a cached step (what the GPU queue's job hmc-precision runs one
    per step); the experiment joins them into the study precision_study gives in one call."""
    from dataclasses import replace

    import jax
    import numpy as np

    from symlib.experiments import cache
    from symlib.experiments.xiao import posteriors
    from symlib.inference.hmc import precision_study

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path))
    profile = reduced(get_profile("quick"), {"bnn_n_train": "100", "hidden": "4", "hmc_leapfrog": "2"}, "quick-tiny")
    steps = posteriors.precision_steps(profile)
    assert steps.starts == ["highest", "tensorfloat32", "bfloat16"]
    done = cache.cached_steps(steps.name, steps.cache_config, steps.starts[:1], steps.train)  # a call that ran one step
    assert np.shape(jax.tree_util.tree_leaves(done[0]["last"])[0])[0] == posteriors.PRECISION_CHAINS
    assert "last" not in steps.train("bfloat16")
    study = experiments.run("hmc_precision", profile, verbose=False).artifact
    d, cfg, init = posteriors._hmc_setup(profile, posteriors.PRECISION_CHAINS, posteriors.PRECISION_KEPT)
    cfg = replace(cfg, num_burnin=posteriors.PRECISION_BURNIN, thin=1, adapt_step_size=True)
    direct = precision_study(jax.random.key(0), init, posteriors._hmc_target(profile, d), cfg)
    for p in direct["precisions"]:
        assert study["runs"][p]["acceptance"] == direct["runs"][p]["acceptance"]
        np.testing.assert_array_equal(study["runs"][p]["step_size"], direct["runs"][p]["step_size"])
        np.testing.assert_array_equal(study["at_end"][p]["logdensity_abs_error"], direct["at_end"][p]["logdensity_abs_error"])
