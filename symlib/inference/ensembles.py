"""Deep ensembles: ``K`` MAP-trained MLPs, trained at once with ``fit_map_many`` (vmap).

Member ``i`` gets its own key ``jax.random.split(key, K)[i]``, which (exactly as in
:func:`symlib.inference.training.train_mlp`) is split into an ``mlp_init`` key and a data key
deciding its minibatch order, so members differ both in initialisation and in the
order they see the data, and member ``i`` is (up to floating-point differences of
``vmap``) the network ``train_mlp(jax.random.split(key, K)[i], sizes, x, y, cfg)``.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax

from symlib.core.checks import positive_int
from symlib.core.models import Params, check_sizes, mlp_init
from symlib.core.checks import check_key
from symlib.inference.training import TrainConfig, _check_inputs, fit_map_many


class EnsembleResult(NamedTuple):
    """``params``: stacked member parameters (leading axis ``num_members`` on every leaf);
    ``epoch_losses``: (num_members, epochs) mean training objective per epoch."""
    params: Params
    epoch_losses: jax.Array


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


def train_ensemble(key: jax.Array, sizes: Sequence[int], x, y, cfg: TrainConfig,
                   num_members: int) -> EnsembleResult:
    """Train independently initialised MLPs all at once (MAP, see :mod:`symlib.inference.training`).

    Args:
        key: ``jax.random`` key of the ensemble (see :func:`member_keys`).
        sizes: layer widths ``[d_0, ..., d_L]`` of every member.
        x: training inputs ``(n, d_0)``, finite.
        y: integer training labels ``(n,)`` in ``[0, d_L)``.
        cfg: the training configuration.
        num_members: number of members, a positive integer.

    Returns:
        An :class:`EnsembleResult` with the stacked parameters and per-epoch losses.

    Raises:
        ValueError: naming the input, before any work: a bad ``num_members``, ``sizes`` or
            ``key``, data that do not fit the network (shapes, input width, labels outside
            the ``d_L`` outputs, NaN or inf in ``x``) or an invalid field of ``cfg``.
    """
    num_members = positive_int(num_members, "num_members")
    sizes = check_sizes(sizes)
    _check_inputs(x, y, cfg, sizes)  # before any work: same checks (and messages) as fit_map_many
    check_key(key, "key")
    init_keys, data_keys = member_keys(key, num_members)
    params0 = jax.vmap(lambda k: mlp_init(k, sizes))(init_keys)
    params, losses = fit_map_many(params0, data_keys, x, y, cfg)
    return EnsembleResult(params, losses)
