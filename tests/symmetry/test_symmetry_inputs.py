"""Inputs of symlib.symmetry that gave a wrong answer instead of an error, or an error on
valid input (the audit of 2026-12-02): trees of different shapes, log-scales far from 0,
blocks that do not divide the units, and unit-normed units sorted by their norm."""
import numpy as np
import pytest

from symlib.symmetry import identifiable, mlp_permutation_spec, mlp_scaling_spec, param_distance
from symlib.symmetry.neuron_order import discordant_pairs, discordant_pairs_batch, kendall_tau_from_discordant
from symlib.symmetry.scaling import mass, mass_along


def _net(rng, sizes=(3, 4, 2)):
    return {f"dense_{i}": {"kernel": rng.normal(size=(m, n)), "bias": rng.normal(size=n)}
            for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]))}


def test_param_distance_refuses_trees_of_different_shapes():
    """A (1, 4) kernel broadcast against a (3, 4) one gave distance 0."""
    a = {"k": np.ones((3, 4)), "b": np.ones(4)}
    with pytest.raises(ValueError, match=r"'k' has shape \(3, 4\) in a and \(1, 4\) in b"):
        param_distance(a, {"k": np.ones((1, 4)), "b": np.ones(4)})
    assert param_distance(a, {"k": np.zeros((3, 4)), "b": np.ones(4)}) == pytest.approx(np.sqrt(12))


def test_mass_along_takes_log_scales_far_from_zero():
    """The log-scales were exponentiated, checked as scales and logged again: -800 underflowed
    to a "non-positive scale" and 720 overflowed to inf."""
    rng = np.random.default_rng(0)
    p, spec = _net(rng), mlp_scaling_spec(1)
    zero = {"P_0": np.zeros(4)}
    m = mass_along(spec, p, zero, {"P_0": np.array([-800.0, 0, 0, 0])}, [0.0, 0.001])
    assert m[0] == pytest.approx(mass(spec, p)) and np.all(np.isfinite(m))
    far = mass_along(spec, p, {"P_0": np.array([720.0, 0, 0, 0])}, {"P_0": np.array([1.0, 0, 0, 0])}, [-720.0])
    assert far[0] == pytest.approx(mass(spec, p))
    with pytest.raises(ValueError, match=r"direction\['P_0'\] must have shape \(4,\)"):
        mass_along(spec, p, zero, {"P_0": np.zeros(3)}, [0.0])
    with pytest.raises(ValueError, match=r"log_scales\['P_0'\]"):
        mass_along(spec, p, {"P_0": np.array([np.nan, 0, 0, 0])}, zero, [0.0])


@pytest.mark.parametrize("call", [
    lambda: discordant_pairs(np.arange(5.0), np.arange(5.0)[::-1], blocks=2),
    lambda: discordant_pairs_batch(np.arange(5.0), np.arange(5.0)[::-1], blocks=2),
    lambda: discordant_pairs(np.arange(4.0), np.arange(4.0), blocks=0),
    lambda: kendall_tau_from_discordant(2, 5, 2),
])
def test_blocks_must_divide_the_units(call):
    """n = 5 in 2 blocks made blocks of 2, 2 and 1, and a full reversal read tau -0.07."""
    with pytest.raises(ValueError, match="blocks must be integers >= 1 dividing"):
        call()


def test_reversal_in_blocks_is_tau_minus_one():
    a = np.arange(6.0)
    b = np.concatenate([a[:3][::-1], a[3:][::-1]])
    d = discordant_pairs(a, b, blocks=2)
    assert int(d) == 6 and kendall_tau_from_discordant(d, 6, 2) == -1.0


def test_identifiable_refuses_to_sort_unit_normed_units_by_their_norm():
    """Every unit-normed unit has norm 1, so the order followed rounding noise: a permuted,
    rescaled copy came out 6.2 away from the original's canonical form."""
    rng = np.random.default_rng(1)
    p = _net(rng, (3, 5, 4, 2))
    with pytest.raises(ValueError, match="statistic='norm' cannot sort unit-normed units"):
        identifiable(mlp_scaling_spec(2), mlp_permutation_spec(2), p, scaling="unit_norm", statistic="norm")
    identifiable(mlp_scaling_spec(2), mlp_permutation_spec(2), p, scaling="min_mass", statistic="norm")


def test_a_jax_integer_seed_is_a_seed():
    """jnp.int32(5) went to jax.random.bits as if it were a key and failed there."""
    import jax.numpy as jnp

    from symlib.symmetry.permutations import as_generator

    np.testing.assert_array_equal(as_generator(jnp.int32(5)).integers(0, 100, 4),
                                  as_generator(5).integers(0, 100, 4))


def test_a_mass_parameter_listed_twice_is_refused():
    """A kernel listed twice in mass_paths counted twice in the mass, silently."""
    import dataclasses

    from symlib.symmetry.scaling import check_scaling_spec

    spec = mlp_scaling_spec(1)
    twice = dataclasses.replace(spec, mass_paths=tuple(spec.mass_paths) + (spec.mass_paths[0],))
    p = _net(np.random.default_rng(2))
    with pytest.raises(ValueError, match="more than once"):
        check_scaling_spec(twice, p)
    with pytest.raises(ValueError, match="more than once"):
        mass(twice, p)
