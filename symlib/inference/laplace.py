"""Laplace approximations: full (or GGN) Hessian under the model's likelihood, and last-layer KFAC (categorical).

**Full-network Laplace** (Laurent et al.'s OptuNet). Around trained parameters ``theta*``
(flattened to ``D`` numbers with ``jax.flatten_util.ravel_pytree``, whose order every
matrix here uses) the posterior is approximated by ``N(theta*, P^{-1})`` with precision

    P = H + prior_precision * I,

``H`` the Hessian at ``theta*`` of the negative log-likelihood *summed* over the ``N``
training examples, ``-sum_i log p(y_i | f_theta(x_i))`` under the model's likelihood
(:mod:`symlib.inference.likelihood`; categorical: ``-sum_i log softmax(f_theta(x_i))[y_i]``), not the per-example mean of
:func:`~symlib.inference.training.map_objective`; a MAP fit with ``prior_std`` matches
``prior_precision = 1 / prior_std^2``). ``H`` is either

- ``"full"``: the exact Hessian (``jax.hessian`` of the flattened loss), or
- ``"ggn"``: the generalised Gauss-Newton matrix ``sum_i J_i^T Lambda_i J_i``, ``J_i`` the
  ``(k, D)`` Jacobian of the ``k`` outputs of example ``i`` and ``Lambda_i`` the Hessian of its
  negative log-likelihood in output space (the likelihood's ``output_hessian``; categorical:
  ``diag(p_i) - p_i p_i^T``, ``p_i`` the softmax of the logits; Gaussian: ``I / noise_std^2``);
  positive semi-definite, and equal to the full Hessian for a model linear in its
  parameters (e.g. softmax regression, or linear regression with a Gaussian likelihood, where
  the Laplace posterior is the exact one).

Both are accumulated over minibatches of ``batch_size`` examples (the last one padded
with zero-weight copies), so memory grows with ``batch_size * D`` rather than ``N * D``.

*Not positive definite.* Away from a minimum the full Hessian can have negative
eigenvalues. ``P`` is symmetrised and eigendecomposed, ``P = V diag(lambda) V^T`` (float64),
and every eigenvalue below ``min_eigenvalue`` (default ``prior_precision``: a direction of
negative data curvature falls back to the prior) is raised to it; the number raised beyond
float rounding (``lambda < min_eigenvalue - 1e-5 * max|lambda|``) is recorded in
``LaplacePosterior.num_clipped`` and announced with a :class:`LaplaceWarning`. Samples are
``theta* + V diag(lambda)^{-1/2} z``, ``z ~ N(0, I_D)``.

*Model state.* With ``state`` (top-level entries of the network that are no weights, e.g. a
Flax model's ``("batch_stats",)``), ``theta`` is the weights only: the curvature is taken with
the state held fixed at its values in ``params`` (the network's evaluation mode), ``D`` counts
the weights, and every sample carries the state unchanged (no spread).

*Progress.* The dense accumulation shows a progress bar over its minibatches on a terminal
(or when asked, ``progress=True``; :func:`symlib.core.progress.progress_enabled`).

**Last-layer KFAC** (Laurent et al.'s ResNet-18; Ritter, Botev and Barber, ICLR 2018). For
the last dense layer ``logits = a W + b`` (``a`` the ``(d,)`` features, ``W`` ``(d, C)``),
the bias is handled as one more row of the kernel: ``abar = [a, 1]`` and
``Wbar = [[W], [b]]`` of shape ``(d + 1, C)``. The GGN of ``Wbar`` (row-major ``vec``) is
``sum_i (abar_i abar_i^T) kron Lambda_i``, ``Lambda_i = diag(p_i) - p_i p_i^T`` (the Fisher
of the categorical likelihood under the model's own predictive: the expectation of the
output gradient's outer product); KFAC replaces it by ``N A kron G`` with

    A = (1/N) sum_i abar_i abar_i^T,    G = (1/N) sum_i Lambda_i,

exact for ``N = 1``. The prior is added to each factor as in Ritter et al.:

    P ~ (sqrt(N) A + sqrt(tau) I) kron (sqrt(N) G + sqrt(tau) I),     tau = prior_precision,

(``= N A kron G + tau I + sqrt(N tau) (A kron I + I kron G)``), so the posterior of ``Wbar``
is matrix normal with row covariance ``U = (sqrt(N) A + sqrt(tau) I)^{-1}`` and column
covariance ``V = (sqrt(N) G + sqrt(tau) I)^{-1}``: ``Wbar = Wbar* + L_U Z L_V^T`` with
Cholesky factors ``L_U L_U^T = U``, ``L_V L_V^T = V`` and ``Z`` standard normal ``(d+1, C)``.
It is written for a classifier: :func:`fit_laplace` refuses ``config.last_layer`` for a model
with any other likelihood.
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from symlib.core.checks import check_finite, check_finite_tree, check_key, positive_float, positive_int
from symlib.core.progress import progress_enabled
from symlib.inference._loop import (check_network_data, check_state, epoch_bar, merge_state, report_epoch,
                                   split_state)
from symlib.inference.likelihood import Categorical
from symlib.inference.shape import Data, Model, check_fit_inputs, sample

__all__ = ["HESSIANS", "MAX_FULL_PARAMS", "dense_cost", "LaplaceWarning", "LaplacePosterior", "laplace_sample",
           "laplace_covariance", "KFACPosterior", "last_layer_kfac", "kfac_sample", "kfac_precision", "LaplaceConfig",
           "LastLayerLaplace", "fit_laplace", "PREDICTIVE_ACCURACY_DROP"]

PyTree = Any

#: the curvature matrices of :func:`_laplace_posterior`
HESSIANS = ("full", "ggn")

#: the most parameters :func:`_laplace_posterior` accepts by default: its precision is a dense
#: ``D x D`` float64 matrix (8 D^2 bytes) whose eigendecomposition costs ``O(D^3)``; at this size
#: about 0.8 GB and minutes on a laptop CPU (a 26.7k-parameter CNN ran for minutes without a word)
MAX_FULL_PARAMS = 10_000


def dense_cost(num_params: int) -> str:
    """The memory and the floating-point work of a dense Laplace on ``num_params`` parameters, in words."""
    gb = 8.0 * num_params**2 / 1e9
    tflop = 10.0 * num_params**3 / 1e12  # eigh of a symmetric D x D matrix: about 10 D^3 FLOP
    return f"a {num_params:,} x {num_params:,} float64 precision ({gb:.2g} GB) and its eigendecomposition (~{tflop:.2g} TFLOP)"
#: relative tolerance (of the largest eigenvalue) below which a raised eigenvalue is float rounding
_CLIP_RTOL = 1e-5


class LaplaceWarning(UserWarning):
    """Eigenvalues of a Laplace precision were raised to make it positive definite, or (from
    :func:`fit_laplace`) the sampled predictive's accuracy fell far
    below the MAP network's."""


class LaplacePosterior(NamedTuple):
    """A Gaussian (Laplace) posterior over all parameters of a network.

    Attributes:
        mean: the parameters ``theta*`` (pytree layout of the network).
        precision: ``(D, D)`` ``H + prior_precision I`` as computed (symmetrised), float64.
        eigenvalues: ``(D,)`` eigenvalues of ``precision`` after raising those below the floor.
        eigenvectors: ``(D, D)`` orthonormal eigenvectors (columns), ``ravel_pytree`` order.
        num_clipped: eigenvalues raised beyond float rounding (0 when ``precision`` was
            positive definite enough).
        hessian: ``"full"`` or ``"ggn"``.
        prior_precision: the prior's precision ``tau``.
        num_data: examples ``N`` the likelihood was summed over.
        state: the top-level entries of ``mean`` that are model state: outside the Gaussian
            (``D`` and the ``ravel_pytree`` order are those of the other entries), carried
            unchanged by every sample.
    """

    mean: PyTree
    precision: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    num_clipped: int
    hessian: str
    prior_precision: float
    num_data: int
    state: tuple[str, ...] = ()


@partial(jax.jit, static_argnames=("apply_fn", "hessian", "batch_size", "progress", "likelihood"))
def _curvature(params, fixed, x, y, *, apply_fn, hessian: str, batch_size: int, progress: bool = False,
               likelihood=Categorical()):
    """The summed ``(D, D)`` curvature ``H`` over all examples, in minibatches, of the
    weights ``params`` with the model state ``fixed`` held (``{}``: none), under ``likelihood``."""
    flat, unravel = ravel_pytree(params)
    n = x.shape[0]
    steps = -(-n // batch_size)
    pad = steps * batch_size - n
    xb = jnp.concatenate([x, jnp.repeat(x[:1], pad, axis=0)]).reshape((steps, batch_size) + x.shape[1:])
    yb = jnp.concatenate([y, jnp.repeat(y[:1], pad, axis=0)]).reshape((steps, batch_size) + y.shape[1:])
    wb = jnp.concatenate([jnp.ones(n, flat.dtype), jnp.zeros(pad, flat.dtype)]).reshape(steps, batch_size)
    logits_of = lambda f, xs: apply_fn(merge_state(unravel(f), fixed), xs)  # noqa: E731

    leaves, treedef = jax.tree_util.tree_flatten(params)
    sizes = [leaf.size for leaf in leaves]
    starts = np.cumsum([0] + sizes)

    def full(xs, ys, ws):
        # Leaf-blocked: for leaf b, the columns H[b:, b] are the forward-mode derivative in
        # leaf b's directions of the gradient with respect to leaves b, b+1, ... only; the
        # earlier leaves are constants, so their tangents are symbolic zeros (no tangent
        # work upstream of leaf b) and no gradient flows into them. Symmetry fills H[b, b:].
        h = jnp.zeros((flat.size, flat.size), flat.dtype)
        for b, leaf in enumerate(leaves):
            def tail_grad(theta_b, b=b):
                def loss(tail):
                    tree = jax.tree_util.tree_unflatten(treedef, leaves[:b] + tail)
                    return jnp.sum(ws * -likelihood.loglik(apply_fn(merge_state(tree, fixed), xs), ys))
                return ravel_pytree(jax.grad(loss)([theta_b] + leaves[b + 1:]))[0]

            cols = jax.jacfwd(tail_grad)(leaf).reshape(flat.size - starts[b], sizes[b])
            h = h.at[starts[b]:, starts[b]:starts[b + 1]].set(cols)
            h = h.at[starts[b]:starts[b + 1], starts[b]:].set(cols.T)
        return h

    def ggn(xs, ys, ws):
        # per-example Jacobians (b, k, D): k backward passes per example (the Jacobian of the
        # batch's (b, k) outputs would backpropagate every cotangent through the whole batch)
        one = lambda f, xi: jnp.reshape(logits_of(f, xi[None])[0], (-1,))  # noqa: E731
        jac = jax.vmap(jax.jacrev(one), in_axes=(None, 0))(flat, xs)
        outputs = logits_of(flat, xs)
        lam = likelihood.output_hessian(outputs.reshape(outputs.shape[0], -1))
        return jnp.einsum("bcd,bce,bef->df", ws[:, None, None] * jac, lam, jac)

    block = full if hessian == "full" else ggn

    def body(acc, inputs):
        index, batch = inputs
        acc = acc + block(*batch)
        if progress:
            jax.debug.callback(report_epoch, index)
        return acc, None

    acc, _ = jax.lax.scan(body, jnp.zeros((flat.size, flat.size), flat.dtype), (jnp.arange(steps), (xb, yb, wb)))
    return acc


def _laplace_posterior(params: PyTree, x: jax.Array, y: jax.Array, *, apply_fn, prior_precision: float,
                      hessian: str = "full", batch_size: int = 32,
                      min_eigenvalue: float | None = None, num_data: int | None = None,
                      max_params: int | None = MAX_FULL_PARAMS, state: tuple[str, ...] = (),
                      progress: bool | None = None, likelihood=Categorical()) -> LaplacePosterior:
    """Laplace approximation around ``params`` with the full Hessian or the GGN (module docstring).

    Args:
        params: the trained network (its MAP estimate), one network's pytree.
        x: training inputs ``(N, ...)``, what ``apply_fn`` takes, finite.
        y: targets that fit the network under ``likelihood`` (categorical: integer labels
            ``(N,)`` in ``[0, classes)``).
        apply_fn: ``apply_fn(params, x) -> outputs``, e.g. logits ``(b, classes)`` (e.g.
            :func:`symlib.core.cnn.optunet_apply`).
        prior_precision: precision ``tau > 0`` of the isotropic Gaussian prior.
        hessian: ``"full"`` or ``"ggn"``.
        batch_size: examples per accumulation step, >= 1 (memory ~ ``batch_size * D``
            activations for ``"full"``, ``batch_size * classes * D`` for ``"ggn"``).
        min_eigenvalue: floor of the precision's eigenvalues, > 0; ``None``: ``prior_precision``.
        num_data: size ``N`` of the training set when ``x`` is a random subsample of it
            (``N >= len(x)``): the curvature summed over ``x`` is scaled by ``N / len(x)``,
            an unbiased estimate of the sum over all ``N`` examples at a fraction of the
            cost (a subsampled Hessian/GGN). ``None``: ``x`` is the whole training set.
        max_params: refuse networks with more parameters than this (default
            :data:`MAX_FULL_PARAMS`; ``None``: no limit), before any work: the error states the
            memory and work it would take and names the alternatives.
        state: top-level entries of ``params`` that are model state (e.g. a Flax model's
            ``("batch_stats",)``): held fixed at their values in ``params``, outside the
            Gaussian, carried unchanged by the samples (module docstring).
        progress: show a ``"laplace"`` progress bar over the accumulation's minibatches;
            ``None``: on a terminal only.
        likelihood: the model's likelihood (:mod:`symlib.inference.likelihood`).

    Returns:
        The :class:`LaplacePosterior`.

    Raises:
        ValueError: for a network above ``max_params`` (with the cost and the alternatives); naming
            ``x``/``y`` (mismatched or not fitting the network),
            ``prior_precision``, ``hessian``, ``batch_size``, ``min_eigenvalue`` or
            ``params`` (non-finite) when invalid; or saying "nan/inf" when the computed
            curvature is not finite.

    Warns:
        LaplaceWarning: when eigenvalues had to be raised (``num_clipped > 0``).
    """
    tau = positive_float(prior_precision, "prior_precision")
    if hessian not in HESSIANS:
        raise ValueError(f"hessian must be one of {HESSIANS}, got {hessian!r}")
    batch_size = positive_int(batch_size, "batch_size")
    floor = tau if min_eigenvalue is None else positive_float(min_eigenvalue, "min_eigenvalue")
    check_finite_tree(params, "params")
    state = check_state(params, state, "params")
    weights, fixed = split_state(params, state)
    num_params = int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(weights)))
    if max_params is not None and num_params > positive_int(max_params, "max_params"):
        raise ValueError(f"a dense {hessian} Laplace on {num_params:,} parameters needs {dense_cost(num_params)}, "
                         f"above max_params={max_params:,}: use a last-layer Laplace "
                         "(symlib.inference.last_layer_kfac, LastLayerLaplace), or pass max_params=None to run it "
                         "anyway")
    check_network_data(apply_fn, params, x, y, "params", likelihood=likelihood)
    x, y = jnp.asarray(x), jnp.asarray(y)
    n = int(x.shape[0])
    total = n if num_data is None else positive_int(num_data, "num_data")
    if total < n:
        raise ValueError(f"num_data ({total}) must be at least the number of examples in x ({n})")
    batch_size = min(batch_size, n)
    show = progress_enabled(progress)
    with epoch_bar(-(-n // batch_size), show, desc=f"laplace ({hessian})", unit="batch"):
        h = _curvature(weights, fixed, x, y, apply_fn=apply_fn, hessian=hessian, batch_size=batch_size,
                       progress=show, likelihood=likelihood)
    h = np.asarray(h, np.float64) * (total / n)
    if not np.all(np.isfinite(h)):
        raise ValueError(f"the {hessian} curvature has nan/inf entries: apply_fn gives non-finite outputs or "
                         "derivatives at params on x")
    precision = (h + h.T) / 2 + tau * np.eye(h.shape[0])
    lam, vec = np.linalg.eigh(precision)
    clipped = int(np.sum(lam < floor - _CLIP_RTOL * np.max(np.abs(lam))))
    if clipped:
        warnings.warn(f"the {hessian} Laplace precision had {clipped} of {lam.size} eigenvalues below "
                      f"{floor:g} (smallest {lam.min():.3g}); they were raised to {floor:g}", LaplaceWarning,
                      stacklevel=2)
    return LaplacePosterior(params, precision, np.maximum(lam, floor), vec, clipped, hessian, tau, total, state)


def laplace_covariance(posterior: LaplacePosterior) -> np.ndarray:
    """The ``(D, D)`` covariance ``V diag(1 / lambda) V^T`` of :func:`laplace_sample` (float64).

    Args:
        posterior: a :class:`LaplacePosterior`.

    Returns:
        The covariance in ``ravel_pytree`` order.
    """
    v, lam = posterior.eigenvectors, posterior.eigenvalues
    return (v / lam) @ v.T


def _check_sampling(key, num_samples, posterior, kind) -> int:
    if not isinstance(posterior, kind):
        raise TypeError(f"posterior must be a {kind.__name__}, got {type(posterior).__name__}")
    check_key(key, "key")
    return positive_int(num_samples, "num_samples")


def laplace_sample(key: jax.Array, posterior: LaplacePosterior, num_samples: int) -> PyTree:
    """Samples ``theta* + S z`` of a Laplace posterior, with ``S = V diag(lambda)^{-1/2} V^T``
    the symmetric square root of its covariance.

    ``S`` is the one symmetric root, whatever orthonormal basis ``eigh`` returned for a
    repeated eigenvalue (the prior's precision on the curvature's null space: directions the
    network's outputs ignore), so a key draws the same networks on every LAPACK build; the
    factor ``V diag(lambda)^{-1/2}`` alone rotates that space's draws with the basis. It costs
    one ``D x D`` product a call (about ``2 D^3`` floating-point operations; the fit's ``eigh``
    about ``10 D^3``).

    Args:
        key: ``jax.random`` key.
        posterior: a :class:`LaplacePosterior`.
        num_samples: samples to draw, >= 1.

    Returns:
        The samples in the network's pytree layout, stacked on a leading axis of size
        ``num_samples`` (the dtype of the mean).

    Raises:
        ValueError: naming ``key`` or ``num_samples`` if invalid.
        TypeError: if ``posterior`` is not a :class:`LaplacePosterior`.
    """
    num = _check_sampling(key, num_samples, posterior, LaplacePosterior)
    weights, fixed = split_state(posterior.mean, posterior.state)
    mean, unravel = ravel_pytree(weights)
    v = posterior.eigenvectors
    root = jnp.asarray((v / np.sqrt(posterior.eigenvalues)) @ v.T, mean.dtype)
    z = jax.random.normal(key, (num, mean.size), mean.dtype)
    draws = jax.vmap(unravel)(mean + z @ root)
    if not fixed:
        return draws
    stack = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (num, *jnp.shape(a))), fixed)
    return {k: stack[k] if k in stack else draws[k] for k in posterior.mean}


class KFACPosterior(NamedTuple):
    """A matrix-normal posterior of the last dense layer (Kronecker-factored Laplace).

    Attributes:
        kernel: the layer's trained kernel ``(d, C)`` (the mean).
        bias: its trained bias ``(C,)``, or ``None`` for a layer without bias.
        a_factor: ``A = mean_i abar_i abar_i^T``, ``(d + 1, d + 1)`` (``(d, d)`` without bias).
        g_factor: ``G = mean_i (diag(p_i) - p_i p_i^T)``, ``(C, C)``.
        row_precision: ``sqrt(N) A + sqrt(tau) I``.
        col_precision: ``sqrt(N) G + sqrt(tau) I``.
        row_scale_tril: lower Cholesky factor of ``row_precision^{-1}``.
        col_scale_tril: lower Cholesky factor of ``col_precision^{-1}``.
        num_data: ``N``.
        prior_precision: ``tau``.
    """

    kernel: jax.Array
    bias: jax.Array | None
    a_factor: np.ndarray
    g_factor: np.ndarray
    row_precision: np.ndarray
    col_precision: np.ndarray
    row_scale_tril: np.ndarray
    col_scale_tril: np.ndarray
    num_data: int
    prior_precision: float


def _inverse_cholesky(precision: np.ndarray, name: str) -> np.ndarray:
    """Lower Cholesky factor of ``precision^{-1}`` (via the upper factor of the inverse)."""
    try:
        chol = np.linalg.cholesky(precision)
    except np.linalg.LinAlgError as err:  # cannot happen for PSD factors plus a positive prior
        raise ValueError(f"{name} is not positive definite") from err
    inv = np.linalg.inv(chol)  # precision^{-1} = inv^T inv
    return np.linalg.cholesky(inv.T @ inv)


def last_layer_kfac(features: jax.Array, kernel: jax.Array, bias: jax.Array | None = None, *,
                    prior_precision: float) -> KFACPosterior:
    """Kronecker-factored Laplace posterior of the last dense layer (module docstring).

    The predictive ``p_i = softmax(features_i @ kernel + bias)`` is computed here, so that
    the curvature is taken at the layer's own parameters. For ResNet-18 the features are
    the globally average-pooled output of the last stage (``head/kernel``, ``head/bias``).

    Args:
        features: the layer's inputs ``(N, d)`` on the training set, finite.
        kernel: the trained kernel ``(d, C)``.
        bias: the trained bias ``(C,)``, or ``None`` (then ``abar = a``, no appended 1).
        prior_precision: precision ``tau > 0`` of the isotropic Gaussian prior.

    Returns:
        The :class:`KFACPosterior`.

    Raises:
        ValueError: naming ``features``, ``kernel``, ``bias`` or ``prior_precision`` when
            shapes do not match or values are invalid.
    """
    tau = positive_float(prior_precision, "prior_precision")
    a = np.asarray(features, np.float64)
    w = np.asarray(kernel)
    if a.ndim != 2 or a.shape[0] < 1:
        raise ValueError(f"features must be (N, d) with N >= 1, got shape {a.shape}")
    if w.ndim != 2 or w.shape[0] != a.shape[1]:
        raise ValueError(f"kernel must be (d, C) with d = {a.shape[1]} (the features' width), got shape {w.shape}")
    if bias is not None and np.shape(bias) != (w.shape[1],):
        raise ValueError(f"bias must be (C,) = ({w.shape[1]},), got shape {np.shape(bias)}")
    check_finite(a, "features")
    check_finite(w, "kernel")
    logits = a @ w + (0.0 if bias is None else np.asarray(bias, np.float64))
    if bias is not None:
        check_finite(bias, "bias")
        a = np.concatenate([a, np.ones((a.shape[0], 1))], axis=1)
    n = a.shape[0]
    p = np.asarray(jax.nn.softmax(jnp.asarray(logits)), np.float64)
    a_factor = a.T @ a / n
    g_factor = np.diag(p.mean(axis=0)) - p.T @ p / n
    row = np.sqrt(n) * a_factor + np.sqrt(tau) * np.eye(a.shape[1])
    col = np.sqrt(n) * g_factor + np.sqrt(tau) * np.eye(w.shape[1])
    return KFACPosterior(jnp.asarray(kernel), None if bias is None else jnp.asarray(bias), a_factor, g_factor,
                         row, col, _inverse_cholesky(row, "row_precision"), _inverse_cholesky(col, "col_precision"),
                         n, tau)


def kfac_precision(posterior: KFACPosterior) -> np.ndarray:
    """The dense precision ``row_precision kron col_precision`` of row-major ``vec(Wbar)`` (small layers only).

    Args:
        posterior: a :class:`KFACPosterior`.

    Returns:
        ``((d + 1) C, (d + 1) C)`` (``(d C, d C)`` without bias), index ``j * C + c`` for
        ``Wbar[j, c]``, the bias being row ``d``.
    """
    return np.kron(posterior.row_precision, posterior.col_precision)


def kfac_sample(key: jax.Array, posterior: KFACPosterior, num_samples: int) -> dict:
    """Matrix-normal samples ``Wbar* + L_U Z L_V^T`` of the last layer.

    Args:
        key: ``jax.random`` key.
        posterior: a :class:`KFACPosterior`.
        num_samples: samples to draw, >= 1.

    Returns:
        ``{"kernel": (num_samples, d, C), "bias": (num_samples, C)}`` (no ``"bias"`` for a
        layer without bias), the dtype of the kernel.

    Raises:
        ValueError: naming ``key`` or ``num_samples`` if invalid.
        TypeError: if ``posterior`` is not a :class:`KFACPosterior`.
    """
    num = _check_sampling(key, num_samples, posterior, KFACPosterior)
    dtype = posterior.kernel.dtype
    lu = jnp.asarray(posterior.row_scale_tril, dtype)
    lv = jnp.asarray(posterior.col_scale_tril, dtype)
    z = jax.random.normal(key, (num,) + (lu.shape[0], lv.shape[0]), dtype)
    noise = jnp.einsum("ij,njk,lk->nil", lu, z, lv)
    d = posterior.kernel.shape[0]
    out = {"kernel": posterior.kernel + noise[:, :d]}
    if posterior.bias is not None:
        out["bias"] = posterior.bias + noise[:, d]
    return out


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


class LaplaceConfig(NamedTuple):
    """Laplace around the trained network (:func:`fit_laplace`):
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


def _accuracy(logits, y):
    return jnp.mean(jnp.argmax(logits, axis=-1) == y)


@jax.jit
def _accuracies(logits, map_logits, y):
    """The accuracies of the mean softmax of ``logits`` ``(draws, n, C)`` and of ``map_logits``."""
    return _accuracy(jnp.mean(jax.nn.softmax(logits, axis=-1), axis=0), y), _accuracy(map_logits, y)


@functools.partial(jax.jit, static_argnames=("apply_fn",))
def _draws_accuracies(draws, params0, x, y, *, apply_fn):
    """:func:`_accuracies` of the networks ``draws`` (stacked) and ``params0`` on ``x``, one program."""
    return _accuracies(jax.lax.map(lambda p: apply_fn(p, x), draws), apply_fn(params0, x), y)


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
    the MAP network's (a classifier's check: nothing for any other likelihood)."""
    if not isinstance(model.likelihood, Categorical):
        return
    n = len(data.y)
    idx = np.unique(np.linspace(0, n - 1, min(n, PREDICTIVE_CHECK_POINTS)).round().astype(int))
    x, y = jnp.asarray(np.asarray(data.x)[idx]), jnp.asarray(np.asarray(data.y)[idx])
    key = jax.random.key(0) if key is None else key
    s = PREDICTIVE_CHECK_DRAWS
    if isinstance(posterior, LastLayerLaplace):  # the features once, the head's draws on them
        head = kfac_sample(key, posterior.posterior, s)
        logits = jnp.einsum("nd,sdc->snc", jnp.asarray(feats[idx]), head["kernel"])
        logits = logits + (head["bias"][:, None] if "bias" in head else 0.0)
        acc, ref = _accuracies(logits, model.apply_fn(params0, x), y)
    else:
        acc, ref = _draws_accuracies(sample(key, posterior, s), params0, x, y, apply_fn=model.apply_fn)
    acc, ref = float(acc), float(ref)
    if acc < ref - PREDICTIVE_ACCURACY_DROP:
        fix = ("raise the prior precision (config.prior_precision=" f"{config.prior_precision!r})")
        if config.last_layer is None:
            fix += (", use hessian='ggn'" if config.hessian == "full" else "") + " or a last-layer Laplace " \
                   "(config.last_layer)"
        warnings.warn(f"fit_laplace: the sampled predictive's accuracy ({acc:.1%}) is far below the MAP network's "
                      f"({ref:.1%}) on {len(idx)} training points ({s} draws; the threshold is "
                      f"{PREDICTIVE_ACCURACY_DROP:.0%} lower): the posterior is too wide for its draws to classify; "
                      f"{fix}", LaplaceWarning, stacklevel=3)


def fit_laplace(key: jax.Array, params0: PyTree, model: Model, data: Data, config: LaplaceConfig, *,
                progress: bool | None = None) -> LaplacePosterior | LastLayerLaplace:
    """Laplace around the trained network ``params0``: dense (full Hessian or GGN), or with ``config.last_layer`` a
    last-layer KFAC (:func:`~symlib.inference.laplace.last_layer_kfac` on the layer's inputs,
    read off ``model.apply_fn``: a :class:`LastLayerLaplace`). The model state
    (``model.state``) is held fixed at ``params0``'s values (evaluation mode): no curvature,
    no spread, carried unchanged by every draw.

    The fit is deterministic; ``key`` (None: ``jax.random.key(0)``) only draws the
    :data:`PREDICTIVE_CHECK_DRAWS` networks of a check on :data:`PREDICTIVE_CHECK_POINTS`
    training points: a :class:`~symlib.inference.laplace.LaplaceWarning` names both
    accuracies when the sampled predictive's is more than :data:`PREDICTIVE_ACCURACY_DROP`
    below the MAP network's (a posterior too wide for its draws to classify; e.g. a dense
    Laplace at prior precision 1 on a CNN collapses to chance), with the fix; the check is a
    classifier's, made for a categorical ``model.likelihood`` only. ``progress``
    shows a progress bar over the dense accumulation's minibatches (None: on a terminal).

    The dense Laplace takes ``model.likelihood`` (its log-likelihood for ``"full"``, its
    output-space Hessian for ``"ggn"``); the last-layer KFAC is a classifier's (its ``G``
    factor is the softmax's): a model with another likelihood raises a ``ValueError``."""
    check_fit_inputs(model, data, config, LaplaceConfig, params0)
    feats = None
    if config.last_layer is not None:
        if not isinstance(model.likelihood, Categorical):
            raise ValueError(f"config.last_layer: the last-layer KFAC Laplace is written for a categorical likelihood "
                             f"(its G factor is the softmax's), not model.likelihood={model.likelihood!r}; use the "
                             "dense Laplace (config.last_layer=None, hessian='ggn' or 'full')")
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
        post = _laplace_posterior(params0, data.x, data.y, apply_fn=model.apply_fn, state=model.state,
                                  progress=progress, likelihood=model.likelihood, **kwargs)
    _check_predictive(key, post, params0, model, data, config, feats)
    return post


@sample.register
def _(posterior: LaplacePosterior, key, n):
    return laplace_sample(key, posterior, n)


@sample.register
def _(posterior: LastLayerLaplace, key, n):
    top = _path(posterior.layer)[0]
    if not isinstance(posterior.params, dict) or top not in posterior.params:
        raise ValueError(f"LastLayerLaplace: the network has no top-level layer {top!r} to draw "
                         "(layer names the path of the last dense layer, keys joined by '/')")
    _get_layer(posterior.params, posterior.layer)
    head = kfac_sample(key, posterior.posterior, n)
    n = positive_int(n, "n")
    stack = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (n, *jnp.shape(a))), posterior.params)
    return _with_layer(stack, posterior.layer, head)
