"""The HMC precision study (symlib.inference.hmc.precision): on a CPU every precision is the
same float32 computation, so the errors are 0 and the runs identical; the decision rule is
tested on studies built to pass or fail it."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.inference.hmc import HMCConfig, choose_precision, density_errors, make_logdensity, precision_study
from symlib.core.models import mlp_apply, mlp_init


@pytest.fixture(scope="module")
def target():
    x = jax.random.normal(jax.random.key(0), (64, 5))
    y = (x[:, 0] > 0).astype(jnp.int32)
    init = jax.vmap(lambda k: mlp_init(k, [5, 8, 2]))(jax.random.split(jax.random.key(1), 2))
    return init, make_logdensity(x, y, apply_fn=mlp_apply)


def test_on_a_cpu_every_precision_is_float32(target):
    init, logdensity = target
    cfg = HMCConfig(step_size=0.05, num_leapfrog=5, num_burnin=4, num_samples=6, thin=1, num_chains=2,
                    adapt_step_size=True)
    study = precision_study(jax.random.key(2), init, logdensity, cfg)
    assert study["precisions"] == ["highest", "tensorfloat32", "bfloat16"]
    for part in ("at_start", "at_end"):
        for p in study["precisions"]:
            np.testing.assert_array_equal(study[part][p]["logdensity_abs_error"], 0.0)
            np.testing.assert_array_equal(study[part][p]["grad_rel_error"], 0.0)
            assert study[part][p]["seconds_per_gradient"] > 0
    runs = study["runs"]
    assert 0 < runs["highest"]["acceptance"] <= 1 and runs["highest"]["step_size"].shape == (2,)
    for p in ("tensorfloat32", "bfloat16"):
        assert runs[p]["acceptance"] == runs["highest"]["acceptance"]
        np.testing.assert_array_equal(runs[p]["step_size"], runs["highest"]["step_size"])
    chosen, reasons = choose_precision(study)
    assert chosen in study["precisions"] and len(reasons) == 3 and all("qualifies" in r for r in reasons)


def test_errors_are_measured_against_highest(target):
    init, logdensity = target
    shifted = lambda p: logdensity(p) + 0.5  # noqa: E731  a function that is not the reference's
    errs = density_errors(logdensity, init, ("highest",))
    assert set(errs) == {"highest"}
    with pytest.raises(ValueError, match="start with the reference 'highest'"):
        density_errors(shifted, init, ("bfloat16", "highest"))
    with pytest.raises(ValueError, match="distinct"):
        density_errors(logdensity, init, ("highest", "highest"))
    bad = jax.tree_util.tree_map(lambda a: a * jnp.nan, init)
    with pytest.raises(ValueError, match="not finite"):
        density_errors(logdensity, bad, ("highest",))


def _study(acc, err, seconds, divergences=(0, 0, 0)):
    names = ["highest", "tensorfloat32", "bfloat16"]
    return {"precisions": names,
            "at_start": {p: {"logdensity_abs_error": np.array([e]), "seconds_per_gradient": s}
                         for p, e, s in zip(names, err, seconds)},
            "at_end": {p: {"logdensity_abs_error": np.array([e])} for p, e in zip(names, err)},
            "runs": {p: {"acceptance": a, "divergences": d} for p, a, d in zip(names, acc, divergences)}}


def test_the_fastest_precision_that_samples_as_float32_is_chosen():
    assert choose_precision(_study((0.80, 0.79, 0.70), (0, 0.01, 0.5), (3.0, 1.0, 0.5)))[0] == "tensorfloat32"
    assert choose_precision(_study((0.80, 0.80, 0.80), (0, 0.01, 0.02), (3.0, 1.0, 0.5)))[0] == "bfloat16"
    # acceptance moved by more than the tolerance, a log density off by 0.2 nat, or more divergences: float32
    assert choose_precision(_study((0.80, 0.75, 0.75), (0, 0, 0), (3.0, 1.0, 0.5)))[0] == "highest"
    assert choose_precision(_study((0.80, 0.80, 0.80), (0, 0.2, 0.2), (3.0, 1.0, 0.5)))[0] == "highest"
    chosen, reasons = choose_precision(_study((0.80, 0.80, 0.80), (0, 0, 0), (3.0, 1.0, 0.5), (0, 2, 3)))
    assert chosen == "highest" and "rejected" in reasons[1] and "3.00x float32" in reasons[1]
