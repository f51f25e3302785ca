"""The baseline of benchmarks/bench_matching.py, ``git_rebasin_weight_matching`` (the published
Git Re-Basin weight matching: float32 JAX costs, one scipy LAP per permutation per sweep, B
re-permuted once per accepted update), finds what symlib's ``weight_matching`` finds: the
same permutations and sweeps on MLPs and on a 4-D convolutional spec, and an objective that
the float64 recomputation confirms. Small sizes; a few seconds."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from _helpers import conv_spec_pair, random_mlp
from symlib.symmetry import apply_permutation
from symlib.symmetry.matching import weight_matching
from symlib.symmetry.specs import PermutationSpec, mlp_permutation_spec
from symlib.testing.reference import reference_weight_matching

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_matching.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_matching", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_same(bench, spec, a, b, key):
    base = bench.git_rebasin_weight_matching(key, spec, a, b)
    ours = weight_matching(key, spec, a, b)
    for k in ours.perms:
        np.testing.assert_array_equal(base["perms"][k], ours.perms[k], err_msg=k)
    assert base["sweeps"] == ours.sweeps
    assert base["num_solves"] == ours.sweeps * len(spec.perm_names)  # one LAP per permutation per sweep
    j64 = bench.objective64(spec, a, b, base["perms"])
    assert j64 == pytest.approx(ours.objective[-1], rel=1e-12)
    assert base["objective"][-1] == pytest.approx(j64, rel=1e-5)  # tracked from float32 costs
    # the objective is the inner product of A with B permuted by the returned permutations
    aligned = apply_permutation(spec, base["perms"], b)
    direct = sum(float(np.vdot(np.asarray(a[layer][leaf], np.float64), np.asarray(aligned[layer][leaf], np.float64)))
                 for layer in a for leaf in a[layer])
    assert direct == pytest.approx(j64, rel=1e-12)
    return base


@pytest.mark.parametrize("sizes", [[20, 16, 5], [40, 64, 32, 64, 6]])
def test_baseline_same_permutations_as_weight_matching_mlp(bench, sizes):
    rng = np.random.default_rng(sum(sizes))
    spec = mlp_permutation_spec(len(sizes) - 2)
    a, b = random_mlp(rng, sizes), random_mlp(rng, sizes)
    base = _check_same(bench, spec, a, b, 3)
    perms_ref, hist_ref, _, _ = reference_weight_matching(3, spec, a, b)  # the old float64 loop, too
    for k in perms_ref:
        np.testing.assert_array_equal(base["perms"][k], perms_ref[k], err_msg=k)
    assert base["sweeps"] == len(hist_ref)


def test_baseline_same_permutations_conv_spec(bench):
    spec, a, b = conv_spec_pair(np.random.default_rng(5))
    _check_same(bench, spec, a, b, 4)


def test_baseline_max_iter_and_blocks(bench):
    rng = np.random.default_rng(1)
    sizes = [20, 16, 5]  # the shapes of the first MLP case: its compiled costs are reused
    spec = mlp_permutation_spec(1)
    a, b = random_mlp(rng, sizes), random_mlp(rng, sizes)
    one = bench.git_rebasin_weight_matching(0, spec, a, b, max_iter=1)
    assert one["sweeps"] == 1 and one["num_solves"] == 1
    blocked = PermutationSpec(dict(spec.axes), blocks={"P_0": 2})
    with pytest.raises(NotImplementedError):
        bench.git_rebasin_weight_matching(0, blocked, a, b)
