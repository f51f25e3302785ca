"""Models written in flax.nnx and in Equinox through the generic ``apply_fn`` route (the
section "Models in flax.nnx and Equinox" of notebooks/15_your_own_model.py): the user-side
conversion to parameters as a dict of arrays plus ``apply_fn(params, x)``, then the derived
permutation spec, weight matching, the loss barrier and one fit.

symlib's spec tools (derivation, matching, ``apply_permutation``, the invariance check) take
the parameters as a (nested or "/"-flat) dict of arrays; the barrier and the fits take any
pytree. The last tests record what happens with the frameworks' own containers."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from symlib import evaluation, inference, symmetry
from symlib.data import load_split

eqx = pytest.importorskip("equinox", reason="equinox is in the 'test' extra")


# --------------------------------------------------------------------------- the two conversions
def nnx_route(module):
    """(params, apply_fn) of an nnx module: its state as a plain nested dict."""
    graphdef, state = nnx.split(module)

    def apply_fn(params, x):
        return nnx.merge(graphdef, params)(x)     # nnx.merge takes the plain dict back

    return nnx.to_pure_dict(state), apply_fn


def eqx_route(module):
    """(params, apply_fn) of an Equinox module: its arrays in a flat dict keyed by their
    paths ("layers/0/weight"), the rest of the module closed over; the module takes one
    example, so apply_fn vmaps it over the batch."""
    arrays, static = eqx.partition(module, eqx.is_array)
    leaves, treedef = jax.tree_util.tree_flatten_with_path(arrays)
    names = [jax.tree_util.keystr(path, simple=True, separator="/") for path, _ in leaves]

    def apply_fn(params, x):
        model = eqx.combine(jax.tree_util.tree_unflatten(treedef, [params[n] for n in names]), static)
        return jax.vmap(model)(x)

    return {n: leaf for n, (_, leaf) in zip(names, leaves)}, apply_fn


# --------------------------------------------------------------------------- the models
class NnxMLP(nnx.Module):
    def __init__(self, rngs, hidden=32):
        self.fc1 = nnx.Linear(784, hidden, rngs=rngs)
        self.fc2 = nnx.Linear(hidden, hidden, rngs=rngs)
        self.out = nnx.Linear(hidden, 10, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.fc2(nnx.relu(self.fc1(x)))))


class NnxCNN(nnx.Module):                          # NHWC, kernels HWIO
    def __init__(self, rngs):
        self.c1 = nnx.Conv(1, 8, (3, 3), rngs=rngs)
        self.c2 = nnx.Conv(8, 16, (3, 3), rngs=rngs)
        self.head = nnx.Linear(16, 10, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.c2(nnx.relu(self.c1(x))))
        return self.head(x.mean(axis=(1, 2)))


class EqxCNN(eqx.Module):                          # one CHW image, weights OIHW, biases (C, 1, 1)
    c1: eqx.nn.Conv2d
    c2: eqx.nn.Conv2d
    head: eqx.nn.Linear

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.c1 = eqx.nn.Conv2d(1, 8, 3, key=k1)
        self.c2 = eqx.nn.Conv2d(8, 16, 3, key=k2)
        self.head = eqx.nn.Linear(16, 10, key=k3)

    def __call__(self, x):
        x = jax.nn.relu(self.c2(jax.nn.relu(self.c1(x))))
        return self.head(x.mean(axis=(1, 2)))


def eqx_mlp(seed, hidden=32):
    return eqx.nn.MLP(784, 10, hidden, 2, activation=jax.nn.relu, key=jax.random.key(seed))


MODELS = {   # name -> (params, apply_fn) from a seed, and the input layout
    "nnx-mlp": (lambda s: nnx_route(NnxMLP(nnx.Rngs(s))), "flat"),
    "nnx-cnn": (lambda s: nnx_route(NnxCNN(nnx.Rngs(s))), "nhwc"),
    "eqx-mlp": (lambda s: eqx_route(eqx_mlp(s)), "flat"),
    "eqx-cnn": (lambda s: eqx_route(EqxCNN(jax.random.key(s))), "nchw"),
}


@pytest.fixture(scope="module")
def mnist():
    """The shipped MNIST subset: 1000 training and 500 test images, in [0, 1]."""
    d = load_split("mnist", "subset", n_train=1000, n_test=500)
    return (jnp.asarray(d["x_train"]), jnp.asarray(d["y_train"]),
            jnp.asarray(d["x_test"]), jnp.asarray(d["y_test"]))


def _inputs(x, layout):
    """Flattened images for the MLPs; 14x14 images (2x2 mean) for the CNNs."""
    if layout == "flat":
        return x.reshape(len(x), -1)
    small = x.reshape(len(x), 14, 2, 14, 2).mean(axis=(2, 4))
    return small[:, None] if layout == "nchw" else small[..., None]


# --------------------------------------------------------------------------- spec and matching
def test_the_derived_specs_follow_each_frameworks_layout():
    """nnx stores a dense kernel (in, out), Equinox a weight (out, in): the derived spec puts
    the hidden units on the axis each framework uses, with nothing else permuted."""
    x = jnp.zeros((4, 784))
    params, apply_fn = nnx_route(NnxMLP(nnx.Rngs(0)))
    assert symmetry.permutation_spec_from_apply(apply_fn, params, x).axes == {
        "fc1/kernel": (None, "P_fc1"), "fc1/bias": ("P_fc1",),
        "fc2/kernel": ("P_fc1", "P_fc2"), "fc2/bias": ("P_fc2",),
        "out/kernel": ("P_fc2", None), "out/bias": (None,)}
    params, apply_fn = eqx_route(eqx_mlp(0))
    assert symmetry.permutation_spec_from_apply(apply_fn, params, x).axes == {
        "layers/0/weight": ("P_layers/0", None), "layers/0/bias": ("P_layers/0",),
        "layers/1/weight": ("P_layers/1", "P_layers/0"), "layers/1/bias": ("P_layers/1",),
        "layers/2/weight": (None, "P_layers/1"), "layers/2/bias": (None,)}


@pytest.mark.parametrize("name", MODELS)
def test_the_derived_spec_is_a_symmetry_and_matching_undoes_a_permutation(name, mnist):
    make, layout = MODELS[name]
    params, apply_fn = make(0)
    x = _inputs(mnist[2][:64], layout)
    spec = symmetry.permutation_spec_from_apply(apply_fn, params, x[:8])
    assert len(spec.perm_names) == 2, spec.axes                      # the two hidden layers
    assert symmetry.check_spec_invariance(spec, params, apply_fn, x) < 1e-4

    perms = symmetry.random_permutations(1, spec, params)
    copy = symmetry.apply_permutation(spec, perms, params)
    assert symmetry.param_distance(params, copy) > 1.0                # a different point ...
    np.testing.assert_allclose(apply_fn(copy, x), apply_fn(params, x), atol=1e-5)   # ... same function
    match = symmetry.weight_matching(0, spec, params, copy)
    assert symmetry.param_distance(params, symmetry.apply_permutation(spec, match.perms, copy)) < 1e-6


# --------------------------------------------------------------------------- fits and barriers
@pytest.mark.parametrize("name", ["nnx-mlp", "eqx-mlp"])
def test_fits_their_samples_and_the_barriers(name, mnist):
    """fit_map from two starts: the posterior's sampled networks run through apply_fn and beat
    chance; a permuted copy of A has a barrier that matching removes; the barrier between the
    two fits is finite and positive, and lower after matching."""
    x, y, x_test, y_test = mnist
    x, x_test = _inputs(x, "flat"), _inputs(x_test, "flat")
    make, _ = MODELS[name]
    (p0, apply_fn), (p1, _) = make(0), make(1)
    config = inference.TrainConfig(epochs=4, batch_size=100, optimizer=optax.adam(1e-2))
    model, data = inference.Model(apply_fn), inference.Data(x, y)
    fits = [inference.fit_map(jax.random.key(10 + i), p, model, data, config) for i, p in enumerate((p0, p1))]

    draws = inference.sample(jax.random.key(0), fits[0], 3)
    logits = jax.vmap(apply_fn, (0, None))(draws, x_test)
    assert logits.shape == (3, len(x_test), 10)
    accuracy = (logits.argmax(-1) == y_test).mean(axis=1)
    assert np.all(accuracy > 0.6), accuracy                           # chance: 0.1

    a, b = fits[0].params, fits[1].params
    spec = symmetry.permutation_spec_from_apply(apply_fn, a, x[:8])
    copy = symmetry.apply_permutation(spec, symmetry.random_permutations(2, spec, a), a)
    naive_copy = evaluation.barrier(a, copy, x_test, y_test, 11, apply_fn=apply_fn)
    matched = symmetry.apply_permutation(spec, symmetry.weight_matching(0, spec, a, copy).perms, copy)
    assert naive_copy > 0.1, naive_copy
    assert abs(evaluation.barrier(a, matched, x_test, y_test, 11, apply_fn=apply_fn)) < 1e-4

    naive = evaluation.barrier(a, b, x_test, y_test, 11, apply_fn=apply_fn)
    b_matched = symmetry.apply_permutation(spec, symmetry.weight_matching(0, spec, a, b).perms, b)
    after = evaluation.barrier(a, b_matched, x_test, y_test, 11, apply_fn=apply_fn)
    assert np.isfinite(naive) and np.isfinite(after) and naive > 0, (naive, after)
    assert after < naive, (naive, after)        # here 0.59 -> 0.03 (nnx) and 0.93 -> 0.21 nats (Equinox)


# --------------------------------------------------------------------------- the frameworks' own containers
@pytest.mark.parametrize("fw", ["nnx", "eqx"])
def test_the_barrier_and_the_fits_take_the_frameworks_own_pytrees(fw, mnist):
    """Without the conversion: an nnx.State and an Equinox module (its array part) are pytrees,
    which is all the barrier and the fits need; they give what the converted route gives."""
    x, y, x_test, y_test = mnist
    x, y, x_test, y_test = _inputs(x[:300], "flat"), y[:300], _inputs(x_test[:200], "flat"), y_test[:200]
    if fw == "nnx":
        graphdef, params = nnx.split(NnxMLP(nnx.Rngs(0)))
        apply_fn = lambda s, xb: nnx.merge(graphdef, s)(xb)                        # noqa: E731
        ref_params, ref_apply = nnx_route(NnxMLP(nnx.Rngs(0)))
    else:
        params, static = eqx.partition(eqx_mlp(0), eqx.is_array)
        apply_fn = lambda m, xb: jax.vmap(eqx.combine(m, static))(xb)              # noqa: E731
        ref_params, ref_apply = eqx_route(eqx_mlp(0))
    config = inference.TrainConfig(epochs=1, batch_size=100, optimizer=optax.adam(1e-2))
    fit = inference.fit_map(jax.random.key(3), params, inference.Model(apply_fn), inference.Data(x, y), config)
    assert jax.tree_util.tree_structure(fit.params) == jax.tree_util.tree_structure(params)  # same container
    ref = inference.fit_map(jax.random.key(3), ref_params, inference.Model(ref_apply), inference.Data(x, y), config)
    np.testing.assert_allclose(apply_fn(fit.params, x_test), ref_apply(ref.params, x_test), atol=1e-4)
    assert evaluation.barrier(params, fit.params, x_test, y_test, 5, apply_fn=apply_fn) == pytest.approx(
        evaluation.barrier(ref_params, ref.params, x_test, y_test, 5, apply_fn=ref_apply), abs=1e-4)


def test_an_equinox_module_is_refused_by_the_spec_tools_with_the_layout_they_need():
    arrays, static = eqx.partition(eqx_mlp(0), eqx.is_array)
    with pytest.raises(TypeError, match=r"params must be a \(nested\) dict of arrays, got MLP"):
        symmetry.permutation_spec_from_apply(lambda m, xb: jax.vmap(eqx.combine(m, static))(xb), arrays,
                                             jnp.zeros((4, 784)))


def test_an_nnx_state_is_refused_by_the_spec_tools_with_the_conversion_named():
    """An nnx.State is a Mapping but not a dict of arrays (its leaves are Variables): the spec
    tools refuse it with a TypeError that names the conversion, not an internal assertion."""
    graphdef, state = nnx.split(NnxMLP(nnx.Rngs(0)))
    with pytest.raises(TypeError, match=r"got a State at 'the root'.*nnx.to_pure_dict"):
        symmetry.permutation_spec_from_apply(lambda s, xb: nnx.merge(graphdef, s)(xb), state, jnp.zeros((4, 784)))
