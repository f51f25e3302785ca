"""Tests of symlib.symmetry.scaling and symlib.symmetry.canonical on ReLU MLPs
(mlp_scaling_spec / mlp_permutation_spec): scaling symmetries, min-mass, unit-norm, sorting,
identifiable nets, function_change."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers import assert_tree_close, random_mlp
from symlib.symmetry import canonical as C
from symlib.symmetry import scaling as S
from symlib.symmetry.canonical import SORT_STATISTICS
from symlib.testing import reference as R
from symlib.core.models import mlp_apply, mlp_init
from symlib.symmetry.permutations import random_permutation
from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec


def _scipy_oracle(params):
    """Min mass by a generic solver (L-BFGS on the log-scales, analytic gradient)."""
    return R.min_mass_lbfgs(params, max_iter=20_000)[0]


def sspec(params):
    """The scaling spec of an MLP ``dense_0 .. dense_L``."""
    return S.mlp_scaling_spec(len(params) - 1)


def pspec(params):
    """The permutation spec of an MLP ``dense_0 .. dense_L``."""
    return mlp_permutation_spec(len(params) - 1)


def random_scales(rng, params, spread=1.0):
    names = sorted(params)
    return {f"P_{l}": np.exp(spread * rng.normal(size=np.shape(params[n]["kernel"])[1]))
            for l, n in enumerate(names[:-1])}


def random_perms(rng, params):
    names = sorted(params)
    return {f"P_{l}": random_permutation(rng, np.shape(params[n]["kernel"])[1]) for l, n in enumerate(names[:-1])}


def permute(params, perms):
    return apply_permutation(pspec(params), perms, params)


def _apply_with(act):
    """``apply_fn`` of an MLP whose hidden activation is ``act`` (the layers of mlp_apply)."""
    def apply(params, x):
        names = [f"dense_{l}" for l in range(len(params))]
        h = x
        for n in names[:-1]:
            h = act(h @ params[n]["kernel"] + params[n]["bias"])
        return h @ params[names[-1]]["kernel"] + params[names[-1]]["bias"]
    return apply


#: the forward pass for each homogeneous activation (leaky ReLU: jax.nn.leaky_relu, slope 0.01)
APPLY = {"relu": mlp_apply, "leaky_relu": _apply_with(jax.nn.leaky_relu), "identity": _apply_with(lambda h: h)}


def function_change(a, b, key=0, n=256, activation="relu"):
    """Max change of the outputs on ``n`` standard normal inputs drawn from ``key`` (the
    inputs of the former ``check_function_unchanged(a, b, key, n, activation)``)."""
    x = np.random.default_rng(key).normal(size=(n, np.shape(a["dense_0"]["kernel"])[0]))
    return S.function_change(APPLY[activation], a, b, x)


# --------------------------------------------------------------------------- apply_scaling


#: hypothesis strategies for a small random MLP: hidden widths, input and output sizes, numpy seed
SMALL_MLPS = dict(
    widths=st.lists(st.integers(1, 8), min_size=1, max_size=3),
    d_in=st.integers(1, 6),
    d_out=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
)


@settings(max_examples=25, deadline=None)
@given(**SMALL_MLPS, activation=st.sampled_from(["relu", "leaky_relu", "identity"]))
def test_apply_scaling_invariance(widths, d_in, d_out, seed, activation):
    rng = np.random.default_rng(seed)
    params = random_mlp(rng, [d_in, *widths, d_out])
    scaled = S.apply_scaling(sspec(params), params, random_scales(rng, params, spread=1.5), activation=activation)
    assert function_change(params, scaled, key=seed, n=64, activation=activation) < 1e-9


@settings(max_examples=20, deadline=None)
@given(**SMALL_MLPS)
def test_property_rescaling_keeps_function_and_min_mass(widths, d_in, d_out, seed):
    """Random ReLU MLP, random positive per-unit scales: mlp_apply's outputs are unchanged
    (float32 and float64) and the minimal mass (and the min-mass network) is the same."""
    rng = np.random.default_rng(seed)
    params = random_mlp(rng, [d_in, *widths, d_out])
    spec = sspec(params)
    scales = {f"P_{l}": np.exp(rng.uniform(-2.0, 2.0, size=w)) for l, w in enumerate(widths)}
    x = rng.normal(size=(16, d_in))
    scaled = S.apply_scaling(spec, params, scales)
    with S._x64():  # float64 end to end
        ref64, out64 = np.asarray(mlp_apply(params, x)), np.asarray(mlp_apply(scaled, x))
    assert ref64.dtype == np.float64
    np.testing.assert_allclose(out64, ref64, rtol=1e-12, atol=1e-12 * (1 + np.abs(ref64).max()))
    p32 = jax.tree_util.tree_map(lambda v: jnp.asarray(v, jnp.float32), params)
    s32 = S.apply_scaling(spec, p32, scales)
    x32 = jnp.asarray(x, jnp.float32)
    ref32, out32 = np.asarray(mlp_apply(p32, x32)), np.asarray(mlp_apply(s32, x32))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, ref32, rtol=1e-5, atol=1e-5 * (1 + np.abs(ref32).max()))
    original, rescaled = S.min_mass(spec, params), S.min_mass(spec, scaled)
    assert rescaled.mass == pytest.approx(original.mass, rel=1e-8)
    assert original.mass <= S.mass(spec, params) * (1 + 1e-12) and rescaled.mass <= S.mass(spec, scaled) * (1 + 1e-12)
    exact, exact_rescaled = S.min_mass(spec, params, method="newton"), S.min_mass(spec, scaled, method="newton")
    assert_tree_close(exact_rescaled.params, exact.params, rtol=1e-6, atol=1e-9)


def test_apply_scaling_axes_and_types():
    rng = np.random.default_rng(0)
    params = random_mlp(rng, [3, 4, 5, 2])
    s = random_scales(rng, params)
    out = S.apply_scaling(sspec(params), params, s)
    s0, s1 = s["P_0"], s["P_1"]
    np.testing.assert_allclose(out["dense_0"]["kernel"], params["dense_0"]["kernel"] * s0[None, :])
    np.testing.assert_allclose(out["dense_0"]["bias"], params["dense_0"]["bias"] * s0)
    np.testing.assert_allclose(out["dense_1"]["kernel"], params["dense_1"]["kernel"] * s1[None, :] / s0[:, None])
    np.testing.assert_allclose(out["dense_2"]["kernel"], params["dense_2"]["kernel"] / s1[:, None])
    np.testing.assert_allclose(out["dense_2"]["bias"], params["dense_2"]["bias"])
    assert isinstance(out["dense_0"]["kernel"], np.ndarray)
    jparams = mlp_init(jax.random.PRNGKey(0), [3, 4, 2])
    jout = S.apply_scaling(S.mlp_scaling_spec(1), jparams, {"P_0": np.full(4, 2.0)})
    assert isinstance(jout["dense_0"]["kernel"], jax.Array) and jout["dense_0"]["kernel"].dtype == jnp.float32


def test_mass_excludes_biases():
    params = {"dense_0": {"kernel": np.array([[1.0, 2.0]]), "bias": np.array([5.0, 5.0])},
              "dense_1": {"kernel": np.array([[3.0], [0.5]]), "bias": np.array([7.0])}}
    assert S.mass(S.mlp_scaling_spec(1), params) == pytest.approx(1 + 4 + 9 + 0.25)


# --------------------------------------------------------------------------- min_mass


@pytest.mark.parametrize("method", ["auto", "bcd", "newton"])
@pytest.mark.parametrize("sizes", [[4, 6, 3], [5, 7, 6, 2], [6, 8, 5, 7, 3]])
def test_min_mass_properties(sizes, method):
    rng = np.random.default_rng(len(sizes))
    params = random_mlp(rng, sizes)
    spec = sspec(params)
    res = S.min_mass(spec, params, method=method)
    assert res.converged and res.solver == "chain"
    assert res.mass_before == pytest.approx(S.mass(spec, params))
    assert res.mass == pytest.approx(S.mass(spec, res.params))
    assert res.mass < res.mass_before * (1 - 1e-6)  # generic network: strictly lighter
    assert function_change(params, res.params, key=1) < 1e-10
    assert_tree_close(S.apply_scaling(spec, params, res.scales), res.params, rtol=1e-12)
    assert list(res.scales) == list(res.log_scales) == [f"P_{l}" for l in range(len(sizes) - 2)]
    for g in res.scales:
        np.testing.assert_allclose(res.scales[g], np.exp(res.log_scales[g]))
    # Fixed point: solving again changes nothing.
    again = S.min_mass(spec, res.params, method="newton")
    assert again.mass <= res.mass * (1 + 1e-12)
    assert res.mass <= again.mass * (1 + 1e-9)
    for s in again.scales.values():
        np.testing.assert_allclose(s, 1.0, atol=1e-7 if method == "newton" else 1e-4)  # BCD: ~sqrt(tol)
    # Optimality: the gradient vanishes at the solution.
    W = [np.asarray(res.params[f"dense_{l}"]["kernel"]) ** 2 for l in range(len(sizes) - 1)]
    for l in range(len(sizes) - 2):
        g = W[l].sum(0) - W[l + 1].sum(1)  # incoming mass == outgoing mass per neuron
        np.testing.assert_allclose(g, 0.0, atol=1e-4 * res.mass)


@pytest.mark.parametrize("method", ["auto", "newton"])
def test_min_mass_invariant_to_prior_scaling(method):
    rng = np.random.default_rng(3)
    params = random_mlp(rng, [5, 8, 7, 6, 3])
    spec = sspec(params)
    ref = S.min_mass(spec, params, method=method)
    for spread in (0.5, 3.0):
        scaled = S.apply_scaling(spec, params, random_scales(rng, params, spread=spread))
        res = S.min_mass(spec, scaled, method=method)
        assert res.mass <= res.mass_before
        assert res.mass == pytest.approx(ref.mass, rel=1e-9)
        assert_tree_close(res.params, ref.params, rtol=1e-5, atol=1e-6)


def test_min_mass_never_increases_and_one_hidden_layer_closed_form():
    rng = np.random.default_rng(4)
    params = random_mlp(rng, [6, 9, 4])
    spec = sspec(params)
    res = S.min_mass(spec, params)
    k0, k1 = params["dense_0"]["kernel"], params["dense_1"]["kernel"]
    u = 0.25 * np.log((k1**2).sum(1) / (k0**2).sum(0))
    np.testing.assert_allclose(res.log_scales["P_0"], u, rtol=1e-9, atol=1e-12)
    # Already optimal network: mass unchanged.
    assert S.min_mass(spec, res.params).mass <= res.mass * (1 + 1e-14)
    # No hidden layer (a spec without groups): nothing to do.
    lin = {"dense_0": {"kernel": rng.normal(size=(3, 2)), "bias": np.zeros(2)}}
    r0 = S.min_mass(S.ScalingSpec(groups={}, mass_paths=("dense_0/kernel",)), lin)
    assert r0.scales == {} and r0.mass == r0.mass_before and r0.converged


def test_min_mass_jax_float32_and_trained_like():
    params = mlp_init(jax.random.PRNGKey(1), [10, 16, 16, 3])
    res = S.min_mass(sspec(params), params)
    assert res.converged and res.params["dense_1"]["kernel"].dtype == jnp.float32
    assert function_change(params, res.params, key=2) < 1e-4
    # Ill-conditioned network (some units with tiny outgoing weights): auto switches to Newton.
    rng = np.random.default_rng(5)
    p = random_mlp(rng, [8, 12, 12, 12, 3])
    p["dense_2"]["kernel"][:4] *= 1e-4
    p["dense_1"]["kernel"][:, :3] *= 1e3
    r = S.min_mass(sspec(p), p)
    rn = S.min_mass(sspec(p), p, method="newton")
    assert r.converged and r.mass == pytest.approx(rn.mass, rel=1e-9)
    assert r.mass == pytest.approx(_scipy_oracle(p), rel=1e-7)


@pytest.mark.parametrize("sizes", [[3, 4, 2], [4, 5, 3, 2], [3, 4, 5, 4, 2]])
def test_min_mass_matches_scipy_oracle(sizes):
    rng = np.random.default_rng(sum(sizes))
    base = random_mlp(rng, sizes)
    params = S.apply_scaling(sspec(base), base, random_scales(rng, random_mlp(rng, sizes)))
    res = S.min_mass(sspec(params), params)
    assert res.mass == pytest.approx(_scipy_oracle(params), rel=1e-8)


@pytest.mark.parametrize("sizes", [[3, 4, 2], [4, 5, 3, 2], [3, 4, 5, 4, 2]])
def test_min_mass_matches_cvxpy(sizes):
    pytest.importorskip("cvxpy")
    rng = np.random.default_rng(10 + sum(sizes))
    params = random_mlp(rng, sizes)
    value, log_scales, _ = R.min_mass_cvxpy(params)
    res = S.min_mass(sspec(params), params)
    assert res.mass == pytest.approx(value, rel=1e-6)
    assert res.mass <= value * (1 + 1e-9)
    ours = [res.log_scales[f"P_{l}"] for l in range(len(sizes) - 2)]
    assert len(ours) == len(log_scales)
    for mine, theirs in zip(ours, log_scales):
        np.testing.assert_allclose(mine, theirs, atol=1e-3)


# --------------------------------------------------------------------------- unit_norm


@pytest.mark.parametrize("include_bias", [False, True])
def test_unit_norm(include_bias):
    rng = np.random.default_rng(6)
    params = random_mlp(rng, [5, 7, 6, 3])
    spec = sspec(params)
    out = S.unit_norm(spec, params, include_bias=include_bias)
    for l in range(2):
        k, b = out[f"dense_{l}"]["kernel"], out[f"dense_{l}"]["bias"]
        norms = (k**2).sum(0) + (b**2 if include_bias else 0)
        np.testing.assert_allclose(norms, 1.0)
    assert function_change(params, out, key=3) < 1e-10
    scaled = S.apply_scaling(spec, params, random_scales(rng, params, spread=2.0))
    assert_tree_close(S.unit_norm(spec, scaled, include_bias=include_bias), out, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------- sorting & identifiable


@pytest.mark.parametrize("statistic", ["max", "min", "mean", "norm", "abs_max"])
def test_sort_neurons_canonical(statistic):
    rng = np.random.default_rng(7)
    params = random_mlp(rng, [5, 8, 7, 6, 3])
    out, perms = C.sort_neurons(pspec(params), params, statistic)
    assert_tree_close(permute(params, perms), out)
    assert function_change(params, out, key=4) < 1e-10
    stat = SORT_STATISTICS[statistic]
    for l in range(3):
        s = stat(out[f"dense_{l}"]["kernel"])
        assert np.all(np.diff(s) <= 0), "descending order"
    for _ in range(3):
        shuffled = permute(params, random_perms(rng, params))
        assert_tree_close(C.sort_neurons(pspec(params), shuffled, statistic)[0], out)


def test_sort_neurons_ties_deterministic():
    rng = np.random.default_rng(8)
    params = random_mlp(rng, [3, 6, 2])
    k = params["dense_0"]["kernel"]
    k[0] = 10.0  # every column's max is 10: ties broken by the column, then bias
    params["dense_0"]["bias"][:] = 0.0
    ps = pspec(params)
    out, _ = C.sort_neurons(ps, params)  # defaults: statistic="max", ties="weights"
    for _ in range(3):
        assert_tree_close(C.sort_neurons(ps, permute(params, random_perms(rng, params)))[0], out)
    # callable statistic
    out2, perms2 = C.sort_neurons(ps, params, statistic=lambda kk: -kk.sum(0))
    assert np.all(np.diff(-out2["dense_0"]["kernel"].sum(0)) <= 0)


@pytest.mark.parametrize("scaling", ["min_mass", "unit_norm"])
def test_identifiable_invariant(scaling):
    rng = np.random.default_rng(9)
    params = random_mlp(rng, [6, 10, 9, 8, 3])
    spec, ps = sspec(params), pspec(params)
    ref = C.identifiable(spec, ps, params, scaling=scaling)
    assert function_change(params, ref, key=5) < 1e-9
    for _ in range(3):
        moved = permute(S.apply_scaling(spec, params, random_scales(rng, params, spread=2.0)),
                        random_perms(rng, params))
        # min-mass at IDENTIFIABLE_TOL (1e-12): log-scales to about 1e-6, so the weights agree to that
        assert_tree_close(C.identifiable(spec, ps, moved, scaling=scaling), ref, rtol=2e-6, atol=2e-7)


def test_identifiable_warns_when_min_mass_stops_early():
    rng = np.random.default_rng(9)
    params = random_mlp(rng, [6, 10, 9, 8, 3])
    with pytest.warns(UserWarning, match=r"min_mass \(chain solver\) stopped after 1 iterations"):
        C.identifiable(sspec(params), pspec(params), params, method="bcd", max_iter=1)


def test_identifiable_jax_params():
    params = mlp_init(jax.random.PRNGKey(3), [7, 9, 9, 2])
    out = C.identifiable(sspec(params), pspec(params), params)
    x = jax.random.normal(jax.random.PRNGKey(4), (32, 7))
    np.testing.assert_allclose(mlp_apply(out, x), mlp_apply(params, x), rtol=1e-4, atol=1e-4)


def test_sort_neurons_nan_bias_raises_with_weight_ties():
    """ties="weights" orders equal statistics by the bias too: a NaN bias is named, not
    sorted silently."""
    params = random_mlp(np.random.default_rng(2), [3, 6, 4, 2])
    ps = pspec(params)
    for layer in ("dense_0", "dense_1"):
        bad = {k: dict(v) for k, v in params.items()}
        bad[layer]["bias"] = params[layer]["bias"].copy()
        bad[layer]["bias"][1] = np.nan
        with pytest.raises(ValueError, match=rf"{layer}/bias contains NaN or inf \(1 of \d+ entries\)"):
            C.sort_neurons(ps, bad, ties="weights")
        with pytest.raises(ValueError, match=f"{layer}/bias contains NaN or inf"):
            C.sort_neurons(ps, bad)  # ties="weights" is the default
        with pytest.raises(ValueError, match=f"{layer}/bias contains NaN or inf"):
            C.sort_neurons(ps, jax.tree_util.tree_map(jnp.asarray, bad), statistic="norm", ties="weights")


# --------------------------------------------------------------------------- function_change


def _numpy_forward(params, x, slope):
    """Float64 numpy reference forward pass: hidden activation max(h, slope * h)."""
    names = sorted(params)
    h = x
    for n in names[:-1]:
        h = h @ params[n]["kernel"] + params[n]["bias"]
        h = np.maximum(h, slope * h)
    return h @ params[names[-1]]["kernel"] + params[names[-1]]["bias"]


@pytest.mark.parametrize("activation, slope", [("relu", 0.0), ("leaky_relu", 0.01), ("identity", 1.0)])
def test_function_change_float64(activation, slope):
    """The forward pass (mlp_apply for ReLU) runs in float64 although JAX's x64 mode is off."""
    assert not jax.config.jax_enable_x64
    rng = np.random.default_rng(11)
    a = random_mlp(rng, [4, 7, 6, 3])
    b = {n: dict(layer) for n, layer in a.items()}
    b["dense_2"] = {"kernel": np.zeros_like(a["dense_2"]["kernel"]), "bias": np.zeros(3)}
    x = np.random.default_rng(5).normal(size=(32, 4))
    ref = np.max(np.abs(_numpy_forward(a, x, slope)))
    assert S.function_change(APPLY[activation], a, b, x) == pytest.approx(ref, rel=1e-13)
    assert function_change(a, b, key=5, n=32, activation=activation) == pytest.approx(ref, rel=1e-13)
    # a change of 1e-12 is seen (float32 would report 0 or ~1e-7 of round-off)
    c = {n: dict(layer) for n, layer in a.items()}
    c["dense_2"] = {"kernel": a["dense_2"]["kernel"], "bias": a["dense_2"]["bias"] + np.array([0.0, 1e-12, 0.0])}
    assert function_change(a, c, activation=activation) == pytest.approx(1e-12, rel=1e-3)
    assert function_change(a, a, activation=activation) == 0.0
    assert jnp.asarray(1.0).dtype == jnp.float32, "x64 mode must not leak out"
    # float32 jax params: evaluated in float64 too
    j = jax.tree_util.tree_map(lambda v: jnp.asarray(v, jnp.float32), a)
    assert function_change(j, j, activation=activation) == 0.0


def test_function_change_tells_activations_apart():
    """Flipping the sign of a unit's incoming and outgoing weights keeps an identity network's function
    but changes a ReLU network's."""
    rng = np.random.default_rng(12)
    a = random_mlp(rng, [3, 5, 2])
    flip = np.array([1.0, -1.0, 1.0, 1.0, 1.0])
    b = {"dense_0": {"kernel": a["dense_0"]["kernel"] * flip, "bias": a["dense_0"]["bias"] * flip},
         "dense_1": {"kernel": a["dense_1"]["kernel"] * flip[:, None], "bias": a["dense_1"]["bias"]}}
    assert function_change(a, b, activation="identity") < 1e-12
    assert function_change(a, b, activation="relu") > 1e-2
    assert function_change(a, b, activation="leaky_relu") > 1e-2


def test_function_change_errors():
    a = random_mlp(np.random.default_rng(0), [3, 4, 2])
    b = random_mlp(np.random.default_rng(0), [3, 5, 2])
    x = np.random.default_rng(1).normal(size=(16, 3))
    with pytest.raises(ValueError, match=r"networks a and b must have the same structure and shapes, got "
                                         r"\{'dense_0': \{'bias': \(4,\), 'kernel': \(3, 4\)\}"):
        S.function_change(mlp_apply, a, b, x)
    with pytest.raises(ValueError, match="networks a and b must have the same structure and shapes"):
        S.function_change(mlp_apply, a, {"dense_0": a["dense_0"]}, x)  # a layer missing
    # identical networks: exactly 0 (numpy, jax and float32 leaves alike)
    assert S.function_change(mlp_apply, a, a, x) == 0.0
    assert S.function_change(mlp_apply, a, {n: dict(v) for n, v in a.items()}, x) == 0.0
    j = jax.tree_util.tree_map(lambda v: jnp.asarray(v, jnp.float32), a)
    assert S.function_change(mlp_apply, j, j, x) == 0.0
    # non-finite weights or inputs: named
    for layer, leaf in (("dense_0", "kernel"), ("dense_1", "bias")):
        bad = {k: dict(v) for k, v in a.items()}
        bad[layer][leaf] = a[layer][leaf].copy()
        bad[layer][leaf].flat[0] = np.nan
        where = re.escape(f"{layer}/{leaf} contains NaN or inf (1 of {a[layer][leaf].size} entries)")
        with pytest.raises(ValueError, match="b/" + where):
            S.function_change(mlp_apply, a, bad, x)
        with pytest.raises(ValueError, match="a/" + where):
            S.function_change(mlp_apply, bad, a, x)
    with pytest.raises(ValueError, match=r"x contains NaN or inf"):
        S.function_change(mlp_apply, a, a, np.full((2, 3), np.inf))


def test_function_change_empty_batch_is_a_clear_error():
    a = random_mlp(np.random.default_rng(0), [3, 4, 2])
    with pytest.raises(ValueError, match=r"\bx\b.*(empty|no input|at least one)"):
        S.function_change(mlp_apply, a, a, np.zeros((0, 3)))


# --------------------------------------------------------------------------- errors


SCALING_OPERATIONS = {
    "apply_scaling": lambda p, a: S.apply_scaling(sspec(p), p, {"P_0": np.ones(4)}, activation=a),
    "min_mass": lambda p, a: S.min_mass(sspec(p), p, activation=a),
    "unit_norm": lambda p, a: S.unit_norm(sspec(p), p, activation=a),
    "identifiable(min_mass)": lambda p, a: C.identifiable(sspec(p), pspec(p), p, activation=a),
    "identifiable(unit_norm)": lambda p, a: C.identifiable(sspec(p), pspec(p), p, scaling="unit_norm", activation=a),
}


@pytest.mark.parametrize("operation", sorted(SCALING_OPERATIONS))
def test_errors_activation(operation):
    params = random_mlp(np.random.default_rng(0), [3, 4, 2])
    fn = SCALING_OPERATIONS[operation]
    for act in ("tanh", "sigmoid", "gelu"):
        with pytest.raises(ValueError, match=f"activation '{act}' is not positively homogeneous: rescaling hidden "
                                             "units changes the function"):
            fn(params, act)
    with pytest.raises(ValueError, match="activation 'tanh' is not positively homogeneous"):
        fn(params, jnp.tanh)  # a function is named too
    for act in S.HOMOGENEOUS_ACTIVATIONS:
        fn(params, act)  # accepted


def test_identifiable_without_scaling_accepts_any_activation():
    """Sorting alone does not rescale, so it is valid for tanh networks too."""
    params = random_mlp(np.random.default_rng(0), [3, 4, 2])
    assert_tree_close(C.identifiable(sspec(params), pspec(params), params, scaling=None, activation="tanh"),
                      C.sort_neurons(pspec(params), params)[0], rtol=0)


def test_errors_bad_scales():
    params = random_mlp(np.random.default_rng(0), [3, 4, 5, 2])
    spec = sspec(params)
    with pytest.raises(ValueError, match=re.escape("scales must name exactly the groups ['P_0', 'P_1']; "
                                                   "unknown [], missing ['P_1']")):
        S.apply_scaling(spec, params, {"P_0": np.ones(4)})
    with pytest.raises(ValueError, match=re.escape("scales must name exactly the groups ['P_0', 'P_1']; "
                                                   "unknown ['P_2'], missing []")):
        S.apply_scaling(spec, params, {"P_0": np.ones(4), "P_1": np.ones(5), "P_2": np.ones(2)})
    with pytest.raises(ValueError, match=r"scales\['P_1'\] must have shape \(5,\), got \(4,\)"):
        S.apply_scaling(spec, params, {"P_0": np.ones(4), "P_1": np.ones(4)})
    with pytest.raises(ValueError, match=r"scales\['P_0'\] must be positive; non-positive at unit\(s\) \[1\]"):
        S.apply_scaling(spec, params, {"P_0": np.array([1.0, 0.0, 1.0, 1.0]), "P_1": np.ones(5)})
    with pytest.raises(ValueError, match=r"scales\['P_1'\] must be positive"):
        S.apply_scaling(spec, params, {"P_0": np.ones(4), "P_1": -np.ones(5)})
    with pytest.raises(ValueError, match=r"scales\['P_0'\] contains NaN or inf"):
        S.apply_scaling(spec, params, {"P_0": np.array([1.0, np.inf, 1.0, 1.0]), "P_1": np.ones(5)})
    with pytest.raises(ValueError, match=r"scales\['P_1'\] contains NaN or inf"):
        S.apply_scaling(spec, params, {"P_0": np.ones(4), "P_1": np.full(5, np.nan)})


def test_errors_degenerate_neurons():
    rng = np.random.default_rng(1)
    params = random_mlp(rng, [3, 4, 5, 2])
    params["dense_1"]["kernel"][:, 2] = 0.0  # neuron 2 of hidden layer 1: no incoming weights
    params["dense_1"]["kernel"][3, :] = 0.0  # neuron 3 of hidden layer 0: no outgoing weights
    spec = sspec(params)
    assert {g: v.tolist() for g, v in S.degenerate_neurons(spec, params).items()} == {"P_0": [3], "P_1": [2]}
    with pytest.raises(ValueError, match=r"group 'P_0': unit\(s\) \[3\] have zero outgoing mass; "
                                         r"group 'P_1': unit\(s\) \[2\] have zero incoming mass"):
        S.min_mass(spec, params)
    with pytest.raises(ValueError, match=r"unit_norm: group 'P_1' has unit\(s\) \[2\] with zero incoming weights"):
        S.unit_norm(spec, params)
    with pytest.raises(ValueError, match="degenerate"):
        C.identifiable(spec, pspec(params), params)


def test_degenerate_neurons_of_an_mlp():
    """A zeroed incoming column of dense_1: unit j of hidden layer 1 (group P_1), nothing else."""
    params = random_mlp(np.random.default_rng(3), [3, 4, 5, 2])
    spec = sspec(params)
    assert S.degenerate_neurons(spec, params) == {}
    params["dense_1"]["kernel"][:, 3] = 0.0
    bad = S.degenerate_neurons(spec, params)
    assert list(bad) == ["P_1"]
    np.testing.assert_array_equal(bad["P_1"], np.array([3]))
    params["dense_1"]["kernel"][:, 0] = 0.0
    assert S.degenerate_neurons(spec, params)["P_1"].tolist() == [0, 3]  # sorted


def test_errors_misc():
    params = random_mlp(np.random.default_rng(0), [3, 4, 2])
    spec, ps = sspec(params), pspec(params)
    with pytest.raises(ValueError, match="method"):
        S.min_mass(spec, params, method="cg")
    with pytest.raises(ValueError, match="statistic"):
        C.sort_neurons(ps, params, "median")
    with pytest.raises(ValueError, match="scaling"):
        C.identifiable(spec, ps, params, scaling="l1")
    for kw, match in (({"tol": 0.0}, "tol must be a positive"), ({"tol": np.inf}, "tol must be a positive"),
                      ({"max_iter": 0}, "max_iter must be a positive integer")):
        with pytest.raises(ValueError, match=match):
            S.min_mass(spec, params, **kw)
    with pytest.raises(TypeError, match="statistic must be a name or a callable"):
        C.sort_neurons(ps, params, 3)
    with pytest.raises(ValueError, match=r"statistic returned shape \(2,\) for dense_0/kernel, expected \(4,\)"):
        C.sort_neurons(ps, params, lambda k: k[:, :2].max(0))


def test_errors_layout():
    params = random_mlp(np.random.default_rng(0), [3, 4, 2])
    spec = S.mlp_scaling_spec(1)
    with pytest.raises(ValueError, match="scaling group 'P_0' acts on parameter 'dense_1/kernel', which params do "
                                         "not have"):
        S.mass(spec, {"dense_0": params["dense_0"], "dense_2": params["dense_1"]})
    with pytest.raises(TypeError, match=r"params must be a \(nested\) dict of arrays, got list"):
        S.unit_norm(spec, [params["dense_0"], params["dense_1"]])
    with pytest.raises(ValueError, match="scaling group 'P_0' has 4 units but axis 0 of 'dense_1/kernel' has length "
                                         "1, not a multiple of 4"):  # a batch axis on one kernel
        S.apply_scaling(spec, {"dense_0": params["dense_0"], "dense_1": {"kernel": params["dense_1"]["kernel"][None],
                                                                         "bias": params["dense_1"]["bias"]}},
                        {"P_0": np.ones(4)})
    with pytest.raises(ValueError, match="scaling group 'P_0' has 4 units but axis 0 of 'dense_1/kernel' has length "
                                         "5, not a multiple of 4"):
        S.degenerate_neurons(spec, {"dense_0": params["dense_0"],
                                    "dense_1": {"kernel": np.ones((5, 2)), "bias": np.ones(2)}})


def _with_nan(params, layer, leaf):
    bad = {k: dict(v) for k, v in params.items()}
    bad[layer][leaf] = params[layer][leaf].copy()
    bad[layer][leaf].flat[1] = np.nan
    return bad


@pytest.mark.parametrize("layer, leaf", [("dense_0", "kernel"), ("dense_1", "bias"), ("dense_2", "kernel")])
def test_errors_non_finite_weights_name_the_leaf(layer, leaf):
    params = random_mlp(np.random.default_rng(0), [3, 4, 5, 2])
    spec = sspec(params)
    bad = _with_nan(params, layer, leaf)
    match = f"{layer}/{leaf} contains NaN or inf"
    for fn in (lambda p: S.min_mass(spec, p), lambda p: S.unit_norm(spec, p),
               lambda p: S.apply_scaling(spec, p, {"P_0": np.ones(4), "P_1": np.ones(5)}),
               lambda p: S.degenerate_neurons(spec, p)):
        with pytest.raises(ValueError, match=match):
            fn(bad)
    # function_change names the leaf by its pytree path, after the network ("a" or "b")
    x = np.random.default_rng(0).normal(size=(8, 3))
    where = re.escape(f"{layer}/{leaf} contains NaN or inf")
    with pytest.raises(ValueError, match="b/" + where):
        S.function_change(mlp_apply, params, bad, x)
    with pytest.raises(ValueError, match="a/" + where):
        S.function_change(mlp_apply, bad, params, x)


@pytest.mark.parametrize("layer, leaf", [
    ("dense_0", "kernel"),
    ("dense_1", "bias"),
    ("dense_2", "kernel"),
])
def test_errors_non_finite_weights_sorting_names_the_leaf(layer, leaf):
    params = random_mlp(np.random.default_rng(0), [3, 4, 5, 2])
    bad = _with_nan(params, layer, leaf)
    match = f"{layer}/{leaf} contains NaN or inf"
    for fn in (lambda p: C.sort_neurons(pspec(p), p), lambda p: C.identifiable(sspec(p), pspec(p), p, scaling=None)):
        with pytest.raises(ValueError, match=match):
            fn(bad)


def test_sort_neurons_nan_raises_instead_of_silent_permutation():
    params = random_mlp(np.random.default_rng(2), [3, 6, 2])
    params["dense_0"]["kernel"][1, 4] = np.nan  # used to sort unit 4 somewhere, silently
    with pytest.raises(ValueError, match=r"dense_0/kernel contains NaN or inf \(1 of 18 entries\)"):
        C.sort_neurons(pspec(params), params)
    jparams = jax.tree_util.tree_map(jnp.asarray, params)
    with pytest.raises(ValueError, match="dense_0/kernel contains NaN or inf"):
        C.sort_neurons(pspec(params), jparams, "norm")


def test_scales_as_a_list_and_nan_mass_are_clear_errors():
    params = random_mlp(np.random.default_rng(0), [3, 4, 2])
    spec = S.mlp_scaling_spec(1)
    with pytest.raises(TypeError, match=r"scales must be a dict: group name -> positive factors \(groups \['P_0'\]\)"):
        S.apply_scaling(spec, params, [np.ones(4)])
    bad = _with_nan(params, "dense_1", "kernel")
    with pytest.raises(ValueError, match="dense_1/kernel contains NaN or inf"):
        S.mass(spec, bad)
