"""Scaling symmetries of networks described by a ScalingSpec (symlib.symmetry.scaling), the built-in
architecture specs (symlib.symmetry.architectures) and the canonical forms on them
(symlib.symmetry.canonical)."""
import jax
import numpy as np
import pytest

from _helpers import optunet_logits64
from symlib.core.cnn import optunet_init
from symlib.core.models import mlp_init
from symlib.symmetry.architectures import optunet_permutation_spec, optunet_scaling_spec
from symlib.symmetry.canonical import identifiable, sort_neurons
from symlib.symmetry.scaling import (
    MIN_MASS_DEFAULTS,
    ScalingSpec,
    apply_scaling,
    chain_kernels,
    check_scaling_spec,
    degenerate_neurons,
    mass,
    min_mass,
    mlp_scaling_spec,
    unit_norm,
)
from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec, random_permutations

SPEC = optunet_scaling_spec()


def _f64(tree):
    return jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), tree)


def _max_diff(a, b):
    return max(float(np.abs(np.asarray(x) - np.asarray(y)).max())
               for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


@pytest.fixture(scope="module")
def net():
    return _f64(optunet_init(jax.random.PRNGKey(0)))


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(0).normal(size=(6, 28, 28, 1))


def _random_scales(seed, params):
    rng = np.random.default_rng(seed)
    return {n: np.exp(rng.normal(size=k)) for n, k in check_scaling_spec(SPEC, params).items()}


def test_optunet_groups(net):
    assert check_scaling_spec(SPEC, net) == {"conv_0": 2, "conv_1": 10, "dense_0": 3}


@pytest.mark.parametrize("seed", range(3))
def test_random_rescaling_keeps_the_function(net, images, seed):
    scaled = apply_scaling(SPEC, net, _random_scales(seed, net))
    assert _max_diff(scaled, net) > 1e-3
    np.testing.assert_allclose(optunet_logits64(scaled, images), optunet_logits64(net, images), atol=1e-12)


def test_rescaling_the_incoming_side_alone_changes_the_function(net, images):
    """The check can fail: without its outgoing side a rescaling is not a symmetry."""
    half = ScalingSpec({"conv_1": (("conv_1/kernel", 3, 1), ("dense_1/bias", 0, -1))}, SPEC.mass_paths)
    scaled = apply_scaling(half, net, {"conv_1": np.linspace(0.5, 2.0, 10)})
    assert np.abs(optunet_logits64(scaled, images) - optunet_logits64(net, images)).max() > 1e-4


def test_min_mass_is_the_same_for_the_whole_orbit(net, images):
    a = min_mass(SPEC, net)
    b = min_mass(SPEC, apply_scaling(SPEC, net, _random_scales(5, net)))
    assert a.converged and b.converged and a.mass < a.mass_before
    assert abs(a.mass - b.mass) < 1e-10 * a.mass
    assert _max_diff(a.params, b.params) < 1e-9
    np.testing.assert_allclose(optunet_logits64(a.params, images), optunet_logits64(net, images), atol=1e-12)
    np.testing.assert_allclose(mass(SPEC, a.params), a.mass)


def test_min_mass_balances_incoming_and_outgoing_mass(net):
    """At the minimum the gradient vanishes: every unit's incoming mass equals its outgoing mass."""
    from symlib.symmetry.scaling import _float64, _side_mass

    p = min_mass(SPEC, net).params
    flat, sizes = _float64(SPEC, p), check_scaling_spec(SPEC, p)
    for name in SPEC.groups:
        np.testing.assert_allclose(_side_mass(SPEC, flat, sizes, name, 1), _side_mass(SPEC, flat, sizes, name, -1),
                                   rtol=1e-8)


def test_min_mass_dense_agrees_with_the_chain_solver():
    """A hand-written MLP spec (groups h0, h1): dense Newton agrees with the chain solver's
    Newton on mlp_scaling_spec, and "auto" on it is the chain solver, with its result."""
    mlp = _f64(mlp_init(jax.random.PRNGKey(3), [5, 7, 6, 3]))
    spec = ScalingSpec(
        {"h0": (("dense_0/kernel", 1, 1), ("dense_0/bias", 0, 1), ("dense_1/kernel", 0, -1)),
         "h1": (("dense_1/kernel", 1, 1), ("dense_1/bias", 0, 1), ("dense_2/kernel", 0, -1))},
        ("dense_0/kernel", "dense_1/kernel", "dense_2/kernel"))
    mlp_spec = mlp_scaling_spec(2)
    ours, ref = min_mass(spec, mlp, method="dense", tol=1e-14), min_mass(mlp_spec, mlp, method="newton", tol=1e-14)
    assert ours.solver == "dense" and ref.solver == "chain"
    assert abs(ours.mass - ref.mass) < 1e-12 * ref.mass
    assert _max_diff(ours.params, ref.params) < 1e-9
    # the same spec is a chain: "auto" uses the chain solver, with its result (tol=None: the chain defaults)
    chained = min_mass(spec, mlp, tol=1e-10, max_iter=10_000)
    same = min_mass(mlp_spec, mlp)
    assert chained.solver == "chain" and same.solver == "chain"
    assert chained.mass == same.mass and _max_diff(chained.params, same.params) < 1e-12  # same log-scales
    for name, group in zip(spec.groups, mlp_spec.groups):
        np.testing.assert_array_equal(chained.scales[name], same.scales[group])


def test_chain_specs_are_recognised_whatever_the_names():
    import flax.linen as nn

    from symlib.symmetry import scaling_spec_from_flax

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for width in (7, 6):
                x = nn.relu(nn.Dense(width)(x))
            return nn.Dense(3)(x)

    x = np.ones((2, 5), np.float32)
    params = jax.tree_util.tree_map(np.asarray, MLP().init(jax.random.key(0), x)["params"])
    params = jax.tree_util.tree_map(lambda a: a + np.random.default_rng(0).normal(size=a.shape), params)
    spec = scaling_spec_from_flax(MLP(), params, x)
    assert chain_kernels(spec, params) == ["Dense_0/kernel", "Dense_1/kernel", "Dense_2/kernel"]
    chain, dense = min_mass(spec, params), min_mass(spec, params, method="dense")
    assert (chain.solver, dense.solver) == ("chain", "dense")
    assert abs(chain.mass - dense.mass) < 1e-10 * dense.mass
    assert chain_kernels(SPEC, _f64(optunet_init(jax.random.key(0)))) is None  # grouped conv: not a chain
    with pytest.raises(ValueError, match="needs a chain spec"):
        min_mass(SPEC, _f64(optunet_init(jax.random.key(0))), method="bcd")
    with pytest.raises(ValueError, match="method must be"):
        min_mass(spec, params, method="lbfgs")


def test_unit_norm_and_identifiable_are_canonical(net, images):
    pspec = optunet_permutation_spec()
    rescaled = apply_scaling(SPEC, net, _random_scales(8, net))
    assert _max_diff(unit_norm(SPEC, net), unit_norm(SPEC, rescaled)) < 1e-12
    other = apply_permutation(pspec, random_permutations(7, pspec, net), rescaled)
    for scaling in ("min_mass", "unit_norm"):
        for sort in ({"statistic": None, "ties": "index"}, {}):  # the first weight (the paper's NS); the defaults
            a, b = identifiable(SPEC, pspec, net, scaling, **sort), identifiable(SPEC, pspec, other, scaling, **sort)
            assert _max_diff(a, b) < 1e-9
            np.testing.assert_allclose(optunet_logits64(a, images), optunet_logits64(net, images), atol=1e-12)
    with pytest.raises(ValueError, match="scaling must be"):
        identifiable(SPEC, pspec, net, "max")


def test_sorting_is_descending_within_groups(net):
    sorted_net, perms = sort_neurons(optunet_permutation_spec(), net, statistic=None, ties="index")
    key = sorted_net["conv_1"]["kernel"][0, 0, 0]
    assert (np.diff(key[:5]) <= 0).all() and (np.diff(key[5:]) <= 0).all()
    assert (perms["P_conv_1"][:5] < 5).all()
    assert (np.diff(sorted_net["dense_0"]["kernel"][0]) <= 0).all()
    mlp = _f64(mlp_init(jax.random.PRNGKey(1), [4, 6, 3]))
    s, _ = sort_neurons(mlp_permutation_spec(1), mlp, statistic=None, ties="index")
    assert (np.diff(s["dense_0"]["kernel"][0]) <= 0).all()


def test_errors_name_the_problem(net):
    wrong = {**net, "dense_0": {"kernel": np.ones((7, 3)), "bias": np.ones(3)}}
    with pytest.raises(ValueError, match="dense_0/kernel"):
        check_scaling_spec(SPEC, wrong)
    with pytest.raises(ValueError, match="conv_1/kernel"):
        check_scaling_spec(SPEC, {k: v for k, v in net.items() if k != "conv_1"})
    dead = {**net, "dense_1": {"kernel": np.zeros((3, 10)), "bias": net["dense_1"]["bias"]}}
    with pytest.raises(ValueError, match="group 'dense_0'.*outgoing"):
        min_mass(SPEC, dead)
    with pytest.raises(ValueError, match="positive"):
        apply_scaling(SPEC, net, {**_random_scales(0, net), "conv_0": np.array([1.0, -1.0])})
    with pytest.raises(ValueError, match="missing"):
        apply_scaling(SPEC, net, {"conv_0": np.ones(2)})
    with pytest.raises(ValueError, match="incoming"):
        ScalingSpec({"g": (("a", 0, -1),)}, ())


def test_mass_hessian_is_positive_definite_and_lines_are_convex(net):
    from symlib.symmetry.scaling import mass_along, mass_hessian

    res = min_mass(SPEC, net)
    logs = {n: np.log(s) for n, s in res.scales.items()}
    for where in (None, logs):
        ev = np.linalg.eigvalsh(mass_hessian(SPEC, net, where))
        assert ev[0] > 1e-8 * ev[-1]
    rng = np.random.default_rng(0)
    direction = {n: rng.normal(size=s.shape) for n, s in logs.items()}
    t = np.linspace(-1, 1, 21)
    m = mass_along(SPEC, net, logs, direction, t)
    assert np.argmin(m) == 10 and np.all(np.diff(m, 2) > 0)
    np.testing.assert_allclose(m[10], res.mass, rtol=1e-12)
    with pytest.raises(ValueError, match="missing"):
        mass_hessian(SPEC, net, {"conv_0": np.zeros(2)})


def test_scaling_spec_views_are_checked():
    groups = {"h": (("a/kernel", 1, 1), ("b/kernel", 1, -1))}
    with pytest.raises(ValueError, match="views names 'c/kernel'"):
        ScalingSpec(groups, ("a/kernel", "b/kernel"), views={"c/kernel": (2, 3)})
    with pytest.raises(ValueError, match=r"views\['b/kernel'\] must be a tuple of positive ints"):
        ScalingSpec(groups, ("a/kernel", "b/kernel"), views={"b/kernel": (2, 0)})
    spec = ScalingSpec(groups, ("a/kernel", "b/kernel"), views={"b/kernel": (2, 3, 4)})
    params = {"a": {"kernel": np.ones((4, 3))}, "b": {"kernel": np.ones((6, 5))}}
    with pytest.raises(ValueError, match=r"'b/kernel' has shape \(6, 5\), which the scaling spec views as \(2, 3, 4\)"):
        check_scaling_spec(spec, params)
    params["b"]["kernel"] = np.arange(24.0).reshape(6, 4) + 1
    assert check_scaling_spec(spec, params) == {"h": 3}
    out = apply_scaling(spec, params, {"h": np.array([1.0, 2.0, 4.0])})
    assert out["b"]["kernel"].shape == (6, 4)  # stored shape kept
    np.testing.assert_allclose(out["b"]["kernel"], params["b"]["kernel"] / np.tile([1.0, 2.0, 4.0], 2)[:, None])


def test_scaling_invariance_check_catches_a_wrong_entry():
    from symlib.core.models import mlp_apply
    from symlib.symmetry.scaling import check_scaling_spec_invariance

    params = mlp_init(jax.random.PRNGKey(0), [4, 5, 3, 2])
    x = np.random.default_rng(0).normal(size=(8, 4))
    good = mlp_scaling_spec(2)
    assert check_scaling_spec_invariance(good, params, mlp_apply, x) < 1e-4
    # shapes fit, but group P_0 forgets its units' bias: rescaling them changes the function
    groups = dict(good.groups)
    groups["P_0"] = (("dense_0/kernel", 1, 1), ("dense_1/kernel", 0, -1))  # dense_0/bias left out
    wrong = ScalingSpec(groups, good.mass_paths)
    params["dense_0"]["bias"] = params["dense_0"]["bias"] + 0.5
    with pytest.raises(ValueError, match=r"scaling group 'P_0' of the spec changes the network's outputs"):
        check_scaling_spec_invariance(wrong, params, mlp_apply, x)


def test_scaling_spec_parts():
    """A kernel reading concatenate([a, b]) cut into parts, each divided by its branch's factors."""
    groups = {"a": (("a/kernel", 1, 1), ("c/kernel[0:2]", 0, -1)),
              "b": (("b/kernel", 1, 1), ("c/kernel[2:5]", 0, -1))}
    mass = ("a/kernel", "b/kernel", "c/kernel[0:2]", "c/kernel[2:5]")
    with pytest.raises(ValueError, match="the spec must name its parts, not 'c/kernel' itself"):
        ScalingSpec(groups, mass + ("c/kernel",), parts={"c/kernel": (0, (2, 3))})
    spec = ScalingSpec(groups, mass, parts={"c/kernel": (0, (2, 3))})
    rng = np.random.default_rng(0)
    params = {"a": {"kernel": rng.normal(size=(4, 2))}, "b": {"kernel": rng.normal(size=(4, 3))},
              "c": {"kernel": rng.normal(size=(5, 1))}}
    assert check_scaling_spec(spec, params) == {"a": 2, "b": 3}
    scales = {"a": np.array([2.0, 4.0]), "b": np.array([0.5, 1.0, 8.0])}
    out = apply_scaling(spec, params, scales)
    np.testing.assert_allclose(out["c"]["kernel"][:, 0], params["c"]["kernel"][:, 0] / [2.0, 4.0, 0.5, 1.0, 8.0])
    np.testing.assert_allclose(out["a"]["kernel"], params["a"]["kernel"] * [2.0, 4.0])

    def apply(p, x):
        h = np.concatenate([np.maximum(x @ p["a"]["kernel"], 0), np.maximum(x @ p["b"]["kernel"], 0)], axis=-1)
        return h @ p["c"]["kernel"]

    x = rng.normal(size=(6, 4))
    np.testing.assert_allclose(apply(out, x), apply(params, x), rtol=1e-10)
    result = min_mass(spec, params)
    assert result.solver == "dense" and result.mass < result.mass_before
    assert result.params["c"]["kernel"].shape == (5, 1)
    np.testing.assert_allclose(apply(result.params, x), apply(params, x), rtol=1e-8)


@pytest.mark.parametrize("statistic", ["max", "norm", lambda k: k.sum(axis=0)])
def test_sorting_by_a_statistic_does_not_depend_on_the_input_order(net, statistic):
    """A statistic of the whole incoming kernel (units last, the other axes flattened) gives one
    canonical form for every permutation of the network, convolutions included; with
    ``ties="weights"`` that holds even when two units have identical incoming weights."""
    pspec = optunet_permutation_spec()
    twin = jax.tree.map(np.array, net)
    twin["dense_0"]["kernel"][:, 1] = twin["dense_0"]["kernel"][:, 0]  # two identical units
    twin["dense_0"]["bias"][1] = twin["dense_0"]["bias"][0] + 0.5  # ... told apart by their bias alone
    for params in (net, twin):
        ref, _ = sort_neurons(pspec, params, statistic=statistic, ties="weights")
        for seed in range(3):
            other = apply_permutation(pspec, random_permutations(seed, pspec, params), params)
            assert _max_diff(sort_neurons(pspec, other, statistic=statistic, ties="weights")[0], ref) == 0
    k = ref["dense_0"]["kernel"]
    twins = [j for j in range(k.shape[1] - 1) if np.array_equal(k[:, j], k[:, j + 1])]
    assert len(twins) == 1 and ref["dense_0"]["bias"][twins[0]] > ref["dense_0"]["bias"][twins[0] + 1]
    mlp = _f64(mlp_init(jax.random.PRNGKey(1), [4, 6, 3]))
    s, perms = sort_neurons(mlp_permutation_spec(1), mlp, statistic="max", ties="index")
    assert (np.diff(s["dense_0"]["kernel"].max(axis=0)) <= 0).all()
    assert _max_diff(apply_permutation(mlp_permutation_spec(1), perms, mlp), s) == 0


def test_sorting_errors_name_the_problem(net):
    pspec = optunet_permutation_spec()
    with pytest.raises(ValueError, match="ties must be one of"):
        sort_neurons(pspec, net, ties="bias")
    with pytest.raises(ValueError, match="unknown statistic 'median'"):
        sort_neurons(pspec, net, statistic="median")
    with pytest.raises(TypeError, match="statistic must be"):
        sort_neurons(pspec, net, statistic=3)
    with pytest.raises(ValueError, match="statistic returned shape .* for conv_1/kernel"):
        sort_neurons(pspec, net, statistic=lambda k: k)
    bad = jax.tree.map(np.array, net)
    bad["conv_1"]["kernel"][0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="conv_1/kernel"):
        sort_neurons(pspec, bad)


# --------------------------------------------------------------------------- one min_mass for every spec


def test_min_mass_picks_the_solver_from_the_spec(net):
    """mlp_scaling_spec is a chain (the block-tridiagonal solver), OptuNet's spec is not (dense Newton)."""
    mlp = _f64(mlp_init(jax.random.PRNGKey(4), [5, 7, 6, 3]))
    mlp_spec = mlp_scaling_spec(2)
    assert chain_kernels(mlp_spec, mlp) == ["dense_0/kernel", "dense_1/kernel", "dense_2/kernel"]
    for method in ("auto", "bcd", "newton"):
        assert min_mass(mlp_spec, mlp, method=method).solver == "chain"
    assert min_mass(mlp_spec, mlp, method="dense").solver == "dense"
    assert min_mass(SPEC, net).solver == "dense"
    assert min_mass(SPEC, net, method="dense").solver == "dense"


def test_min_mass_defaults_are_the_solvers(net):
    """tol=None / max_iter=None take the defaults of the solver that runs (MIN_MASS_DEFAULTS)."""
    assert MIN_MASS_DEFAULTS == {"chain": (1e-10, 10_000), "dense": (1e-12, 100)}
    # dense Newton on OptuNet: one step is not enough at tol=1e-12, the default converges
    one = min_mass(SPEC, net, max_iter=1, method="dense")
    assert not one.converged and one.iterations == 1 and one.mass < one.mass_before
    default = min_mass(SPEC, net)
    assert default.converged and 1 < default.iterations <= 100
    explicit = min_mass(SPEC, net, tol=1e-12, max_iter=100)
    assert (explicit.mass, explicit.iterations) == (default.mass, default.iterations)
    assert _max_diff(explicit.params, default.params) == 0
    loose = min_mass(SPEC, net, tol=1e-2)
    assert loose.converged and loose.iterations < default.iterations
    # the chain solver on an MLP: BCD sweeps, 1e-10 and 10_000 by default
    mlp = _f64(mlp_init(jax.random.PRNGKey(5), [6, 9, 8, 4]))
    mlp_spec = mlp_scaling_spec(2)
    assert not min_mass(mlp_spec, mlp, max_iter=1, method="bcd").converged
    default = min_mass(mlp_spec, mlp)
    explicit = min_mass(mlp_spec, mlp, tol=1e-10, max_iter=10_000)
    assert default.converged and default.solver == "chain"
    assert (explicit.mass, explicit.iterations) == (default.mass, default.iterations)
    assert _max_diff(explicit.params, default.params) == 0


# --------------------------------------------------------------------------- degenerate units


def test_degenerate_neurons_name_the_group(net):
    assert degenerate_neurons(SPEC, net) == {}
    dead = jax.tree.map(np.array, net)
    dead["dense_0"]["kernel"][:, 1] = 0.0  # unit 1 of dense_0: no incoming weights
    bad = degenerate_neurons(SPEC, dead)
    assert list(bad) == ["dense_0"]  # OptuNet's groups are named after its layers
    np.testing.assert_array_equal(bad["dense_0"], np.array([1]))
    with pytest.raises(ValueError, match=r"group 'dense_0': unit\(s\) \[1\] have zero incoming mass"):
        min_mass(SPEC, dead)
    mute = jax.tree.map(np.array, net)
    mute["dense_1"]["kernel"][2] = 0.0  # unit 2 of dense_0: no outgoing weights
    assert {g: v.tolist() for g, v in degenerate_neurons(SPEC, mute).items()} == {"dense_0": [2]}
    blind = jax.tree.map(np.array, net)
    blind["conv_0"]["kernel"][..., 0] = 0.0  # channel 0 of conv_0
    assert {g: v.tolist() for g, v in degenerate_neurons(SPEC, blind).items()} == {"conv_0": [0]}
    # an MLP with a zeroed incoming column of dense_1: unit 4 of hidden layer 1
    mlp = _f64(mlp_init(jax.random.PRNGKey(6), [4, 6, 5, 3]))
    mlp["dense_1"]["kernel"][:, 4] = 0.0
    bad = degenerate_neurons(mlp_scaling_spec(2), mlp)
    assert list(bad) == ["P_1"]
    np.testing.assert_array_equal(bad["P_1"], np.array([4]))


# --------------------------------------------------------------------------- sorting: the bias in the tie-break


def test_sorting_with_weight_ties_rejects_a_nan_bias(net):
    bad = jax.tree.map(np.array, net)
    bad["dense_0"]["bias"][0] = np.nan
    pspec = optunet_permutation_spec()
    with pytest.raises(ValueError, match=r"dense_0/bias contains NaN or inf \(1 of 3 entries\)"):
        sort_neurons(pspec, bad, ties="weights")
    with pytest.raises(ValueError, match="dense_0/bias contains NaN or inf"):
        sort_neurons(pspec, bad, statistic=None, ties="weights")


def test_a_stuck_newton_line_search_is_not_converged(monkeypatch):
    """Chain Newton: a line search that finds no lower mass far from the optimum ends the run
    unconverged; one at the optimum (a tolerance below float64's reach) ends it converged."""
    from symlib.symmetry import mass_chain

    rng = np.random.default_rng(0)
    squares = [rng.random((6, 9)) + 0.1, rng.random((9, 8)) + 0.1, rng.random((8, 4)) + 0.1]
    _, steps, converged = mass_chain.min_mass_chain(squares, tol=1e-300, method="newton")
    assert converged and 1 < steps < 50
    monkeypatch.setattr(mass_chain, "_armijo_step", lambda W, u, step, f, dec: (u, f))
    _, steps, converged = mass_chain.min_mass_chain(squares, method="newton")
    assert not converged and steps == 1
