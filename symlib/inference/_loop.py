"""Helpers shared by the fitting loops of :mod:`symlib.inference` (package-private).

The checks of the data against a network (:func:`check_network_data`) and of the
minibatch loop sizes (:func:`check_minibatch_data`), of a config's optimiser
(:func:`check_optimizer`), the split of a network into its
weights and its model state (:func:`check_state`, :func:`split_state`, :func:`merge_state`),
and the epoch progress bar that a compiled loop advances through a host callback
(:func:`epoch_bar`, :func:`report_epoch`).
Only modules of :mod:`symlib.inference` import from here.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import optax

from symlib.core.checks import check_finite, positive_int
from symlib.core.models import Params, layout_check
from symlib.core.progress import progress_bar
from symlib.inference.likelihood import Categorical


def _one_network(params: Params, batch_dims: int, name: str):
    """Shapes (``jax.ShapeDtypeStruct``) of one network of ``params``, after ``batch_dims`` leading axes.

    Raises:
        ValueError: naming ``name`` if it holds no arrays or its leaves disagree on the leading axes.
    """
    leaves = jax.tree_util.tree_leaves(params)
    if not leaves:
        raise ValueError(f"{name} holds no arrays")
    lead = {tuple(np.shape(a))[:batch_dims] for a in leaves}
    if len(lead) != 1 or any(np.ndim(a) < batch_dims for a in leaves):
        raise ValueError(f"{name}: every leaf must share the {batch_dims} leading (network) axes, got {sorted(lead)}")
    return jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a)[batch_dims:], jnp.result_type(a)), params)


def check_state(params, state, name: str = "params0") -> tuple[str, ...]:
    """The names of the model state entries of ``params``, checked.

    Model state (e.g. a Flax model's ``"batch_stats"``) is a set of top-level entries of the
    network's pytree that are no weights: never differentiated, never given a posterior spread.

    Args:
        params: the network's pytree (a mapping when ``state`` is not empty).
        state: the names of its top-level entries that are model state.
        name: the name of ``params`` in error messages.

    Returns:
        ``state`` as a tuple of strings.

    Raises:
        ValueError: naming the entry of ``state`` that is not a top-level key of ``params``.
    """
    if isinstance(state, str):
        raise ValueError(f"state must be a tuple of top-level keys, e.g. ({state!r},), got the string {state!r}")
    state = tuple(state)
    if not state:
        return state
    if not isinstance(params, Mapping):
        raise ValueError(f"state={state} names top-level entries, but {name} is a {type(params).__name__}, not a "
                         "mapping (e.g. a Flax variables dict {'params': ..., 'batch_stats': ...})")
    for key in state:
        if key not in params:
            raise ValueError(f"state entry {key!r} is not a top-level key of {name} (its keys: {sorted(params)})")
    if len(state) == len(params):
        raise ValueError(f"state={state} names every top-level entry of {name}: nothing is left to fit")
    return state


def split_state(params, state: tuple[str, ...]):
    """``(weights, fixed)``: ``params`` without and with only its ``state`` entries (``params``
    itself and ``{}`` when ``state`` is empty)."""
    if not state:
        return params, {}
    return {k: v for k, v in params.items() if k not in state}, {k: params[k] for k in state}


def merge_state(weights, fixed):
    """The network of ``weights`` and the state entries ``fixed`` (``weights`` itself when
    ``fixed`` is empty): the inverse of :func:`split_state`."""
    if not fixed:
        return weights
    return {**weights, **fixed}


def check_network_data(apply_fn, params: Params, x, y, name: str = "params0", batch_dims: int = 0,
                       likelihood=Categorical()) -> None:
    """Check ``x``/``y`` against a network given by ``apply_fn``, before any work.

    ``x`` must be finite with ``n`` examples on its first axis, ``y`` ``n`` targets that fit
    the network's outputs under ``likelihood`` (its ``check``; :class:`~symlib.inference.likelihood.Categorical`:
    integer labels in ``[0, classes)``, ``classes`` the width of the logits). A model with a registered
    layout check (:func:`symlib.core.models.layout_check`; symlib's MLP has one) is
    checked by it, which names the layer or the input width; any other by
    ``jax.eval_shape`` of ``apply_fn`` on one example (nothing is computed).

    Raises:
        ValueError: naming ``x``, ``y``, ``name`` or its layer; or whatever ``apply_fn``
            raises for inputs it cannot take.
    """
    x_shape = tuple(np.shape(x))
    y_ndims = (1,) if isinstance(likelihood, Categorical) else (1, 2)
    if len(x_shape) < 2 or np.ndim(y) not in y_ndims or np.shape(y)[0] != x_shape[0]:
        y_shape = " or ".join(("(n,)", "(n, d)")[:len(y_ndims)])
        raise ValueError(f"expected x of shape (n, ...) and y of shape {y_shape}, got {x_shape} and {np.shape(y)}")
    check = layout_check(apply_fn)
    if check is not None:
        outputs = (check(params, x_shape[1:], name, batch_dims),)
    else:
        one = _one_network(params, batch_dims, name)
        out = jax.eval_shape(apply_fn, one, jax.ShapeDtypeStruct((1,) + x_shape[1:], jnp.result_type(x)))
        if len(out.shape) < 1 or out.shape[0] != 1:
            raise ValueError(f"apply_fn must return one output per example (n, ...); for one example it returned "
                             f"shape {out.shape}")
        outputs = tuple(out.shape[1:])
    check_finite(x, "x")
    likelihood.check(y, outputs, "y")


def check_minibatch_data(x, y, batch_size: int, epochs: int, num_mc: int, n_data) -> int:
    """Check the data and loop sizes of :func:`~symlib.inference.vi.fit_vi` (and of
    :func:`~symlib.inference.sgmcmc.fit_sghmc`, ``num_mc=1``); return the ``N`` of the likelihood scaling."""
    if jnp.ndim(x) < 1 or jnp.ndim(y) < 1 or jnp.shape(x)[0] != jnp.shape(y)[0]:
        raise ValueError("x and y must share their leading (example) axis, got shapes "
                         f"{jnp.shape(x)} and {jnp.shape(y)}")
    n = int(jnp.shape(x)[0])
    if n < 1:
        raise ValueError("no training examples")
    check_finite(x, "x")
    check_finite(y, "y")
    positive_int(epochs, "epochs")
    if positive_int(batch_size, "batch_size") > n:
        raise ValueError(f"batch_size={batch_size!r} must be between 1 and the {n} training examples")
    positive_int(num_mc, "num_mc")
    return n if n_data is None else positive_int(n_data, "n_data")


# The bar of the fitting call running now (innermost last); the compiled loop reports to
# it through a host callback, since a compiled function cannot hold a Python object.
_EPOCH_BARS: list = []


def check_optimizer(optimizer, name: str = "optimizer") -> optax.GradientTransformation:
    """Check that a config's ``optimizer`` is an optax transformation (e.g. ``optax.adam(1e-3)``).

    Raises:
        TypeError: naming the field ``name`` when it holds anything else (e.g. a string or a learning rate).
    """
    if not isinstance(optimizer, optax.GradientTransformation):
        raise TypeError(f"{name} must be an optax.GradientTransformation such as optax.adam(1e-3) or "
                        f"optax.sgd(optax.piecewise_constant_schedule(0.04, {{...}})), got "
                        f"{type(optimizer).__name__} {optimizer!r}")
    return optimizer


def report_epoch(epoch, loss=None) -> None:
    """Host callback at the end of every epoch: advance the bar, show the objective (if given)."""
    if _EPOCH_BARS:
        bar = _EPOCH_BARS[-1]
        if loss is not None:
            bar.set_postfix(objective=f"{float(loss):.4f}", refresh=False)
        bar.update(int(epoch) + 1 - bar.n)


@contextlib.contextmanager
def epoch_bar(epochs: int, enabled: bool, desc: str = "train", unit: str = "epoch") -> Iterator[None]:
    """A progress bar (label ``desc``) over ``epochs`` (or other ``unit``) that :func:`report_epoch` updates."""
    if not enabled:
        yield
        return
    bar = progress_bar(epochs, desc, enabled=True, unit=unit)
    _EPOCH_BARS.append(bar)
    try:
        yield
        jax.effects_barrier()  # every epoch's callback has run
    finally:
        _EPOCH_BARS.remove(bar)
        bar.close()
