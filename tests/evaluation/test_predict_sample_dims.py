"""predict_from_samples / member_probs on HMC-shaped stacks (chains, samples, ...): merged
with sample_dims=2, and symlib's own error (not Flax's or JAX's) when the axes are wrong."""
import jax
import numpy as np
import pytest

from symlib.core.models import mlp_apply, mlp_init
from symlib.evaluation import member_probs, predict_from_samples


def _stack(chains=2, samples=3):
    keys = jax.random.split(jax.random.key(0), chains * samples)
    nets = [mlp_init(k, [4, 5, 3]) for k in keys]
    flat = jax.tree_util.tree_map(lambda *a: np.stack(a), *nets)
    return flat, jax.tree_util.tree_map(lambda a: a.reshape((chains, samples) + a.shape[1:]), flat)


def test_sample_dims_two_equals_the_flat_stack():
    flat, nested = _stack()
    x = np.asarray(jax.random.normal(jax.random.key(1), (7, 4)))
    np.testing.assert_allclose(predict_from_samples(nested, x, sample_dims=2, apply_fn=mlp_apply),
                               predict_from_samples(flat, x, apply_fn=mlp_apply), rtol=1e-6)
    assert member_probs(nested, x, sample_dims=2, apply_fn=mlp_apply).shape == (6, 7, 3)


def test_chains_axis_without_sample_dims_gives_symlibs_error():
    _, nested = _stack()
    x = np.zeros((7, 4), np.float32)
    with pytest.raises(ValueError, match=r"pass sample_dims=2"):
        predict_from_samples(nested, x, apply_fn=lambda p, xb: mlp_apply(p, xb))
    with pytest.raises(ValueError, match="same 3 leading sample axes"):
        predict_from_samples({"a": np.zeros((2, 3)), "b": np.zeros((2, 4, 1))}, x, sample_dims=3, apply_fn=mlp_apply)
