"""Training networks other than MLPs (fit_map / fit_ensemble with ``Model(apply_fn)``): OptuNet on
MNIST (the subset shipped with symlib), many at once, the crop augmentation, Laurent et al.'s recipe."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from symlib.core.cnn import as_images, optunet_apply, optunet_init
from symlib.core.losses import nll
from symlib.data import CHANNEL_STATS, load_split, standardize
from symlib.experiments.laurent.optunet import optunet_decay, optunet_train_config
from symlib.experiments.recipes import StepDecay, step_sgd
from symlib.inference import Data, Model, fit_ensemble, fit_map
from symlib.inference.training import TrainConfig, evaluate, map_objective, random_crop

OPTUNET = Model(optunet_apply)

# Adam learns faster than the paper's SGD (and without crops) in a handful of steps
CFG = TrainConfig(epochs=4, batch_size=32, optimizer=optax.adam(0.01))


@pytest.fixture(scope="module")
def mnist():
    d = load_split("mnist", "subset", n_train=1024, n_test=500)
    x, xt = (as_images(standardize(d[k], "mnist")) for k in ("x_train", "x_test"))
    return x, jnp.asarray(d["y_train"]), xt, jnp.asarray(d["y_test"])


@pytest.mark.parametrize("dataset", sorted(CHANNEL_STATS))
def test_standardize_gives_zero_mean_unit_variance(dataset):
    x = load_split(dataset, "subset", n_train=5000, n_test=0)["x_train"]
    z = standardize(x, dataset)
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01, (z.mean(), z.std())
    assert standardize(0.0, "mnist") == pytest.approx(-0.1307 / 0.3081)
    with pytest.raises(ValueError, match="no channel statistics for dataset 'svhn'"):
        standardize(x, "svhn")


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_many_optunets_learn_and_equal_one_by_one(mnist):
    x, y, xt, yt = mnist
    # member i starts from optunet_init(split(init_key, 3)[i]); fit_ensemble splits data_key into its data keys
    init_key, data_key = jax.random.split(jax.random.key(0))
    ens = fit_ensemble(data_key, jax.vmap(optunet_init)(jax.random.split(init_key, 3)), OPTUNET, Data(x, y), CFG)
    params, losses = ens.samples, ens.info["epoch_loss"]
    assert losses.shape == (3, CFG.epochs) and params["conv_0"]["kernel"].shape == (3, 4, 4, 1, 2)
    accuracy = []
    for i, (ki, kd) in enumerate(zip(jax.random.split(init_key, 3), jax.random.split(data_key, 3))):
        single = fit_map(kd, optunet_init(ki), OPTUNET, Data(x, y), CFG)
        one, l1 = single.params, single.info["epoch_loss"]
        np.testing.assert_allclose(losses[i], l1, rtol=1e-4, atol=1e-5)
        jax.tree_util.tree_map(lambda s, o: np.testing.assert_allclose(s[i], o, rtol=1e-3, atol=1e-4), params, one)
        accuracy.append(evaluate(one, xt, yt, optunet_apply)["accuracy"])
    print("test accuracies", accuracy, "losses", losses)
    # OptuNet learns slowly and some initialisations stay at chance for long (the authors
    # stop runs below 15% validation accuracy after 3 epochs); chance is 0.1 (500 test
    # images: +-0.013). After 128 Adam steps the best of 3 must have learnt something.
    assert np.max(losses[:, 0] - losses[:, -1]) > 0.1 and max(accuracy) > 0.2, (accuracy, losses)


def test_training_with_crops_is_deterministic_given_the_data_key(mnist):
    x, y, _, _ = mnist
    cfg = CFG._replace(epochs=1, augment="crop")
    p0 = optunet_init(jax.random.key(0))
    data = Data(x[:256], y[:256])
    a, b, c = (fit_map(jax.random.key(k), p0, OPTUNET, data, cfg) for k in (1, 1, 2))
    jax.tree_util.tree_map(np.testing.assert_array_equal, a, b)  # the parameters and the epoch losses
    la, lc = a.info["epoch_loss"], c.info["epoch_loss"]
    assert np.all(np.isfinite(la)) and not np.array_equal(la, lc)


def test_fit_ensemble_takes_a_stack_and_checks_cnn_data(mnist):
    x, y, _, _ = mnist
    stack = jax.vmap(optunet_init)(jax.random.split(jax.random.key(1), 2))
    keys = jax.random.split(jax.random.key(2), 2)
    cfg = CFG._replace(epochs=1, augment="crop")
    flat = x.reshape(x.shape[0], -1)
    with pytest.raises(ValueError, match=r"y must lie in \[0, 10\) for 10 classes"):
        fit_ensemble(keys, stack, OPTUNET, Data(x, y + 1), cfg)
    with pytest.raises(ValueError, match=r"x contains NaN or inf"):
        fit_ensemble(keys, stack, OPTUNET, Data(x.at[0, 3, 3, 0].set(jnp.nan), y), cfg)
    with pytest.raises(ValueError, match=r"expected x of shape \(n, ...\) and y of shape \(n,\)"):
        fit_ensemble(keys, stack, OPTUNET, Data(x, y[:10]), cfg)
    with pytest.raises(ValueError, match="OptuNet takes images"):
        fit_map(keys[0], optunet_init(jax.random.key(0)), OPTUNET, Data(flat, y), cfg._replace(augment=None))
    with pytest.raises(ValueError, match="augment='crop' needs NHWC images"):
        fit_map(keys[0], optunet_init(jax.random.key(0)), Model(lambda p, v: optunet_apply(p, as_images(v))),
                Data(flat, y), cfg)
    with pytest.raises(ValueError, match="unknown augment 'flip'"):
        fit_map(keys[0], optunet_init(jax.random.key(0)), OPTUNET, Data(x, y), cfg._replace(augment="flip"))
    with pytest.raises(ValueError, match="every leaf must share the 1 leading"):
        fit_ensemble(keys, {**stack, "dense_1": {"kernel": stack["dense_1"]["kernel"][:1],
                                                 "bias": stack["dense_1"]["bias"]}}, OPTUNET, Data(x, y), cfg)
    with pytest.raises(ValueError, match="key holds 3 member keys, but params0 holds 2 members"):
        fit_ensemble(jax.random.split(jax.random.key(2), 3), stack, OPTUNET, Data(x, y), cfg)
    from symlib.core.models import mlp_apply, mlp_init
    with pytest.raises(ValueError, match=r"needs NHWC images x \(n, h, w, c\), got shape \(\d+, 784\)"):  # MLP: no crop
        fit_map(keys[0], mlp_init(jax.random.key(0), [784, 3, 10]), Model(mlp_apply), Data(flat, y), cfg)


def test_random_crop_is_a_deterministic_shift_and_identity_without_padding():
    images = jax.random.uniform(jax.random.key(0), (16, 28, 28, 3))
    crop = jax.jit(random_crop, static_argnames="padding")
    a, b = crop(jax.random.key(1), images), crop(jax.random.key(1), images)
    assert a.shape == images.shape and a.dtype == images.dtype
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, crop(jax.random.key(2), images))
    np.testing.assert_array_equal(crop(jax.random.key(1), images, padding=0), images)
    # every crop is the image shifted by (dy, dx) in -4..4 with zeros let in
    padded = np.pad(np.asarray(images), ((0, 0), (4, 4), (4, 4), (0, 0)))
    for im, crop in zip(padded, np.asarray(a)):
        hits = [(i, j) for i in range(9) for j in range(9) if np.array_equal(im[i:i + 28, j:j + 28], crop)]
        assert hits
    with pytest.raises(ValueError, match="NHWC"):
        random_crop(jax.random.key(1), images[0])
    with pytest.raises(ValueError, match="padding must be a non-negative integer"):
        random_crop(jax.random.key(1), images, padding=-1)


def test_laurent_recipe_weight_decay_is_pytorch_sgd_weight_decay(mnist):
    """The prior term of map_objective with optunet_train_config's prior_std has gradient
    2e-4 * W: SGD on it is PyTorch's SGD(lr=0.04, weight_decay=2e-4) on the mean cross-entropy."""
    x, y, _, _ = mnist
    n = x.shape[0]
    cfg = optunet_train_config(n)
    assert cfg == TrainConfig(60, 64, step_sgd(StepDecay(0.04, (15, 30), 0.5), n // 64), (2e-4 * n) ** -0.5, "crop")
    assert optunet_decay(8).milestones == (2, 4) and optunet_decay(1).milestones == ()
    params = optunet_init(jax.random.key(3))
    xb, yb = x[:64], y[:64]
    grads = jax.jit(lambda p: (jax.grad(map_objective)(p, xb, yb, n, cfg.prior_std, optunet_apply),
                               jax.grad(lambda q: nll(optunet_apply(q, xb), yb))(p)))
    g_map, g_ce = grads(params)
    jax.tree_util.tree_map(lambda a, b, w: np.testing.assert_allclose(a, b + 2e-4 * w, rtol=1e-5, atol=1e-8),
                           g_map, g_ce, params)
    with pytest.raises(ValueError, match="weight_decay must be > 0 and n_train >= 1"):
        optunet_train_config(0)


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
# a smoke test of the layout: 7 HMC steps of 1e-3 accept everything, which run_hmc rightly flags
@pytest.mark.filterwarnings("ignore:mean acceptance after burn-in:symlib.inference.hmc.HMCWarning")
def test_vi_and_hmc_take_optunet(mnist):
    """Bayes by backprop and HMC with OptuNet's apply function: finite, improving ELBO, the
    posterior in OptuNet's layout; HMC samples in that layout and a finite log density."""
    from symlib.inference import VIConfig, fit_vi
    from symlib.inference.hmc import HMCConfig, make_logdensity, run_hmc
    x, y, _, _ = mnist
    x, y = x[:256], y[:256]

    fit = fit_vi(jax.random.key(0), optunet_init(jax.random.key(1)), OPTUNET, Data(x, y),
                 VIConfig(epochs=6, batch_size=64, optimizer=optax.adam(0.01), prior_var=1.0, std_init=0.01))
    elbo = np.asarray(fit.info["elbo"])
    assert fit.std["conv_1"]["kernel"].shape == (5, 5, 1, 10) and elbo.shape == (6,) and np.all(np.isfinite(elbo))
    assert jax.tree_util.tree_structure(fit.mean) == jax.tree_util.tree_structure(optunet_init(jax.random.key(1)))
    assert elbo[-1] > elbo[0]
    logdensity = make_logdensity(x, y, prior_var=1.0, apply_fn=optunet_apply)
    start = optunet_init(jax.random.key(2))
    assert np.isfinite(float(logdensity(start)))
    res = run_hmc(jax.random.key(3), start, logdensity,
                  HMCConfig(step_size=1e-3, num_leapfrog=3, num_burnin=4, num_samples=4, thin=1, num_chains=2))
    assert res.samples["dense_0"]["kernel"].shape[:2] == (2, 4) and np.isfinite(res.mean_acceptance)

