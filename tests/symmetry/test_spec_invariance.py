"""check_spec_invariance: a spec with the right shapes but a parameter on the wrong
permutation is caught by its effect on the outputs; spec-mismatch errors list both sides."""
import jax
import numpy as np
import pytest

from symlib.core.models import mlp_apply, mlp_init
from symlib.symmetry import PermutationSpec, check_spec, check_spec_invariance, mlp_permutation_spec


def _net():
    params = mlp_init(jax.random.key(0), [6, 5, 5, 3])
    x = np.asarray(jax.random.normal(jax.random.key(1), (16, 6)))
    return params, x


def test_a_right_spec_leaves_the_outputs_unchanged():
    params, x = _net()
    assert check_spec_invariance(mlp_permutation_spec(2), params, mlp_apply, x) < 1e-5


def test_a_bias_on_the_wrong_permutation_is_caught():
    params, x = _net()
    axes = dict(mlp_permutation_spec(2).axes)
    axes["dense_0/bias"] = ("P_1",)  # same size as P_0: check_spec cannot see it
    wrong = PermutationSpec(axes)
    check_spec(wrong, params)
    with pytest.raises(ValueError, match=r"permutation 'P_\d' of the spec changes the network's outputs"):
        check_spec_invariance(wrong, params, mlp_apply, x)


def test_a_path_mismatch_lists_both_sides():
    params, _ = _net()
    spec = PermutationSpec({k.replace("dense", "Dense"): v for k, v in mlp_permutation_spec(2).axes.items()})
    with pytest.raises(ValueError, match=r"the spec's paths are \['Dense_0/bias'.*the params' paths are "
                                         r"\['dense_0/bias'"):
        check_spec(spec, params)
