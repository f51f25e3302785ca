"""Tests for symlib.evaluation.summaries (q_d and q_r of a stack of networks)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from _helpers import assert_tree_close, random_mlp, stack_trees

from symlib.symmetry import permutations as P
from symlib.symmetry.matching import apply_permutation_many
from symlib.symmetry.specs import apply_permutation, flatten_params, mlp_permutation_spec, random_permutations
from symlib.evaluation.summaries import (
    METHODS,
    GaussianSummary,
    direct_summary,
    flatten_summary,
    rebasin_summary,
    summary_to_samples,
    tree_to_vector,
    vector_to_tree,
)

SIZES = [12, 10, 9, 4]
NOISE = 1e-3
K = 8


def random_mlp_small_bias(rng, sizes):
    return random_mlp(rng, sizes, bias_scale=0.1)








@pytest.fixture(scope="module")
def planted():
    """K differently permuted copies of ONE network A, plus N(0, NOISE^2) noise."""
    rng = np.random.default_rng(0)
    spec = mlp_permutation_spec(len(SIZES) - 2)
    A = random_mlp_small_bias(rng, SIZES)
    qs = [random_permutations(rng, spec, A) for _ in range(K)]
    samples = [
        jax.tree_util.tree_map(lambda a: a + NOISE * rng.normal(size=a.shape), apply_permutation(spec, q, A))
        for q in qs
    ]
    x = rng.normal(size=(256, SIZES[0]))
    return dict(spec=spec, A=A, qs=qs, stack=stack_trees(samples), x=x)


def _residual_not(q_target, q_s, found_s):
    """NoT of the map taking the aligned sample's frame to the target frame: 0 iff
    compose(q_s, found_s) == q_target (the aligned copy is A in the target's permutation)."""
    return {k: P.num_transpositions(P.compose(P.inverse(q_target[k]), P.compose(q_s[k], found_s[k])))
            for k in q_target}


# --------------------------------------------------------------------------- direct


def test_direct_summary_equals_numpy():
    rng = np.random.default_rng(1)
    stack = {"a": {"w": rng.normal(size=(7, 3, 4)), "b": rng.normal(size=(7, 4))}, "c": rng.normal(size=(7,))}
    for chunk in (None, 1, 3, 100):
        s = direct_summary(stack, chunk=chunk)
        assert isinstance(s, GaussianSummary)
        assert s.perms is None and s.reference_index is None and s.num_samples == 7 and s.method == "direct"
        assert_tree_close(s.mu, jax.tree_util.tree_map(lambda a: np.mean(a, axis=0), stack), rtol=1e-12, atol=1e-14)
        assert_tree_close(s.sigma, jax.tree_util.tree_map(lambda a: np.std(a, axis=0), stack), rtol=1e-12, atol=1e-14)
    assert s.num_params == 3 * 4 + 4 + 1


def test_direct_summary_float32_and_jax_inputs():
    rng = np.random.default_rng(2)
    x64 = rng.normal(loc=100.0, scale=1e-2, size=(50, 6, 5))  # large offset: needs a stable algorithm
    x32 = x64.astype(np.float32)
    ref_sigma = np.std(x32.astype(np.float64), axis=0)
    for leaf in (x32, jnp.asarray(x32)):
        s = direct_summary({"w": leaf}, chunk=7)
        assert s.mu["w"].dtype == np.float32 and s.sigma["w"].dtype == np.float32
        assert isinstance(s.sigma["w"], np.ndarray)
        np.testing.assert_allclose(s.sigma["w"], ref_sigma, rtol=1e-5)
    ints = direct_summary({"n": np.arange(6).reshape(3, 2)})
    assert ints.mu["n"].dtype == np.float64
    np.testing.assert_allclose(ints.sigma["n"], np.std(np.arange(6).reshape(3, 2), axis=0))


def test_direct_summary_errors():
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match="at least 2 samples"):
        direct_summary({"w": rng.normal(size=(1, 3))})
    with pytest.raises(ValueError, match="same leading sample axis"):
        direct_summary({"w": rng.normal(size=(4, 3)), "b": rng.normal(size=(5,))})
    with pytest.raises(ValueError, match="no parameters"):
        direct_summary({})
    bad = rng.normal(size=(4, 3))
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or inf.*bad"):
        direct_summary({"good": rng.normal(size=(4,)), "bad": bad})
    with pytest.raises(ValueError, match="chunk must be a positive integer or None, got 0"):
        direct_summary({"w": rng.normal(size=(4, 3))}, chunk=0)
    with pytest.raises(ValueError, match="samples_stack holds no samples"):
        direct_summary({"w": np.zeros((0, 3))})


def test_flat_vector_helpers_are_core_pytree_ones():
    from symlib.core import pytree
    from symlib.evaluation import summaries

    assert summaries.tree_to_vector is pytree.tree_to_vector
    assert summaries.vector_to_tree is pytree.vector_to_tree


# --------------------------------------------------------------------------- rebasin


@pytest.mark.parametrize("method", METHODS)
def test_rebasin_removes_planted_permutations(planted, method):
    spec, A, qs, stack = planted["spec"], planted["A"], planted["qs"], planted["stack"]
    kw = {"data": planted["x"]} if method == "activation" else {}
    r = rebasin_summary(stack, spec, method=method, **kw)
    assert r.method == method and r.reference_index == 0 and r.num_samples == K
    # permutations recovered: every aligned sample is A in sample 0's permutation
    for s in range(K):
        found = {k: r.perms[k][s] for k in r.perms}
        assert _residual_not(qs[0], qs[s], found) == {k: 0 for k in spec.perm_names}, s
    for k in spec.perm_names:
        assert r.perms[k].shape == (K, flatten_params(A)[f"dense_{int(k[2:])}/bias"].shape[0])
        np.testing.assert_array_equal(r.perms[k][0], np.arange(r.perms[k].shape[1]))
    # mu is the network (in the reference's frame), sigma the noise level
    assert_tree_close(r.mu, apply_permutation(spec, qs[0], A), atol=5 * NOISE / np.sqrt(K))
    sig = tree_to_vector(r.sigma)
    assert 0.6 * NOISE < sig.mean() < 1.2 * NOISE and sig.max() < 3 * NOISE
    # the direct summary sees the permutations as huge variance
    d = direct_summary(stack)
    assert tree_to_vector(d.sigma).mean() > 50 * sig.mean()
    # moments equal those of the explicitly aligned stack
    aligned = apply_permutation_many(spec, r.perms, stack)
    ref = direct_summary(aligned)
    assert_tree_close(r.mu, ref.mu, rtol=1e-12, atol=1e-15)
    assert_tree_close(r.sigma, ref.sigma, rtol=1e-10, atol=1e-15)


@pytest.mark.parametrize("method", METHODS)
def test_rebasin_explicit_reference(planted, method):
    spec, A, qs, stack = planted["spec"], planted["A"], planted["qs"], planted["stack"]
    kw = {"data": planted["x"]} if method == "activation" else {}
    r = rebasin_summary(stack, spec, reference=A, method=method, **kw)
    assert r.reference_index is None
    identity = {k: np.arange(len(v)) for k, v in qs[0].items()}
    for s in range(K):
        found = {k: r.perms[k][s] for k in r.perms}
        assert _residual_not(identity, qs[s], found) == {k: 0 for k in spec.perm_names}, s
    assert_tree_close(r.mu, A, atol=5 * NOISE / np.sqrt(K))
    assert tree_to_vector(r.sigma).max() < 3 * NOISE


def test_rebasin_reference_index_and_chunks(planted):
    spec, A, qs, stack = planted["spec"], planted["A"], planted["qs"], planted["stack"]
    r = rebasin_summary(stack, spec, reference_index=-1, chunk=3, key=1)
    assert r.reference_index == K - 1
    for k in spec.perm_names:
        np.testing.assert_array_equal(r.perms[k][K - 1], np.arange(r.perms[k].shape[1]))
    assert_tree_close(r.mu, apply_permutation(spec, qs[K - 1], A), atol=5 * NOISE / np.sqrt(K))
    # jax leaves work as well and give the same result
    rj = rebasin_summary(jax.tree_util.tree_map(jnp.asarray, stack), spec, reference_index=K - 1, chunk=5, key=1)
    assert_tree_close(rj.mu, r.mu, rtol=1e-6, atol=1e-7)


def test_rebasin_errors(planted):
    spec, stack, A = planted["spec"], planted["stack"], planted["A"]
    with pytest.raises(ValueError, match=r"unknown method 'bogus'.*\['weight', 'activation'\]"):
        rebasin_summary(stack, spec, method="bogus")
    with pytest.raises(ValueError, match="needs data"):
        rebasin_summary(stack, spec, method="activation")
    with pytest.raises(ValueError, match="out of range"):
        rebasin_summary(stack, spec, reference_index=K)
    with pytest.raises(ValueError, match="reference_index"):
        rebasin_summary(stack, spec, reference_index=1.5)
    with pytest.raises(ValueError, match="at least 2 samples"):
        rebasin_summary(jax.tree_util.tree_map(lambda a: a[:1], stack), spec)
    with pytest.raises(ValueError, match="does not fit the spec"):
        rebasin_summary(stack, mlp_permutation_spec(1))
    with pytest.raises(ValueError):  # explicit reference of the wrong shape
        rebasin_summary(stack, spec, reference=random_mlp_small_bias(np.random.default_rng(0), [12, 10, 8, 4]))
    with pytest.raises(TypeError, match="PermutationSpec"):
        rebasin_summary(stack, {"dense_0/kernel": (None, "P_0")})


# --------------------------------------------------------------------------- helpers


def test_vectors_and_sampling():
    rng = np.random.default_rng(5)
    mu = random_mlp_small_bias(rng, [3, 4, 2])
    sigma = jax.tree_util.tree_map(lambda a: np.abs(rng.normal(size=a.shape)), mu)
    s = GaussianSummary(mu=mu, sigma=sigma)
    m, sg = flatten_summary(s)
    assert m.shape == sg.shape == (s.num_params,) == (3 * 4 + 4 + 4 * 2 + 2,)
    assert_tree_close(vector_to_tree(m, mu), mu, rtol=0, atol=0)
    with pytest.raises(ValueError, match="shape"):
        vector_to_tree(m[:-1], mu)
    draws = summary_to_samples(0, s, 5)
    assert draws["dense_0"]["kernel"].shape == (5, 3, 4)
    zero = GaussianSummary(mu=mu, sigma=jax.tree_util.tree_map(np.zeros_like, mu))
    same = summary_to_samples(jax.random.PRNGKey(1), zero, 2)
    assert_tree_close(jax.tree_util.tree_map(lambda a: a[1], same), mu, rtol=1e-6, atol=1e-6)
    # the std of many draws approaches sigma
    many = summary_to_samples(2, s, 4000)
    est = direct_summary(many)
    np.testing.assert_allclose(tree_to_vector(est.sigma), tree_to_vector(sigma), rtol=0.1, atol=1e-3)


def test_grouped_rebasin_uses_one_permutation_per_group():
    import jax

    from symlib.symmetry import permutations as P
    from symlib.core.models import mlp_init
    from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec
    from symlib.evaluation.summaries import direct_summary, grouped_rebasin_summary

    spec = mlp_permutation_spec(1)
    base = jax.tree_util.tree_map(np.asarray, mlp_init(jax.random.key(0), [6, 9, 3]))
    rng = np.random.default_rng(0)
    planted = [P.identity(9), P.random_permutation(1, 9)]
    samples, groups = [], []
    for g, p in enumerate(planted):
        for _ in range(4):
            noisy = jax.tree_util.tree_map(lambda a: a + 1e-3 * rng.normal(size=a.shape), base)
            samples.append(apply_permutation(spec, {"P_0": p}, noisy))
            groups.append(g)
    stack = jax.tree_util.tree_map(lambda *a: np.stack(a), *samples)
    q = grouped_rebasin_summary(stack, groups, spec)
    assert np.all(q.perms["P_0"][:4] == np.arange(9))
    assert np.all(q.perms["P_0"][4:] == q.perms["P_0"][4])
    assert P.num_transpositions(P.compose(planted[1], q.perms["P_0"][4])) == 0
    assert np.max(q.sigma["dense_0"]["kernel"]) < 1e-2 < np.max(direct_summary(stack).sigma["dense_0"]["kernel"])
    with pytest.raises(ValueError, match="one id per sample"):
        grouped_rebasin_summary(stack, groups[:-1], spec)
    # a NaN id matches no sample: its rows of the permutations were left uninitialised
    with pytest.raises(ValueError, match="NaN or inf ids"):
        grouped_rebasin_summary(stack, np.array(groups[:-1] + [np.nan]), spec)
