"""Helpers of deep ensembles and multi-mode posteriors (the ensemble itself is
:func:`symlib.inference.fit_ensemble`: ``K`` networks trained to their MAP at once).

:func:`member_keys` gives every member its own init and data keys, so members differ both
in initialisation and in the order they see the data. :func:`multi_mode_samples` pools the
samples of a single-mode method around each of several trained networks (Laurent et al.'s
multi-mode methods).
"""
from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from symlib.core.checks import check_key, positive_int
from symlib.core.models import Params
from symlib.inference.shape import unstack


def member_keys(key: jax.Array, num_members: int) -> tuple[jax.Array, jax.Array]:
    """The init and data keys of every member.

    Args:
        key: the ensemble's ``jax.random`` key.
        num_members: number of members ``K``.

    Returns:
        ``(init_keys, data_keys)``, each with leading axis ``K``: member ``i``'s pair is
        ``jax.random.split(jax.random.split(key, K)[i])``.
    """
    keys = jax.random.split(key, num_members)
    pairs = jax.vmap(jax.random.split)(keys)
    return pairs[:, 0], pairs[:, 1]


def multi_mode_samples(key: jax.Array, sample_fn: Callable[[jax.Array, Params, int], Params], modes: Params,
                       samples_per_mode: int) -> Params:
    """A single-mode method applied to each of ``M`` networks: the "multi-" methods of Laurent et al.

    Laurent et al. (ICLR 2024, Sec. 4) apply a single-mode posterior approximation
    (dropout, Bayes by backprop, SWAG, Laplace) around each of 10 independently trained
    networks and pool 10 samples of each (100 in all). Mode ``m`` (``modes``' ``m``-th
    network) is sampled with ``sample_fn(jax.random.split(key, M)[m], mode_m, samples_per_mode)``,
    one mode after the other (``sample_fn`` need not be ``vmap``-able).

    Args:
        key: ``jax.random`` key, split into one key per mode.
        sample_fn: ``sample_fn(key, params, num_samples)`` -> ``num_samples`` networks stacked
            on a leading axis (e.g. ``partial(dropout_samples, rate=0.2)``, or a lambda
            around :func:`symlib.inference.fit_sghmc` returning its ``.samples``).
        modes: ``M`` networks stacked on a leading axis (e.g. the ``samples`` of
            :func:`symlib.inference.fit_ensemble`),
            or a list of ``M`` per-mode objects that ``sample_fn`` takes instead of a
            network (e.g. the :class:`~symlib.inference.swag.SWAGPosterior` list of
            :func:`symlib.inference.fit_modes`, or fitted
            :class:`~symlib.inference.laplace.LaplacePosterior`).
        samples_per_mode: samples drawn around each mode.

    Returns:
        ``M * samples_per_mode`` networks stacked on a leading axis, mode-major: samples
        ``m * samples_per_mode`` to ``(m + 1) * samples_per_mode - 1`` come from mode ``m``.

    Raises:
        ValueError: naming ``modes`` if it is not a stack of networks, ``samples_per_mode``
            or ``key`` if invalid, or ``sample_fn`` if it does not return
            ``samples_per_mode`` networks in the layout of one mode.
    """
    samples_per_mode = positive_int(samples_per_mode, "samples_per_mode")
    if isinstance(modes, (list, tuple)):  # fitted posteriors, one per mode
        if not modes:
            raise ValueError("modes is an empty sequence")
        mode_list, like = list(modes), None
    else:
        leaves, treedef = jax.tree_util.tree_flatten(modes)
        lead = {np.shape(a)[:1] for a in leaves}
        if not leaves or len(lead) != 1 or () in lead:
            raise ValueError(f"modes must be networks stacked on a leading axis of every leaf, got leading axes {lead}")
        mode_list = unstack(modes)
        like = (treedef, [np.shape(a)[1:] for a in leaves])
    check_key(key, "key")
    keys = jax.random.split(key, len(mode_list))
    draws = []
    for m, mode in enumerate(mode_list):
        out = sample_fn(keys[m], mode, samples_per_mode)
        got = [np.shape(a) for a in jax.tree_util.tree_leaves(out)]
        if like is None:  # per-mode objects: the first mode's draws set the layout
            like = (jax.tree_util.tree_structure(out), [g[1:] for g in got])
        if jax.tree_util.tree_structure(out) != like[0] or got != [(samples_per_mode,) + shape for shape in like[1]]:
            raise ValueError(f"sample_fn must return {samples_per_mode} networks stacked like one mode; for mode {m} "
                             f"it returned shapes {jax.tree_util.tree_map(np.shape, out)}")
        draws.append(out)
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=0), *draws)
