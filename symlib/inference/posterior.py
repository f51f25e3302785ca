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
- ``config``: the method's settings, one per method (:class:`TrainConfig` for MAP and deep
  ensembles, :class:`VIConfig`, :class:`LaplaceConfig`, :class:`SWAGConfig`,
  :class:`SGHMCConfig`, :class:`~symlib.inference.hmc.HMCConfig` (:func:`fit_hmc`, whose
  prior and temperature are keyword arguments: they are the target's, not the sampler's),
  :class:`DropoutConfig`).

and returns a posterior that :func:`sample` draws networks from, stacked on a leading axis:
:class:`PointEstimate` (MAP), :class:`Samples` (deep ensembles, SGHMC; HMC with its chains kept apart),
:class:`~symlib.core.gaussian.DiagonalGaussian` (VI; the same pytree as the Gaussian
summaries and the alignment's ``(mu, sigma)``),
:class:`~symlib.inference.laplace.LaplacePosterior`,
:class:`~symlib.inference.swag.SWAGPosterior`,
:class:`DropoutPosterior` and :class:`LastLayerLaplace` (a last-layer KFAC posterior in its
network). A new posterior type joins :func:`sample` with
``@draw.register`` (:func:`functools.singledispatch` on the posterior's type).

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
- MC dropout uses the model's own dropout (:func:`fit_dropout`).

The fits are the library's training loops, called with the same numbers: ``fit_map`` is
:func:`~symlib.inference.training.train_map`, ``fit_vi`` is
:func:`~symlib.inference.vi.train_vi` with ``categorical_loglik_fn(model.apply_fn)``,
``fit_hmc`` is :func:`~symlib.inference.hmc.run_hmc` on
:func:`~symlib.inference.hmc.make_logdensity`, and so on, so a fit here gives bit for bit
what the loop gives. What a fit reports beyond the posterior is its ``info``: ``fit_map``'s
and ``fit_ensemble``'s epoch losses (and a trajectory, or what observers inside the compiled
loop saw), ``fit_hmc``'s :class:`~symlib.inference.hmc.HMCResult`. A bank of many networks
trained at once is ``fit_ensemble`` with one key per network. The loops are still public for
what the shape leaves out (the ELBO history, a
:class:`~symlib.inference.vi.MeanField` module of one's own, a log-likelihood other than the
categorical one); every experiment of the book but one (Rossi et al.'s ResNet20 VI, which
reports its ELBO) goes through the fits.
"""
from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_finite_tree, positive_int, warn_raw_images
from symlib.core.gaussian import DiagonalGaussian, sample_gaussian
from symlib.inference.dropout import dropout_samples, train_dropout
from symlib.inference.hmc import HMCConfig, make_logdensity, run_hmc
from symlib.inference._loop import check_state
from symlib.inference.laplace import (MAX_FULL_PARAMS, KFACPosterior, LaplacePosterior, LaplaceWarning, kfac_sample,
                                      laplace_posterior, laplace_sample, last_layer_kfac)
from symlib.inference.sgmcmc import run_sghmc
from symlib.inference.swag import SWAGConfig, SWAGPosterior, swag_sample, train_swag
from symlib.inference.training import TrainConfig, train_map, train_map_many
from symlib.inference.vi import DEFAULT_PRIOR_VAR, categorical_loglik_fn, train_vi

PyTree = Any

__all__ = ["Model", "Data", "PointEstimate", "Samples", "DropoutPosterior", "DropoutDraw", "LastLayerLaplace", "VIConfig",
           "LaplaceConfig", "PREDICTIVE_ACCURACY_DROP",
           "SGHMCConfig", "DropoutConfig", "fit_map", "fit_ensemble", "fit_vi", "fit_laplace", "fit_swag", "fit_sghmc",
           "fit_hmc", "fit_dropout", "sample", "draw", "FITS", "NonFiniteFitError"]


class Model(NamedTuple):
    """A classifier (categorical likelihood): its forward passes and which entries of its
    pytree are model state.

    Attributes:
        apply_fn: ``apply_fn(params, x) -> logits`` of one network, deterministic: the
            evaluation mode (running statistics, no dropout), e.g.
            ``lambda v, x: module.apply(v, x, train=False)`` for a ``flax.linen`` module.
        state: the top-level entries of ``params`` that are model state, not weights (e.g.
            ``("batch_stats",)``): never differentiated, never given a posterior spread
            (module docstring); every name must be a top-level key of ``params0``.
        train_apply_fn: ``train_apply_fn(params, x, key) -> (logits, new_state)``, the
            training-mode forward (the model's own dropout drawn from ``key``, BatchNorm on the
            batch's statistics) and the updated state entries (a dict over ``state``'s names;
            ``{}`` without state), e.g. ``lambda v, x, k: module.apply(v, x, train=True,
            mutable=["batch_stats"], rngs={"dropout": k})``. MAP, ensembles, SWAG and dropout
            train with it. ``None``: they train with ``apply_fn``, the state held fixed.
        dropout_apply_fn: ``dropout_apply_fn(params, x, key) -> logits``, MC dropout's
            prediction: the model's own dropout on (drawn from ``key``), its state in
            evaluation mode (running statistics), e.g. ``lambda v, x, k: module.apply(v, x,
            train=False, mc_dropout=True, rngs={"dropout": k})`` for a module whose
            ``nn.Dropout`` is ``deterministic=not (train or mc_dropout)``. With it
            :func:`fit_dropout` uses the model's dropout instead of a layer name.
    """

    apply_fn: Callable[[PyTree, jax.Array], jax.Array]
    state: tuple[str, ...] = ()
    train_apply_fn: Callable[[PyTree, jax.Array, jax.Array], tuple[jax.Array, dict]] | None = None
    dropout_apply_fn: Callable[[PyTree, jax.Array, jax.Array], jax.Array] | None = None


class Data(NamedTuple):
    """Training inputs ``x`` (leading axis: examples; what ``apply_fn`` takes) and integer labels ``y``."""

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


class DropoutDraw(NamedTuple):
    """MC-dropout networks drawn with the model's own dropout (:class:`DropoutPosterior`
    with a ``dropout_apply_fn``): the trained network ``params`` and the dropout key of every
    draw, ``rng`` (raw key data, :func:`jax.random.key_data`). Stacked on a leading axis by
    :func:`sample`; evaluate ONE draw with :attr:`DropoutPosterior.predict_fn`."""

    params: PyTree
    rng: jax.Array


@dataclasses.dataclass(frozen=True)
class DropoutPredict:
    """``(draw, x) -> logits`` of one :class:`DropoutDraw`: the model's
    ``dropout_apply_fn(draw.params, x, key)`` with the draw's key. Frozen and hashable, so it
    can be the ``apply_fn`` of :func:`symlib.evaluation.predict_from_samples`."""

    dropout_apply_fn: Callable[[PyTree, jax.Array, jax.Array], jax.Array]

    def __call__(self, draw: DropoutDraw, x: jax.Array) -> jax.Array:
        return self.dropout_apply_fn(draw.params, x, jax.random.wrap_key_data(draw.rng))


class DropoutPosterior(NamedTuple):
    """MC dropout: the trained weights and how dropout is drawn at prediction time.

    Two routes (:func:`fit_dropout`):

    - the model's own dropout (``dropout_apply_fn``, a :class:`Model` field; ``rate`` and
      ``layer`` ``None``): a draw is a :class:`DropoutDraw`, the network and one dropout key.
      Evaluate draws with :attr:`predict_fn` (``predict_from_samples(sample(key, post, n), x,
      apply_fn=post.predict_fn)``): every draw's key draws the masks of the model's own
      ``nn.Dropout`` layers, a fresh mask per input of a batch (the same for the same
      position in every batch of that draw). Any dropout layout works and the state (running
      statistics) is used as the model defines; but a draw is not a network in weight space,
      so the weight-space tools (alignment, MMD) do not take it, and ``model.apply_fn`` does
      not evaluate it.
    - a layer name (``rate``, ``layer``; symlib's pure-function networks, whose ``layer`` is a
      top-level dense layer): a draw is a network in weight space, ``params`` with one mask
      on the rows of ``params[layer]["kernel"]`` (:func:`~symlib.inference.dropout.dropout_samples`),
      evaluated with the model's ``apply_fn``; only that layer's input is dropped.
    """

    params: PyTree
    rate: float | None
    layer: str | None = "dense_1"
    dropout_apply_fn: Callable[[PyTree, jax.Array, jax.Array], jax.Array] | None = None

    @property
    def predict_fn(self) -> DropoutPredict:
        """``(draw, x) -> logits`` of one :class:`DropoutDraw` (the model's-dropout route)."""
        if self.dropout_apply_fn is None:
            raise ValueError("this DropoutPosterior drops a layer's input: its draws are networks in weight space; "
                             "evaluate them with the model's apply_fn")
        return DropoutPredict(self.dropout_apply_fn)


class LastLayerLaplace(NamedTuple):
    """A network whose last dense layer ``layer`` has a Kronecker-factored Laplace posterior
    (:func:`~symlib.inference.laplace.last_layer_kfac`, Laurent et al.'s ResNet-18): its draws
    are copies of ``params`` with that layer drawn from ``posterior``; everything else (other
    layers, model state such as BatchNorm statistics) is carried unchanged. ``layer`` is the
    layer's path in ``params``, its keys joined by ``/`` (``"head"``; ``"params/Dense_1"`` in a
    Flax variables dict)."""

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
    (None: no limit). ``last_layer``: the path (keys joined by ``/``) of the network's last
    dense layer, for a last-layer KFAC Laplace instead (:class:`LastLayerLaplace`; then
    ``hessian``, ``min_eigenvalue``, ``num_data`` and ``max_params`` are not used and
    ``batch_size`` is the feature extraction's)."""

    prior_precision: float
    hessian: str = "full"
    batch_size: int = 32
    min_eigenvalue: float | None = None
    num_data: int | None = None
    max_params: int | None = MAX_FULL_PARAMS
    last_layer: str | None = None


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
    """MC dropout: the MAP training ``train``; for a model without ``dropout_apply_fn``
    (:func:`~symlib.inference.dropout.train_dropout`), the dropout ``rate`` and the top-level
    ``layer`` whose input is dropped (None: ``"dense_1"``). A model with a ``dropout_apply_fn``
    uses its own dropout (its rate and layers): leave ``rate`` and ``layer`` None."""

    train: TrainConfig
    rate: float | None = None
    layer: str | None = None


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
    for name in ("train_apply_fn", "dropout_apply_fn"):
        if getattr(model, name) is not None and not callable(getattr(model, name)):
            raise TypeError(f"model.{name} must be callable or None, got {getattr(model, name)!r}")
    if params0 is not None:
        check_state(params0, model.state, "params0")
        check_finite_tree(params0, "params0")
    warn_raw_images(data.x, "data.x")


def fit_map(key: jax.Array, params0: PyTree, model: Model, data: Data, config: TrainConfig, *,
            keep_trajectory: bool = False, progress: bool | None = None) -> PointEstimate:
    """MAP training from ``params0`` (:func:`~symlib.inference.training.train_map`, ``key`` its data key).

    The gradient is over the weights; with ``model.train_apply_fn`` the loss is the training
    mode's and the model state (``model.state``) is replaced at every step by what it returns
    (BatchNorm's running statistics updated as the model defines), else the state is held.
    The estimate's ``info`` holds ``epoch_loss`` (the mean objective of every epoch) and, with
    ``keep_trajectory``, ``trajectory`` (the parameters at the start and after every epoch,
    stacked); ``progress`` shows a progress bar over the epochs."""
    _check(model, data, config, TrainConfig, params0)
    out = train_map(params0, key, data.x, data.y, config, keep_trajectory, progress, apply_fn=model.apply_fn,
                    stochastic_apply=model.train_apply_fn, state=model.state)
    params, losses = out[0], out[1]
    _finite_result(params, "fit_map", "parameters", f"lower the learning rate (config.learning_rate="
                   f"{config.learning_rate!r})", losses)
    return PointEstimate(params, {"epoch_loss": losses, **({"trajectory": out[2]} if keep_trajectory else {})})


def _member_keys(key, k: int) -> jax.Array:
    """``k`` member keys: ``key`` itself when it is already a stack of ``k`` keys, else ``split(key, k)``."""
    typed = jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key)
    if jnp.ndim(key) == (1 if typed else 2):
        if len(key) != k:
            raise ValueError(f"key holds {len(key)} member keys, but params0 holds {k} members")
        return key
    return jax.random.split(key, k)


def fit_ensemble(key: jax.Array, params0: PyTree, model: Model, data: Data, config: TrainConfig, *,
                 observe=None, observe_epoch=None, devices=None) -> Samples:
    """A deep ensemble: every member trained to its MAP from its own start, all at once
    (:func:`~symlib.inference.training.train_map_many`). Here ``params0`` holds the ``K``
    members' starting networks stacked on a leading axis (e.g. ``jax.vmap(init_fn)`` of ``K``
    keys); member ``i`` draws its minibatch order from ``jax.random.split(key, K)[i]``, or from
    ``key[i]`` when ``key`` is already a stack of ``K`` keys. The trained members are the
    posterior's samples. Model state as for :func:`fit_map`.

    ``observe(params_before, params_after)`` (every step) and ``observe_epoch(params)`` (the
    end of every epoch) are observers run inside the compiled loop
    (:func:`~symlib.inference.training.train_map_many`; e.g.
    :func:`symlib.symmetry.neuron_order.swap_counter`); ``devices`` shards the members over
    devices. The posterior's ``info`` holds ``epoch_loss`` (members x epochs) and, with an
    observer, ``observed`` (``{"step": ..., "epoch": ...}``)."""
    _check(model, data, config, TrainConfig, params0)
    leaves = jax.tree_util.tree_leaves(params0)
    if not leaves or np.ndim(leaves[0]) == 0:
        raise ValueError("params0 must hold the ensemble members' starting networks stacked on a leading axis")
    keys = _member_keys(key, np.shape(leaves[0])[0])
    out = train_map_many(params0, keys, data.x, data.y, config, observe, observe_epoch, model.apply_fn,
                         stochastic_apply=model.train_apply_fn, devices=devices, state=model.state)
    params, losses = out[0], out[1]
    _finite_result(params, "fit_ensemble", "members' parameters", f"lower the learning rate "
                   f"(config.learning_rate={config.learning_rate!r})", np.asarray(losses).T)
    info = {"epoch_loss": losses, **({"observed": out[2]} if observe is not None or observe_epoch is not None else {})}
    return Samples(params, info=info)


def fit_vi(key: jax.Array, params0: PyTree, model: Model, data: Data, config: VIConfig) -> DiagonalGaussian:
    """Mean-field VI with means initialised at ``params0`` (:func:`~symlib.inference.vi.train_vi`).

    The likelihood is ``model.apply_fn``'s (evaluation mode). The model state
    (``model.state``) is held fixed at ``params0``'s values: not optimised, standard deviation
    exactly 0, carried unchanged by every draw."""
    _check(model, data, config, VIConfig, params0)
    with warnings.catch_warnings():  # a non-finite ELBO is an error here, named below
        warnings.filterwarnings("ignore", "the ELBO became non-finite", RuntimeWarning)
        res = train_vi(key, params0, categorical_loglik_fn(model.apply_fn), data.x, data.y, **config._asdict(),
                       state=model.state)
    _finite_result(tuple(res.gaussian), "fit_vi", "posterior's means or standard deviations",
                   f"lower the learning rate (config.learning_rate={config.learning_rate!r})", res.elbo_history)
    return res.gaussian


#: :func:`fit_laplace` warns when the sampled predictive's accuracy on (up to) :data:`PREDICTIVE_CHECK_POINTS`
#: training points is more than this below the MAP network's (an absolute drop: 0.1 = 10 percentage points)
PREDICTIVE_ACCURACY_DROP = 0.1
#: training points and draws of that check (the points spread evenly over the training set)
PREDICTIVE_CHECK_POINTS, PREDICTIVE_CHECK_DRAWS = 256, 32


def _path(layer: str) -> list[str]:
    return layer.split("/")


def _get_layer(params, layer: str):
    node = params
    for i, k in enumerate(_path(layer)):
        if not isinstance(node, Mapping) or k not in node:
            where = "top-level layer" if i == 0 else "layer"
            raise ValueError(f"the network has no {where} {('/'.join(_path(layer)[:i + 1]))!r} (layer names "
                             "the path of the last dense layer, keys joined by '/', e.g. 'params/Dense_1')")
        node = node[k]
    if not isinstance(node, Mapping) or "kernel" not in node or np.ndim(node["kernel"]) < 2:
        raise ValueError(f"layer {layer!r} is not a dense layer with a 'kernel' (in, out)")
    return node


def _with_layer(params, layer: str, value):
    keys = _path(layer)
    if len(keys) == 1:
        return {**params, keys[0]: value}
    return {**params, keys[0]: _with_layer(params[keys[0]], "/".join(keys[1:]), value)}


@jax.jit
def _accuracy(logits, y):
    return jnp.mean(jnp.argmax(logits, axis=-1) == y)


@functools.partial(jax.jit, static_argnames=("apply_fn", "layer", "batch_size"))
def _features(params, x, *, apply_fn, layer: str, batch_size: int):
    head = _get_layer(params, layer)

    def one(xi):
        first = lambda k: apply_fn(_with_layer(params, layer, {**head, "kernel": k}), xi[None])[0, 0]  # noqa: E731
        return jax.grad(first)(head["kernel"])[:, 0]

    return jax.lax.map(one, x, batch_size=batch_size)


def _last_layer_features(params, layer: str, apply_fn, x, batch_size: int) -> np.ndarray:
    """The inputs ``(N, d)`` of the last dense layer ``layer`` on ``x``: the gradient of each
    example's first logit with respect to the layer's kernel is ``features_i e_0^T`` (one
    forward pass per example; the backward pass stops at the layer)."""
    head = _get_layer(params, layer)
    kernel = jnp.asarray(head["kernel"])
    feats = np.asarray(_features(params, jnp.asarray(x), apply_fn=apply_fn, layer=layer,
                                 batch_size=min(batch_size, len(x))))
    k = min(len(feats), 64)  # the layer must be the last: logits = features @ kernel + bias
    logits = np.asarray(apply_fn(params, jnp.asarray(x[:k])), np.float64)
    rebuilt = feats[:k] @ np.asarray(kernel, np.float64) + np.asarray(head.get("bias", 0.0), np.float64)
    if logits.shape != rebuilt.shape or not np.allclose(rebuilt, logits, rtol=1e-3,
                                                          atol=1e-3 * max(1.0, float(np.abs(logits).max()))):
        raise ValueError(f"layer {layer!r} is not the network's last dense layer: the logits are not "
                         "features @ kernel + bias")
    return feats


def _check_predictive(key, posterior, params0, model: Model, data: Data, config: LaplaceConfig, feats=None) -> None:
    """Warn (:class:`~symlib.inference.laplace.LaplaceWarning`) when the sampled predictive's
    accuracy on a few training points falls more than :data:`PREDICTIVE_ACCURACY_DROP` below
    the MAP network's."""
    n = len(data.y)
    idx = np.unique(np.linspace(0, n - 1, min(n, PREDICTIVE_CHECK_POINTS)).round().astype(int))
    x, y = jnp.asarray(np.asarray(data.x)[idx]), jnp.asarray(np.asarray(data.y)[idx])
    key = jax.random.key(0) if key is None else key
    s = PREDICTIVE_CHECK_DRAWS
    if isinstance(posterior, LastLayerLaplace):  # the features once, the head's draws on them
        head = kfac_sample(key, posterior.posterior, s)
        logits = jnp.einsum("nd,sdc->snc", jnp.asarray(feats[idx]), head["kernel"])
        logits = logits + (head["bias"][:, None] if "bias" in head else 0.0)
        map_logits = model.apply_fn(params0, x)
    else:
        draws = sample(key, posterior, s)
        logits = jax.lax.map(lambda p: model.apply_fn(p, x), draws)
        map_logits = model.apply_fn(params0, x)
    probs = jnp.mean(jax.nn.softmax(logits, axis=-1), axis=0)
    acc, ref = float(_accuracy(probs, y)), float(_accuracy(map_logits, y))
    if acc < ref - PREDICTIVE_ACCURACY_DROP:
        fix = ("raise the prior precision (config.prior_precision=" f"{config.prior_precision!r})")
        if config.last_layer is None:
            fix += (", use hessian='ggn'" if config.hessian == "full" else "") + " or a last-layer Laplace " \
                   "(config.last_layer)"
        warnings.warn(f"fit_laplace: the sampled predictive's accuracy ({acc:.1%}) is far below the MAP network's "
                      f"({ref:.1%}) on {len(idx)} training points ({s} draws; the threshold is "
                      f"{PREDICTIVE_ACCURACY_DROP:.0%} lower): the posterior is too wide for its draws to classify; "
                      f"{fix}", LaplaceWarning, stacklevel=3)


def fit_laplace(key: jax.Array, params0: PyTree, model: Model, data: Data,
                config: LaplaceConfig) -> LaplacePosterior | LastLayerLaplace:
    """Laplace around the trained network ``params0``: dense
    (:func:`~symlib.inference.laplace.laplace_posterior`), or with ``config.last_layer`` a
    last-layer KFAC (:func:`~symlib.inference.laplace.last_layer_kfac` on the layer's inputs,
    read off ``model.apply_fn``: a :class:`LastLayerLaplace`). The model state
    (``model.state``) is held fixed at ``params0``'s values (evaluation mode): no curvature,
    no spread, carried unchanged by every draw.

    The fit is deterministic; ``key`` (None: ``jax.random.key(0)``) only draws the
    :data:`PREDICTIVE_CHECK_DRAWS` networks of a check on :data:`PREDICTIVE_CHECK_POINTS`
    training points: a :class:`~symlib.inference.laplace.LaplaceWarning` names both
    accuracies when the sampled predictive's is more than :data:`PREDICTIVE_ACCURACY_DROP`
    below the MAP network's (a posterior too wide for its draws to classify; e.g. a dense
    Laplace at prior precision 1 on a CNN collapses to chance), with the fix."""
    _check(model, data, config, LaplaceConfig, params0)
    feats = None
    if config.last_layer is not None:
        if config.num_data is not None:
            raise ValueError("config.num_data is the dense Laplace's subsample scaling; a last-layer Laplace takes "
                             "the features of every example in data")
        feats = _last_layer_features(params0, config.last_layer, model.apply_fn, data.x,
                                     positive_int(config.batch_size, "batch_size"))
        head = _get_layer(params0, config.last_layer)
        post = LastLayerLaplace(params0, last_layer_kfac(feats, head["kernel"], head.get("bias"),
                                                         prior_precision=config.prior_precision), config.last_layer)
    else:
        kwargs = {k: v for k, v in config._asdict().items() if k != "last_layer"}
        post = laplace_posterior(params0, data.x, data.y, apply_fn=model.apply_fn, state=model.state, **kwargs)
    _check_predictive(key, post, params0, model, data, config, feats)
    return post


def fit_swag(key: jax.Array, params0: PyTree, model: Model, data: Data, config: SWAGConfig) -> SWAGPosterior:
    """SWAG from the trained network ``params0`` (:func:`~symlib.inference.swag.train_swag`).

    Model state as for :func:`fit_map` (trained in ``model.train_apply_fn``'s training mode,
    the state updated every step); the posterior holds the state of the end of the run with
    no spread (zero variance and deviations), so every draw carries it."""
    _check(model, data, config, SWAGConfig, params0)
    post = train_swag(key, params0, data.x, data.y, config, apply_fn=model.apply_fn,
                      stochastic_apply=model.train_apply_fn, state=model.state)
    _finite_result(post, "fit_swag", "SWAG moments", "lower the learning rate (config.learning_rate="
                   f"{config.learning_rate!r})")
    return post


def fit_sghmc(key: jax.Array, params0: PyTree, model: Model, data: Data, config: SGHMCConfig) -> Samples:
    """SGHMC from ``params0`` (:func:`~symlib.inference.sgmcmc.run_sghmc`); the kept draws.

    The likelihood is ``model.apply_fn``'s (evaluation mode); the model state
    (``model.state``) is held fixed at ``params0``'s values and carried by every draw."""
    _check(model, data, config, SGHMCConfig, params0)
    res = run_sghmc(key, params0, data.x, data.y, apply_fn=model.apply_fn, **config._asdict(), state=model.state)
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(res.samples)]
    bad = _first_bad(np.concatenate([leaf.reshape(leaf.shape[0], -1) for leaf in leaves], axis=1))
    if bad is not None:
        raise NonFiniteFitError(f"fit_sghmc: the samples became NaN or inf (first at kept sample {bad + 1} of "
                                f"{leaves[0].shape[0]}, draw {int(res.draw_indices[bad]) + 1}); lower the step size "
                                f"(config.step_size={config.step_size!r})")
    return Samples(res.samples)


def fit_hmc(key: jax.Array, params0: PyTree, model: Model, data: Data, config: HMCConfig, *,
            prior_var: float = 1.0, temperature: float = 1.0, out_dir=None, init_per_chain: bool | None = None,
            progress: bool | None = None) -> Samples:
    """Full-batch HMC (BlackJAX; :func:`~symlib.inference.hmc.run_hmc`) on the tempered posterior
    ``N(0, prior_var I)`` prior times the categorical likelihood of ``model.apply_fn`` to the
    power ``1 / temperature`` (:func:`~symlib.inference.hmc.make_logdensity`).

    ``params0`` is where the chains start: one network (every chain starts there) or one start
    per chain stacked on a leading axis of size ``config.num_chains`` (read so when every leaf
    has that leading axis and there are several chains; ``init_per_chain`` forces either).
    The model state (``model.state``) is held fixed at ``params0``'s values (evaluation mode)
    and carried by every draw; with per-chain starts it is taken from the first chain's.
    With ``out_dir`` the chains are stored there as they run and a stored run with the same
    identity (:func:`~symlib.inference.hmc.run_fingerprint`) is resumed, not recomputed.

    Returns:
        A :class:`Samples` with ``chains=True`` (leaves ``(chains, draws per chain, ...)``)
        and the run's :class:`~symlib.inference.hmc.HMCResult` as ``info``.

    Raises:
        NonFiniteFitError: if a kept sample holds NaN or inf (naming the chain and the fix).
    """
    _check(model, data, config, HMCConfig)
    leaves = jax.tree_util.tree_leaves(params0)
    per_chain = (config.num_chains > 1 and bool(leaves) and all(
        np.ndim(a) > 0 and np.shape(a)[0] == config.num_chains for a in leaves)) if init_per_chain is None \
        else bool(init_per_chain)
    state = None
    if model.state:
        check_state(params0, model.state, "params0")
        state = {k: (jax.tree_util.tree_map(lambda a: a[0], params0[k]) if per_chain else params0[k])
                 for k in model.state}
    weights = {k: v for k, v in params0.items() if k not in model.state} if model.state else params0
    check_finite_tree(weights, "params0")
    logdensity = make_logdensity(data.x, data.y, prior_var=prior_var, temperature=temperature,
                                 apply_fn=model.apply_fn, state=state)
    result = run_hmc(key, weights, logdensity, config, out_dir=out_dir, progress=progress, init_per_chain=per_chain)
    samples = result.samples
    for c, chain in enumerate(zip(*[np.asarray(a).reshape(config.num_chains, config.num_samples, -1)
                                    for a in jax.tree_util.tree_leaves(samples)])):
        bad = _first_bad(np.concatenate(chain, axis=1))
        if bad is not None:
            raise NonFiniteFitError(f"fit_hmc: chain {c} became NaN or inf (first at kept sample {bad + 1} of "
                                    f"{config.num_samples}); lower the step size (config.step_size="
                                    f"{config.step_size!r}) or turn on its adaptation (adapt_step_size=True)")
    if state is not None:
        lead = (config.num_chains, config.num_samples)
        samples = {**samples, **jax.tree_util.tree_map(lambda a: np.broadcast_to(np.asarray(a), lead + np.shape(a)),
                                                       state)}
    return Samples(samples, chains=True, info=result)


def fit_dropout(key: jax.Array, params0: PyTree, model: Model, data: Data, config: DropoutConfig) -> DropoutPosterior:
    """MC dropout: training with dropout from ``params0``, dropout again at prediction time.

    Two routes (:class:`DropoutPosterior`):

    - ``model.dropout_apply_fn`` given: the model's own dropout (its ``nn.Dropout`` layers and
      rates; ``config.rate`` and ``config.layer`` must be None). Training is :func:`fit_map`'s
      (``model.train_apply_fn``, the model's dropout and state updates, a fresh key per step;
      without it ``dropout_apply_fn`` with the state held); the draws are
      :class:`DropoutDraw`\\ s, evaluated with the posterior's ``predict_fn``.
    - otherwise the input of the top-level dense layer ``config.layer`` (None: ``"dense_1"``) is
      dropped at ``config.rate`` (:func:`~symlib.inference.dropout.train_dropout`): for
      symlib's pure-function networks only, so refused for a model with a ``train_apply_fn``
      or state (its own dropout would be ignored); the draws are networks in weight space.
    """
    _check(model, data, config, DropoutConfig, params0)
    if model.dropout_apply_fn is not None:
        if config.rate is not None or config.layer is not None:
            raise ValueError("the model has a dropout_apply_fn: it drops with its own nn.Dropout layers and rates; "
                             "leave config.rate and config.layer None")
        train_fn = model.train_apply_fn if model.train_apply_fn is not None else model.dropout_apply_fn
        params, losses = train_map(params0, key, data.x, data.y, config.train, apply_fn=model.apply_fn,
                                   stochastic_apply=train_fn, state=model.state)
        posterior = DropoutPosterior(params, None, None, model.dropout_apply_fn)
    else:
        if model.train_apply_fn is not None or model.state:
            raise ValueError("a model with a train_apply_fn or state has its own dropout: give its MC-dropout "
                             "forward as model.dropout_apply_fn (dropout on, state in evaluation mode); the layer "
                             "route (config.rate, config.layer) is for symlib's pure-function networks")
        if config.rate is None:
            raise ValueError("config.rate is required when the model has no dropout_apply_fn (the layer route)")
        layer = "dense_1" if config.layer is None else config.layer
        params, losses = train_dropout(params0, key, data.x, data.y, config.train, rate=config.rate, layer=layer,
                                       apply_fn=model.apply_fn)
        posterior = DropoutPosterior(params, config.rate, layer)
    _finite_result(params, "fit_dropout", "parameters", f"lower the learning rate (config.train.learning_rate="
                   f"{config.train.learning_rate!r})", losses)
    return posterior


#: method name -> its fit (the posterior approximations of Laurent et al.'s Table 1 and more)
FITS: dict[str, Callable[..., Any]] = {"map": fit_map, "ensemble": fit_ensemble, "vi": fit_vi, "laplace": fit_laplace,
                                       "swag": fit_swag, "sghmc": fit_sghmc, "hmc": fit_hmc, "dropout": fit_dropout}


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
    top = _path(posterior.layer)[0]
    if not isinstance(posterior.params, dict) or top not in posterior.params:
        raise ValueError(f"LastLayerLaplace: the network has no top-level layer {top!r} to draw "
                         "(layer names the path of the last dense layer, keys joined by '/')")
    _get_layer(posterior.params, posterior.layer)
    head = kfac_sample(key, posterior.posterior, n)
    n = positive_int(n, "n")
    stack = jax.tree_util.tree_map(lambda a: np.broadcast_to(np.asarray(a), (n, *np.shape(a))), posterior.params)
    return _with_layer(stack, posterior.layer, {k: np.asarray(v) for k, v in head.items()})


@draw.register
def _(posterior: SWAGPosterior, key, n):
    return swag_sample(key, posterior, n)


@draw.register
def _(posterior: Samples, key, n):
    n = positive_int(n, "n")
    stack = posterior.stacked()
    have = len(jax.tree_util.tree_leaves(stack)[0])
    if n > have:
        raise ValueError(f"the posterior holds {have} samples; cannot take n={n}")
    return jax.tree_util.tree_map(lambda a: a[:n], stack)


@draw.register
def _(posterior: DropoutPosterior, key, n):
    if posterior.dropout_apply_fn is None:
        return dropout_samples(key, posterior.params, n, rate=posterior.rate, layer=posterior.layer)
    n = positive_int(n, "n")
    stack = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (n, *jnp.shape(a))), posterior.params)
    keys = jax.random.split(key, n)
    return DropoutDraw(stack, jax.random.key_data(keys) if jnp.issubdtype(keys.dtype, jax.dtypes.prng_key) else keys)
