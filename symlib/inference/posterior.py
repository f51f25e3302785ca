"""One shape for every posterior approximation: ``fit_<method>(key, params0, model, data,
config) -> posterior`` and ``sample(key, posterior, n)``.

Every method takes the same five things:

- ``key``: the ``jax.random`` key of everything random in the fit (minibatch orders, crops,
  weight noise, dropout masks; the Laplace fit is deterministic and ignores it);
- ``params0``: one network's parameters, any pytree: where the fit starts (MAP, VI, SGHMC,
  dropout) or the trained network it is built around (Laplace, SWAG); for a deep ensemble,
  the members' starting networks stacked on a leading axis;
- ``model``: a :class:`Model`, the network as ``apply_fn(params, x) -> logits`` (a
  categorical likelihood);
- ``data``: a :class:`Data`, the training inputs and integer labels;
- ``config``: the method's settings, one NamedTuple per method (:class:`TrainConfig` for MAP
  and deep ensembles, :class:`VIConfig`, :class:`LaplaceConfig`, :class:`SWAGConfig`, :class:`SGHMCConfig`,
  :class:`DropoutConfig`).

and returns a posterior that :func:`sample` draws networks from, stacked on a leading axis:
:class:`PointEstimate` (MAP), :class:`Samples` (deep ensembles, SGHMC),
:class:`~symlib.core.gaussian.DiagonalGaussian` (VI; the same pytree as the Gaussian
summaries and the alignment's ``(mu, sigma)``),
:class:`~symlib.inference.laplace.LaplacePosterior`,
:class:`~symlib.inference.swag.SWAGPosterior`,
:class:`DropoutPosterior` and :class:`LastLayerLaplace` (a last-layer KFAC posterior in its
network). A new posterior type joins :func:`sample` with
``@draw.register`` (:func:`functools.singledispatch` on the posterior's type).

The fits are the library's training loops, called with the same numbers: ``fit_map`` is
:func:`~symlib.inference.training.train_map`, ``fit_vi`` is
:func:`~symlib.inference.vi.train_vi` with ``categorical_loglik_fn(model.apply_fn)``, and so
on, so a fit here gives bit for bit what the loop gives. The loops stay public for what the
shape leaves out: their diagnostics (epoch losses, the ELBO history), banks of many networks
at once (``train_map_many``, ``train_many``), a :class:`~symlib.inference.vi.MeanField`
module of one's own, or a log-likelihood other than the categorical one.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from symlib.core.checks import check_finite_tree, positive_int, warn_raw_images
from symlib.core.gaussian import DiagonalGaussian, sample_gaussian
from symlib.inference.dropout import dropout_samples, train_dropout
from symlib.inference.laplace import (MAX_FULL_PARAMS, KFACPosterior, LaplacePosterior, kfac_sample,
                                      laplace_posterior, laplace_sample)
from symlib.inference.sgmcmc import run_sghmc
from symlib.inference.swag import SWAGConfig, SWAGPosterior, swag_sample, train_swag
from symlib.inference.training import TrainConfig, train_map, train_map_many
from symlib.inference.vi import DEFAULT_PRIOR_VAR, categorical_loglik_fn, train_vi

PyTree = Any

__all__ = ["Model", "Data", "PointEstimate", "Samples", "DropoutPosterior", "LastLayerLaplace", "VIConfig", "LaplaceConfig",
           "SGHMCConfig", "DropoutConfig", "fit_map", "fit_ensemble", "fit_vi", "fit_laplace", "fit_swag", "fit_sghmc",
           "fit_dropout", "sample", "draw", "FITS", "NonFiniteFitError"]


class Model(NamedTuple):
    """A classifier: ``apply_fn(params, x) -> logits`` of one network (categorical likelihood)."""

    apply_fn: Callable[[PyTree, jax.Array], jax.Array]


class Data(NamedTuple):
    """Training inputs ``x`` (leading axis: examples; what ``apply_fn`` takes) and integer labels ``y``."""

    x: Any
    y: Any


class PointEstimate(NamedTuple):
    """One network (MAP): :func:`sample` repeats it."""

    params: PyTree


class Samples(NamedTuple):
    """Networks already drawn (SGHMC), stacked on a leading axis: :func:`sample` takes the
    first ``n`` (the key is not used)."""

    samples: PyTree


class DropoutPosterior(NamedTuple):
    """MC dropout: the trained deterministic weights, the rate and the dropped layer's name."""

    params: PyTree
    rate: float
    layer: str = "dense_1"


class LastLayerLaplace(NamedTuple):
    """A network whose last dense layer ``layer`` has a Kronecker-factored Laplace posterior
    (:func:`~symlib.inference.laplace.last_layer_kfac`, Laurent et al.'s ResNet-18): its draws
    are copies of ``params`` with that layer drawn from ``posterior``."""

    params: PyTree
    posterior: KFACPosterior
    layer: str = "head"


class VIConfig(NamedTuple):
    """Mean-field VI (Bayes by backprop; :func:`~symlib.inference.vi.train_vi`): Adam for
    ``epochs`` passes in minibatches of ``batch_size`` at ``learning_rate``, prior
    ``N(0, prior_var)``, initial standard deviation ``std_init`` (None: the loop's default),
    likelihood ``temperature``, ``num_mc`` weight draws per step, ``n_data`` the likelihood's
    ``N`` (None: ``len(x)``), ``loop`` ``"scan"`` or ``"python"``."""

    epochs: int
    batch_size: int
    learning_rate: Any
    prior_var: float = DEFAULT_PRIOR_VAR
    std_init: float | None = None
    temperature: float = 1.0
    num_mc: int = 1
    n_data: int | None = None
    loop: str = "scan"


class LaplaceConfig(NamedTuple):
    """Laplace around the trained network (:func:`~symlib.inference.laplace.laplace_posterior`):
    ``prior_precision``, ``hessian`` ``"full"`` or ``"ggn"``, accumulation ``batch_size``,
    eigenvalue floor ``min_eigenvalue`` (None: the prior precision), ``num_data`` the
    likelihood's ``N`` (None: ``len(x)``), ``max_params`` the size above which it refuses
    (None: no limit)."""

    prior_precision: float
    hessian: str = "full"
    batch_size: int = 32
    min_eigenvalue: float | None = None
    num_data: int | None = None
    max_params: int | None = MAX_FULL_PARAMS


class SGHMCConfig(NamedTuple):
    """SGHMC (:func:`~symlib.inference.sgmcmc.run_sghmc`): its arguments after the data."""

    step_size: float
    epochs: int
    batch_size: int
    num_samples: int
    burn_in: int | None = None
    thinning: int | None = None
    prior_std: float = 1.0
    friction: float = 0.05
    num_integration_steps: int = 50
    temperature: float = 1.0


class DropoutConfig(NamedTuple):
    """MC dropout (:func:`~symlib.inference.dropout.train_dropout`): the MAP training
    ``train``, the dropout ``rate`` and the ``layer`` whose input is dropped."""

    train: TrainConfig
    rate: float
    layer: str = "dense_1"


class NonFiniteFitError(FloatingPointError):
    """A fit whose loss, parameters or samples became NaN or inf; the message names where
    and what to change."""


def _first_bad(values) -> int | None:
    """The 0-based index of the first non-finite entry of a 1-d history, or None."""
    bad = np.flatnonzero(~np.isfinite(np.asarray(values, np.float64).reshape(len(values), -1)).all(axis=1))
    return int(bad[0]) if bad.size else None


def _finite_result(tree, method: str, what: str, fix: str, history=None, unit: str = "epoch") -> None:
    """Raise :class:`NonFiniteFitError` if ``tree`` (the fit's result) holds NaN or inf,
    naming the first non-finite entry of ``history`` (a loss per ``unit``) and the fix."""
    if all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree_util.tree_leaves(tree)):
        return
    where = ""
    if history is not None and (k := _first_bad(history)) is not None:
        where = f" (the loss was first non-finite at {unit} {k + 1})"
    raise NonFiniteFitError(f"{method}: the {what} became NaN or inf{where}; {fix}")


def _check(model, data, config, config_type, params0=None) -> None:
    if not isinstance(model, Model):
        raise TypeError(f"model must be a symlib.inference.Model(apply_fn), got {type(model).__name__}. The fits "
                        "take (key, params0, model, data, config); the training loops once named fit_map, "
                        "fit_map_many, fit_vi, fit_mlp_vi, fit_swag and fit_dropout are train_map, train_map_many, "
                        "train_vi, train_mlp_vi, train_swag and train_dropout")
    if not isinstance(data, Data):
        raise TypeError(f"data must be a symlib.inference.Data(x, y), got {type(data).__name__}")
    if not isinstance(config, config_type):
        raise TypeError(f"config must be a {config_type.__name__}, got {type(config).__name__}")
    if params0 is not None:
        check_finite_tree(params0, "params0")
    warn_raw_images(data.x, "data.x")


def fit_map(key: jax.Array, params0: PyTree, model: Model, data: Data, config: TrainConfig) -> PointEstimate:
    """MAP training from ``params0`` (:func:`~symlib.inference.training.train_map`, ``key`` its data key)."""
    _check(model, data, config, TrainConfig, params0)
    params, losses = train_map(params0, key, data.x, data.y, config, apply_fn=model.apply_fn)
    _finite_result(params, "fit_map", "parameters", f"lower the learning rate (config.learning_rate="
                   f"{config.learning_rate!r})", losses)
    return PointEstimate(params)


def fit_ensemble(key: jax.Array, params0: PyTree, model: Model, data: Data, config: TrainConfig) -> Samples:
    """A deep ensemble: every member trained to its MAP from its own start, all at once
    (:func:`~symlib.inference.training.train_map_many`). Here ``params0`` holds the ``K``
    members' starting networks stacked on a leading axis (e.g. ``jax.vmap(init_fn)`` of ``K``
    keys); member ``i`` draws its minibatch order from ``jax.random.split(key, K)[i]``. The
    trained members are the posterior's samples."""
    _check(model, data, config, TrainConfig, params0)
    leaves = jax.tree_util.tree_leaves(params0)
    if not leaves or np.ndim(leaves[0]) == 0:
        raise ValueError("params0 must hold the ensemble members' starting networks stacked on a leading axis")
    params, losses = train_map_many(params0, jax.random.split(key, np.shape(leaves[0])[0]), data.x, data.y, config,
                                    apply_fn=model.apply_fn)
    _finite_result(params, "fit_ensemble", "members' parameters", f"lower the learning rate "
                   f"(config.learning_rate={config.learning_rate!r})", np.asarray(losses).T)
    return Samples(params)


def fit_vi(key: jax.Array, params0: PyTree, model: Model, data: Data, config: VIConfig) -> DiagonalGaussian:
    """Mean-field VI with means initialised at ``params0`` (:func:`~symlib.inference.vi.train_vi`)."""
    _check(model, data, config, VIConfig, params0)
    with warnings.catch_warnings():  # a non-finite ELBO is an error here, named below
        warnings.filterwarnings("ignore", "the ELBO became non-finite", RuntimeWarning)
        res = train_vi(key, params0, categorical_loglik_fn(model.apply_fn), data.x, data.y, **config._asdict())
    _finite_result(tuple(res.gaussian), "fit_vi", "posterior's means or standard deviations",
                   f"lower the learning rate (config.learning_rate={config.learning_rate!r})", res.elbo_history)
    return res.gaussian


def fit_laplace(key: jax.Array, params0: PyTree, model: Model, data: Data, config: LaplaceConfig) -> LaplacePosterior:
    """Laplace around the trained network ``params0``
    (:func:`~symlib.inference.laplace.laplace_posterior`; deterministic, ``key`` unused)."""
    _check(model, data, config, LaplaceConfig, params0)
    return laplace_posterior(params0, data.x, data.y, apply_fn=model.apply_fn, **config._asdict())


def fit_swag(key: jax.Array, params0: PyTree, model: Model, data: Data, config: SWAGConfig) -> SWAGPosterior:
    """SWAG from the trained network ``params0`` (:func:`~symlib.inference.swag.train_swag`)."""
    _check(model, data, config, SWAGConfig, params0)
    post = train_swag(key, params0, data.x, data.y, config, apply_fn=model.apply_fn)
    _finite_result(post, "fit_swag", "SWAG moments", "lower the learning rate (config.learning_rate="
                   f"{config.learning_rate!r})")
    return post


def fit_sghmc(key: jax.Array, params0: PyTree, model: Model, data: Data, config: SGHMCConfig) -> Samples:
    """SGHMC from ``params0`` (:func:`~symlib.inference.sgmcmc.run_sghmc`); the kept draws."""
    _check(model, data, config, SGHMCConfig, params0)
    res = run_sghmc(key, params0, data.x, data.y, apply_fn=model.apply_fn, **config._asdict())
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(res.samples)]
    bad = _first_bad(np.concatenate([leaf.reshape(leaf.shape[0], -1) for leaf in leaves], axis=1))
    if bad is not None:
        raise NonFiniteFitError(f"fit_sghmc: the samples became NaN or inf (first at kept sample {bad + 1} of "
                                f"{leaves[0].shape[0]}, draw {int(res.draw_indices[bad]) + 1}); lower the step size "
                                f"(config.step_size={config.step_size!r})")
    return Samples(res.samples)


def fit_dropout(key: jax.Array, params0: PyTree, model: Model, data: Data, config: DropoutConfig) -> DropoutPosterior:
    """Training with dropout from ``params0`` (:func:`~symlib.inference.dropout.train_dropout`)."""
    _check(model, data, config, DropoutConfig, params0)
    params, losses = train_dropout(params0, key, data.x, data.y, config.train, rate=config.rate, layer=config.layer,
                                   apply_fn=model.apply_fn)
    _finite_result(params, "fit_dropout", "parameters", f"lower the learning rate (config.train.learning_rate="
                   f"{config.train.learning_rate!r})", losses)
    return DropoutPosterior(params, config.rate, config.layer)


#: method name -> its fit (the posterior approximations of Laurent et al.'s Table 1 and more)
FITS: dict[str, Callable[..., Any]] = {"map": fit_map, "ensemble": fit_ensemble, "vi": fit_vi, "laplace": fit_laplace,
                                       "swag": fit_swag, "sghmc": fit_sghmc, "dropout": fit_dropout}


@functools.singledispatch
def draw(posterior: Any, key: jax.Array, n: int) -> PyTree:
    """:func:`sample` dispatched on the posterior's type (its first argument): register a
    sampler of a new posterior type with ``@draw.register``."""
    raise TypeError(f"no sampler for a {type(posterior).__name__}; register one with "
                    "symlib.inference.posterior.draw.register")


def sample(key: jax.Array, posterior: Any, n: int) -> PyTree:
    """``n`` networks drawn from ``posterior``, stacked on a leading axis of every leaf.

    Args:
        key: ``jax.random`` key of the draws.
        posterior: what a ``fit_<method>`` returned (or any type registered with :func:`draw`).
        n: number of networks.

    Returns:
        The networks, in the layout of one network with a leading axis of size ``n``.

    Raises:
        TypeError: for a posterior type with no sampler.
        ValueError: for ``n`` not a positive integer, or more than a :class:`Samples` holds.
    """
    return draw(posterior, key, n)


@draw.register
def _(posterior: PointEstimate, key, n):
    n = positive_int(n, "n")
    return jax.tree_util.tree_map(lambda a: np.broadcast_to(np.asarray(a), (n,) + np.shape(a)), posterior.params)


@draw.register
def _(posterior: DiagonalGaussian, key, n):
    return sample_gaussian(key, posterior.mean, posterior.std, n)


@draw.register
def _(posterior: LaplacePosterior, key, n):
    return laplace_sample(key, posterior, n)


@draw.register
def _(posterior: LastLayerLaplace, key, n):
    if not isinstance(posterior.params, dict) or posterior.layer not in posterior.params:
        raise ValueError(f"LastLayerLaplace: the network has no top-level layer {posterior.layer!r} to draw "
                         "(layer names the params' entry of the last dense layer)")
    head = kfac_sample(key, posterior.posterior, n)
    n = positive_int(n, "n")
    stack = jax.tree_util.tree_map(lambda a: np.broadcast_to(np.asarray(a), (n, *np.shape(a))), posterior.params)
    return {**stack, posterior.layer: {k: np.asarray(v) for k, v in head.items()}}


@draw.register
def _(posterior: SWAGPosterior, key, n):
    return swag_sample(key, posterior, n)


@draw.register
def _(posterior: Samples, key, n):
    n = positive_int(n, "n")
    have = len(jax.tree_util.tree_leaves(posterior.samples)[0])
    if n > have:
        raise ValueError(f"the posterior holds {have} samples; cannot take n={n}")
    return jax.tree_util.tree_map(lambda a: a[:n], posterior.samples)


@draw.register
def _(posterior: DropoutPosterior, key, n):
    return dropout_samples(key, posterior.params, n, rate=posterior.rate, layer=posterior.layer)
