"""Any model through apply_fn: interpolation_curve / barrier on a flax.linen model with its own
layout, the scaling tools through its derived specs; the MLP-only functions name that generic
route in their errors."""
import flax.linen as nn
import jax
import numpy as np
import pytest

from symlib.core.models import mlp_apply, mlp_init
from symlib.evaluation import barrier, interpolation_curve


class Tiny(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.relu(nn.Dense(6)(x))  # Dense_0 (created first)
        return nn.Dense(3)(h)


def _data():
    x = np.asarray(jax.random.normal(jax.random.key(0), (20, 4)))
    return x, np.arange(20) % 3


def test_any_model_through_apply_fn_matches_the_mlp_route():
    x, y = _data()
    model = Tiny()
    p0 = model.init(jax.random.key(1), x)["params"]
    p1 = model.init(jax.random.key(2), x)["params"]

    def apply(p, xb):
        return model.apply({"params": p}, xb)

    curve = interpolation_curve(p0, p1, x, y, 5, apply_fn=apply)
    # the same networks in symlib's MLP layout give the same curve
    as_mlp = [{f"dense_{i}": {"kernel": p[f"Dense_{i}"]["kernel"], "bias": p[f"Dense_{i}"]["bias"]}
               for i in range(2)} for p in (p0, p1)]
    ref = interpolation_curve(*as_mlp, x, y, 5, apply_fn=mlp_apply)
    np.testing.assert_allclose(curve["loss"], ref["loss"], rtol=1e-5)
    ref_barrier = barrier(*as_mlp, x, y, 5, apply_fn=mlp_apply)
    assert barrier(p0, p1, x, y, 5, apply_fn=apply) == pytest.approx(ref_barrier, rel=1e-5)


def test_another_layout_given_to_mlp_apply_names_the_generic_route():
    x, y = _data()
    p = Tiny().init(jax.random.key(1), x)["params"]
    with pytest.raises(ValueError, match=r"spec-driven route.*barrier\(\.\.\., apply_fn=\.\.\.\)"):
        barrier(p, p, x, y, 3, apply_fn=mlp_apply)
    assert mlp_apply(mlp_init(jax.random.key(0), [4, 3]), x).shape == (20, 3)


def test_scaling_tools_take_any_model_through_its_derived_specs():
    """min_mass, sort_neurons and identifiable take specs, so a flax.linen model with its own
    layout goes through them with the specs derived from it; the function is kept."""
    from symlib.symmetry import (function_change, identifiable, min_mass, permutation_spec_from_flax,
                                 scaling_spec_from_flax, sort_neurons)

    x, _ = _data()
    model = Tiny()
    p = model.init(jax.random.key(1), x)["params"]
    sspec, pspec = scaling_spec_from_flax(model, p, x), permutation_spec_from_flax(model, p, x)

    def apply(q, xb):
        return model.apply({"params": q}, xb)

    solved = min_mass(sspec, p)
    assert solved.solver == "chain" and solved.mass < solved.mass_before
    for q in (solved.params, sort_neurons(pspec, p)[0], identifiable(sspec, pspec, p)):
        assert set(q) == {"Dense_0", "Dense_1"} and function_change(apply, p, q, x) < 1e-5  # float32 weights


def test_fit_ensemble_takes_any_model_and_names_the_generic_route():
    """A deep ensemble of a flax.linen model goes through Model(apply_fn); the module itself in
    the model's place is refused with an error naming that route."""
    from symlib.inference import Data, Model, TrainConfig, fit_ensemble

    x, y = _data()
    model = Tiny()
    params0 = jax.vmap(lambda k: model.init(k, x)["params"])(jax.random.split(jax.random.key(0), 2))
    cfg = TrainConfig(epochs=1, batch_size=10)
    ens = fit_ensemble(jax.random.key(1), params0, Model(lambda p, xb: model.apply({"params": p}, xb)), Data(x, y), cfg)
    assert jax.tree_util.tree_structure(ens.samples) == jax.tree_util.tree_structure(params0)
    assert ens.samples["Dense_0"]["kernel"].shape == (2, 4, 6) and ens.info["epoch_loss"].shape == (2, 1)
    assert np.all(np.isfinite(ens.info["epoch_loss"]))
    assert not np.allclose(ens.samples["Dense_1"]["kernel"], params0["Dense_1"]["kernel"])  # it trained
    with pytest.raises(TypeError, match=r"model must be a symlib\.inference\.Model\(apply_fn\), got Tiny"):
        fit_ensemble(jax.random.key(1), params0, model, Data(x, y), cfg)


def test_a_registered_layout_check_is_what_the_data_checks_run():
    """A model's own layout check replaces the MLP's special case in every data check:
    the predictive, the interpolation, the training loops and the HMC target run it."""
    from symlib.core.models import _LAYOUT_CHECKS, register_layout_check
    from symlib.evaluation import interpolation_curve, predict_single
    from symlib.inference import Data, Model, TrainConfig, fit_map
    from symlib.inference.hmc import make_logdensity

    x, y = _data()
    model = Tiny()
    p = model.init(jax.random.key(1), x)["params"]

    def apply(params, xb):
        return model.apply({"params": params}, xb)

    def check(params, example_shape, name, batch_dims):
        raise ValueError(f"Tiny's check: {name} with {batch_dims} network axes take no {example_shape}")

    assert predict_single(p, x, apply_fn=apply).shape[0] == x.shape[0]  # unregistered: the generic route
    register_layout_check(apply, check)
    try:
        msg = rf"Tiny's check: (params|params0) with 0 network axes take no \({x.shape[1]},\)"
        with pytest.raises(ValueError, match=msg):
            predict_single(p, x, apply_fn=apply)
        with pytest.raises(ValueError, match=msg):
            interpolation_curve(p, p, x, y, 3, apply_fn=apply)
        with pytest.raises(ValueError, match=msg):
            fit_map(jax.random.key(2), p, Model(apply), Data(x, y), TrainConfig(epochs=1, batch_size=4))
        with pytest.raises(ValueError, match=msg):
            make_logdensity(x, y, apply_fn=apply)(p)
    finally:
        del _LAYOUT_CHECKS[apply]


_MODEL_MODULES = ["symlib.evaluation.interpolation", "symlib.evaluation.predictive", "symlib.evaluation.pruning",
                  "symlib.inference.diagnostics", "symlib.inference.hmc.target", "symlib.experiments.xiao.hmc_pieces"]


@pytest.mark.parametrize("module", _MODEL_MODULES)
def test_no_apply_fn_defaults_to_symlibs_mlp(module):
    """Every function of these modules that evaluates a model is told which one: a CNN can
    never be run as an MLP because its caller forgot ``apply_fn``."""
    import importlib
    import inspect

    mod = importlib.import_module(module)
    fns = [inspect.unwrap(f) for _, f in inspect.getmembers(mod, callable)  # jitted ones too
           if getattr(f, "__module__", None) == module and not inspect.isclass(f)]
    takes = [f for f in fns if "apply_fn" in inspect.signature(f).parameters]
    assert takes, f"no function of {module} takes apply_fn"
    for f in takes:
        assert inspect.signature(f).parameters["apply_fn"].default is not mlp_apply, f.__qualname__


def _call_without_apply_fn():
    from symlib.evaluation.predictive import predict_single
    from symlib.evaluation.pruning import pruning_curve
    from symlib.experiments.xiao.hmc_pieces import _predictive_stats
    from symlib.inference.diagnostics import function_space_diagnostics
    from symlib.inference.hmc import make_logdensity

    x, y = _data()
    p = mlp_init(jax.random.key(0), [4, 3])
    stack = jax.tree_util.tree_map(lambda a: np.stack([a, a]), p)
    chains = jax.tree_util.tree_map(lambda a: np.stack([a, a]), stack)
    return [
        ("predict_single", lambda: predict_single(p, x)),
        ("barrier", lambda: barrier(p, p, x, y, 3)),
        ("pruning_curve", lambda: pruning_curve(p, p, x, y, [0.5])),
        ("function_space_diagnostics", lambda: function_space_diagnostics(chains, x, y)),
        ("make_logdensity", lambda: make_logdensity(x.astype(np.float32), y)),
        ("_predictive_stats", lambda: _predictive_stats(stack, x, y, np.arange(2), None)),
    ]


def test_a_call_without_apply_fn_is_a_type_error_naming_it():
    for name, call in _call_without_apply_fn():
        with pytest.raises(TypeError, match=rf"{name}\(\) missing 1 required .*argument: 'apply_fn'"):
            call()
