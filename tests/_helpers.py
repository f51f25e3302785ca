"""Helpers shared by the tests (imported as ``from _helpers import ...``)."""
import jax
import numpy as np

from symlib.symmetry.specs import flatten_params


def random_mlp(rng: np.random.Generator, sizes, bias_scale=1.0) -> dict:
    """Generic float64 MLP params (non-zero biases)."""
    return {
        f"dense_{l}": {"kernel": rng.normal(size=(a, b)) / np.sqrt(a), "bias": bias_scale * rng.normal(size=(b,))}
        for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def stack_trees(trees):
    """Stack pytrees of arrays on a new leading axis (numpy)."""
    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def assert_tree_close(a, b, **kw):
    fa, fb = flatten_params(a), flatten_params(b)
    assert sorted(fa) == sorted(fb)
    for k in fa:
        np.testing.assert_allclose(np.asarray(fa[k]), np.asarray(fb[k]), err_msg=k, **kw)
