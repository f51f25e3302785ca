"""The shape every posterior approximation shares: the model and data a fit takes, the
posteriors it returns, and :func:`sample`.

Every method is ``fit_<method>(key, params0, model, data, config) -> posterior`` (its module:
:mod:`~symlib.inference.training` for MAP and deep ensembles, :mod:`~symlib.inference.vi`,
:mod:`~symlib.inference.laplace`, :mod:`~symlib.inference.swag`,
:mod:`~symlib.inference.sgmcmc`, :mod:`~symlib.inference.dropout`, and
:func:`symlib.inference.fit_hmc`), with

- ``key``: the ``jax.random`` key of everything random in the fit (minibatch orders, crops,
  weight noise, dropout masks; the Laplace fit is deterministic and ignores it);
- ``params0``: one network's parameters, any pytree: where the fit starts (MAP, VI, SGHMC,
  dropout, HMC) or the trained network it is built around (Laplace, SWAG); for a deep
  ensemble, the members' starting networks stacked on a leading axis;
- ``model``: a :class:`Model`, the network as ``apply_fn(params, x) -> outputs``, its
  likelihood (:class:`~symlib.inference.likelihood.Categorical` by default: the outputs are
  logits; :class:`~symlib.inference.likelihood.Gaussian`: a regression) and which entries of
  its pytree are model state;
- ``data``: a :class:`Data`, the training inputs and targets (integer labels for a
  categorical likelihood, real targets of the outputs' shape for a Gaussian one);
- ``config``: the method's settings, one type per method.

Each returns a posterior that :func:`sample` draws networks from, stacked on a leading
axis: :class:`PointEstimate` (MAP), :class:`Samples` (deep ensembles, SGHMC; HMC with its
chains kept apart), :class:`~symlib.core.gaussian.DiagonalGaussian` (VI),
:class:`~symlib.inference.laplace.LaplacePosterior`,
:class:`~symlib.inference.laplace.LastLayerLaplace`,
:class:`~symlib.inference.swag.SWAGPosterior`,
:class:`~symlib.inference.dropout.DropoutPosterior`; each method's module registers its
posterior's sampler with ``@sample.register``. What a fit reports beyond the posterior is the
posterior's ``info`` (epoch losses, the ELBO, the HMC run's statistics).

**Several modes at once.** :func:`fit_modes` fits one posterior around each of ``M`` networks
stacked on a leading axis (Laurent et al.'s multi-mode methods) in one compiled loop
(``jax.vmap`` of the method's loop): on a GPU, ``M`` small networks cost about the time of
one. VI (``loop="scan"``) and SWAG register their batched loop with ``@fit_modes.register``.

**Likelihood.** Every fit takes the likelihood from ``model.likelihood`` (its per-example
log-likelihood, its check of the targets, and for the Laplace GGN its output-space Hessian;
:mod:`symlib.inference.likelihood`): MAP, ensembles, dropout and SWAG minimise its mean
negative log-likelihood plus the prior term, VI and SGHMC sum it over their minibatches, the
dense Laplace and HMC over the training set. The last-layer KFAC Laplace and the check of
:func:`~symlib.inference.laplace.fit_laplace`'s sampled predictive (an accuracy) are
categorical only.

**Model state.** A network's pytree may hold entries that are no weights: a Flax model's
variables dict ``{"params": ..., "batch_stats": ...}`` holds BatchNorm's running statistics.
:class:`Model` names them (``state=("batch_stats",)``) and gives the training-mode forward
(``train_apply_fn``); then every fit differentiates, and puts a posterior on, the weights
only, and every sampled network carries the state:

- MAP, deep ensembles and SWAG train in the model's training mode and take the state the
  forward returns at every step (BatchNorm's running statistics updated as the model
  defines); SWAG's posterior holds the statistics of the end of its run, with no spread;
- VI, Laplace (dense or last layer), SGHMC and HMC hold the state fixed at ``params0``'s values
  (the evaluation mode of ``apply_fn``): VI's standard deviations are exactly 0 there, the
  Laplace and SGHMC samples carry it unchanged (full-batch HMC too:
  :func:`~symlib.inference.hmc.make_logdensity`'s ``state`` holds it fixed);
- MC dropout uses the model's own dropout (:func:`~symlib.inference.dropout.fit_dropout`).

Each fit checks its inputs first (:func:`check_fit_inputs`) and its result after
(:func:`raise_if_not_finite`: a :class:`NonFiniteFitError` names the epoch or sample and the fix).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite_tree, check_key, positive_int, warn_raw_images
from symlib.core.gaussian import DiagonalGaussian, sample_gaussian
from symlib.inference._loop import check_state
from symlib.inference.likelihood import Categorical, Gaussian, check_likelihood

__all__ = ["Model", "Data", "PointEstimate", "Samples", "DiagonalGaussian", "NonFiniteFitError", "sample",
           "fit_modes", "check_fit_inputs", "raise_if_not_finite", "first_non_finite", "stacked_leading_axis",
           "unstack"]

PyTree = Any


class Model(NamedTuple):
    """A network and its likelihood: its forward passes, how its outputs explain the targets,
    and which entries of its pytree are model state.

    Attributes:
        apply_fn: ``apply_fn(params, x) -> outputs`` of one network (the logits of a
            classifier), deterministic: the evaluation mode (running statistics, no dropout), e.g.
            ``lambda v, x: module.apply(v, x, train=False)`` for a ``flax.linen`` module.
        state: the top-level entries of ``params`` that are model state, not weights (e.g.
            ``("batch_stats",)``): never differentiated, never given a posterior spread
            (module docstring); every name must be a top-level key of ``params0``.
        train_apply_fn: ``train_apply_fn(params, x, key) -> (outputs, new_state)``, the
            training-mode forward (the model's own dropout drawn from ``key``, BatchNorm on the
            batch's statistics) and the updated state entries (a dict over ``state``'s names;
            ``{}`` without state), e.g. ``lambda v, x, k: module.apply(v, x, train=True,
            mutable=["batch_stats"], rngs={"dropout": k})``. MAP, ensembles, SWAG and dropout
            train with it. ``None``: they train with ``apply_fn``, the state held fixed.
        dropout_apply_fn: ``dropout_apply_fn(params, x, key) -> outputs``, MC dropout's
            prediction: the model's own dropout on (drawn from ``key``), its state in
            evaluation mode (running statistics), e.g. ``lambda v, x, k: module.apply(v, x,
            train=False, mc_dropout=True, rngs={"dropout": k})`` for a module whose
            ``nn.Dropout`` is ``deterministic=not (train or mc_dropout)``. With it
            :func:`fit_dropout` uses the model's dropout instead of a layer name.
        likelihood: how the outputs explain the targets ``data.y``:
            :class:`~symlib.inference.likelihood.Categorical` (default; logits ``(n, classes)``,
            integer labels) or :class:`~symlib.inference.likelihood.Gaussian` (``noise_std``;
            real targets of the outputs' shape, ``(n,)`` or ``(n, d)``). Every fit uses it.
    """

    apply_fn: Callable[[PyTree, jax.Array], jax.Array]
    state: tuple[str, ...] = ()
    train_apply_fn: Callable[[PyTree, jax.Array, jax.Array], tuple[jax.Array, dict]] | None = None
    dropout_apply_fn: Callable[[PyTree, jax.Array, jax.Array], jax.Array] | None = None
    likelihood: Categorical | Gaussian = Categorical()


class Data(NamedTuple):
    """Training inputs ``x`` (leading axis: examples; what ``apply_fn`` takes) and targets ``y``
    (integer labels for a categorical likelihood; real targets for a Gaussian one)."""

    x: Any
    y: Any


class PointEstimate(NamedTuple):
    """One network (MAP): :func:`sample` repeats it. ``info``: what the fit reports
    (:func:`fit_map`: ``epoch_loss``, the mean objective of every epoch, and with
    ``keep_trajectory`` the ``trajectory``, the parameters after every epoch), or None."""

    params: PyTree
    info: Any = None


class Samples(NamedTuple):
    """Networks already drawn (deep ensembles, SGHMC, HMC), stacked on a leading axis:
    :func:`sample` takes the first ``n`` (the key is not used).

    With ``chains=True`` (:func:`fit_hmc`) every leaf has two leading axes, ``(chains, draws
    per chain)``: the chains stay apart for the convergence diagnostics
    (:func:`symlib.inference.diagnostics.function_space_diagnostics` takes ``samples`` as
    it is), and :func:`sample` and :meth:`stacked` take the draws across the chains in turn
    (draw 0 of every chain, then draw 1, ...), so a few draws already come from every chain.
    ``info``: what the sampler reports (HMC: its :class:`~symlib.inference.hmc.HMCResult`,
    with acceptance, divergences and step sizes), or None.
    """

    samples: PyTree
    chains: bool = False
    info: Any = None

    def stacked(self) -> PyTree:
        """The networks on one leading axis (with ``chains``: draw-major across the chains)."""
        if not self.chains:
            return self.samples
        return jax.tree_util.tree_map(lambda a: np.swapaxes(np.asarray(a), 0, 1).reshape(-1, *np.shape(a)[2:]),
                                      self.samples)


class NonFiniteFitError(FloatingPointError):
    """A fit whose loss, parameters or samples became NaN or inf; the message names where
    and what to change."""


def first_non_finite(values) -> int | None:
    """The 0-based index of the first non-finite entry of a 1-d history, or None."""
    bad = np.flatnonzero(~np.isfinite(np.asarray(values, np.float64).reshape(len(values), -1)).all(axis=1))
    return int(bad[0]) if bad.size else None


def raise_if_not_finite(tree, method: str, what: str, fix: str, history=None, unit: str = "epoch") -> None:
    """Raise :class:`NonFiniteFitError` if ``tree`` (the fit's result) holds NaN or inf,
    naming the first non-finite entry of ``history`` (a loss per ``unit``) and the fix."""
    if all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree_util.tree_leaves(tree)):
        return
    where = ""
    if history is not None and (k := first_non_finite(history)) is not None:
        where = f" (the loss was first non-finite at {unit} {k + 1})"
    raise NonFiniteFitError(f"{method}: the {what} became NaN or inf{where}; {fix}")


def check_fit_inputs(model, data, config, config_type, params0=None) -> None:
    """Check a fit's inputs before any work: ``model`` a :class:`Model` with a likelihood, ``data`` a
    :class:`Data`, ``config`` a ``config_type``, and ``params0`` (if given) finite with the model's state entries."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be a symlib.inference.Model(apply_fn), got {type(model).__name__}: the fits "
                        "take (key, params0, model, data, config)")
    if not isinstance(data, Data):
        raise TypeError(f"data must be a symlib.inference.Data(x, y), got {type(data).__name__}")
    if not isinstance(config, config_type):
        raise TypeError(f"config must be a {config_type.__name__}, got {type(config).__name__}")
    for name in ("train_apply_fn", "dropout_apply_fn"):
        if getattr(model, name) is not None and not callable(getattr(model, name)):
            raise TypeError(f"model.{name} must be callable or None, got {getattr(model, name)!r}")
    check_likelihood(model.likelihood, "model.likelihood")
    if params0 is not None:
        check_state(params0, model.state, "params0")
        check_finite_tree(params0, "params0")
    warn_raw_images(data.x, "data.x")


@functools.singledispatch
def _draw(posterior: Any, key: jax.Array, n: int) -> PyTree:
    raise TypeError(f"no sampler for a {type(posterior).__name__}; register one with "
                    "@symlib.inference.sample.register")


def sample(key: jax.Array, posterior: Any, n: int) -> PyTree:
    """``n`` networks drawn from ``posterior``, stacked on a leading axis of every leaf.

    Dispatched on the posterior's type: a new posterior type joins with
    ``@sample.register`` on a function ``(posterior: NewType, key, n) -> networks``
    (:func:`functools.singledispatch` on its first argument).

    Args:
        key: ``jax.random`` key of the draws.
        posterior: what a ``fit_<method>`` returned (or any registered type).
        n: number of networks.

    Returns:
        The networks, in the layout of one network with a leading axis of size ``n``, as JAX
        arrays for every posterior type (in JAX's dtypes: a float64 numpy leaf becomes float32
        unless ``jax_enable_x64`` is on; a point estimate's copies are materialised).

    Raises:
        TypeError: for a posterior type with no sampler.
        ValueError: for ``n`` not a positive integer, or more than a :class:`Samples` holds.
    """
    return _draw(posterior, key, n)


sample.register = _draw.register


@sample.register
def _(posterior: PointEstimate, key, n):
    n = positive_int(n, "n")
    return jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (n,) + jnp.shape(a)), posterior.params)


@sample.register
def _(posterior: DiagonalGaussian, key, n):
    return sample_gaussian(key, posterior.mean, posterior.std, n)


@sample.register
def _(posterior: Samples, key, n):
    n = positive_int(n, "n")
    stack = posterior.stacked()
    have = len(jax.tree_util.tree_leaves(stack)[0])
    if n > have:
        raise ValueError(f"the posterior holds {have} samples; cannot take n={n}")
    return jax.tree_util.tree_map(lambda a: jnp.asarray(a[:n]), stack)


def stacked_leading_axis(stack: PyTree, name: str) -> int:
    """The common leading axis of a stacked pytree (``jax.vmap`` layout).

    Args:
        stack: a pytree of arrays, each with the same leading (sample) axis.
        name: how error messages call it.

    Returns:
        The length of the leading axis.

    Raises:
        ValueError: naming ``name`` if it holds no arrays, a leaf is a scalar, or the
            leaves disagree on the leading axis.
    """
    leaves = jax.tree_util.tree_leaves(stack)
    if not leaves:
        raise ValueError(f"{name} holds no arrays")
    if any(np.ndim(a) < 1 for a in leaves):
        raise ValueError(f"{name} must be stacked: every leaf needs a leading axis, found a scalar leaf")
    lead = {np.shape(a)[0] for a in leaves}
    if len(lead) != 1:
        raise ValueError(f"{name} must be stacked: the leaves disagree on the leading axis, got sizes {sorted(lead)}")
    return lead.pop()


def unstack(stack: PyTree) -> list[PyTree]:
    """The entries of a stacked pytree (leading axis), one pytree each, in order."""
    leaves, treedef = jax.tree_util.tree_flatten(stack)
    return [jax.tree_util.tree_unflatten(treedef, [a[i] for a in leaves]) for i in range(len(leaves[0]))]


@functools.singledispatch
def _fit_each(config: Any, keys: jax.Array, modes: PyTree, model: Model, data: Data) -> list:
    raise TypeError(f"fit_modes has no batched loop for a {type(config).__name__}: fit each mode with its "
                    "fit_<method> (VIConfig and SWAGConfig have one; a new method joins with @fit_modes.register)")


def fit_modes(key: jax.Array, modes: PyTree, model: Model, data: Data, config: Any) -> list:
    """One posterior around each of ``M`` networks, fitted at once: mode ``m``'s is the method's
    ``fit_<method>(jax.random.split(key, M)[m], mode_m, model, data, config)``, equal to it up to
    float rounding, with every mode in one compiled loop (``jax.vmap``).

    Dispatched on the config's type: a method joins with ``@fit_modes.register`` on a function
    ``(config: NewConfig, keys, modes, model, data) -> list of posteriors``.

    Args:
        key: ``jax.random`` key, split into one key per mode.
        modes: ``M`` networks stacked on a leading axis of every leaf (e.g. the ``samples`` of
            :func:`~symlib.inference.training.fit_ensemble`): where each fit starts (VI) or
            the trained network it is built around (SWAG).
        model: the :class:`Model`.
        data: the :class:`Data`.
        config: the method's config (:class:`~symlib.inference.vi.VIConfig` with
            ``loop="scan"``, :class:`~symlib.inference.swag.SWAGConfig`).

    Returns:
        The ``M`` posteriors, in mode order.

    Raises:
        TypeError: for a config type with no batched loop.
        ValueError: naming ``modes`` if it is not a stack of networks, or what the method's fit
            would name.
        NonFiniteFitError: naming the mode whose fit became NaN or inf.
    """
    check_key(key, "key")
    num_modes = stacked_leading_axis(modes, "modes")
    return _fit_each(config, jax.random.split(key, num_modes), modes, model, data)


fit_modes.register = _fit_each.register
