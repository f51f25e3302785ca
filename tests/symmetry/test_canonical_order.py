"""Canonical forms whatever the order of the specs' keys (unit norms, sorted units, the jax
statistics), a view or a part splitting the output axis of the kernel units are sorted by, and
one table of sorting statistics for numpy and jax."""
from __future__ import annotations

import jax
import numpy as np
import pytest

from _helpers import random_mlp

import symlib.symmetry as sym
from symlib.symmetry import (
    SORT_STATISTICS,
    PermutationSpec,
    ScalingSpec,
    apply_permutation,
    apply_scaling,
    check_spec_invariance,
    flatten_params,
    identifiable,
    mlp_permutation_spec,
    mlp_scaling_spec,
    neuron_statistics,
    random_permutations,
    sort_neurons,
    swap_counter,
    unit_norm,
    unit_norm_traced,
)

SIZES = [5, 7, 6, 4, 3]


def _reversed_perm(spec: PermutationSpec) -> PermutationSpec:
    return PermutationSpec(dict(reversed(list(spec.axes.items()))))


def _reversed_scaling(spec: ScalingSpec) -> ScalingSpec:
    return ScalingSpec(groups=dict(reversed(list(spec.groups.items()))), mass_paths=spec.mass_paths)


def _net(seed):
    return random_mlp(np.random.default_rng(seed), SIZES)


def _scaled(params, seed):
    rng = np.random.default_rng(seed)
    return apply_scaling(mlp_scaling_spec(3), params, {f"P_{l}": np.exp(rng.normal(size=n))
                                                       for l, n in enumerate(SIZES[1:-1])})


def _assert_same(a, b):
    fa, fb = flatten_params(a), flatten_params(b)
    assert fa.keys() == fb.keys()
    for path in fa:
        np.testing.assert_array_equal(np.asarray(fa[path]), np.asarray(fb[path]), err_msg=path)


def test_unit_norm_ignores_the_order_of_the_groups():
    """Groups listed output to input gave unit norms that depend on a prior rescaling."""
    spec = mlp_scaling_spec(3)
    params = _net(0)
    out = unit_norm(_reversed_scaling(spec), _scaled(params, 1))
    _assert_same(out, unit_norm(spec, _scaled(params, 1)))
    for l in range(3):  # every hidden unit's incoming kernel column has norm 1
        np.testing.assert_allclose(np.linalg.norm(out[f"dense_{l}"]["kernel"], axis=0), 1.0, rtol=1e-12)
    traced = unit_norm_traced(_reversed_scaling(spec), _scaled(params, 1))
    for path, leaf in flatten_params(unit_norm(spec, _scaled(params, 1))).items():
        np.testing.assert_allclose(np.asarray(traced[path]), leaf, rtol=1e-5, atol=1e-6, err_msg=path)


def test_neuron_statistics_and_swaps_ignore_the_order_of_the_scaling_groups():
    pspec, sspec = mlp_permutation_spec(3), mlp_scaling_spec(3)
    params = _net(2)
    norm = unit_norm(sspec, params)
    stats = neuron_statistics(_reversed_scaling(sspec), pspec, params)
    for l, s in enumerate(stats):  # the max incoming weight of the unit-norm network, by hand
        np.testing.assert_allclose(np.asarray(s), norm[f"dense_{l}"]["kernel"].max(axis=0), rtol=1e-5)
    np.testing.assert_array_equal(swap_counter(_reversed_scaling(sspec), pspec)(params, _scaled(params, 3)), 0)


@pytest.mark.parametrize("statistic, ties", [(None, "index"), ("max", "weights")])
def test_sort_neurons_ignores_the_order_of_the_permutations(statistic, ties):
    """With the later layer listed first, the first-weight sort depended on the input's order."""
    spec = mlp_permutation_spec(3)
    params = _net(4)
    other = apply_permutation(spec, random_permutations(5, spec, params), params)
    reference, _ = sort_neurons(spec, params, statistic=statistic, ties=ties)
    for s in (spec, _reversed_perm(spec)):
        for p in (params, other):
            _assert_same(sort_neurons(s, p, statistic=statistic, ties=ties)[0], reference)


def test_identifiable_ignores_the_order_of_both_specs():
    pspec, sspec = mlp_permutation_spec(3), mlp_scaling_spec(3)
    params = _net(6)
    other = apply_permutation(pspec, random_permutations(7, pspec, params), _scaled(params, 8))
    ref = identifiable(sspec, pspec, params, scaling="unit_norm", statistic=None, ties="index")
    got = identifiable(_reversed_scaling(sspec), _reversed_perm(pspec), other, scaling="unit_norm", statistic=None,
                       ties="index")
    fa, fb = flatten_params(ref), flatten_params(got)
    for path in fa:
        np.testing.assert_allclose(fb[path], fa[path], rtol=1e-12, atol=1e-12, err_msg=path)


def test_cyclic_dependencies_are_refused():
    """Two groups (two permutations) each reading the other's outgoing side: no input-to-output order."""
    rng = np.random.default_rng(0)
    params = {"a": {"kernel": rng.normal(size=(4, 3))}, "b": {"kernel": rng.normal(size=(3, 4))}}
    loop = ScalingSpec(groups={"A": (("a/kernel", 1, 1), ("b/kernel", 0, -1)),
                               "B": (("b/kernel", 1, 1), ("a/kernel", 0, -1))}, mass_paths=("a/kernel", "b/kernel"))
    with pytest.raises(ValueError, match=r"scaling groups \['A', 'B'\] depend on one another in a cycle"):
        unit_norm(loop, params)
    with pytest.raises(ValueError, match="cycle"):
        unit_norm_traced(loop, params)
    ring = PermutationSpec({"a/kernel": ("Q", "P"), "b/kernel": ("P", "Q")})
    with pytest.raises(ValueError, match=r"permutations \['P', 'Q'\] depend on one another in a cycle"):
        sort_neurons(ring, params)


def _split_output():
    """A kernel whose output axis the spec views as (heads H, features F): units are (h, f) pairs."""
    rng = np.random.default_rng(0)
    params = {"g/kernel": rng.standard_normal((5, 2)), "a/kernel": rng.standard_normal((5, 8)),
              "c/kernel": rng.standard_normal((8, 3))}
    spec = PermutationSpec({"g/kernel": (None, "H"), "a/kernel": (None, "H", "F"), "c/kernel": ("H", "F", None)},
                           views={"a/kernel": (5, 2, 4), "c/kernel": (2, 4, 3)})

    def apply_fn(p, x):
        h = jax.nn.relu(x @ p["a/kernel"]).reshape(x.shape[0], 2, 4) * jax.nn.relu(x @ p["g/kernel"])[:, :, None]
        return h.reshape(x.shape[0], 8) @ p["c/kernel"]

    return spec, params, apply_fn


def test_sort_neurons_reads_a_view_splitting_the_output_axis():
    spec, params, apply_fn = _split_output()
    x = np.random.default_rng(1).standard_normal((6, 5))
    check_spec_invariance(spec, params, apply_fn, x)
    out, perms = sort_neurons(spec, params)
    _assert_same(out, apply_permutation(spec, perms, params))
    assert np.max(np.abs(apply_fn(out, x) - apply_fn(params, x))) < 1e-5
    viewed = out["a/kernel"].reshape(5, 2, 4)
    assert np.all(np.diff(viewed.reshape(10, 4).max(axis=0)) <= 0)  # F by its max over inputs and heads
    assert np.all(np.diff(out["g/kernel"].max(axis=0)) <= 0)
    other = apply_permutation(spec, random_permutations(2, spec, params), params)
    _assert_same(sort_neurons(spec, other, statistic=None, ties="index")[0],
                 sort_neurons(spec, params, statistic=None, ties="index")[0])
    stats = neuron_statistics(None, spec, params, scaling=None)
    np.testing.assert_allclose(np.asarray(stats[1]), params["a/kernel"].reshape(10, 4).max(axis=0), rtol=1e-6)
    assert [np.shape(s) for s in stats] == [(2,), (4,)]


def test_sort_neurons_reads_the_part_of_a_kernel_cut_along_its_output_axis():
    """``k`` produces the units of A (columns 0:3) and of B (columns 3:5)."""
    rng = np.random.default_rng(3)
    params = {"k": rng.standard_normal((4, 5)), "ra": rng.standard_normal((3, 2)), "rb": rng.standard_normal((2, 2))}
    spec = PermutationSpec({"k[0:3]": (None, "A"), "k[3:5]": (None, "B"), "ra": ("A", None), "rb": ("B", None)},
                           parts={"k": (1, (3, 2))})
    out, perms = sort_neurons(spec, params)
    np.testing.assert_array_equal(perms["A"], np.argsort(-params["k"][:, :3].max(axis=0), kind="stable"))
    np.testing.assert_array_equal(perms["B"], np.argsort(-params["k"][:, 3:].max(axis=0), kind="stable"))
    stats = neuron_statistics(None, spec, params, scaling=None)
    np.testing.assert_allclose(np.asarray(stats[0]), params["k"][:, :3].max(axis=0), rtol=1e-6)


@pytest.mark.parametrize("statistic", sorted(SORT_STATISTICS))
def test_every_sorting_statistic_is_a_jax_statistic_too(statistic):
    """neuron_statistics takes every name sort_neurons takes ("sum" and "norm" were refused)."""
    params = _net(9)
    by_hand = {"max": lambda k: k.max(0), "min": lambda k: k.min(0), "mean": lambda k: k.mean(0),
               "sum": lambda k: k.sum(0), "norm": lambda k: np.linalg.norm(k, axis=0),
               "abs_max": lambda k: np.abs(k).max(0)}[statistic]
    stats = neuron_statistics(None, mlp_permutation_spec(3), params, statistic, scaling=None)
    for l, s in enumerate(stats):
        np.testing.assert_allclose(np.asarray(s), by_hand(params[f"dense_{l}"]["kernel"]), rtol=1e-5)
        np.testing.assert_allclose(SORT_STATISTICS[statistic](params[f"dense_{l}"]["kernel"]),
                                   by_hand(params[f"dense_{l}"]["kernel"]), rtol=1e-12)


def test_swap_bursts_is_exported():
    from symlib.symmetry.neuron_order import swap_bursts

    assert sym.swap_bursts is swap_bursts
    assert "swap_bursts" in sym.__all__
