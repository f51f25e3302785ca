"""Full-batch HMC on a network with model state (BatchNorm statistics): make_logdensity's
``state`` is held fixed, the density and the samples are over the weights only."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.inference.hmc import HMCConfig, make_logdensity, run_hmc


class BNMLP(nn.Module):
    @nn.compact
    def __call__(self, x, train: bool = False):
        h = nn.BatchNorm(use_running_average=not train)(nn.Dense(8)(x))
        return nn.Dense(3)(nn.relu(h))


@pytest.fixture(scope="module")
def setup():
    x = jax.random.normal(jax.random.key(0), (60, 4))
    y = (x[:, 0] > 0).astype(jnp.int32) + (x[:, 1] > 1).astype(jnp.int32)
    model = BNMLP()
    v = model.init(jax.random.key(1), x)
    stats = jax.tree_util.tree_map(lambda a: a + 0.5, v["batch_stats"])  # running statistics not at their init
    return x, y, model, v["params"], stats


def test_state_is_held_fixed_and_outside_the_prior(setup):
    x, y, model, params, stats = setup
    apply_fn = lambda v, xb: model.apply(v, xb)  # noqa: E731
    ld = make_logdensity(x, y, apply_fn=apply_fn, state={"batch_stats": stats})
    plain = make_logdensity(x, y, apply_fn=lambda p, xb: model.apply({"params": p, "batch_stats": stats}, xb))
    # the same density as closing over the statistics by hand; the prior is on the weights only
    np.testing.assert_allclose(float(ld({"params": params})), float(plain(params)), rtol=1e-6)
    grad = jax.grad(ld)({"params": params})
    assert set(grad) == {"params"}
    other = make_logdensity(x, y, apply_fn=apply_fn, state={"batch_stats": jax.tree_util.tree_map(jnp.zeros_like, stats)})
    assert other.fingerprint != ld.fingerprint  # the state is part of the run's identity
    with pytest.raises(ValueError, match="the weights' entries only"):
        ld({"params": params, "batch_stats": stats})
    with pytest.raises(ValueError, match="non-empty dict"):
        make_logdensity(x, y, apply_fn=apply_fn, state={})
    with pytest.raises(ValueError, match="state"):
        make_logdensity(x, y, apply_fn=apply_fn, state={"batch_stats": jax.tree_util.tree_map(lambda a: a * np.nan, stats)})


def test_hmc_samples_the_weights_only(setup):
    x, y, model, params, stats = setup
    ld = make_logdensity(x, y, apply_fn=lambda v, xb: model.apply(v, xb), state={"batch_stats": stats})
    cfg = HMCConfig(step_size=0.05, num_leapfrog=5, num_burnin=2, num_samples=4, thin=1)
    res = run_hmc(jax.random.key(2), {"params": params}, ld, cfg, progress=False)
    assert set(res.samples) == {"params"}
    assert np.all(np.isfinite(jax.tree_util.tree_leaves(res.samples)[0]))
    assert float(np.mean(res.stats["acceptance_rate"])) > 0.5
