"""Matching and alignment of convolutional networks (OptuNet), and PermutationSpec.blocks.

OptuNet's ``conv_1`` is a grouped convolution: ``P_conv_1`` may only move channels within
its 2 groups of 5 (``optunet_permutation_spec().blocks``). Every matching tool must return
permutations that keep them there, by solving the linear assignment block by block.
"""
from __future__ import annotations

import jax
import numpy as np
import pytest

from _helpers import assert_tree_close, stack_trees

from symlib.core.cnn import optunet_apply, optunet_hidden, optunet_init
from symlib.symmetry import permutations as P
from symlib.symmetry.alignment import composite_spec, kl_alignment, wasserstein_alignment
from symlib.symmetry.architectures import optunet_permutation_spec
from symlib.symmetry.matching import (
    activation_matching,
    apply_permutation_many,
    weight_matching,
    weight_matching_many,
)
from symlib.symmetry.matching.lap import solve_lap
from symlib.symmetry.specs import PermutationSpec, apply_permutation, block_of, param_distance, random_permutations

SPEC = optunet_permutation_spec()


# --------------------------------------------------------------------------- helpers


def _net(seed: int) -> dict:
    """One OptuNet as float64 numpy (PyTorch's default initialisation)."""
    return jax.tree_util.tree_map(lambda w: np.asarray(w, np.float64), optunet_init(jax.random.PRNGKey(seed)))


def _noisy(rng: np.random.Generator, params: dict, scale: float) -> dict:
    """``params`` plus Gaussian noise of ``scale`` times each leaf's standard deviation."""
    return jax.tree_util.tree_map(lambda w: w + scale * np.std(w) * rng.normal(size=w.shape), params)


def _crosses_groups(perm, groups: int = 2) -> bool:
    """Whether ``perm`` (or any row of a stack) puts a unit into another group."""
    perm = np.asarray(perm)
    block = block_of(perm.shape[-1], groups)
    return bool((block[perm] != block).any())


def _undoes(planted, found) -> bool:
    """``found`` is ``inverse(planted)`` for every permutation."""
    return all(np.array_equal(P.compose(planted[k], found[k]), np.arange(len(planted[k]))) for k in planted)


def _hidden_by_perm(params, x):
    """OptuNet's hidden activations keyed by the spec's permutation names."""
    h = optunet_hidden(params, x)
    return {"P_conv_1": h["conv_1"], "P_dense_0": h["dense_0"]}


@pytest.fixture(scope="module")
def images():
    """MNIST-like random images (standard normal, 28x28x1)."""
    return np.asarray(jax.random.normal(jax.random.PRNGKey(7), (96, 28, 28, 1)))


# --------------------------------------------------------------------------- the blocked LAP


def test_blocked_lap_solves_each_diagonal_block():
    rng = np.random.default_rng(0)
    C = rng.normal(size=(6, 6))
    C[:3, 3:] += 100.0  # the unblocked optimum crosses the blocks
    C[3:, :3] += 100.0
    col = solve_lap(C, 2)
    assert not _crosses_groups(col)
    for lo in (0, 3):
        best = solve_lap(C[lo:lo + 3, lo:lo + 3])
        np.testing.assert_array_equal(col[lo:lo + 3], best + lo)
    assert _crosses_groups(solve_lap(C))
    np.testing.assert_array_equal(solve_lap(C, 1), solve_lap(C))


# --------------------------------------------------------------------------- weight matching


@pytest.mark.parametrize("seed", range(4))
def test_weight_matching_recovers_planted_within_group_permutation(seed):
    A = _net(seed)
    planted = random_permutations(seed + 100, SPEC, A)
    B = apply_permutation(SPEC, planted, A)
    res = weight_matching(seed, SPEC, A, B)
    assert _undoes(planted, res.perms)
    assert_tree_close(apply_permutation(SPEC, res.perms, B), A, rtol=0, atol=0)
    assert res.converged


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("seed", range(3))
def test_weight_matching_never_crosses_groups_on_noisy_nets(seed, scale):
    rng = np.random.default_rng(seed)
    A = _net(seed)
    B = apply_permutation(SPEC, random_permutations(rng, SPEC, A), _noisy(rng, A, scale))
    res = weight_matching(seed, SPEC, A, B)
    assert not _crosses_groups(res.perms["P_conv_1"])
    aligned = apply_permutation(SPEC, res.perms, B)  # checks the blocks too
    assert param_distance(A, aligned) <= param_distance(A, B) + 1e-12
    x = np.asarray(jax.random.normal(jax.random.PRNGKey(seed), (4, 28, 28, 1)), np.float32)
    f = lambda p: optunet_apply(jax.tree_util.tree_map(lambda w: np.asarray(w, np.float32), p), x)  # noqa: E731
    np.testing.assert_allclose(f(aligned), f(B), atol=1e-5)  # the function is unchanged


def test_without_blocks_matching_crosses_groups():
    """Control: on the same noisy cases, the spec without blocks lets P_conv_1 cross groups,
    so the test above can fail."""
    free = PermutationSpec(SPEC.axes)
    crossed = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        A = _net(seed)
        B = apply_permutation(SPEC, random_permutations(rng, SPEC, A), _noisy(rng, A, 3.0))
        crossed.append(_crosses_groups(weight_matching(seed, free, A, B).perms["P_conv_1"]))
        assert not _crosses_groups(weight_matching(seed, SPEC, A, B).perms["P_conv_1"])
    assert any(crossed)


def test_weight_matching_rejects_init_perms_across_groups():
    A = _net(0)
    with pytest.raises(ValueError, match=r"init_perms\['P_conv_1'\].*within its 2 groups"):
        weight_matching(0, SPEC, A, A, init_perms={"P_conv_1": np.arange(10)[::-1]})
    ok = {"P_conv_1": np.r_[np.arange(5)[::-1], 5 + np.arange(5)]}
    assert not _crosses_groups(weight_matching(0, SPEC, A, A, init_perms=ok).perms["P_conv_1"])


def test_weight_matching_many_keeps_groups():
    rng = np.random.default_rng(3)
    A = _net(3)
    planted = [random_permutations(rng, SPEC, A) for _ in range(4)]
    stack = stack_trees([apply_permutation(SPEC, p, _noisy(rng, A, s))
                         for p, s in zip(planted, (0.0, 0.05, 1.0, 3.0))])
    res = weight_matching_many(0, SPEC, A, stack, num_threads=2)
    assert res.perms["P_conv_1"].shape == (4, 10)
    assert not _crosses_groups(res.perms["P_conv_1"])
    for s in range(2):  # no or little noise: the planted permutation is undone
        assert _undoes(planted[s], {k: v[s] for k, v in res.perms.items()})
    for s in range(4):  # every sample follows weight_matching
        single = weight_matching(0, SPEC, A, jax.tree_util.tree_map(lambda w: w[s], stack))
        for k in res.perms:
            np.testing.assert_array_equal(res.perms[k][s], single.perms[k], err_msg=f"{k}, sample {s}")
    aligned = apply_permutation_many(SPEC, res.perms, stack)
    assert_tree_close(jax.tree_util.tree_map(lambda w: w[0], aligned), A, rtol=0, atol=0)


def test_apply_permutation_many_names_the_row_across_groups():
    A = _net(0)
    stack = stack_trees([A, A, A])
    perms = {"P_conv_1": np.tile(np.arange(10), (3, 1)), "P_dense_0": np.tile(np.arange(3), (3, 1))}
    perms["P_conv_1"][2, [4, 5]] = [5, 4]
    with pytest.raises(ValueError, match=r"perms_stack\['P_conv_1'\] row 2: .*within its 2 groups"):
        apply_permutation_many(SPEC, perms, stack)


# --------------------------------------------------------------------------- activation matching


def _alive(params: dict) -> dict:
    """OptuNet shifted so that no hidden unit is dead on standard-normal images (at
    initialisation some ReLUs are zero on every image: their matching is arbitrary)."""
    return {**params, "conv_1": {"kernel": params["conv_1"]["kernel"] + 0.05},
            "dense_0": {**params["dense_0"], "bias": params["dense_0"]["bias"] + 1.0}}


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_activation_matching_recovers_planted_permutation(images, seed):
    A = _alive(optunet_init(jax.random.PRNGKey(seed)))
    planted = random_permutations(seed, SPEC, A)
    B = apply_permutation(SPEC, planted, A)
    res = activation_matching(SPEC, A, B, images, batch_size=32, apply_fn=_hidden_by_perm)
    assert _undoes(planted, res.perms)
    assert list(res.perms) == SPEC.perm_names
    assert res.info["num_examples"] == 96
    assert res.info["num_rows"] == {"P_conv_1": 96 * 16, "P_dense_0": 96}  # conv: every position an example
    np.testing.assert_allclose(res.info["mean_correlation"], [1.0, 1.0], atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_activation_matching_at_initialisation_recovers_live_units(images, seed):
    """With dead units (as at initialisation) the live ones are still matched exactly,
    within their groups, and the aligned B has A's hidden activations."""
    A = optunet_init(jax.random.PRNGKey(seed))
    planted = random_permutations(seed, SPEC, A)
    B = apply_permutation(SPEC, planted, A)
    res = activation_matching(SPEC, A, B, images, apply_fn=_hidden_by_perm)
    assert not _crosses_groups(res.perms["P_conv_1"])
    ha = _hidden_by_perm(A, images)
    hb = _hidden_by_perm(apply_permutation(SPEC, res.perms, B), images)
    for name in SPEC.perm_names:
        h = np.asarray(ha[name]).reshape(-1, ha[name].shape[-1])
        live = np.flatnonzero(h.std(axis=0) > 0)
        assert len(live) >= 1
        np.testing.assert_array_equal(P.compose(planted[name], res.perms[name])[live], live, err_msg=name)
        np.testing.assert_allclose(hb[name], ha[name], atol=1e-6, err_msg=name)


def test_activation_matching_keeps_groups_on_independent_nets(images):
    A, B = optunet_init(jax.random.PRNGKey(0)), optunet_init(jax.random.PRNGKey(1))
    res = activation_matching(SPEC, A, B, images, apply_fn=_hidden_by_perm)
    assert not _crosses_groups(res.perms["P_conv_1"])
    free = activation_matching(PermutationSpec(SPEC.axes), A, B, images, apply_fn=_hidden_by_perm)
    assert res.objective[0] <= free.objective[0] + 1e-9  # the constrained optimum is no better


def test_activation_matching_dict_must_name_the_spec_permutations(images):
    A = optunet_init(jax.random.PRNGKey(0))
    x = images[:8]
    with pytest.raises(ValueError, match=r"\['conv_0', 'conv_1', 'dense_0'\], which the spec does not permute"):
        activation_matching(SPEC, A, A, x, apply_fn=optunet_hidden)
    with pytest.raises(ValueError, match=r"no activations for the spec's permutation\(s\) \['P_dense_0'\]"):
        activation_matching(SPEC, A, A, x, apply_fn=lambda p, x: {"P_conv_1": optunet_hidden(p, x)["conv_1"]})
    with pytest.raises(ValueError, match=r"activations for 'P_conv_1' have shape .* \(batch, \.\.\., 10\)"):
        activation_matching(SPEC, A, A, x, apply_fn=lambda p, x: {"P_conv_1": optunet_hidden(p, x)["conv_0"],
                                                                  "P_dense_0": optunet_hidden(p, x)["dense_0"]})
    with pytest.raises(ValueError, match=r"'P_l' when apply_fn returns a list"):
        activation_matching(SPEC, A, A, x, apply_fn=lambda p, x: list(_hidden_by_perm(p, x).values()))


# --------------------------------------------------------------------------- alignment


def _mean_field(seed: int) -> tuple[dict, dict]:
    """A mean-field Gaussian over OptuNets: mean an initialisation, positive varied sigmas."""
    mu = _net(seed)
    rng = np.random.default_rng(seed)
    sigma = jax.tree_util.tree_map(lambda w: np.exp(rng.uniform(-4.0, -1.0, size=w.shape)), mu)
    return mu, sigma


@pytest.mark.parametrize("seed", range(3))
def test_wasserstein_alignment_recovers_permuted_copy(seed):
    mu, sigma = _mean_field(seed)
    planted = random_permutations(seed + 10, SPEC, mu)
    q1 = (apply_permutation(SPEC, planted, mu), apply_permutation(SPEC, planted, sigma))
    res = wasserstein_alignment(seed, SPEC, (mu, sigma), q1)
    assert _undoes(planted, res.perms)
    assert res.info["w2_sq"] < 1e-20
    assert res.info["w2_sq_identity"] > 0.1 or all(np.array_equal(p, np.arange(len(p))) for p in planted.values())
    kl = kl_alignment(seed, SPEC, (mu, sigma), q1)
    assert _undoes(planted, kl.perms)
    assert abs(kl.info["kl"]) < 1e-9


def test_wasserstein_alignment_keeps_groups_on_noisy_posteriors():
    assert composite_spec(SPEC, ["mu", "sigma"]).blocks == {"P_conv_1": 2}
    for seed in range(3):
        q0, (mu1, sigma1) = _mean_field(seed), _mean_field(seed + 50)
        res = wasserstein_alignment(seed, SPEC, q0, (mu1, sigma1))
        assert not _crosses_groups(res.perms["P_conv_1"])
        assert res.info["w2_sq"] <= res.info["w2_sq_identity"] + 1e-12


# --------------------------------------------------------------------------- NoT


@pytest.mark.parametrize("seed", range(5))
def test_not_of_blocked_permutation_is_the_sum_over_blocks(seed):
    perm = random_permutations(seed, SPEC, _net(0))["P_conv_1"]
    blocks = [perm[:5], perm[5:] - 5]
    assert P.num_transpositions(perm) == sum(P.num_transpositions(b) for b in blocks)
    assert P.num_cycles(perm) == sum(P.num_cycles(b) for b in blocks)
