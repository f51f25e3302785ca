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
import numpy as np

from symlib.core.models import Params, mlp_init
from symlib.inference.training import TrainConfig, _check_inputs, fit_map_many


class EnsembleResult(NamedTuple):
    """``params``: stacked member parameters (leading axis ``num_members`` on every leaf);
    ``epoch_losses``: (num_members, epochs) mean training objective per epoch."""
    params: Params
    epoch_losses: jax.Array


def member_keys(key: jax.Array, num_members: int) -> tuple[jax.Array, jax.Array]:
    """``(init_keys, data_keys)``, each with leading axis ``num_members``."""
    keys = jax.random.split(key, num_members)
    pairs = jax.vmap(jax.random.split)(keys)
    return pairs[:, 0], pairs[:, 1]


def train_ensemble(key: jax.Array, sizes: Sequence[int], x, y, cfg: TrainConfig,
                   num_members: int) -> EnsembleResult:
    """Train ``num_members`` independently initialised MLPs with layer sizes ``sizes``
    (MAP / Adam, see :mod:`symlib.inference.training`), all at once."""
    if isinstance(num_members, bool) or not isinstance(num_members, (int, np.integer)) or num_members < 1:
        raise ValueError(f"num_members must be an integer >= 1, got {num_members!r}")
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2 or any(s < 1 for s in sizes):
        raise ValueError(f"sizes must list at least two positive layer widths, got {sizes}")
    _check_inputs(x, y, cfg)  # before any work: same checks (and messages) as fit_map_many
    if np.shape(x)[1] != sizes[0]:
        raise ValueError(f"x has {np.shape(x)[1]} features but sizes[0] = {sizes[0]}")
    init_keys, data_keys = member_keys(key, int(num_members))
    params0 = jax.vmap(lambda k: mlp_init(k, sizes))(init_keys)
    params, losses = fit_map_many(params0, data_keys, x, y, cfg)
    return EnsembleResult(params, losses)
