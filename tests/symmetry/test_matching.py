"""Tests for symlib.symmetry.matching (weight / activation / many-to-one matching)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from _helpers import assert_tree_close, random_mlp, stack_trees

from symlib.symmetry import permutations as P
from symlib.symmetry.matching import (
    MatchResult,
    activation_matching,
    apply_permutation_many,
    weight_matching,
    weight_matching_many,
)
from symlib.symmetry.matching.common import build_terms
from symlib.symmetry.matching.weight import CostCache, c_contiguous, independent_runs
from symlib.core.models import mlp_hidden
from symlib.testing.reference import reference_weight_matching
from symlib.symmetry.specs import (
    PermutationSpec,
    apply_permutation,
    check_spec,
    flatten_params,
    mlp_permutation_spec,
    param_distance,
    random_permutations,
)

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


# --------------------------------------------------------------------------- helpers


def _residual_not(planted, found):
    """NoT of compose(planted, found): 0 iff found undoes planted (found = inverse(planted))."""
    return {k: P.num_transpositions(P.compose(planted[k], found[k])) for k in planted}


def _assert_inverse_perms(perms_ab, perms_ba):
    """Every permutation of matching B to A is the inverse of matching A to B."""
    assert sorted(perms_ab) == sorted(perms_ba)
    for name in perms_ab:
        np.testing.assert_array_equal(P.compose(perms_ab[name], perms_ba[name]), np.arange(len(perms_ab[name])),
                                      err_msg=name)


def _perturbed(rng, params, scale):
    """params plus Gaussian noise of relative size ``scale`` (per leaf)."""
    return jax.tree_util.tree_map(lambda w: w + scale * np.std(w) * rng.normal(size=w.shape), params)


def _objective(spec, a, b, perms=None):
    fa, fb = flatten_params(a), flatten_params(b)
    if perms is not None:
        fb = apply_permutation(spec, perms, fb)
    return sum(float(np.vdot(np.asarray(fa[k], np.float64), np.asarray(fb[k], np.float64))) for k in fa)


def _conv_like_spec():
    """A non-MLP spec: 4-D kernels, a 3-D parameter carrying two permutations, a head."""
    return PermutationSpec({
        "c0/kernel": (None, None, None, "P_a"),
        "c0/bias": ("P_a",),
        "c1/kernel": (None, None, "P_a", "P_b"),
        "c1/bias": ("P_b",),
        "mix/w": ("P_a", None, "P_b"),
        "head/kernel": ("P_b", None),
    })


def _conv_like_params(rng, ca, cb, cin=3, k=3, out=5):
    return {
        "c0": {"kernel": rng.normal(size=(k, k, cin, ca)), "bias": rng.normal(size=(ca,))},
        "c1": {"kernel": rng.normal(size=(k, k, ca, cb)), "bias": rng.normal(size=(cb,))},
        "mix": {"w": rng.normal(size=(ca, 2, cb))},
        "head": {"kernel": rng.normal(size=(cb, out))},
    }


# --------------------------------------------------------------------------- planted permutations


mlp_shapes = st.tuples(
    st.integers(16, 32),  # input dim
    st.lists(st.integers(2, 24), min_size=1, max_size=3),  # hidden widths
    st.integers(16, 32),  # output dim
)


@settings(max_examples=30, **SETTINGS)
@given(shape=mlp_shapes, seed=st.integers(0, 2**31 - 1))
def test_weight_matching_recovers_planted_permutation(shape, seed):
    # Input/output dims >= 16 anchor both ends of the chain; with tiny ones (e.g. 4 and 2)
    # coordinate ascent can stop at a local optimum, the method's known limitation (the
    # plain reference then stops at the same point, see test_agrees_with_plain_reference).
    d0, widths, dout = shape
    rng = np.random.default_rng(seed)
    sizes = [d0, *widths, dout]
    spec = mlp_permutation_spec(len(widths))
    A = random_mlp(rng, sizes)
    planted = random_permutations(rng, spec, A)
    B = apply_permutation(spec, planted, A)
    res = weight_matching(seed, spec, A, B)
    assert isinstance(res, MatchResult)
    assert _residual_not(planted, res.perms) == {k: 0 for k in planted}
    assert_tree_close(apply_permutation(spec, res.perms, B), A, rtol=0, atol=0)
    np.testing.assert_allclose(res.objective[-1], _objective(spec, A, A), rtol=1e-12)
    assert res.converged


@settings(max_examples=20, **SETTINGS)
@given(
    widths=st.lists(st.integers(2, 24), min_size=1, max_size=3),
    seed=st.integers(0, 2**31 - 1),
    batch_size=st.sampled_from([64, 100, 1024]),
)
def test_activation_matching_recovers_planted_permutation(widths, seed, batch_size):
    rng = np.random.default_rng(seed)
    sizes = [8, *widths, 3]
    spec = mlp_permutation_spec(len(widths))
    A = random_mlp(rng, sizes, bias_scale=0.5)
    X = rng.normal(size=(300, 8)).astype(np.float32)
    # units that are dead (or constant) on the data are interchangeable: no unique answer
    hidden = [np.asarray(h) for h in mlp_hidden(jax.tree_util.tree_map(jnp.asarray, A), jnp.asarray(X))]
    assume(all(h.std(axis=0).min() > 1e-3 for h in hidden))
    planted = random_permutations(rng, spec, A)
    B = apply_permutation(spec, planted, A)
    res = activation_matching(spec, A, B, X, batch_size=batch_size)
    assert _residual_not(planted, res.perms) == {k: 0 for k in planted}
    assert_tree_close(apply_permutation(spec, res.perms, B), A, rtol=0, atol=0)
    np.testing.assert_allclose(res.objective, widths, rtol=1e-5)  # every unit matched with corr 1
    assert res.info["num_examples"] == 300


@settings(max_examples=10, **SETTINGS)
@given(shape=mlp_shapes, m=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_weight_matching_many_recovers_planted_permutations(shape, m, seed):
    d0, widths, dout = shape
    rng = np.random.default_rng(seed)
    spec = mlp_permutation_spec(len(widths))
    A = random_mlp(rng, [d0, *widths, dout])
    planted = [random_permutations(rng, spec, A) for _ in range(m)]
    stack = stack_trees([apply_permutation(spec, q, A) for q in planted])
    res = weight_matching_many(seed, spec, A, stack)
    for name in spec.perm_names:
        assert res.perms[name].shape == (m, widths[int(name[2:])])
    for s in range(m):
        assert _residual_not(planted[s], {k: v[s] for k, v in res.perms.items()}) == {k: 0 for k in spec.perm_names}
    aligned = apply_permutation_many(spec, res.perms, stack)
    assert_tree_close(aligned, stack_trees([A] * m), rtol=0, atol=0)
    np.testing.assert_allclose(res.objective, _objective(spec, A, A), rtol=1e-12)
    assert res.converged.all()


@settings(max_examples=10, **SETTINGS)
@given(ca=st.integers(2, 9), cb=st.integers(2, 9), seed=st.integers(0, 2**31 - 1))
def test_generic_spec_planted_and_reference(ca, cb, seed):
    """A non-MLP spec (4-D kernels, a 3-D parameter with two permutations) is read from the spec."""
    rng = np.random.default_rng(seed)
    spec = _conv_like_spec()
    A = _conv_like_params(rng, ca, cb)
    planted = random_permutations(rng, spec, A)
    B = apply_permutation(spec, planted, A)
    res = weight_matching(seed, spec, A, B)
    assert _residual_not(planted, res.perms) == {"P_a": 0, "P_b": 0}
    # and on an unrelated B, the same iterates as the plain reference
    B2 = _conv_like_params(rng, ca, cb)
    res2 = weight_matching(seed, spec, A, B2)
    perms_ref, hist_ref, _, _ = reference_weight_matching(seed, spec, A, B2)
    for k in perms_ref:
        np.testing.assert_array_equal(res2.perms[k], perms_ref[k])
    np.testing.assert_allclose(res2.objective, hist_ref, rtol=1e-12)


# --------------------------------------------------------------------------- B to A inverts A to B


@settings(max_examples=20, **SETTINGS)
@given(
    d0=st.integers(1, 12),
    width=st.integers(2, 12),
    dout=st.integers(1, 12),
    seed=st.integers(0, 2**31 - 1),
)
def test_weight_matching_b_to_a_inverts_a_to_b_one_hidden_layer(d0, width, dout, seed):
    """One hidden layer: one LAP, whose cost for (B, A) is the transpose of that for (A, B);
    its optimum is unique for random nets, so the answers are inverses for any A and B."""
    rng = np.random.default_rng(seed)
    spec = mlp_permutation_spec(1)
    A, B = random_mlp(rng, [d0, width, dout]), random_mlp(rng, [d0, width, dout])
    ab, ba = weight_matching(seed, spec, A, B), weight_matching(seed, spec, B, A)
    _assert_inverse_perms(ab.perms, ba.perms)
    # <A, p(B)> = <p^-1(A), B>: the same optimum from both sides
    np.testing.assert_allclose(ab.objective[-1], ba.objective[-1], rtol=1e-12)


@settings(max_examples=20, **SETTINGS)
@given(
    shape=mlp_shapes,
    noise=st.sampled_from([0.0, 1e-3, 1e-2]),
    seed=st.integers(0, 2**31 - 1),
    seed_ba=st.integers(0, 2**31 - 1),
)
def test_weight_matching_b_to_a_inverts_a_to_b_planted(shape, noise, seed, seed_ba):
    """B a (slightly perturbed) permuted copy of A: the optimum is unique, and matching B to
    A (with any key) returns the inverse of matching A to B, for every permutation."""
    d0, widths, dout = shape
    rng = np.random.default_rng(seed)
    spec = mlp_permutation_spec(len(widths))
    A = random_mlp(rng, [d0, *widths, dout])
    planted = random_permutations(rng, spec, A)
    B = _perturbed(rng, apply_permutation(spec, planted, A), noise)
    ab, ba = weight_matching(seed, spec, A, B), weight_matching(seed_ba, spec, B, A)
    _assert_inverse_perms(ab.perms, ba.perms)
    assert _residual_not(planted, ab.perms) == {k: 0 for k in planted}
    np.testing.assert_allclose(ab.objective[-1], ba.objective[-1], rtol=1e-12)


@settings(max_examples=20, **SETTINGS)
@given(
    widths=st.lists(st.integers(2, 12), min_size=1, max_size=3),
    seed=st.integers(0, 2**31 - 1),
)
def test_activation_matching_b_to_a_inverts_a_to_b(widths, seed):
    """Each layer's correlation matrix for (B, A) is the transpose of that for (A, B), so
    for any two nets whose units all vary over the data (a unique optimum, almost surely)
    the answers are inverses."""
    rng = np.random.default_rng(seed)
    sizes = [6, *widths, 3]
    spec = mlp_permutation_spec(len(widths))
    A, B = random_mlp(rng, sizes, bias_scale=0.5), random_mlp(rng, sizes, bias_scale=0.5)
    X = rng.normal(size=(200, 6))
    for params in (A, B):  # dead or constant units are interchangeable: no unique answer
        hidden = mlp_hidden(jax.tree_util.tree_map(jnp.asarray, params), jnp.asarray(X))
        assume(all(np.asarray(h).std(axis=0).min() > 1e-3 for h in hidden))
    ab, ba = activation_matching(spec, A, B, X, batch_size=64), activation_matching(spec, B, A, X, batch_size=64)
    _assert_inverse_perms(ab.perms, ba.perms)
    np.testing.assert_allclose(ab.objective, ba.objective, rtol=1e-10)


# --------------------------------------------------------------------------- objective properties


@settings(max_examples=25, **SETTINGS)
@given(
    d0=st.integers(2, 12),
    widths=st.lists(st.integers(2, 24), min_size=1, max_size=3),
    dout=st.integers(1, 12),
    seed=st.integers(0, 2**31 - 1),
)
def test_objective_monotone_and_reduces_distance(d0, widths, dout, seed):
    rng = np.random.default_rng(seed)
    sizes = [d0, *widths, dout]
    spec = mlp_permutation_spec(len(widths))
    A, B = random_mlp(rng, sizes), random_mlp(rng, sizes)
    res = weight_matching(seed, spec, A, B)
    identity = _objective(spec, A, B)
    np.testing.assert_allclose(res.initial_objective, identity, rtol=1e-12, atol=1e-12)
    hist = np.array([res.initial_objective, *res.objective])
    assert np.all(np.diff(hist) >= -1e-12 * np.abs(hist[:-1]).max())
    assert res.objective[-1] >= identity - 1e-12 * abs(identity)
    assert res.sweeps == len(res.objective) >= 1
    # J reported == J recomputed from the returned permutations
    np.testing.assert_allclose(res.objective[-1], _objective(spec, A, B, res.perms), rtol=1e-12, atol=1e-12)
    # maximising J minimises the L2 distance
    d_before = param_distance(A, B) ** 2
    d_after = param_distance(A, apply_permutation(spec, res.perms, B)) ** 2
    assert d_after <= d_before * (1 + 1e-12)


def test_matching_reduces_distance_on_independent_nets():
    rng = np.random.default_rng(0)
    sizes = [20, 32, 32, 10]
    spec = mlp_permutation_spec(2)
    A, B = random_mlp(rng, sizes), random_mlp(rng, sizes)
    res = weight_matching(jax.random.PRNGKey(0), spec, A, B)
    d_before = param_distance(A, B)
    d_after = param_distance(A, apply_permutation(spec, res.perms, B))
    assert d_after < 0.95 * d_before  # strictly and substantially closer
    assert res.objective[-1] > res.initial_objective


@settings(max_examples=25, **SETTINGS)
@given(
    d0=st.integers(2, 12),
    widths=st.lists(st.integers(2, 24), min_size=1, max_size=4),
    dout=st.integers(1, 12),
    seed=st.integers(0, 2**31 - 1),
)
def test_agrees_with_plain_reference(d0, widths, dout, seed):
    """Skipping unchanged LAPs and incremental costs leave the iterates unchanged."""
    rng = np.random.default_rng(seed)
    sizes = [d0, *widths, dout]
    spec = mlp_permutation_spec(len(widths))
    A, B = random_mlp(rng, sizes), random_mlp(rng, sizes)
    res = weight_matching(seed, spec, A, B)
    perms_ref, hist_ref, _, solves_ref = reference_weight_matching(seed, spec, A, B)
    np.testing.assert_allclose(res.objective[-1], hist_ref[-1], rtol=1e-10)
    assert res.sweeps == len(hist_ref)
    for k in perms_ref:
        np.testing.assert_array_equal(res.perms[k], perms_ref[k])
    assert res.num_solves + res.num_skipped == solves_ref
    assert res.num_solves <= solves_ref
    # sequential LAPs give the same answer as concurrent ones
    res1 = weight_matching(seed, spec, A, B, num_threads=1)
    for k in perms_ref:
        np.testing.assert_array_equal(res1.perms[k], res.perms[k])


def test_one_hidden_layer_skips_the_confirming_solve():
    rng = np.random.default_rng(1)
    spec = mlp_permutation_spec(1)
    A, B = random_mlp(rng, [6, 12, 4]), random_mlp(rng, [6, 12, 4])
    res = weight_matching(0, spec, A, B)
    assert res.sweeps == 2 and res.num_solves == 1 and res.num_skipped == 1
    assert res.objective[0] == res.objective[1]


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (33, 70), (64, 64), (100, 31)])
def test_c_contiguous_copies_transposed_views_exactly(shape):
    w = np.random.default_rng(0).standard_normal(shape)
    for view in (w.T, w, w[:, ::2], w.T[::3]):
        out = c_contiguous(view, block=8)
        assert out.flags.c_contiguous and out.dtype == view.dtype
        np.testing.assert_array_equal(out, view)
    assert c_contiguous(w) is w  # already C-contiguous: no copy


def test_incremental_costs_match_fresh_costs():
    rng = np.random.default_rng(2)
    for spec, A, B in [
        (mlp_permutation_spec(3), random_mlp(rng, [5, 40, 30, 20, 3]), random_mlp(rng, [5, 40, 30, 20, 3])),
        (_conv_like_spec(), _conv_like_params(rng, 30, 40), _conv_like_params(rng, 30, 40)),
    ]:
        fa = {k: np.asarray(v, np.float64) for k, v in flatten_params(A).items()}
        fb = {k: np.asarray(v, np.float64) for k, v in flatten_params(B).items()}
        sizes = check_spec(spec, fa)
        terms = build_terms(spec, {k: v.shape for k, v in fa.items()})
        cache = CostCache(terms, fa, fb)
        perms = {k: np.arange(n) for k, n in sizes.items()}
        for step in range(12):
            name = spec.perm_names[step % len(spec.perm_names)]
            n = sizes[name]
            if step % 4 == 3:  # many moved: full recompute path
                perms[name] = rng.permutation(n)
            else:  # a few swapped: low-rank update path
                p = perms[name].copy()
                i, j = rng.choice(n, 2, replace=False)
                p[i], p[j] = p[j], p[i]
                perms[name] = p
            for q in spec.perm_names:
                fresh = CostCache(terms, fa, fb).cost(q, perms)
                np.testing.assert_allclose(cache.cost(q, perms), fresh, rtol=1e-10, atol=1e-10)
                # and equal to the definition: C[i, j] = <A row i, B (others applied) row j>
                others = dict(perms)
                others[q] = np.arange(sizes[q])
                wb = apply_permutation(spec, others, fb)
                C = sum(
                    np.moveaxis(fa[p_], ax, 0).reshape(sizes[q], -1) @ np.moveaxis(wb[p_], ax, 0).reshape(sizes[q], -1).T
                    for p_, ax in spec.perm_to_axes[q]
                )
                np.testing.assert_allclose(fresh, C, rtol=1e-10, atol=1e-10)


def test_independent_runs():
    deps = {"P_0": ("P_1",), "P_1": ("P_0", "P_2"), "P_2": ("P_1",)}
    assert independent_runs(["P_0", "P_2", "P_1"], deps) == [["P_0", "P_2"], ["P_1"]]
    assert independent_runs(["P_1", "P_2", "P_0"], deps) == [["P_1"], ["P_2", "P_0"]]
    assert independent_runs(["P_0", "P_1", "P_2"], deps) == [["P_0"], ["P_1"], ["P_2"]]


def test_init_perms_and_max_iter():
    rng = np.random.default_rng(3)
    spec = mlp_permutation_spec(2)
    A = random_mlp(rng, [16, 10, 8, 16])
    planted = random_permutations(rng, spec, A)
    B = apply_permutation(spec, planted, A)
    answer = {k: P.inverse(v) for k, v in planted.items()}
    res = weight_matching(0, spec, A, B, init_perms=answer)
    assert res.sweeps == 1 and res.converged
    for k in answer:
        np.testing.assert_array_equal(res.perms[k], answer[k])
    res0 = weight_matching(0, spec, A, B, max_iter=0)
    assert res0.sweeps == 0 and res0.objective == [] and not res0.converged
    for k, n in check_spec(spec, A).items():
        np.testing.assert_array_equal(res0.perms[k], np.arange(n))
    # a jax key works and is deterministic
    r1 = weight_matching(jax.random.PRNGKey(7), spec, A, random_mlp(rng, [16, 10, 8, 16]))
    assert r1.sweeps >= 1


# --------------------------------------------------------------------------- activation matching details


def test_activation_matching_dead_and_constant_units_give_no_nan():
    rng = np.random.default_rng(4)
    spec = mlp_permutation_spec(2)
    A, B = random_mlp(rng, [6, 8, 7, 2]), random_mlp(rng, [6, 8, 7, 2])
    for params in (A, B):
        params["dense_0"]["kernel"][:, 0] = 0.0
        params["dense_0"]["bias"][0] = -1.0  # dead: always 0
        params["dense_0"]["kernel"][:, 1] = 0.0
        params["dense_0"]["bias"][1] = 0.7  # constant 0.7
    X = rng.normal(size=(500, 6))
    res = activation_matching(spec, A, B, X, batch_size=128)
    for k, n in check_spec(spec, A).items():
        assert P.is_permutation(res.perms[k], n)
    assert np.all(np.isfinite(res.objective))
    assert len(res.objective) == 2 and len(res.info["mean_correlation"]) == 2


def test_activation_matching_iterable_data_and_custom_apply_fn():
    rng = np.random.default_rng(5)
    spec = mlp_permutation_spec(1)
    A = random_mlp(rng, [4, 9, 2], bias_scale=0.3)
    planted = random_permutations(rng, spec, A)
    B = apply_permutation(spec, planted, A)
    X = rng.normal(size=(400, 4)).astype(np.float32)
    calls = []

    def apply_fn(params, x):
        calls.append(1)
        return mlp_hidden(params, x)

    res = activation_matching(spec, A, B, (X[i:i + 50] for i in range(0, 400, 50)), apply_fn=apply_fn)
    assert calls  # traced at least once
    assert _residual_not(planted, res.perms) == {"P_0": 0}


def test_activation_matching_spec_must_name_hidden_layers():
    rng = np.random.default_rng(6)
    A = random_mlp(rng, [4, 5, 2])
    X = rng.normal(size=(10, 4))
    spec = PermutationSpec({
        "dense_0/kernel": (None, "H"), "dense_0/bias": ("H",),
        "dense_1/kernel": ("H", None), "dense_1/bias": (None,),
    })
    with pytest.raises(ValueError, match="P_0"):
        activation_matching(spec, A, A, X)
    with pytest.raises(ValueError, match="no examples"):
        activation_matching(mlp_permutation_spec(1), A, A, np.zeros((0, 4)))


def test_activation_matching_rejects_non_finite_weights():
    rng = np.random.default_rng(7)
    spec = mlp_permutation_spec(1)
    A, B = random_mlp(rng, [4, 5, 2]), random_mlp(rng, [4, 5, 2])
    X = rng.normal(size=(20, 4))
    A_nan = jax.tree_util.tree_map(np.copy, A)
    A_nan["dense_1"]["kernel"][2, 1] = np.nan
    with pytest.raises(ValueError, match=r"parameter 'dense_1/kernel' of params_a holds non-finite"):
        activation_matching(spec, A_nan, B, X)
    B_inf = jax.tree_util.tree_map(np.copy, B)
    B_inf["dense_0"]["bias"][0] = -np.inf
    with pytest.raises(ValueError, match=r"parameter 'dense_0/bias' of params_b holds non-finite"):
        activation_matching(spec, A, jax.tree_util.tree_map(jnp.asarray, B_inf), X)


def test_activation_matching_rejects_non_finite_data():
    rng = np.random.default_rng(8)
    spec = mlp_permutation_spec(2)
    A, B = random_mlp(rng, [4, 5, 6, 2]), random_mlp(rng, [4, 5, 6, 2])
    X = rng.normal(size=(30, 4))
    X[17, 2] = np.nan  # in the second batch of 10
    with pytest.raises(ValueError, match=r"data holds non-finite values \(nan or inf\) in examples 10\.\.19"):
        activation_matching(spec, A, B, X, batch_size=10)
    X_inf = np.asarray(rng.normal(size=(8, 4)), np.float32)
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match=r"data holds non-finite values .* in examples 0\.\.7"):
        activation_matching(spec, A, B, iter([jnp.asarray(X_inf)]))


# --------------------------------------------------------------------------- many-to-one


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_many_agrees_with_per_sample_weight_matching(depth):
    rng = np.random.default_rng(10 + depth)
    sizes = [5, *([9] * depth), 3]
    spec = mlp_permutation_spec(depth)
    A = random_mlp(rng, sizes)
    samples = [random_mlp(rng, sizes) for _ in range(5)]
    stack = stack_trees(samples)
    singles = [weight_matching(11, spec, A, s) for s in samples]
    for kw in ({}, {"num_threads": 1, "chunk_size": 2}, {"num_threads": 3, "chunk_size": 1}):
        many = weight_matching_many(11, spec, A, stack, **kw)
        for s, single in enumerate(singles):
            for k in single.perms:
                np.testing.assert_array_equal(many.perms[k][s], single.perms[k])
            np.testing.assert_allclose(many.objective[s], single.objective[-1], rtol=1e-12)
            np.testing.assert_allclose(many.initial_objective[s], single.initial_objective, rtol=1e-12)
            assert many.sweeps[s] == single.sweeps
        assert len(many.objective_history) == many.sweeps.max()
    f32 = weight_matching_many(11, spec, A, stack, precision="float32")
    np.testing.assert_allclose(f32.objective, [s.objective[-1] for s in singles], rtol=1e-5)


def test_many_with_jax_stack_and_single_sample():
    rng = np.random.default_rng(12)
    spec = mlp_permutation_spec(2)
    A = random_mlp(rng, [4, 6, 5, 2])
    B = random_mlp(rng, [4, 6, 5, 2])
    stack = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], B)
    many = weight_matching_many(0, spec, A, stack)
    single = weight_matching(0, spec, A, jax.tree_util.tree_map(jnp.asarray, B))
    for k in single.perms:
        np.testing.assert_array_equal(many.perms[k][0], single.perms[k])
    np.testing.assert_allclose(many.objective[0], single.objective[-1], rtol=1e-6)


def test_apply_permutation_many_matches_apply_permutation():
    rng = np.random.default_rng(13)
    spec = _conv_like_spec()
    samples = [_conv_like_params(rng, 4, 6) for _ in range(3)]
    stack = stack_trees(samples)
    perms = [random_permutations(rng, spec, samples[0]) for _ in range(3)]
    perms_stack = {k: np.stack([p[k] for p in perms]) for k in spec.perm_names}
    out = apply_permutation_many(spec, perms_stack, stack)
    out_jax = apply_permutation_many(spec, perms_stack, jax.tree_util.tree_map(jnp.asarray, stack))
    expected = stack_trees([apply_permutation(spec, p, s) for p, s in zip(perms, samples)])
    assert_tree_close(out, expected, rtol=0, atol=0)
    assert_tree_close(out_jax, expected, rtol=1e-6)
    assert isinstance(flatten_params(out)["c1/kernel"], np.ndarray)
    bad = dict(perms_stack)
    bad["P_a"] = perms_stack["P_a"].copy()
    bad["P_a"][1, 0] = bad["P_a"][1, 1]
    with pytest.raises(ValueError, match="row 1"):
        apply_permutation_many(spec, bad, stack)
    with pytest.raises(ValueError, match="shape"):
        apply_permutation_many(spec, {k: v[:2] for k, v in perms_stack.items()}, stack)


# --------------------------------------------------------------------------- errors


def test_errors_name_the_parameter():
    rng = np.random.default_rng(14)
    spec = mlp_permutation_spec(1)
    A = random_mlp(rng, [4, 6, 3])
    B_wide_in = random_mlp(rng, [5, 6, 3])
    with pytest.raises(ValueError, match="dense_0/kernel"):
        weight_matching(0, spec, A, B_wide_in)
    with pytest.raises(ValueError, match="dense_0/kernel"):
        activation_matching(spec, A, B_wide_in, np.zeros((3, 4)))
    with pytest.raises(ValueError, match="dense_0/kernel"):
        weight_matching_many(0, spec, A, stack_trees([B_wide_in, B_wide_in]))
    # spec not fitting the params
    with pytest.raises(ValueError, match="dense_2/kernel"):
        weight_matching(0, mlp_permutation_spec(2), A, A)
    B_missing = {"dense_0": dict(A["dense_0"]), "dense_1": {"kernel": A["dense_1"]["kernel"]}}
    with pytest.raises(ValueError, match="dense_1/bias"):
        weight_matching(0, spec, A, B_missing)
    # stack without its leading axis
    with pytest.raises(ValueError, match="dense_"):
        weight_matching_many(0, spec, A, A)
    # non-finite values
    B_nan = random_mlp(rng, [4, 6, 3])
    B_nan["dense_1"]["bias"][0] = np.nan
    with pytest.raises(ValueError, match="'dense_1/bias' of params_b holds non-finite"):
        weight_matching(0, spec, A, B_nan)
    with pytest.raises(ValueError, match="'dense_1/bias' of params_a holds non-finite"):
        weight_matching(0, spec, B_nan, A)
    with pytest.raises(ValueError, match="'dense_1/bias' of params_ref holds non-finite"):
        weight_matching_many(0, spec, B_nan, stack_trees([A]))
    with pytest.raises(ValueError, match="'dense_1/bias' of params_stack holds non-finite"):
        weight_matching_many(0, spec, A, stack_trees([A, B_nan]))
    with pytest.raises(ValueError, match="init_perms"):
        weight_matching(0, spec, A, A, init_perms={"P_0": np.zeros(6, int)})
    with pytest.raises(ValueError, match="unknown"):
        weight_matching(0, spec, A, A, init_perms={"Q": np.arange(6)})
    with pytest.raises(ValueError, match="max_iter"):
        weight_matching(0, spec, A, A, max_iter=-1)
    with pytest.raises(ValueError, match="precision"):
        weight_matching_many(0, spec, A, stack_trees([A]), precision="float16")


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, "4"])
def test_positive_int_arguments(bad):
    rng = np.random.default_rng(15)
    spec = mlp_permutation_spec(1)
    A = random_mlp(rng, [4, 6, 3])
    stack = stack_trees([A])
    with pytest.raises(ValueError, match=r"batch_size must be a positive integer, got"):
        activation_matching(spec, A, A, np.zeros((3, 4)), batch_size=bad)
    with pytest.raises(ValueError, match=r"num_threads must be a positive integer or None, got"):
        weight_matching(0, spec, A, A, num_threads=bad)
    with pytest.raises(ValueError, match=r"num_threads must be a positive integer or None, got"):
        weight_matching_many(0, spec, A, stack, num_threads=bad)
    with pytest.raises(ValueError, match=r"chunk_size must be a positive integer or None, got"):
        weight_matching_many(0, spec, A, stack, chunk_size=bad)


def test_spec_acting_twice_on_one_parameter():
    """A recurrent-style weight permuted on both axes by the same permutation: J is then
    recomputed each sweep (not tracked by gains), and matching still recovers planted copies."""
    spec = PermutationSpec({"rnn/rec": ("P", "P"), "rnn/in": (None, "P"), "rnn/out": ("P", None), "rnn/b": ("P",)})
    rng = np.random.default_rng(20)
    for n in (3, 8, 15):
        A = {"rnn": {"rec": rng.normal(size=(n, n)), "in": rng.normal(size=(16, n)),
                     "out": rng.normal(size=(n, 16)), "b": rng.normal(size=n)}}
        planted = random_permutations(rng, spec, A)
        B = apply_permutation(spec, planted, A)
        res = weight_matching(n, spec, A, B)
        assert _residual_not(planted, res.perms) == {"P": 0}
        B2 = {"rnn": {k: rng.normal(size=v.shape) for k, v in A["rnn"].items()}}
        res2 = weight_matching(n, spec, A, B2)
        np.testing.assert_allclose(res2.objective[-1], _objective(spec, A, B2, res2.perms), rtol=1e-12)
        many = weight_matching_many(n, spec, A, stack_trees([B2, B]))
        np.testing.assert_array_equal(many.perms["P"][0], res2.perms["P"])
        np.testing.assert_array_equal(many.perms["P"][1], res.perms["P"])
        np.testing.assert_allclose(many.objective, [res2.objective[-1], res.objective[-1]], rtol=1e-12)
