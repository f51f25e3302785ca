"""Tests for symlib.symmetry.alignment (W2 / KL alignment of mean-field posteriors, geodesic)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from _helpers import assert_tree_close

from symlib.symmetry import permutations as P
from symlib.symmetry.alignment import (
    apply_alignment,
    composite_spec,
    kl_alignment,
    kl_cost_terms,
    kl_diag,
    w2_geodesic,
    wasserstein2_sq,
    wasserstein_alignment,
)
from symlib.testing.reference import alignment_timings, random_gaussian_posterior
from symlib.symmetry.specs import PermutationSpec, flatten_params, mlp_permutation_spec, random_permutations
from symlib.inference.vi import VIResult


# --------------------------------------------------------------------------- helpers


def random_q(rng: np.random.Generator, sizes, sigma_range=(0.01, 0.1)):
    """Generic float64 (mu, sigma) of an MLP: N(0, 1/fan_in) kernels, N(0, 1) biases,
    log-uniform sigmas (so sigma0 is far from constant)."""
    mu = {
        f"dense_{l}": {"kernel": rng.normal(size=(a, b)) / np.sqrt(a), "bias": rng.normal(size=b)}
        for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    }
    lo, hi = np.log(sigma_range[0]), np.log(sigma_range[1])
    sigma = {k: {n: np.exp(rng.uniform(lo, hi, size=v.shape)) for n, v in d.items()} for k, d in mu.items()}
    return mu, sigma


def is_inverse(planted, found) -> bool:
    return all(np.array_equal(P.compose(planted[k], found[k]), np.arange(len(planted[k]))) for k in planted)


def vector_spec():
    """One permutation acting on one vector parameter: the 'units' of Figure A1."""
    return PermutationSpec({"w": ("P",)})


def vq(m, s):
    return {"w": np.asarray(m, float)}, {"w": np.asarray(s, float)}


def mean_only_cost(q1, q0):
    """The appendix's reduced cost: (m0 - m1)^T diag(s0^-2) (m0 - m1) / 2, summed."""
    f1, f0, s0 = flatten_params(q1[0]), flatten_params(q0[0]), flatten_params(q0[1])
    return float(sum(0.5 * np.sum(((f0[p] - f1[p]) / s0[p]) ** 2) for p in f0))


# --------------------------------------------------------------------------- composite spec


def test_composite_spec_paths_and_names():
    spec = mlp_permutation_spec(2)
    comp = composite_spec(spec, ["mu", "sigma"])
    assert set(comp.axes) == {f"{pre}/{p}" for pre in ("mu", "sigma") for p in spec.axes}
    for p, names in spec.axes.items():
        assert comp.axes[f"mu/{p}"] == names and comp.axes[f"sigma/{p}"] == names
    assert comp.perm_names == spec.perm_names
    assert len(comp.perm_to_axes["P_0"]) == 2 * len(spec.perm_to_axes["P_0"])
    with pytest.raises(ValueError, match="distinct"):
        composite_spec(spec, ["a", "a"])
    with pytest.raises(ValueError, match="non-empty"):
        composite_spec(spec, [""])
    with pytest.raises(TypeError):
        composite_spec(spec, "mu")
    with pytest.raises(TypeError):
        composite_spec({"w": ("P",)}, ["mu"])


# --------------------------------------------------------------------------- planted permutations

# Input/output dims >= 16 anchor the chain and hidden widths are >= 6: with tiny widths
# coordinate ascent can stop at a local optimum (the method's known limitation). Over
# 300 random cases of this kind the planted permutation was missed 1x by the W2 cost and
# 4x by the KL cost, whose 1/s0^2 weights (a factor 100 apart here) make it harder; the
# seeds below are deterministic.
PLANTED_SEEDS = list(range(10))


def planted_case(seed):
    rng = np.random.default_rng(seed)
    depth = int(rng.integers(1, 4))
    sizes = [int(rng.integers(16, 33))] + [int(rng.integers(6, 17)) for _ in range(depth)] + [int(rng.integers(16, 33))]
    spec = mlp_permutation_spec(depth)
    q0 = random_q(rng, sizes)
    planted = random_permutations(rng, spec, q0[0])
    return spec, q0, planted, apply_alignment(spec, planted, q0)


@pytest.mark.parametrize("seed", PLANTED_SEEDS)
def test_wasserstein_alignment_recovers_planted_permutation(seed):
    spec, q0, planted, q1 = planted_case(seed)
    res = wasserstein_alignment(seed, spec, q0, q1)
    assert is_inverse(planted, res.perms)
    aligned = apply_alignment(spec, res.perms, q1)
    assert_tree_close(aligned[0], q0[0], rtol=0, atol=0)
    assert_tree_close(aligned[1], q0[1], rtol=0, atol=0)
    assert res.info["w2_sq"] == 0.0 and res.info["w2_sq_identity"] > 0
    assert res.converged


@pytest.mark.parametrize("seed", PLANTED_SEEDS)
def test_kl_alignment_recovers_planted_permutation(seed):
    spec, q0, planted, q1 = planted_case(seed)
    res = kl_alignment(seed, spec, q0, q1)
    assert is_inverse(planted, res.perms)
    assert res.info["kl"] == pytest.approx(0.0, abs=1e-8)
    assert res.info["kl_identity"] > 1.0
    # KL = c - J at the result
    assert res.info["kl_const"] - res.objective[-1] == pytest.approx(res.info["kl"], abs=1e-6 * abs(res.info["kl_const"]))


def test_vi_result_and_flat_layouts_are_accepted():
    spec, q0, planted, q1 = planted_case(3)
    r_tuple = wasserstein_alignment(0, spec, q0, q1)
    r_vi = wasserstein_alignment(0, spec, VIResult(*q0, np.zeros(1)), VIResult(*q1, np.zeros(1)))
    flat = lambda q: (flatten_params(q[0]), flatten_params(q[1]))  # noqa: E731
    r_flat = wasserstein_alignment(0, spec, flat(q0), flat(q1))
    for r in (r_vi, r_flat):
        assert all(np.array_equal(r.perms[k], r_tuple.perms[k]) for k in r_tuple.perms)
    mu, sigma = apply_alignment(spec, r_flat.perms, flat(q1))
    assert set(mu) == set(spec.axes)  # flat in, flat out


def test_fit_vi_diagonal_gaussian_is_accepted_wherever_a_pair_is():
    """fit_vi returns a DiagonalGaussian of three fields (mean, std, info): every alignment
    function takes it as it takes the pair (mean, std), with the same result."""
    import jax

    from symlib.core.gaussian import DiagonalGaussian
    from symlib.core.models import mlp_apply, mlp_init
    import optax
    from symlib.inference import Data, Model, VIConfig, fit_vi

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 5)).astype(np.float32)
    y = rng.integers(0, 3, 64)
    q0 = fit_vi(jax.random.key(0), mlp_init(jax.random.key(1), [5, 8, 3]), Model(mlp_apply), Data(x, y),
                VIConfig(epochs=2, batch_size=32, optimizer=optax.adam(1e-2), std_init=0.05))
    assert isinstance(q0, DiagonalGaussian) and len(q0) == 3 and set(q0.info) == {"elbo"}
    spec = mlp_permutation_spec(1)
    planted = random_permutations(rng, spec, q0.mean)
    pair0 = (q0.mean, q0.std)
    pair1 = apply_alignment(spec, planted, pair0)
    moved = apply_alignment(spec, planted, q0)
    assert_tree_close(moved[0], pair1[0], rtol=0, atol=0)
    assert_tree_close(moved[1], pair1[1], rtol=0, atol=0)
    q1 = DiagonalGaussian(*pair1, info=q0.info)

    assert wasserstein2_sq(q0, q1) == wasserstein2_sq(pair0, pair1) > 0  # the planted permutation moves units
    assert kl_diag(q1, q0) == kl_diag(pair1, pair0) > 0
    for got, ref in zip(kl_cost_terms(q0, q1), kl_cost_terms(pair0, pair1)):
        for k in ref:
            assert_tree_close(got[k], ref[k], rtol=0, atol=0)
    for got, ref in zip(w2_geodesic(q0, q1, 0.25), w2_geodesic(pair0, pair1, 0.25)):
        assert_tree_close(got, ref, rtol=0, atol=0)
    w2 = wasserstein_alignment(0, spec, q0, q1)
    assert is_inverse(planted, w2.perms) and w2.info["w2_sq"] == 0.0
    w2_pair = wasserstein_alignment(0, spec, pair0, pair1)
    assert all(np.array_equal(w2.perms[k], w2_pair.perms[k]) for k in w2_pair.perms)
    kl = kl_alignment(0, spec, q0, q1)
    assert is_inverse(planted, kl.perms) and kl.info["kl"] == pytest.approx(0.0, abs=1e-8)
    assert kl.info["kl_identity"] == kl_alignment(0, spec, pair0, pair1).info["kl_identity"]


# --------------------------------------------------------------------------- Figure A1


# (a, b, s_a, s_b): q0 = N((a, b), diag(s_a^2, s_b^2)), q1 = its mirror about y = x.
MIRROR_CASES = {
    "generic": (1.0, -1.0, 1.0, 0.2),
    "means_close": (0.5, 0.4, 1.0, 0.2),
    "equal_sigmas": (1.0, -1.0, 0.5, 0.5),
    "means_on_diagonal": (0.0, 0.0, 1.0, 0.2),
}


@pytest.mark.parametrize("case", list(MIRROR_CASES))
def test_figure_a1_mirror_symmetric_pair(case):
    """Two 2-D diagonal Gaussians mirror-symmetric about y = x, as two 'units'.

    The swap maps q1 exactly onto q0, so W2 and the full KL are both 0 at the swap and
    positive at the identity: both costs recover the symmetry whenever q0 is not itself
    symmetric. The appendix's reduced (mean-only) KL cost is also 0 at the swap; it
    returns the identity only when the means lie on the mirror line (a == b), where it
    ties and the LAP keeps the identity (strict improvements only) -- the situation in
    which the paper's claim "KL returns the identity" holds. Numbers (identity, swap):
      generic            W2 9.28 / 0, KL 63.52 / 0, mean-only 52.0 / 0
      means_close        W2 1.30 / 0, KL 11.65 / 0, mean-only 0.13 / 0
      equal_sigmas       W2 8.00 / 0, KL 16.0  / 0, mean-only 16.0 / 0
      means_on_diagonal  W2 1.28 / 0, KL 11.52 / 0, mean-only 0    / 0  (tie -> identity)
    """
    a, b, sa, sb = MIRROR_CASES[case]
    spec = vector_spec()
    q0, q1 = vq([a, b], [sa, sb]), vq([b, a], [sb, sa])
    ident, swap = np.array([0, 1]), np.array([1, 0])

    def at(p):
        qp = apply_alignment(spec, {"P": p}, q1)
        return wasserstein2_sq(q0, qp), kl_diag(qp, q0), mean_only_cost(qp, q0)

    (w_id, kl_id, m_id), (w_sw, kl_sw, m_sw) = at(ident), at(swap)
    assert w_sw == 0.0 and kl_sw == pytest.approx(0.0, abs=1e-12) and m_sw == 0.0
    assert w_id > 0 and kl_id > 0
    # closed forms at the identity
    assert w_id == pytest.approx(2 * (a - b) ** 2 + 2 * (sa - sb) ** 2)
    kl_expected = (np.log(sa / sb) + (sb**2 + (a - b) ** 2) / (2 * sa**2) - 0.5
                   + np.log(sb / sa) + (sa**2 + (a - b) ** 2) / (2 * sb**2) - 0.5)
    assert kl_id == pytest.approx(kl_expected)
    assert m_id == pytest.approx(0.5 * (a - b) ** 2 * (1 / sa**2 + 1 / sb**2))

    assert np.array_equal(wasserstein_alignment(0, spec, q0, q1).perms["P"], swap)
    assert np.array_equal(kl_alignment(0, spec, q0, q1).perms["P"], swap)
    mean_only = kl_alignment(0, spec, q0, q1, mean_only=True).perms["P"]
    assert np.array_equal(mean_only, ident if a == b else swap)


def test_kl_trace_term_depends_on_the_permutation():
    """Appendix A says only the mean term of the KL depends on P; the trace term
    sum (P s1)^2 / s0^2 does too unless s0 is constant."""
    spec = vector_spec()
    q0 = vq([0.0, 0.0, 0.0], [1.0, 0.1, 0.5])
    q1 = vq([0.0, 0.0, 0.0], [0.1, 0.5, 1.0])
    kls = {p: kl_diag(apply_alignment(spec, {"P": np.array(p)}, q1), q0) for p in itertools.permutations(range(3))}
    assert max(kls.values()) - min(kls.values()) > 10  # varies with P although the means are equal
    assert kl_alignment(0, spec, q0, q1).info["kl"] == pytest.approx(min(kls.values()), abs=1e-12)
    # with constant s0 the trace term is invariant: full KL - mean-only cost is constant in P
    rng = np.random.default_rng(0)
    q0 = vq(rng.normal(size=4), np.full(4, 0.3))
    q1 = vq(rng.normal(size=4), rng.uniform(0.1, 1, size=4))
    diffs = []
    for p in itertools.permutations(range(4)):
        qp = apply_alignment(spec, {"P": np.array(p)}, q1)
        diffs.append(kl_diag(qp, q0) - mean_only_cost(qp, q0))
    assert np.ptp(diffs) < 1e-12


def test_kl_cost_terms_layout_and_values():
    rng = np.random.default_rng(1)
    q0, q1 = random_q(rng, [3, 4, 2]), random_q(rng, [3, 4, 2])
    A, B = kl_cost_terms(q0, q1)
    assert set(A) == set(B) == {"a", "b"}
    k = ("dense_0", "kernel")
    m0, s0 = q0[0][k[0]][k[1]], q0[1][k[0]][k[1]]
    m1, s1 = q1[0][k[0]][k[1]], q1[1][k[0]][k[1]]
    np.testing.assert_allclose(A["a"][k[0]][k[1]], m0 / s0**2)
    np.testing.assert_allclose(A["b"][k[0]][k[1]], -0.5 / s0**2)
    np.testing.assert_allclose(B["a"][k[0]][k[1]], m1)
    np.testing.assert_allclose(B["b"][k[0]][k[1]], m1**2 + s1**2)
    _, B_mean = kl_cost_terms(q0, q1, mean_only=True)
    np.testing.assert_allclose(B_mean["b"][k[0]][k[1]], m1**2)
    # KL = c - <A, B> at the identity
    fa, fb = flatten_params(A), flatten_params(B)
    J = sum(float(np.vdot(fa[p], fb[p])) for p in fa)
    f0m, f0s, f1s = flatten_params(q0[0]), flatten_params(q0[1]), flatten_params(q1[1])
    c = sum(float(np.sum(np.log(f0s[p]) - np.log(f1s[p]) + 0.5 * (f0m[p] / f0s[p]) ** 2 - 0.5)) for p in f0m)
    assert kl_diag(q1, q0) == pytest.approx(c - J, rel=1e-10)


# --------------------------------------------------------------------------- brute force


@pytest.mark.parametrize("seed", range(8))
def test_single_permutation_costs_match_brute_force(seed):
    """One permutation (a one-hidden-layer MLP, n <= 5 units): one LAP is exact, so the
    result must minimise KL (and W2, and the mean-only cost) over all n! permutations."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 6))
    sizes = [int(rng.integers(1, 4)), n, int(rng.integers(1, 4))]
    spec = mlp_permutation_spec(1)
    q0, q1 = random_q(rng, sizes, (0.05, 1.0)), random_q(rng, sizes, (0.05, 1.0))
    table = {}
    for p in itertools.permutations(range(n)):
        qp = apply_alignment(spec, {"P_0": np.array(p)}, q1)
        table[p] = (kl_diag(qp, q0), wasserstein2_sq(q0, qp), mean_only_cost(qp, q0))
    best = [min(v[i] for v in table.values()) for i in range(3)]

    res = kl_alignment(seed, spec, q0, q1)
    assert res.info["kl"] == pytest.approx(best[0], rel=1e-10, abs=1e-12)
    assert table[tuple(res.perms["P_0"])][0] == pytest.approx(best[0], rel=1e-10, abs=1e-12)
    assert res.info["kl_identity"] == pytest.approx(table[tuple(range(n))][0], rel=1e-12)
    w2 = wasserstein_alignment(seed, spec, q0, q1)
    assert w2.info["w2_sq"] == pytest.approx(best[1], rel=1e-10, abs=1e-12)
    km = kl_alignment(seed, spec, q0, q1, mean_only=True)
    assert table[tuple(km.perms["P_0"])][2] == pytest.approx(best[2], rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_alignment_never_increases_w2(seed):
    rng = np.random.default_rng(200 + seed)
    depth = int(rng.integers(1, 4))
    sizes = [int(rng.integers(2, 9)) for _ in range(depth + 2)]
    spec = mlp_permutation_spec(depth)
    q0, q1 = random_q(rng, sizes), random_q(rng, sizes)
    res = wasserstein_alignment(seed, spec, q0, q1)
    before = wasserstein2_sq(q0, q1)
    after = wasserstein2_sq(q0, apply_alignment(spec, res.perms, q1))
    assert after <= before + 1e-12
    assert res.info["w2_sq"] == pytest.approx(after, rel=1e-12)
    assert res.info["w2_sq_identity"] == pytest.approx(before, rel=1e-12)
    # W2^2 = |q0|^2 + |q1|^2 - 2 J
    norm = lambda q: sum(float(np.sum(v**2)) for t in q for v in flatten_params(t).values())  # noqa: E731
    assert norm(q0) + norm(q1) - 2 * res.objective[-1] == pytest.approx(after, rel=1e-9, abs=1e-9)
    assert all(np.diff(res.objective) >= -1e-9)
    kl = kl_alignment(seed, spec, q0, q1)
    assert kl.info["kl"] <= kl.info["kl_identity"] + 1e-9


# --------------------------------------------------------------------------- validation


def test_validation_errors_name_the_parameter():
    spec = mlp_permutation_spec(1)
    rng = np.random.default_rng(0)
    q0, q1 = random_q(rng, [3, 4, 2]), random_q(rng, [3, 4, 2])
    bad = (q1[0], {k: dict(v) for k, v in q1[1].items()})
    bad[1]["dense_1"]["bias"] = -bad[1]["dense_1"]["bias"]
    with pytest.raises(ValueError, match=r"q1: sigma of parameter 'dense_1/bias' has negative"):
        wasserstein_alignment(0, spec, q0, bad)
    nan = ({k: dict(v) for k, v in q0[0].items()}, q0[1])
    nan[0]["dense_0"]["kernel"] = np.full((3, 4), np.nan)
    with pytest.raises(ValueError, match=r"q0: mean of parameter 'dense_0/kernel' holds NaN"):
        w2_geodesic(nan, q1, 0.5)
    other = random_q(rng, [3, 5, 2])
    with pytest.raises(ValueError, match=r"'dense_0/kernel' has shape \(3, 4\) in q0 but \(3, 5\) in q1"):
        wasserstein2_sq(q0, other)
    with pytest.raises(ValueError, match="mean shape"):
        wasserstein2_sq((q0[0], other[1]), q1)
    with pytest.raises(ValueError, match="different parameters"):
        wasserstein2_sq(q0, ({"dense_0": q1[0]["dense_0"]}, {"dense_0": q1[1]["dense_0"]}))
    zero = (q1[0], {k: {n: np.zeros_like(v) for n, v in d.items()} for k, d in q1[1].items()})
    assert wasserstein2_sq(q0, zero) > 0  # sigma = 0 is fine for W2
    with pytest.raises(ValueError, match="must be positive for the KL"):
        kl_alignment(0, spec, q0, zero)
    with pytest.raises(ValueError, match="do not fit the spec"):
        wasserstein_alignment(0, mlp_permutation_spec(2), q0, q1)
    with pytest.raises(TypeError):
        wasserstein2_sq(q0[0], q1)


# --------------------------------------------------------------------------- geodesic


def test_w2_geodesic_endpoints_exact_and_midpoint():
    q0 = random_gaussian_posterior(0, [5, 6, 3])
    q1 = random_gaussian_posterior(1, [5, 6, 3])
    for tau, ref in ((0.0, q0), (1.0, q1), (0, q0), (1, q1)):
        mu, sigma = w2_geodesic(q0, q1, tau)
        assert_tree_close(mu, ref[0], rtol=0, atol=0)
        assert_tree_close(sigma, ref[1], rtol=0, atol=0)
        assert mu["dense_0"]["kernel"].dtype == np.float32
    mu, sigma = w2_geodesic(q0, q1, 0.25)
    np.testing.assert_allclose(sigma["dense_1"]["bias"], 0.75 * q0[1]["dense_1"]["bias"] + 0.25 * q1[1]["dense_1"]["bias"],
                               rtol=1e-6)
    # W2 along the geodesic is linear: W2(q0, q_tau) = tau W2(q0, q1)
    d = np.sqrt(wasserstein2_sq(q0, q1))
    assert np.sqrt(wasserstein2_sq(q0, (mu, sigma))) == pytest.approx(0.25 * d, rel=1e-5)
    for bad in (-0.1, 1.5, float("nan"), "x"):
        with pytest.raises(ValueError, match="tau"):
            w2_geodesic(q0, q1, bad)


# --------------------------------------------------------------------------- timings helper


def test_random_posterior_and_alignment_timings():
    mu, sigma = random_gaussian_posterior(0, [7, 5, 4])
    s = np.concatenate([v.ravel() for v in flatten_params(sigma).values()])
    assert s.min() >= 0.01 * (1 - 1e-6) and s.max() <= 0.1 * (1 + 1e-6)
    assert mu["dense_0"]["kernel"].shape == (7, 5) and mu["dense_0"]["kernel"].dtype == np.float32
    out = alignment_timings([4, 8], depth=2, input_dim=6, output_dim=3)
    assert out["width"] == [4, 8]
    for k in ("w2_seconds", "wm_seconds", "ratio", "w2_sweeps", "wm_sweeps"):
        assert len(out[k]) == 2
    assert all(t > 0 for t in out["w2_seconds"] + out["wm_seconds"])
