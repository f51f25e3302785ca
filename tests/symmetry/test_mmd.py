"""MMD between posterior samples (symlib.evaluation.mmd) and the NS transforms (symlib.symmetry.canonical)."""
import jax
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from _helpers import assert_tree_close, optunet_logits64, random_mlp, stack_trees
from symlib.core.cnn import optunet_init
from symlib.core.models import mlp_apply
from symlib.evaluation.mmd import (
    mmd2_unbiased,
    mmd_bandwidths,
    mmd_kernel_bank,
    pairwise_distances,
    posterior_mmd,
    posterior_mmd_jackknife,
)
from symlib.symmetry.architectures import optunet_permutation_spec
from symlib.symmetry.canonical import remove_symmetries
from symlib.symmetry import (
    apply_scaling,
    check_scaling_spec,
    function_change,
    mlp_scaling_spec,
    optunet_scaling_spec,
    unit_norm,
)
from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec, random_permutations
from symlib.testing.reference import mmd2_brute_force, mmd2_distance_matrix, mmd_bank_distance_matrix

KERNELS = ("gaussian", "laplace")


def _samples(seed, m, d, shift=0.0):
    return np.random.default_rng(seed).normal(size=(m, d)) + shift


# --------------------------------------------------------------------------- the statistic


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("chunk_size,feature_chunk", [(1, None), (3, 2), (4, 1), (256, None)])
def test_chunked_equals_brute_force(kernel, chunk_size, feature_chunk):
    x, y = _samples(0, 11, 5), _samples(1, 7, 5, shift=0.4)
    bw = np.array([0.3, 1.0, 2.5, 10.0])
    got = mmd2_unbiased(x, y, kernel, bw, chunk_size=chunk_size, feature_chunk=feature_chunk)
    np.testing.assert_allclose(got, mmd2_brute_force(x, y, kernel, bw), rtol=1e-12, atol=1e-14)
    one = mmd2_unbiased(x, y, kernel, 2.5, chunk_size=chunk_size, feature_chunk=feature_chunk)
    assert isinstance(one, float)
    np.testing.assert_allclose(one, mmd2_brute_force(x, y, kernel, 2.5), rtol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS)
def test_distance_matrix_baseline_equals_mmd2_unbiased(kernel):
    """The benchmark's baseline (the authors' approach: one stacked distance matrix per metric,
    one kernel matrix per bandwidth) is the same statistic: to float64 rounding in float64,
    to float32 rounding in float32 (the authors' torch.cdist precision)."""
    x, y = _samples(0, 40, 30), _samples(1, 27, 30, shift=0.3)
    scale = np.sqrt(2 * 30) if kernel == "gaussian" else 2 * 30 / np.sqrt(np.pi)
    bw = scale * np.geomspace(0.25, 4.0, 6)
    ours = mmd2_unbiased(x, y, kernel, bw)
    np.testing.assert_allclose(mmd2_distance_matrix(x, y, kernel, bw, dtype=np.float64), ours, rtol=1e-10, atol=1e-14)
    got32 = mmd2_distance_matrix(x, y, kernel, bw)  # float32, the default
    assert got32.shape == ours.shape
    np.testing.assert_allclose(got32, ours, rtol=0, atol=1e-5 * np.max(np.abs(ours)) + 1e-7)
    one = mmd2_distance_matrix(x, y, kernel, 2.5, dtype=np.float64)
    assert isinstance(one, float)
    np.testing.assert_allclose(one, mmd2_unbiased(x, y, kernel, 2.5), rtol=1e-10)
    with pytest.raises(ValueError, match="kernel"):
        mmd2_distance_matrix(x, y, "imq", 1.0)


def test_distance_matrix_bank_equals_mmd_kernel_bank():
    x, y = _samples(8, 30, 4), _samples(9, 20, 4, shift=0.7)
    bank = mmd_kernel_bank(x, y, num_bandwidths=10, max_points=25)
    for dtype, rtol in ((np.float64, 1e-10), (np.float32, 1e-4)):
        base = mmd_bank_distance_matrix(x, y, 10, max_points=25, dtype=dtype)
        for k in KERNELS:
            np.testing.assert_allclose(base[k][0], bank.bandwidths[k], rtol=1e-12 if dtype == np.float64 else 1e-6)
            np.testing.assert_allclose(base[k][1], bank.values[k], rtol=rtol, atol=rtol * np.max(np.abs(bank.values[k])))


@pytest.mark.parametrize("metric,name", [("l1", "cityblock"), ("l2", "euclidean")])
def test_pairwise_distances(metric, name):
    a, b = _samples(2, 9, 6), _samples(3, 4, 6)
    np.testing.assert_allclose(pairwise_distances(a, b, metric=metric, chunk_size=2, feature_chunk=4),
                               cdist(a, b, name), rtol=1e-12)
    np.testing.assert_allclose(pairwise_distances(a, metric=metric, chunk_size=4), cdist(a, a, name), atol=1e-12)


def test_l2_distances_of_a_tight_sample_far_from_the_origin():
    """Squared L2 distances come from a matrix product; samples 1e-3 apart at distance 300 from
    the origin (a tight posterior of weights far from zero) keep cdist's accuracy, and a
    sample against itself gives a symmetric matrix with an exact zero diagonal."""
    rng = np.random.default_rng(5)
    a = 10.0 + 1e-3 * rng.normal(size=(13, 900))
    b = 10.0 + 1e-3 * rng.normal(size=(6, 900))
    for chunk_size, feature_chunk in ((256, None), (4, 100)):
        kw = dict(chunk_size=chunk_size, feature_chunk=feature_chunk)
        np.testing.assert_allclose(pairwise_distances(a, b, **kw), cdist(a, b), rtol=1e-9)
        within = pairwise_distances(a, **kw)
        np.testing.assert_allclose(within, cdist(a, a), rtol=1e-9)
        np.testing.assert_array_equal(within, within.T)
        np.testing.assert_array_equal(np.diag(within), 0.0)
    bw = np.array([0.02, 0.05, 0.2])
    np.testing.assert_allclose(mmd2_unbiased(a, b, "gaussian", bw, chunk_size=4),
                               mmd2_brute_force(a, b, "gaussian", bw), rtol=1e-8)


@pytest.mark.parametrize("kernel", KERNELS)
def test_same_distribution_near_zero_shifted_positive(kernel):
    bw = 3.0 if kernel == "gaussian" else 6.0
    same = [mmd2_unbiased(_samples(s, 60, 3), _samples(100 + s, 40, 3), kernel, bw) for s in range(8)]
    assert max(abs(v) for v in same) < 0.05
    assert min(same) < 0 < max(same)  # unbiased: it scatters around 0
    shifted = mmd2_unbiased(_samples(0, 60, 3), _samples(1, 40, 3, shift=1.0), kernel, bw)
    assert shifted > 0.1 and shifted > 5 * max(abs(v) for v in same)


def test_invariant_to_sample_order():
    x, y = _samples(4, 15, 4), _samples(5, 8, 4, shift=0.5)
    rng = np.random.default_rng(0)
    for kernel in KERNELS:
        a = mmd2_unbiased(x, y, kernel, [0.5, 2.0], chunk_size=4)
        b = mmd2_unbiased(x[rng.permutation(15)], y[rng.permutation(8)], kernel, [0.5, 2.0], chunk_size=4)
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_memmap_input(tmp_path):
    x, y = _samples(6, 20, 30).astype(np.float32), _samples(7, 12, 30).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    xm, ym = np.load(tmp_path / "x.npy", mmap_mode="r"), np.load(tmp_path / "y.npy", mmap_mode="r")
    for kernel in KERNELS:
        got = mmd2_unbiased(xm, ym, kernel, [4.0, 16.0], chunk_size=7, feature_chunk=11)
        np.testing.assert_allclose(got, mmd2_brute_force(x, y, kernel, [4.0, 16.0]), rtol=1e-10, atol=1e-15)
    assert mmd_kernel_bank(xm, ym, chunk_size=5).median == pytest.approx(mmd_kernel_bank(x, y).median, rel=1e-10)


# --------------------------------------------------------------------------- bandwidths and the bank


def test_bandwidth_rule_by_hand():
    """MMDAgg's rule: the distances of x against y only (not within a sample)."""
    x, y = np.array([[0.0], [1.0]]), np.array([[3.0], [7.0]])
    # cross distances 3, 7, 2, 6 -> l_min = 2 / 2, l_max = 2 * 7; the within-sample 1 and 4 play no part
    np.testing.assert_allclose(mmd_bandwidths(x, y, num=3), [1.0, np.sqrt(14.0), 14.0])
    # smallest of 20 cross distances 0.05 < 0.1: the sorted distances' entry floor(0.05 * 20) = 1, i.e. 0.5
    # (numpy's interpolated 5% quantile would be 0.4775)
    x = np.array([[0.0], [10.0], [20.0], [30.0], [40.0]])
    y = np.array([[0.05], [0.5], [100.0], [200.0]])
    np.testing.assert_allclose(mmd_bandwidths(x, y, num=2), [0.25, 400.0])
    # all distances tiny: the quantile is floored at 0.1 and the largest at 0.3
    x, y = np.zeros((3, 1)), np.array([[0.0], [0.01]])
    np.testing.assert_allclose(mmd_bandwidths(x, y, num=2, kernel="laplace"), [0.05, 0.6])


def test_bandwidths_l2_for_gaussian_l1_for_laplace():
    x, y = np.array([[0.0, 0.0], [3.0, 4.0]]), np.array([[6.0, 8.0], [0.0, 8.0]])
    # cross L2: 10, 8, 5, 5 ; cross L1: 14, 8, 7, 7
    np.testing.assert_allclose(mmd_bandwidths(x, y, num=2, kernel="gaussian"), [2.5, 20.0])
    np.testing.assert_allclose(mmd_bandwidths(x, y, num=2, kernel="laplace"), [3.5, 28.0])


def test_bandwidths_use_the_first_points_only():
    x = np.array([[0.0], [1.0], [100.0]])
    y = np.array([[3.0], [7.0], [-50.0]])
    np.testing.assert_allclose(mmd_bandwidths(x, y, num=3, max_points=2), [1.0, np.sqrt(14.0), 14.0])


def test_kernel_bank():
    x, y = _samples(8, 30, 4), _samples(9, 20, 4, shift=0.7)
    bank = mmd_kernel_bank(x, y, num_bandwidths=10, chunk_size=8)
    assert set(bank.values) == set(KERNELS)
    every = []
    for k in KERNELS:
        assert bank.values[k].shape == bank.bandwidths[k].shape == (10,)
        np.testing.assert_allclose(bank.bandwidths[k], mmd_bandwidths(x, y, 10, kernel=k))
        np.testing.assert_allclose(bank.values[k], mmd2_brute_force(x, y, k, bank.bandwidths[k]), rtol=1e-10)
        every.extend(bank.values[k])
    assert bank.median == pytest.approx(np.median(every))
    assert bank.mean == pytest.approx(np.mean(every))
    assert bank.max == pytest.approx(np.max(every))


# --------------------------------------------------------------------------- per layer


def _stack(seed, s, shift=0.0):
    rng = np.random.default_rng(seed)
    return {"conv_0": {"kernel": rng.normal(size=(s, 4, 4, 1, 2)) + shift},
            "dense_0": {"kernel": rng.normal(size=(s, 10, 3)), "bias": rng.normal(size=(s, 3)) + shift}}


def test_posterior_mmd_layer_weighting():
    sx, sy = _stack(0, 12), _stack(1, 9, shift=0.5)
    res = posterior_mmd(sx, sy, num_bandwidths=4, chunk_size=5)
    assert res.weights == {"conv_0": 32, "dense_0": 33}
    dense = lambda t: np.concatenate([t["dense_0"]["kernel"].reshape(len(t["dense_0"]["kernel"]), -1),  # noqa: E731
                                      t["dense_0"]["bias"]], axis=1)
    expected = {"conv_0": mmd_kernel_bank(sx["conv_0"]["kernel"].reshape(12, -1),
                                          sy["conv_0"]["kernel"].reshape(9, -1), 4),
                "dense_0": mmd_kernel_bank(dense(sx), dense(sy), 4)}
    for stat in ("median", "mean", "max"):
        for layer in expected:
            assert getattr(res.per_layer[layer], stat) == pytest.approx(getattr(expected[layer], stat), rel=1e-10)
        want = (32 * getattr(expected["conv_0"], stat) + 33 * getattr(expected["dense_0"], stat)) / 65
        assert getattr(res, stat) == pytest.approx(want, rel=1e-10)
    only = posterior_mmd(sx, sy, layers=["dense_0"], num_bandwidths=4)
    assert only.weights == {"dense_0": 33} and only.median == pytest.approx(expected["dense_0"].median)


def test_posterior_mmd_memmap_leaves(tmp_path):
    sx, sy = _stack(2, 6), _stack(3, 5)
    np.save(tmp_path / "k.npy", sx["dense_0"]["kernel"])
    mapped = {**sx, "dense_0": {"kernel": np.load(tmp_path / "k.npy", mmap_mode="r"), "bias": sx["dense_0"]["bias"]}}
    assert posterior_mmd(mapped, sy, chunk_size=2, feature_chunk=7).median == pytest.approx(
        posterior_mmd(sx, sy).median, rel=1e-10)


def test_posterior_mmd_layout_errors():
    sx = _stack(0, 5)
    bad = _stack(1, 5)
    bad["dense_0"]["bias"] = bad["dense_0"]["bias"][:, :2]
    with pytest.raises(ValueError, match="dense_0/bias"):
        posterior_mmd(sx, bad)
    missing = {"conv_0": _stack(1, 5)["conv_0"]}
    with pytest.raises(ValueError, match="dense_0/kernel.*samples_y"):
        posterior_mmd(sx, missing)
    ragged = _stack(1, 5)
    ragged["dense_0"]["bias"] = ragged["dense_0"]["bias"][:4]
    with pytest.raises(ValueError, match="samples_y.*dense_0/bias.*4 samples"):
        posterior_mmd(sx, ragged)
    with pytest.raises(ValueError, match="layers"):
        posterior_mmd(sx, _stack(1, 5), layers=["dense_9"])


def _rows(stack, keep):  # the same dict order (jax.tree_util would sort the keys)
    return {layer: {leaf: a[keep] for leaf, a in sub.items()} for layer, sub in stack.items()}


def test_posterior_mmd_matches_leaves_by_name():
    """Leaves held in another dict order by one stack are compared with their namesakes
    (the columns are concatenated in samples_x's order): the same MMD, to float rounding."""
    sx, sy = _stack(8, 7), _stack(9, 6, shift=0.4)
    swapped = {**sy, "dense_0": {"bias": sy["dense_0"]["bias"], "kernel": sy["dense_0"]["kernel"]}}
    assert list(swapped["dense_0"]) != list(sx["dense_0"])
    want = posterior_mmd(sx, sy, num_bandwidths=4)
    got = posterior_mmd(sx, swapped, num_bandwidths=4)
    assert got.median == want.median and got.per_layer["dense_0"].max == want.per_layer["dense_0"].max
    flipped = posterior_mmd(swapped, sx, num_bandwidths=4)   # y's columns follow x's order
    assert flipped.median == pytest.approx(posterior_mmd(sy, sx, num_bandwidths=4).median, rel=1e-12)


@pytest.mark.parametrize("chunk_size,max_points,feature_chunk", [(256, 500, None), (3, 4, 5)])
def test_jackknife_replicates_are_posterior_mmd_of_the_rest(chunk_size, max_points, feature_chunk):
    """Every replicate is posterior_mmd without that group (bandwidths chosen anew), to the
    rounding of the L2 matrix products, with one block or several, and bandwidths from the
    first points only."""
    sx, sy = _stack(4, 9), _stack(5, 7, shift=0.3)
    gx = np.array([2, 0, 0, 1, 2, 1, 0, 2, 1])  # groups need not be contiguous
    gy = np.arange(7) // 2                      # the last group is one network
    kw = dict(num_bandwidths=4, chunk_size=chunk_size, max_points=max_points, feature_chunk=feature_chunk)
    jk = posterior_mmd_jackknife(sx, sy, gx, gy, **kw)
    full = posterior_mmd(sx, sy, **kw)
    np.testing.assert_allclose([jk.full.median, jk.full.mean, jk.full.max], [full.median, full.mean, full.max],
                               rtol=1e-12)
    assert jk.full.weights == full.weights
    np.testing.assert_array_equal(jk.groups_x, [0, 1, 2])
    np.testing.assert_array_equal(jk.groups_y, [0, 1, 2, 3])
    np.testing.assert_allclose(jk.without_x, [posterior_mmd(_rows(sx, gx != u), sy, **kw).median for u in range(3)],
                               rtol=1e-12)
    np.testing.assert_allclose(jk.without_y, [posterior_mmd(sx, _rows(sy, gy != u), **kw).median for u in range(4)],
                               rtol=1e-12)
    assert len(set(jk.without_x) | set(jk.without_y)) == 7  # each replicate leaves out other samples


def test_jackknife_depends_on_the_samples_only():
    """Layers in another key order and groups under other labels give the same replicates."""
    sx, sy = _stack(6, 8), _stack(7, 6, shift=0.2)
    gx, gy = np.arange(8) // 2, np.arange(6) // 3
    jk = posterior_mmd_jackknife(sx, sy, gx, gy, num_bandwidths=3)
    flip = lambda t: {k: t[k] for k in reversed(list(t))}  # noqa: E731
    names = np.array(["d", "c", "b", "a"])
    other = posterior_mmd_jackknife(flip(sx), flip(sy), names[gx], np.where(gy == 0, "late", "early"), num_bandwidths=3)
    assert other.full.median == pytest.approx(jk.full.median, rel=1e-12)
    np.testing.assert_allclose(other.without_x, jk.without_x[::-1], rtol=1e-12)  # labels sorted: a, b, c, d
    np.testing.assert_allclose(other.without_y, jk.without_y[::-1], rtol=1e-12)


def test_jackknife_group_errors():
    sx, sy = _stack(0, 5), _stack(1, 4)
    with pytest.raises(ValueError, match="groups_x must give the group of each of the 5 samples"):
        posterior_mmd_jackknife(sx, sy, np.arange(4), np.arange(4))
    with pytest.raises(ValueError, match="groups_y has 1 group"):
        posterior_mmd_jackknife(sx, sy, np.arange(5), np.zeros(4))
    with pytest.raises(ValueError, match="groups_x: leaving out group 0 keeps 1 sample"):
        posterior_mmd_jackknife(sx, sy, np.array([0, 0, 0, 0, 1]), np.arange(4))
    with pytest.raises(ValueError, match="layers"):
        posterior_mmd_jackknife(sx, sy, np.arange(5), np.arange(4), layers=["dense_9"])


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("x,y,match", [
    (np.zeros(5), np.zeros((3, 2)), "x must have shape"),
    (np.zeros((3, 2)), np.zeros((3, 2, 1)), "y must have shape"),
    (np.zeros((3, 2)), np.zeros((3, 4)), "same number of features"),
    (np.zeros((1, 2)), np.zeros((3, 2)), "x needs at least 2 samples"),
    (np.zeros((3, 2)), np.zeros((1, 2)), "y needs at least 2 samples"),
    (np.array([[0.0, np.nan], [1.0, 1.0]]), np.zeros((3, 2)), "x contains NaN"),
    (np.zeros((3, 2)), np.array([[0.0, 1.0], [np.inf, 1.0]]), "y contains NaN"),
    (np.array([["a", "b"], ["c", "d"]]), np.zeros((2, 2)), "x must be a numeric"),
])
def test_bad_samples(x, y, match):
    with pytest.raises(ValueError, match=match):
        mmd2_unbiased(x, y)


@pytest.mark.parametrize("bandwidth", [0.0, -1.0, np.nan, [1.0, 0.0], [], [[1.0]], "wide"])
def test_bad_bandwidth(bandwidth):
    with pytest.raises(ValueError, match="bandwidth"):
        mmd2_unbiased(np.zeros((3, 2)), np.ones((3, 2)), bandwidth=bandwidth)


def test_bad_arguments():
    x, y = np.zeros((3, 2)), np.ones((3, 2))
    with pytest.raises(ValueError, match="kernel"):
        mmd2_unbiased(x, y, kernel="cauchy")
    with pytest.raises(ValueError, match="chunk_size"):
        mmd2_unbiased(x, y, chunk_size=0)
    with pytest.raises(ValueError, match="feature_chunk"):
        mmd2_unbiased(x, y, feature_chunk=-2)
    with pytest.raises(ValueError, match="metric"):
        pairwise_distances(x, metric="cosine")
    with pytest.raises(ValueError, match="num"):
        mmd_bandwidths(x, y, num=0)
    with pytest.raises(ValueError, match="kernels"):
        mmd_kernel_bank(x, y, kernels=("gaussian", "cauchy"))


# --------------------------------------------------------------------------- NS transforms


@pytest.fixture(scope="module")
def optunets():
    nets = [jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), optunet_init(jax.random.PRNGKey(i)))
            for i in range(3)]
    return nets, stack_trees(nets)


@pytest.fixture(scope="module")
def images():
    return np.random.default_rng(0).normal(size=(5, 28, 28, 1))


def _unstack(stack, s):
    return jax.tree_util.tree_map(lambda a: a[s], stack)


def _disguise(seed, sspec, pspec, params):
    """A random rescaling and permutation of ``params`` (same function)."""
    rng = np.random.default_rng(seed)
    scales = {n: np.exp(rng.normal(size=k)) for n, k in check_scaling_spec(sspec, params).items()}
    scaled = apply_scaling(sspec, params, scales)
    return apply_permutation(pspec, random_permutations(seed, pspec, params), scaled)


@pytest.mark.parametrize("method", ["unit_norm_sort", "min_mass_sort"])
def test_ns_optunet(optunets, images, method):
    nets, stack = optunets
    sspec, pspec = optunet_scaling_spec(), optunet_permutation_spec()
    canon = remove_symmetries(stack, sspec, pspec, method)
    disguised = stack_trees([_disguise(10 + s, sspec, pspec, net) for s, net in enumerate(nets)])
    again = remove_symmetries(disguised, sspec, pspec, method)
    for s, net in enumerate(nets):
        c = _unstack(canon, s)
        np.testing.assert_allclose(optunet_logits64(c, images), optunet_logits64(net, images), rtol=1e-9, atol=1e-9)
        assert_tree_close(_unstack(again, s), c, rtol=1e-6, atol=1e-8)
    assert not np.allclose(canon["conv_1"]["kernel"], stack["conv_1"]["kernel"])


def test_ns_unit_norm_sort_is_the_papers_ns(optunets):
    _, stack = optunets
    canon = remove_symmetries(stack, optunet_scaling_spec(), optunet_permutation_spec())
    for s in range(3):
        k0 = canon["conv_0"]["kernel"][s]
        np.testing.assert_allclose(np.sqrt((k0**2).sum(axis=(0, 1, 2))), 1.0)
        assert np.all(np.diff(k0[0, 0, 0]) <= 0)  # sorted by top-left weight, descending
        np.testing.assert_allclose(np.sqrt((canon["dense_0"]["kernel"][s] ** 2).sum(axis=0)), 1.0)
        assert np.all(np.diff(canon["dense_0"]["kernel"][s][0]) <= 0)


def test_ns_rebasin_optunet(optunets, images):
    nets, stack = optunets
    pspec = optunet_permutation_spec()
    ref = nets[0]
    moved = stack_trees([apply_permutation(pspec, random_permutations(s, pspec, ref), ref) for s in range(2)] + nets[1:])
    out = remove_symmetries(moved, None, pspec, "rebasin", reference=ref)
    for s in range(4):
        np.testing.assert_allclose(optunet_logits64(_unstack(out, s), images), optunet_logits64(_unstack(moved, s), images), rtol=1e-9,
                                   atol=1e-9)
    assert_tree_close(_unstack(out, 0), ref)
    assert_tree_close(_unstack(out, 1), ref)


@pytest.mark.parametrize("method", ["unit_norm_sort", "min_mass_sort"])
def test_ns_mlp(method):
    rng = np.random.default_rng(0)
    nets = [random_mlp(rng, [4, 6, 5, 3]) for _ in range(3)]
    sspec, pspec = mlp_scaling_spec(2), mlp_permutation_spec(2)
    canon = remove_symmetries(stack_trees(nets), sspec, pspec, method)
    again = remove_symmetries(stack_trees([_disguise(s, sspec, pspec, n) for s, n in enumerate(nets)]), sspec, pspec,
                              method)
    x = rng.normal(size=(7, 4))
    with jax.enable_x64(True):
        for s, net in enumerate(nets):
            np.testing.assert_allclose(mlp_apply(_unstack(canon, s), x), mlp_apply(net, x), rtol=1e-9, atol=1e-9)
    assert_tree_close(again, canon, rtol=1e-6, atol=1e-8)


def test_mlp_scaling_spec_unit_norm_normalises_every_hidden_unit():
    net = random_mlp(np.random.default_rng(1), [5, 4, 3, 2])
    un = unit_norm(mlp_scaling_spec(2), net)
    for l in range(2):
        np.testing.assert_allclose(np.linalg.norm(un[f"dense_{l}"]["kernel"], axis=0), 1.0, rtol=1e-12)
    assert function_change(mlp_apply, net, un, np.random.default_rng(2).normal(size=(6, 5))) < 1e-12
    with pytest.raises(ValueError, match="num_hidden_layers"):
        mlp_scaling_spec(0)


def test_ns_errors(optunets):
    _, stack = optunets
    sspec, pspec = optunet_scaling_spec(), optunet_permutation_spec()
    with pytest.raises(ValueError, match="method"):
        remove_symmetries(stack, sspec, pspec, "whiten")
    with pytest.raises(ValueError, match="reference"):
        remove_symmetries(stack, sspec, pspec, "rebasin")
    with pytest.raises(ValueError, match="scaling_spec"):
        remove_symmetries(stack, None, pspec)
    ragged = {**stack, "dense_1": {"kernel": stack["dense_1"]["kernel"][:2], "bias": stack["dense_1"]["bias"]}}
    with pytest.raises(ValueError, match="dense_1/kernel"):
        remove_symmetries(ragged, sspec, pspec)
