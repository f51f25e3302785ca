"""The model in a stored HMC run's identity (closures, lambdas, what cannot be fingerprinted), and the
error that names the per-chain reading of a start when it was guessed."""
from __future__ import annotations

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.core.models import mlp_apply, mlp_init
from symlib.inference import Data, Model, fit_hmc
from symlib.inference.hmc import HMCConfig, make_logdensity, run_hmc
from symlib.inference.hmc.target import hash_parts

CFG = HMCConfig(step_size=0.05, num_leapfrog=3, num_burnin=2, num_samples=4, thin=1, num_chains=3)


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 2)).astype(np.float32), rng.integers(0, 2, 12).astype(np.int32)


def _with(act, scale):
    def apply(p, x):
        return act(x @ p["w"]) * scale
    return apply


def _fingerprint(apply_fn):
    x, y = _data()
    return make_logdensity(x, y, apply_fn=apply_fn).fingerprint


def test_a_module_level_model_is_named_by_its_module_and_name():
    x, y = _data()  # the data, prior variance, temperature and the function's module and name (not its code)
    expected = hash_parts(x, y, 1.0, 1.0, "symlib.core.models.mlp_apply")
    assert make_logdensity(x, y, apply_fn=mlp_apply).fingerprint == expected


def test_closures_and_lambdas_are_fingerprinted_by_code_and_cells():
    assert _fingerprint(_with(jnp.tanh, 5.0)) == _fingerprint(_with(jnp.tanh, 5.0))
    assert _fingerprint(_with(jnp.tanh, 5.0)) != _fingerprint(_with(jnp.sin, 5.0))  # a function in a cell
    assert _fingerprint(_with(jnp.tanh, 5.0)) != _fingerprint(_with(jnp.tanh, 4.0))  # a number in a cell
    w1, w2 = np.ones(2, np.float32), np.array([1.0, 2.0], np.float32)
    assert _fingerprint(_with(jnp.tanh, w1)) != _fingerprint(_with(jnp.tanh, w2))  # an array's bytes
    assert _fingerprint(lambda p, x: jnp.tanh(x @ p["w"])) != _fingerprint(lambda p, x: jnp.sin(x @ p["w"]))
    assert _fingerprint(lambda p, x: x @ p["w"] + 1.0) != _fingerprint(lambda p, x: x @ p["w"] + 2.0)


def test_a_stored_run_of_another_closure_is_not_resumed(tmp_path):
    x, y = _data()
    p0 = {"w": jnp.zeros((2, 2))}
    run_hmc(jax.random.key(0), p0, make_logdensity(x, y, apply_fn=_with(jnp.tanh, 5.0)), CFG, out_dir=tmp_path)
    with pytest.raises(ValueError, match="holds another HMC run: it differs in the data"):
        run_hmc(jax.random.key(0), p0, make_logdensity(x, y, apply_fn=_with(jnp.sin, 5.0)), CFG, out_dir=tmp_path)
    again = run_hmc(jax.random.key(0), p0, make_logdensity(x, y, apply_fn=_with(jnp.tanh, 5.0)), CFG,
                    out_dir=tmp_path)  # the same closure again: resumed
    assert again.samples["w"].shape == (3, 4, 2, 2)


class _Opaque:
    def __call__(self, z):
        return z


@pytest.mark.filterwarnings("ignore:mean acceptance")
def test_a_closure_that_cannot_be_fingerprinted_warns_and_never_resumes(tmp_path):
    x, y = _data()
    p0 = {"w": jnp.zeros((2, 2))}
    with pytest.warns(UserWarning, match=r"closure cell 'act' of _with.<locals>.apply \(a _Opaque\)"):
        first = make_logdensity(x, y, apply_fn=_with(_Opaque(), 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        second = make_logdensity(x, y, apply_fn=_with(_Opaque(), 1.0))
    assert first.fingerprint != second.fingerprint
    run_hmc(jax.random.key(0), p0, first, CFG, out_dir=tmp_path)
    with pytest.raises(ValueError, match="differs in the data"):
        run_hmc(jax.random.key(0), p0, second, CFG, out_dir=tmp_path)


def test_a_guessed_per_chain_start_names_the_reading_when_it_fails():
    x, y = _data()
    x4 = np.concatenate([x, x], axis=1)  # 4 features: a [4, 4, 4] MLP, every leaf leading with 4
    net = mlp_init(jax.random.key(0), [4, 4, 4])
    cfg = dataclasses.replace(CFG, num_chains=4)
    with pytest.raises(ValueError, match=r"params0 was read as one start per chain.*init_per_chain=False"):
        fit_hmc(jax.random.key(0), net, Model(mlp_apply), Data(x4, y), cfg)
    with pytest.raises(ValueError, match=r"init_params was read as one start per chain.*init_per_chain=False"):
        run_hmc(jax.random.key(0), net, make_logdensity(x4, y, apply_fn=mlp_apply), cfg)
    with pytest.raises(ValueError) as forced:  # forced per-chain: the error is the density's own
        fit_hmc(jax.random.key(0), net, Model(mlp_apply), Data(x4, y), cfg, init_per_chain=True)
    assert "read as one start per chain" not in str(forced.value)
    post = fit_hmc(jax.random.key(0), net, Model(mlp_apply), Data(x4, y), cfg, init_per_chain=False)
    assert post.samples["dense_0"]["kernel"].shape == (4, 4, 4, 4)
