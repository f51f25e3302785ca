"""symlib.evaluation: bfloat16 probabilities, predict_single on overflowing logits,
numpy-integer lambdas, and RunningMoments' per-leaf dtypes."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.core.models import mlp_apply, mlp_init
from symlib.evaluation.interpolation import interpolation_curve
from symlib.evaluation.metrics import accuracy_from_probs, nll_from_probs
from symlib.evaluation.predictive import predict_single
from symlib.evaluation.running import RunningMoments
from symlib.evaluation.summaries import direct_summary


def test_metrics_take_bfloat16_probabilities():
    probs = jnp.array([[0.75, 0.25], [0.5, 0.5], [0.125, 0.875]], jnp.bfloat16)  # exact in bfloat16
    labels = np.array([0, 1, 1])
    assert nll_from_probs(probs, labels) == pytest.approx(-np.mean(np.log([0.75, 0.5, 0.875])))
    assert accuracy_from_probs(probs, labels) == pytest.approx(2 / 3)  # the tie goes to class 0
    with pytest.raises(ValueError, match="probs contains NaN or inf"):
        nll_from_probs(probs.at[0, 0].set(jnp.nan), labels)


def test_predict_single_raises_on_overflowing_logits():
    params = mlp_init(jax.random.key(0), [4, 8, 3])
    huge = jax.tree_util.tree_map(lambda a: a * 1e25 + 1e25, params)  # finite, but the logits overflow
    with pytest.raises(ValueError, match="non-finite probabilities"):
        predict_single(huge, np.ones((2, 4), np.float32), apply_fn=mlp_apply)
    probs = predict_single(params, np.ones((2, 4), np.float32), apply_fn=mlp_apply)
    np.testing.assert_allclose(np.asarray(probs).sum(axis=1), 1.0, rtol=1e-6)


def test_interpolation_curve_takes_a_numpy_integer_count():
    p0, p1 = mlp_init(jax.random.key(0), [4, 8, 3]), mlp_init(jax.random.key(1), [4, 8, 3])
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1])
    curve = interpolation_curve(p0, p1, x, y, np.int64(5), apply_fn=mlp_apply)
    np.testing.assert_array_equal(curve["lambda"], [0.0, 0.25, 0.5, 0.75, 1.0])
    listed = interpolation_curve(p0, p1, x, y, [0.0, 0.25, 0.5, 0.75, 1.0], apply_fn=mlp_apply)
    np.testing.assert_array_equal(curve["loss"], listed["loss"])
    with pytest.raises(ValueError, match="at least two interpolation points"):
        interpolation_curve(p0, p1, x, y, np.True_, apply_fn=mlp_apply)


def test_running_moments_keep_a_dtype_per_leaf_like_direct_summary():
    rng = np.random.default_rng(0)
    stack = {"h": rng.normal(size=(6, 3)).astype(np.float16), "f": rng.normal(size=(6, 2)).astype(np.float32),
             "i": rng.integers(0, 5, size=(6, 4))}
    mom = RunningMoments.zeros(jax.tree_util.tree_map(lambda a: a[0], stack))
    mom.update(jax.tree_util.tree_map(lambda a: a[:2], stack)).update(jax.tree_util.tree_map(lambda a: a[2:], stack))
    running, direct = mom.summary(), direct_summary(stack)
    for name, dtype in (("h", np.float16), ("f", np.float32), ("i", np.float64)):
        assert running.mu[name].dtype == direct.mu[name].dtype == dtype
        assert running.sigma[name].dtype == dtype
        ref = stack[name].astype(np.float64)
        np.testing.assert_allclose(running.mu[name], ref.mean(axis=0).astype(dtype), rtol=1e-3)
        np.testing.assert_allclose(running.sigma[name], ref.std(axis=0).astype(dtype), rtol=1e-3)


def test_running_moments_refuse_a_network_without_its_batch_axis():
    """One network passed as a batch made each of its weights a network: count 6, not 2."""
    mom = RunningMoments.zeros({"b": np.zeros(3)})
    with pytest.raises(ValueError, match=r"update: leaf \['b'\] has per-network shape \(\), .* \(3,\)"):
        mom.update({"b": np.array([1.0, 2.0, 3.0])})
    with pytest.raises(ValueError, match=r"per-network shape \(3, 3\)"):
        mom.update({"b": np.ones((2, 3, 3))})
    assert mom.count == 0
    mom.update({"b": np.array([[1.0, 2.0, 3.0], [5.0, 6.0, 7.0]])})
    np.testing.assert_allclose(mom.mean["b"], [3.0, 4.0, 5.0])
    other = RunningMoments.zeros({"b": np.zeros(1)}).update({"b": np.ones((2, 1))})
    with pytest.raises(ValueError, match=r"merge: leaf \['b'\] has per-network shape \(1,\)"):
        mom.merge(other)
    stored = mom.to_arrays("m_")
    with pytest.raises(ValueError, match="from_arrays"):
        RunningMoments.from_arrays(stored, "m_", {"b": np.zeros(4)})


def test_bfloat16_samples_keep_their_dtype():
    stack = {"w": jnp.asarray(np.random.default_rng(1).normal(size=(4, 3)), jnp.bfloat16)}
    mom = RunningMoments.zeros(jax.tree_util.tree_map(lambda a: a[0], stack)).update(stack)
    assert mom.summary().mu["w"].dtype == direct_summary(stack).mu["w"].dtype == jnp.bfloat16
