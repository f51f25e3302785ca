"""Scaling specs derived through an RMSNorm (its mean of squares is the norm's statistic, not an
activation) and a GroupNorm (its statistics reduce over part of the channel axis), in flax.linen
and flax.nnx: the units after the norm are a group, and every derived group is a symmetry."""
from __future__ import annotations

import flax.linen as nn
import jax
import numpy as np
import pytest
from flax import nnx

from symlib.symmetry import check_scaling_spec_invariance, scaling_spec_from_apply, scaling_spec_from_flax


class LinenRMS(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.RMSNorm()(nn.Dense(6)(x)))
        return nn.Dense(2)(h)


class LinenGroup(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.GroupNorm(num_groups=2)(nn.Conv(8, (3, 3))(x)))
        return nn.Dense(2)(h.mean(axis=(1, 2)))


class NnxRMS(nnx.Module):
    def __init__(self, rngs):
        self.fc = nnx.Linear(5, 6, rngs=rngs)
        self.norm = nnx.RMSNorm(6, rngs=rngs)
        self.out = nnx.Linear(6, 2, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.norm(self.fc(x))))


class NnxGroup(nnx.Module):
    def __init__(self, rngs):
        self.conv = nnx.Conv(3, 8, (3, 3), rngs=rngs)
        self.norm = nnx.GroupNorm(8, num_groups=2, rngs=rngs)
        self.out = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.norm(self.conv(x))).mean(axis=(1, 2)))


X_DENSE = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
X_IMAGE = np.random.default_rng(0).standard_normal((3, 6, 6, 3)).astype(np.float32)


def _perturbed(params, seed=1):
    """Parameters away from their initial values (a norm's scale of ones, biases of zeros)."""
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map(lambda v: np.asarray(v) + 0.3 * rng.standard_normal(np.shape(v)).astype(v.dtype),
                                  params)


def _linen(model, x):
    params = _perturbed(model.init(jax.random.PRNGKey(0), x)["params"])
    return scaling_spec_from_flax(model, params, x), params, lambda p, x: model.apply({"params": p}, x)


def _nnx(module, x):
    graphdef, state = nnx.split(module)
    params = _perturbed(nnx.to_pure_dict(state))

    def apply_fn(p, x):
        return nnx.merge(graphdef, p)(x)

    return scaling_spec_from_apply(apply_fn, params, x), params, apply_fn


CASES = {
    "linen_rms": (lambda: _linen(LinenRMS(), X_DENSE), X_DENSE,
                  {("RMSNorm_0/scale", 0, 1), ("Dense_1/kernel", 0, -1)}),
    "linen_group": (lambda: _linen(LinenGroup(), X_IMAGE), X_IMAGE,
                    {("GroupNorm_0/scale", 0, 1), ("GroupNorm_0/bias", 0, 1), ("Dense_0/kernel", 0, -1)}),
    "nnx_rms": (lambda: _nnx(NnxRMS(nnx.Rngs(0)), X_DENSE), X_DENSE,
                {("norm/scale", 0, 1), ("out/kernel", 0, -1)}),
    "nnx_group": (lambda: _nnx(NnxGroup(nnx.Rngs(0)), X_IMAGE), X_IMAGE,
                  {("norm/scale", 0, 1), ("norm/bias", 0, 1), ("out/kernel", 0, -1)}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_units_after_the_norm_are_a_scaling_group(case):
    """One group: the norm's scale (and bias) in, the next kernel's rows out; the units before
    the norm, normalised, are none. RMSNorm was refused ('square' is not homogeneous) and
    GroupNorm gave no group."""
    derive, x, expected = CASES[case]
    spec, params, apply_fn = derive()
    assert [set(entries) for entries in spec.groups.values()] == [expected]
    norm_scale = next(p for p, _, s in expected if s == 1 and p.endswith("scale"))
    assert norm_scale in spec.mass_paths
    assert check_scaling_spec_invariance(spec, params, apply_fn, x, key=3, trials=3, spread=1.5) < 1e-3
