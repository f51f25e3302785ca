"""Expensive experiments of the book: one function each, cached on disk.

A notebook calls :func:`run`; a GPU batch job calls ``python -m symlib run NAME``. Both
go through the artifact cache, so the notebook loads what the batch job computed.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from . import cache, data
from .config import Profile, get_profile
from .models import mlp_init
from .training import TrainConfig, evaluate, fit_map

Experiment = Callable[[Profile], dict[str, Any]]
EXPERIMENTS: dict[str, tuple[Experiment, Callable[[Profile], dict[str, Any]], str]] = {}


def register(name: str, config_of: Callable[[Profile], dict[str, Any]], doc: str):
    """Register ``fn(profile) -> artifact`` under ``name``; ``config_of(profile)`` is the part
    of the profile the result depends on (it goes into the cache key)."""

    def wrap(fn: Experiment) -> Experiment:
        EXPERIMENTS[name] = (fn, config_of, doc)
        return fn

    return wrap


def run(name: str, profile: Profile | str | None = None, *, verbose: bool = True) -> dict[str, Any]:
    """Result of experiment ``name`` under ``profile`` (default: the active one), from the
    artifact cache when present."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    profile = profile if isinstance(profile, Profile) else get_profile(profile)
    fn, config_of, _ = EXPERIMENTS[name]
    return cache.cached(name, config_of(profile), lambda: fn(profile), verbose=verbose)


def load_data(profile: Profile, dataset: str = "mnist") -> dict[str, np.ndarray]:
    """The profile's deterministic train/validation/test split of ``dataset``."""
    return data.load_split(dataset, source=profile.data_source, n_train=profile.n_train,
                           n_val=profile.n_val, n_test=profile.n_test, seed=0)


def _data_config(profile: Profile) -> dict[str, Any]:
    return {k: getattr(profile, k) for k in ("data_source", "n_train", "n_val", "n_test")}


def _mlp_config(profile: Profile) -> dict[str, Any]:
    keys = ("hidden", "epochs", "batch_size", "learning_rate", "prior_std")
    return {**_data_config(profile), **{k: getattr(profile, k) for k in keys}}


MLP_SEEDS = (0, 1)


@register("mlp_map_pair", _mlp_config,
          "two one-hidden-layer MLPs trained by MAP/Adam from independent seeds (0 and 1)")
def mlp_map_pair(profile: Profile) -> dict[str, Any]:
    d = load_data(profile)
    cfg = TrainConfig.from_profile(profile)
    sizes = [d["x_train"].shape[1], profile.hidden, 10]
    out: dict[str, Any] = {}
    for seed in MLP_SEEDS:
        init_key, data_key = jax.random.split(jax.random.key(seed))
        params, losses = fit_map(mlp_init(init_key, sizes), data_key, d["x_train"], d["y_train"], cfg)
        test = evaluate(params, d["x_test"], d["y_test"])
        out[f"seed{seed}"] = {"params": jax.device_get(params), "epoch_loss": np.asarray(losses),
                              "test_nll": test["nll"], "test_accuracy": test["accuracy"]}
    return out


def describe() -> str:
    """One line per registered experiment."""
    return "\n".join(f"{name:24s} {doc}" for name, (_, _, doc) in sorted(EXPERIMENTS.items()))
