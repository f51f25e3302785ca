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
