"""A Laplace that says why (issue 45, item 4): fit_laplace warns when the sampled predictive's
accuracy falls far below the MAP network's, and the dense accumulation can show a progress bar."""
import warnings

import jax
import numpy as np
import optax
import pytest

from symlib import inference
from symlib.core.models import mlp_apply, mlp_init
from symlib.inference import Data, LaplaceConfig, LaplaceWarning, Model, TrainConfig
from symlib.inference.laplace import PREDICTIVE_ACCURACY_DROP

RNG = np.random.default_rng(0)
CENTERS = RNG.normal(size=(5, 8)) * 2
Y = RNG.integers(0, 5, 200)
X = (CENTERS[Y] + RNG.normal(size=(200, 8))).astype(np.float32)
MODEL, DATA = Model(mlp_apply), Data(X, Y)


@pytest.fixture(scope="module")
def trained():
    cfg = TrainConfig(epochs=20, batch_size=32, optimizer=optax.adam(1e-2))
    return inference.fit_map(jax.random.key(1), mlp_init(jax.random.key(0), [8, 16, 5]), MODEL, DATA, cfg).params


def test_a_collapsed_sampled_predictive_is_named_with_both_accuracies_and_the_fix(trained):
    with pytest.warns(LaplaceWarning, match=r"fit_laplace: the sampled predictive's accuracy \(\d+\.\d%\) is far below "
                                            r"the MAP network's \(9\d\.\d%\) on 200 training points \(32 draws.*raise "
                                            r"the prior precision \(config.prior_precision=0.01\) or a last-layer"):
        inference.fit_laplace(jax.random.key(2), trained, MODEL, DATA,
                              LaplaceConfig(prior_precision=1e-2, hessian="ggn", batch_size=100))


def test_a_healthy_laplace_gives_no_warning(trained):
    with warnings.catch_warnings():
        warnings.simplefilter("error", LaplaceWarning)
        post = inference.fit_laplace(None, trained, MODEL, DATA,
                                     LaplaceConfig(prior_precision=100.0, hessian="ggn", batch_size=100))
    draws = inference.sample(jax.random.key(0), post, 32)
    probs = jax.nn.softmax(jax.vmap(lambda p: mlp_apply(p, X))(draws)).mean(0)
    ref = np.mean(np.argmax(mlp_apply(trained, X), -1) == Y)
    assert np.mean(np.argmax(probs, -1) == Y) > ref - PREDICTIVE_ACCURACY_DROP


@pytest.mark.filterwarnings("ignore::symlib.inference.LaplaceWarning")  # the predictive check: not the subject
def test_the_dense_accumulation_shows_a_progress_bar_when_asked(trained, capsys):
    config = LaplaceConfig(prior_precision=1.0, hessian="ggn", batch_size=50)
    inference.fit_laplace(jax.random.key(0), trained, Model(mlp_apply), Data(X, Y), config, progress=True)
    err = capsys.readouterr().err
    assert "laplace (ggn)" in err and "4/4" in err
    inference.fit_laplace(jax.random.key(0), trained, Model(mlp_apply), Data(X, Y), config)  # not a terminal: silent
    assert capsys.readouterr().err == ""


@pytest.mark.filterwarnings("ignore::symlib.inference.LaplaceWarning")  # the predictive check's verdict: not the subject
def test_the_predictive_check_compiles_once_for_networks_of_one_shape(trained):
    from symlib.inference import laplace

    laplace._draws_accuracies.clear_cache()
    other = jax.tree_util.tree_map(lambda a: a * 0.9, trained)  # another mode of the same network
    config = LaplaceConfig(prior_precision=1.0, hessian="ggn", batch_size=100)
    for params in (trained, other):
        inference.fit_laplace(jax.random.key(0), params, MODEL, DATA, config)
    assert laplace._draws_accuracies._cache_size() == 1  # an eager lax.map(lambda ...) compiled once per call
