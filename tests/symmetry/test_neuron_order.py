import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _helpers import random_mlp

from symlib.symmetry.canonical import sort_neurons
from symlib.symmetry.neuron_order import (discordant_pairs, discordant_pairs_batch, kendall_tau_from_discordant,
                                          epoch_swaps, phase_summary)
from symlib.symmetry.neuron_order import neuron_statistics as _neuron_statistics
from symlib.symmetry.neuron_order import statistics_observer as _statistics_observer
from symlib.symmetry.neuron_order import swap_counter as _swap_counter
from symlib.symmetry.permutations import kendall_tau
from symlib.symmetry.scaling import apply_scaling, mlp_scaling_spec, unit_norm
from symlib.symmetry.specs import apply_permutation, mlp_permutation_spec

SIZES = [7, 9, 6, 4]
#: the specs of the test MLP (two hidden layers)
SPECS = (mlp_scaling_spec(len(SIZES) - 2), mlp_permutation_spec(len(SIZES) - 2))


def neuron_statistics(params, *args):
    return _neuron_statistics(*SPECS, params, *args)


def swap_counter(*args):
    return _swap_counter(*SPECS, *args)


def statistics_observer(*args):
    return _statistics_observer(*SPECS, *args)


def _net(seed=0):
    return random_mlp(np.random.default_rng(seed), SIZES)


def test_statistics_match_scaling_module():
    p = _net()
    un = unit_norm(SPECS[0], p)
    for l, s in enumerate(neuron_statistics(p, "max", "unit_norm")):
        np.testing.assert_allclose(s, un[f"dense_{l}"]["kernel"].max(axis=0), rtol=1e-6)
    for l, s in enumerate(neuron_statistics(p, "max", None)):
        np.testing.assert_allclose(s, p[f"dense_{l}"]["kernel"].max(axis=0), rtol=1e-6)
    _, perms = sort_neurons(SPECS[1], un, "max")
    for l, s in enumerate(neuron_statistics(p)):
        np.testing.assert_array_equal(np.argsort(-np.asarray(s), kind="stable"), perms[f"P_{l}"])


def test_statistics_invariant_to_scaling_and_equivariant_to_permutation():
    rng = np.random.default_rng(1)
    p = _net(1)
    scaled = apply_scaling(SPECS[0], p, {f"P_{l}": np.exp(rng.normal(size=n)) for l, n in enumerate(SIZES[1:-1])})
    for a, b in zip(neuron_statistics(p), neuron_statistics(scaled)):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    np.testing.assert_array_equal(swap_counter()(p, scaled), 0)
    perms = {f"P_{l}": rng.permutation(n) for l, n in enumerate(SIZES[1:-1])}
    permuted = apply_permutation(mlp_permutation_spec(2), perms, p)
    for l, (a, b) in enumerate(zip(neuron_statistics(p), neuron_statistics(permuted))):
        np.testing.assert_allclose(np.asarray(a)[perms[f"P_{l}"]], b, rtol=1e-6)
    # a permutation changes which index holds which unit: every index pair that crossed is counted
    counts = np.asarray(swap_counter()(p, permuted))
    for l in range(2):
        s = np.asarray(neuron_statistics(p)[l])
        s2 = np.asarray(neuron_statistics(permuted)[l])
        ranks, ranks2 = np.argsort(np.argsort(-s)), np.argsort(np.argsort(-s2))
        n = len(s)
        assert np.isclose(kendall_tau_from_discordant(counts[l], n), kendall_tau(ranks, ranks2))


@pytest.mark.parametrize("seed", range(5))
def test_discordant_pairs_matches_kendall_tau(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    a, b = rng.normal(size=n), rng.normal(size=n)
    d = int(discordant_pairs(jnp.asarray(a), jnp.asarray(b)))
    brute = sum((a[i] - a[j]) * (b[i] - b[j]) < 0 for i in range(n) for j in range(i + 1, n))
    assert d == brute
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    assert np.isclose(kendall_tau_from_discordant(d, n), kendall_tau(ra, rb))
    assert int(discordant_pairs(jnp.asarray(a), jnp.asarray(a))) == 0
    assert int(discordant_pairs(jnp.asarray(a), -jnp.asarray(a))) == n * (n - 1) // 2


def test_zero_column_gives_zero_not_nan_and_errors():
    p = _net()
    p["dense_0"]["kernel"][:, 2] = 0.0
    s = neuron_statistics(p)
    assert all(np.all(np.isfinite(np.asarray(x))) for x in s)
    assert float(s[0][2]) == 0.0
    with pytest.raises(ValueError, match="statistic"):
        neuron_statistics(p, "median")
    with pytest.raises(ValueError, match="scaling"):
        neuron_statistics(p, "max", "min_mass")
    with pytest.raises(ValueError, match="statistic"):
        swap_counter("median")
    with pytest.raises(ValueError, match=r"missing from params"):
        neuron_statistics({"dense_0": p["dense_0"]})


def test_observers_are_cached_and_jittable():
    assert swap_counter("max", "unit_norm") is swap_counter("max", "unit_norm")
    assert statistics_observer() is statistics_observer()
    p = jax.tree_util.tree_map(jnp.asarray, _net(2))
    q = jax.tree_util.tree_map(lambda a: a + 0.3 * jnp.sin(jnp.arange(a.size).reshape(a.shape)), p)
    np.testing.assert_array_equal(jax.jit(swap_counter())(p, q), swap_counter()(p, q))


def test_discordant_pairs_batch_broadcasts():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(4, 5, 9))
    b = rng.normal(size=(4, 5, 9))
    got = discordant_pairs_batch(a, b)
    assert got.shape == (4, 5)
    assert got[2, 3] == int(discordant_pairs(jnp.asarray(a[2, 3]), jnp.asarray(b[2, 3])))
    np.testing.assert_array_equal(discordant_pairs_batch(a, a[:, -1:, :])[:, -1], 0)


def test_kendall_tau_from_discordant_broadcasts():
    np.testing.assert_allclose(kendall_tau_from_discordant([0, 3, 6], [4, 4, 4]), [1.0, 0.0, -1.0])
    np.testing.assert_allclose(kendall_tau_from_discordant([1.0, 1.0], np.array([3, 5])), [1 - 2 / 3, 0.8])
    assert kendall_tau_from_discordant(0, 1) == 1.0


def test_phase_summary_counts():
    runs, epochs, steps, units = 2, 4, 3, 5
    swaps = np.zeros((runs, epochs, steps, 1), np.int32)
    swaps[:, 0, 0, 0] = 4  # phase 0 only
    swaps[0, 3, 1, 0] = 2
    stats = np.tile(np.arange(units, dtype=float), (runs, epochs, 1))
    stats[:, 3] = stats[:, 3][:, ::-1]  # full reversal between the ends of epochs 2 and 3
    rows = phase_summary(swaps, [stats], milestones=[2])
    assert [(r["phase"], r["first_epoch"], r["last_epoch"]) for r in rows] == [(0, 0, 1), (1, 2, 3)]
    assert rows[0]["per_step"] == 4 * runs / (runs * 2 * steps)
    assert rows[0]["per_epoch_sum"] == 2.0 and rows[0]["net_per_epoch"] == 0.0 and rows[0]["net_tau"] == 1.0
    assert rows[1]["steps_with_swap"] == 1 / (runs * 2 * steps)
    assert rows[1]["net_per_epoch"] == 10 / 2 and np.isclose(rows[1]["net_tau"], 0.0)
    with pytest.raises(ValueError, match="layers"):
        phase_summary(swaps, [stats, stats], milestones=[2])
    np.testing.assert_array_equal(epoch_swaps([stats])[0], [[0, 0, 10]] * runs)


def test_nan_is_reported_outside_jit():
    p = _net(4)
    p["dense_1"]["kernel"][2, 3] = np.nan
    with pytest.raises(ValueError, match=r"dense_1/kernel contains NaN or inf \(1 of 54 entries\)"):
        neuron_statistics(p)
    with pytest.raises(ValueError, match="dense_1/kernel contains NaN or inf"):
        swap_counter()(_net(4), p)
    with pytest.raises(ValueError, match="dense_1/kernel contains NaN or inf"):
        statistics_observer("max", None)(p)
    a = np.arange(5.0)
    with pytest.raises(ValueError, match=r"^b contains NaN or inf"):
        discordant_pairs(jnp.asarray(a), jnp.asarray([0.0, np.nan, 2.0, 3.0, 4.0]))
    with pytest.raises(ValueError, match=r"^a contains NaN or inf"):
        discordant_pairs_batch(np.full((2, 5), np.inf), a)
    stats = np.tile(a, (2, 3, 1))
    stats[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match=r"epoch_stats\[1\] contains NaN or inf"):
        epoch_swaps([np.tile(a, (2, 3, 1)), stats])
    with pytest.raises(ValueError, match=r"epoch_stats\[0\] contains NaN or inf"):
        phase_summary(np.zeros((2, 3, 1, 1), np.int32), [stats], milestones=[1])


def test_nan_under_jit_is_not_checked():
    """Traced arrays cannot be checked (documented): NaN statistics, pairs uncounted."""
    p = jax.tree_util.tree_map(jnp.asarray, _net(4))
    q = jax.tree_util.tree_map(lambda a: a, p)
    q["dense_0"]["kernel"] = q["dense_0"]["kernel"].at[0, 0].set(jnp.nan)
    stats = jax.jit(statistics_observer("max", None))(q)
    assert np.isnan(np.asarray(stats[0])[0])
    assert np.asarray(jax.jit(swap_counter("max", None))(p, q)).shape == (2,)


def test_layout_is_checked():
    p = _net()
    with pytest.raises(ValueError, match=r"\['dense_1/kernel', 'dense_1/bias'\] are in the spec but missing"):
        neuron_statistics({"dense_0": p["dense_0"], "dense_5": p["dense_1"], "dense_2": p["dense_2"]})
    with pytest.raises(ValueError, match=r"axis 0 of 'dense_1/kernel' \(size 6\); the sizes must agree"):
        neuron_statistics({**p, "dense_1": {"kernel": np.ones((6, 6)), "bias": np.ones(6)}})
    # under jit the shapes are checked when the observer is traced
    with pytest.raises(ValueError, match="missing from params"):
        jax.jit(statistics_observer())({"dense_0": p["dense_0"], "dense_1": p["dense_1"]})


# --------------------------------------------------------------------------- any architecture (specs)

def _optunet(seed):
    from symlib.core.cnn import optunet_init
    return optunet_init(jax.random.key(seed))


def test_mlp_statistics_equal_the_layer_by_layer_unit_norm():
    """The spec route gives an MLP's statistics as normalising layer by layer does: rows of
    layer l times layer l-1's norms, then every column divided by its norm."""
    p = _net(3)
    ours = neuron_statistics(p, "max", "unit_norm")
    prev = None
    for l, s in enumerate(ours):
        k = np.asarray(p[f"dense_{l}"]["kernel"], np.float64)
        k = k if prev is None else k * prev[:, None]
        prev = np.sqrt(np.sum(k**2, axis=0))
        np.testing.assert_allclose(s, (k / prev).max(axis=0), rtol=1e-5)


def test_spec_statistics_of_optunet_read_the_unit_norm_kernels():
    from symlib.symmetry.architectures import optunet_permutation_spec, optunet_scaling_spec
    p = _optunet(0)
    un = unit_norm(optunet_scaling_spec(), p)
    s_conv, s_dense = _neuron_statistics(optunet_scaling_spec(), optunet_permutation_spec(), p)
    np.testing.assert_allclose(s_conv, np.asarray(un["conv_1"]["kernel"]).reshape(-1, 10).max(0), rtol=1e-5)
    np.testing.assert_allclose(s_dense, np.asarray(un["dense_0"]["kernel"]).max(0), rtol=1e-5)
    # unit norm removes any rescaling: the statistics do not change
    rng = np.random.default_rng(1)
    q = apply_scaling(optunet_scaling_spec(), p, {"conv_0": rng.uniform(0.2, 5, 2),
                                                          "conv_1": rng.uniform(0.2, 5, 10),
                                                          "dense_0": rng.uniform(0.2, 5, 3)})
    for a, b in zip(_neuron_statistics(optunet_scaling_spec(), optunet_permutation_spec(), q), (s_conv, s_dense)):
        np.testing.assert_allclose(a, b, rtol=1e-4)


@pytest.mark.parametrize("blocks", [1, 2, 5])
def test_blocked_discordant_pairs_count_pairs_within_blocks(blocks):
    rng = np.random.default_rng(blocks)
    a, b = rng.normal(size=10), rng.normal(size=10)
    m = 10 // blocks
    brute = sum((a[i] - a[j]) * (b[i] - b[j]) < 0 for i in range(10) for j in range(i + 1, 10) if i // m == j // m)
    assert int(discordant_pairs(jnp.asarray(a), jnp.asarray(b), blocks)) == brute
    assert int(discordant_pairs_batch(a[None], b[None], blocks)[0]) == brute
    # the reverse order: all comparable pairs discordant, tau = -1
    d = int(discordant_pairs(jnp.asarray(a), jnp.asarray(-a), blocks))
    assert d == blocks * m * (m - 1) // 2 and kendall_tau_from_discordant(d, 10, blocks) == -1.0


def test_spec_swap_counter_counts_a_permutation_within_groups():
    from symlib.symmetry.architectures import optunet_permutation_spec, optunet_scaling_spec
    from symlib.symmetry.specs import random_permutations
    sspec, pspec = optunet_scaling_spec(), optunet_permutation_spec()
    count = _swap_counter(sspec, pspec)
    # equal specs (new objects) give the same observer: one compiled training loop
    assert count is _swap_counter(optunet_scaling_spec(), optunet_permutation_spec())
    assert _statistics_observer(sspec, pspec) is not count
    p = _optunet(2)
    perms = random_permutations(0, pspec, p)
    q = apply_permutation(pspec, perms, p)
    got = np.asarray(jax.jit(count)(p, q))
    before = _neuron_statistics(sspec, pspec, p)
    after = _neuron_statistics(sspec, pspec, q)
    want = [sum((x[i] - x[j]) * (y[i] - y[j]) < 0 for i in range(len(x)) for j in range(i + 1, len(x))
                if i // (len(x) // g) == j // (len(x) // g))
            for x, y, g in zip(map(np.asarray, before), map(np.asarray, after), (2, 1))]
    np.testing.assert_array_equal(got, want)
    assert int(jax.jit(count)(p, p).sum()) == 0
    with pytest.raises(ValueError, match="unknown statistic"):
        _swap_counter(sspec, pspec, "median")


# ------------------------------------------------------------------ swap_bursts (Fig. 4, left)

def _changes(steps_total, at, epochs=4, layers=1):
    """A (1, epochs, steps, layers) count array with one swap at each flat step in ``at``."""
    x = np.zeros(steps_total)
    x[np.asarray(at, int)] = 1
    return np.repeat(x.reshape(1, epochs, steps_total // epochs, 1), layers, axis=3)


def test_swap_bursts_share_and_clustering():
    from symlib.symmetry.neuron_order import swap_bursts

    # 40 changes in four tight bursts of 10 consecutive steps, in 4,000 steps of one phase
    burst = np.concatenate([np.arange(10) + s for s in (300, 1300, 2300, 3300)])
    share, ratio = swap_bursts(_changes(4000, burst), milestones=[], window=10)
    assert share[0, 0] == pytest.approx(40 / 4000)
    expected = 1 - (1 - 20 / 3999) ** 39  # the chance that a random change has a neighbour
    assert ratio[0, 0] == pytest.approx(1 / expected)
    assert ratio[0, 0] > 5
    # the same number of changes evenly spaced 100 steps apart: none has a neighbour
    _, spread = swap_bursts(_changes(4000, np.arange(40) * 100), milestones=[], window=10)
    assert spread[0, 0] == 0


def test_swap_bursts_discount_the_phases_own_rates():
    """Changes dense in the first phase and rare later, at random within each phase: no
    clustering beyond the phases' rates (ratio near 1), though globally they are gathered."""
    from symlib.symmetry.neuron_order import swap_bursts

    rng = np.random.default_rng(0)
    first = rng.choice(1000, 200, replace=False)
    later = 1000 + rng.choice(3000, 30, replace=False)
    _, ratio = swap_bursts(_changes(4000, np.sort(np.r_[first, later])), milestones=[1], window=5)
    assert 0.8 < ratio[0, 0] < 1.2


def test_swap_bursts_undefined_and_bad_input():
    from symlib.symmetry.neuron_order import swap_bursts

    share, ratio = swap_bursts(_changes(400, [7], layers=2), milestones=[2])
    assert share.shape == ratio.shape == (1, 2) and np.isnan(ratio).all()  # one change: nothing to cluster
    with pytest.raises(ValueError, match="swaps must be"):
        swap_bursts(np.zeros((2, 3, 4)), [1])
    with pytest.raises(ValueError, match="window must be a positive integer"):
        swap_bursts(_changes(400, [1, 2]), [1], window=0)
    bad = _changes(400, [1, 2])
    bad[0, 0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="swaps"):
        swap_bursts(bad, [1])
