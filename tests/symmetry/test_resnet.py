"""ResNet20 (LayerNorm) and the CIFAR ResNet-18 (batch norm, inference form) of
symlib.core.resnet, their permutation specs (symlib.symmetry.architectures) and the
positive-scaling statements of the architectures module docstring."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from symlib.core.resnet import (resnet18_apply, resnet18_hidden, resnet18_init, resnet18_shapes, resnet20_apply,
                                resnet20_hidden, resnet20_init, resnet20_shapes)
from symlib.symmetry.architectures import resnet18_permutation_spec, resnet20_permutation_spec
from symlib.symmetry.matching import weight_matching
from symlib.symmetry.specs import (apply_permutation, check_spec, flatten_params, random_permutations,
                                   unflatten_params)

RESNET20 = (resnet20_init, resnet20_apply, resnet20_hidden, resnet20_permutation_spec)
RESNET18 = (resnet18_init, resnet18_apply, resnet18_hidden, resnet18_permutation_spec)


def _num_params(shapes, skip=()):
    return sum(int(np.prod(s)) for path, s in shapes.items() if not path.endswith(skip))


def randomized(params, seed):
    """``params`` with random norm parameters and head bias (the init's ones and zeros are
    invariant under every permutation and scaling, which would make the checks weak)."""
    rng = np.random.default_rng(seed)
    out = {}
    for path, leaf in flatten_params(params).items():
        leaf = np.asarray(leaf)
        if path.endswith(("/scale", "/var")):
            leaf = rng.uniform(0.5, 1.5, leaf.shape)
        elif path.endswith(("/bias", "/mean")):
            leaf = 0.2 * rng.standard_normal(leaf.shape)
        out[path] = leaf.astype(np.float32)
    return unflatten_params(out)


def rescaled(spec, params, factors):
    """Positive scaling of whole channel groups: for each permutation name ``P`` of ``factors``
    (name -> ``(c,)`` positive factors), the norms writing ``P``'s channels get ``scale`` and
    ``bias`` times the factors, and every kernel axis reading them (a kernel's input axis:
    the next-to-last) is divided by them. Output axes of kernels and running statistics are
    left alone."""
    flat = {k: np.asarray(v) for k, v in flatten_params(params).items()}
    for name, a in factors.items():
        for path, axis in spec.perm_to_axes[name]:
            leaf = flat[path]
            shape = [1] * leaf.ndim
            shape[axis] = -1
            if path.endswith(("/scale", "/bias")):
                flat[path] = leaf * a
            elif path.endswith("kernel") and axis == leaf.ndim - 2:
                flat[path] = leaf / a.reshape(shape)
    return unflatten_params(flat)


def _factors(rng, sizes, names):
    return {n: rng.uniform(0.3, 3.0, sizes[n]).astype(np.float32) for n in names}


def assert_same_function(apply, p, q, x, rtol=1e-4):
    a, b = np.asarray(apply(p, x)), np.asarray(apply(q, x))
    np.testing.assert_allclose(b, a, atol=rtol * np.abs(a).max())


def relative_change(apply, p, q, x):
    a, b = np.asarray(apply(p, x)), np.asarray(apply(q, x))
    return float(np.abs(a - b).max() / np.abs(a).max())


def images(seed, n, channels, size=32):
    return jax.random.normal(jax.random.PRNGKey(seed), (n, size, size, channels))


@pytest.fixture(scope="module")
def r20():
    return randomized(resnet20_init(jax.random.PRNGKey(0)), 0)


@pytest.fixture(scope="module")
def r18():
    return randomized(resnet18_init(jax.random.PRNGKey(0)), 1)


# --------------------------------------------------------------------------- layout


def test_parameter_counts():
    assert _num_params(resnet20_shapes(1)) == 272_474
    assert _num_params(resnet20_shapes(4)) == 4_327_754
    shapes = resnet18_shapes(100)
    assert _num_params(shapes, skip=("/mean", "/var")) == 11_220_132  # torch-uncertainty's trainable count
    assert _num_params(shapes) - _num_params(shapes, skip=("/mean", "/var")) == 9_600
    net = resnet20_init(jax.random.PRNGKey(0), 2, 7, 1)
    assert {p: tuple(np.shape(v)) for p, v in flatten_params(net).items()} == resnet20_shapes(2, 7, 1)


def test_init_statistics():
    flat = flatten_params(resnet18_init(jax.random.PRNGKey(0)))
    k = np.asarray(flat["stage_3/block_1/conv_1/kernel"])
    assert abs(k.std() / np.sqrt(2 / (9 * 512)) - 1) < 0.02  # He normal, fan_out
    assert np.all(np.asarray(flat["stem/norm/scale"]) == 1) and np.all(np.asarray(flat["stem/norm/var"]) == 1)
    assert np.all(np.asarray(flat["stem/norm/bias"]) == 0) and np.all(np.asarray(flat["stem/norm/mean"]) == 0)
    assert np.abs(np.asarray(flat["head/kernel"])).max() <= 1 / np.sqrt(512)


@pytest.mark.parametrize("width,channels", [(1, 1), (1, 3), (2, 1), (2, 3)])
def test_resnet20_shapes_and_hidden_keys(width, channels):
    net = resnet20_init(jax.random.PRNGKey(width), width, 10, channels)
    x = images(0, 2, channels, 16)
    assert resnet20_apply(net, x).shape == (2, 10)
    hidden = resnet20_hidden(net, x)
    sizes = check_spec(resnet20_permutation_spec(), net)
    assert list(hidden) == [name for s in range(3) for name in
                            [f"P_stage_{s}_block_{b}" for b in range(3)] + [f"P_stage_{s}"]]
    assert set(hidden) == set(sizes)
    for name, h in hidden.items():
        s = int(name.split("_")[2])
        assert h.shape == (2, 16 >> s, 16 >> s, sizes[name]) and sizes[name] == 16 * width * 2 ** s
        assert float(h.min()) >= 0


def test_resnet18_shapes_and_hidden_keys(r18):
    x = images(0, 2, 3)
    assert resnet18_apply(r18, x).shape == (2, 100)
    hidden = resnet18_hidden(r18, x)
    sizes = check_spec(resnet18_permutation_spec(), r18)
    assert set(hidden) == set(sizes) and len(sizes) == 4 + 8
    for name, h in hidden.items():
        s = int(name.split("_")[2])
        assert h.shape == (2, 32 >> s, 32 >> s, 64 * 2 ** s) and sizes[name] == 64 * 2 ** s


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_flat_params_and_vmap(r20):
    x = images(1, 2, 3, 8)
    out = resnet20_apply(r20, x)
    np.testing.assert_array_equal(resnet20_apply(flatten_params(r20), x), out)
    stack = jax.tree_util.tree_map(lambda v: jnp.stack([v, 2 * v]), r20)
    outs = jax.vmap(resnet20_apply, in_axes=(0, None))(stack, x)
    np.testing.assert_allclose(outs[0], out, atol=1e-5 * np.abs(out).max())


# --------------------------------------------------------------------------- permutations


@pytest.mark.parametrize("width,channels", [(1, 1), (1, 3), (2, 1), (2, 3)])
def test_resnet20_random_permutation_keeps_the_function(width, channels):
    net = randomized(resnet20_init(jax.random.PRNGKey(width), width, 10, channels), width)
    spec = resnet20_permutation_spec()
    perms = random_permutations(width + channels, spec, net)
    x = images(2, 3, channels)
    assert_same_function(resnet20_apply, net, apply_permutation(spec, perms, net), x)


def test_resnet18_random_permutation_keeps_the_function(r18):
    spec = resnet18_permutation_spec()
    perms = random_permutations(5, spec, r18)
    assert_same_function(resnet18_apply, r18, apply_permutation(spec, perms, r18), images(3, 2, 3))


def test_spec_covers_every_parameter_and_links_streams():
    spec = resnet20_permutation_spec()
    assert set(spec.axes) == set(resnet20_shapes())
    assert spec.axes["stem/conv/kernel"] == (None, None, None, "P_stage_0")
    assert spec.axes["stage_1/block_0/conv_0/kernel"] == (None, None, "P_stage_0", "P_stage_1_block_0")
    assert spec.axes["stage_1/block_0/shortcut/conv/kernel"] == (None, None, "P_stage_0", "P_stage_1")
    assert spec.axes["stage_1/block_1/conv_0/kernel"] == (None, None, "P_stage_1", "P_stage_1_block_1")
    assert spec.axes["stage_2/block_2/conv_1/kernel"] == (None, None, "P_stage_2_block_2", "P_stage_2")
    assert spec.axes["head/kernel"] == ("P_stage_2", None) and spec.axes["head/bias"] == (None,)
    spec18 = resnet18_permutation_spec()
    assert set(spec18.axes) == set(resnet18_shapes())
    assert spec18.axes["stage_3/block_0/norm_0/var"] == ("P_stage_3_block_0",)
    assert spec18.axes["head/kernel"] == ("P_stage_3", None)


def test_check_spec_names_the_parameter(r20, r18):
    flat = flatten_params(r20)
    wrong = unflatten_params({**flat, "stage_1/block_1/conv_0/kernel": np.zeros((3, 3, 16, 32), np.float32)})
    with pytest.raises(ValueError, match="stage_1/block_1/conv_0/kernel"):
        check_spec(resnet20_permutation_spec(), wrong)
    missing = unflatten_params({k: v for k, v in flat.items() if not k.startswith("stage_2/block_1/norm_1")})
    with pytest.raises(ValueError, match="stage_2/block_1/norm_1"):
        check_spec(resnet20_permutation_spec(), missing)
    flat18 = flatten_params(r18)
    with pytest.raises(ValueError, match="stage_0/block_1/norm_0/mean"):
        check_spec(resnet18_permutation_spec(), {**flat18, "stage_0/block_1/norm_0/mean": np.zeros(63)})


def test_apply_names_the_parameter_that_does_not_fit(r20, r18):
    x = images(0, 2, 3, 8)
    flat = flatten_params(r20)
    with pytest.raises(ValueError, match="stage_0/block_2/conv_1/kernel"):
        resnet20_apply({**flat, "stage_0/block_2/conv_1/kernel": np.zeros((3, 3, 16, 17), np.float32)}, x)
    with pytest.raises(ValueError, match="stage_1/block_0/shortcut/norm/bias"):
        resnet20_apply({k: v for k, v in flat.items() if k != "stage_1/block_0/shortcut/norm/bias"}, x)
    with pytest.raises(ValueError, match="stem/conv/kernel.*multiple of 16"):
        resnet20_apply({**flat, "stem/conv/kernel": np.zeros((3, 3, 3, 24), np.float32)}, x)
    with pytest.raises(ValueError, match="head/kernel"):
        resnet20_apply({k: v for k, v in flat.items() if k != "head/kernel"}, x)
    with pytest.raises(ValueError, match="missing parameter"):
        resnet20_apply(r18, x)
    with pytest.raises(ValueError, match=r"images \(n, height, width, 3\)"):
        resnet20_apply(r20, np.zeros((2, 8, 8, 1), np.float32))
    with pytest.raises(ValueError, match="images"):
        resnet20_apply(r20, np.zeros((2, 192), np.float32))
    with pytest.raises(ValueError, match="at least 8x8"):
        resnet18_apply(r18, np.zeros((1, 4, 4, 3), np.float32))
    flat18 = flatten_params(r18)
    with pytest.raises(ValueError, match="stage_2/block_1/norm_1/var"):
        resnet18_apply({**flat18, "stage_2/block_1/norm_1/var": -np.ones(256, np.float32)}, images(0, 1, 3, 8))
    with pytest.raises(ValueError, match="width_multiplier"):
        resnet20_init(jax.random.PRNGKey(0), 0)
    with pytest.raises(ValueError, match="num_classes"):
        resnet18_init(jax.random.PRNGKey(0), num_classes=1.5)


# --------------------------------------------------------------------------- positive scaling


@pytest.mark.parametrize("arch", ["resnet20", "resnet18"])
def test_scaling_inner_channels_and_streams_keeps_the_function(arch, r20, r18):
    """norm_0 (scale, bias) * a, conv_1 input axis / a; a stream's writing norms * a and
    reading kernels / a; and all groups at once."""
    net, (_, apply, _, spec_fn) = (r20, RESNET20) if arch == "resnet20" else (r18, RESNET18)
    spec = spec_fn()
    sizes = check_spec(spec, net)
    x = images(4, 2, 3)
    rng = np.random.default_rng(0)
    for names in (["P_stage_1_block_1"], ["P_stage_0"], ["P_stage_1"], list(sizes)):
        q = rescaled(spec, net, _factors(rng, sizes, names))
        assert relative_change(apply, net, q, x) < 1e-4, names


def test_stream_scaling_needs_every_writer(r20):
    """Leaving out one writer of a stream (a block's norm_1) breaks the symmetry: the check
    above can fail."""
    spec = resnet20_permutation_spec()
    sizes = check_spec(spec, r20)
    a = _factors(np.random.default_rng(1), sizes, ["P_stage_1"])
    q = flatten_params(rescaled(spec, r20, a))
    p = flatten_params(r20)
    for leaf in ("scale", "bias"):
        q[f"stage_1/block_2/norm_1/{leaf}"] = p[f"stage_1/block_2/norm_1/{leaf}"]
    assert relative_change(resnet20_apply, r20, q, images(4, 2, 3)) > 1e-2


def test_scaling_conv_outputs_before_layer_norm_changes_the_function(r20):
    flat = {k: np.asarray(v) for k, v in flatten_params(r20).items()}
    a = np.random.default_rng(2).uniform(0.3, 3.0, 32).astype(np.float32)
    q = {**flat, "stage_1/block_1/conv_0/kernel": flat["stage_1/block_1/conv_0/kernel"] * a}
    assert relative_change(resnet20_apply, r20, q, images(4, 2, 3)) > 1e-2
    # one common factor for all channels: LayerNorm is scale invariant (up to eps)
    q = {**flat, "stage_1/block_1/conv_0/kernel": flat["stage_1/block_1/conv_0/kernel"] * 2.5}
    assert relative_change(resnet20_apply, r20, q, images(4, 2, 3)) < 1e-4


def test_scaling_conv_outputs_before_batch_norm_holds_up_to_eps(r18):
    """conv_0 output channel * a, running mean * a, var * a**2: unchanged while var >> eps,
    visibly changed when var is of the order of eps."""
    flat = {k: np.asarray(v) for k, v in flatten_params(r18).items()}
    path = "stage_2/block_1"
    a = np.random.default_rng(3).uniform(0.3, 3.0, 256).astype(np.float32)
    x = images(5, 2, 3)

    def scaled(p):
        return {**p, f"{path}/conv_0/kernel": p[f"{path}/conv_0/kernel"] * a,
                f"{path}/norm_0/mean": p[f"{path}/norm_0/mean"] * a,
                f"{path}/norm_0/var": p[f"{path}/norm_0/var"] * a ** 2}

    assert relative_change(resnet18_apply, flat, scaled(flat), x) < 1e-4
    tiny = {**flat, f"{path}/norm_0/var": flat[f"{path}/norm_0/var"] * 1e-5}
    assert relative_change(resnet18_apply, tiny, scaled(tiny), x) > 1e-2


# --------------------------------------------------------------------------- matching


def test_weight_matching_recovers_a_planted_permutation(r20):
    spec = resnet20_permutation_spec()
    planted = random_permutations(7, spec, r20)
    b = apply_permutation(spec, planted, r20)
    res = weight_matching(0, spec, r20, b)
    back = flatten_params(apply_permutation(spec, res.perms, b))
    for path, leaf in flatten_params(r20).items():
        np.testing.assert_array_equal(back[path], leaf, err_msg=path)
    self_objective = sum(float(np.sum(np.asarray(v, np.float64) ** 2)) for v in flatten_params(r20).values())
    assert res.objective[-1] == pytest.approx(self_objective, rel=1e-9)


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_wasserstein_alignment_undoes_a_planted_permutation_of_a_noisy_posterior(r20):
    """q1 = a random permutation of q0 plus noise (30% of each layer's weight scale): after
    alignment the squared distance of the means is the noise's own, and the function is kept."""
    from symlib.symmetry.alignment import apply_alignment, wasserstein_alignment

    spec = resnet20_permutation_spec()
    sigma0 = jax.tree_util.tree_map(lambda v: 0.01 + 0.05 * jnp.abs(jnp.sin(v)), r20)
    planted = random_permutations(7, spec, r20)
    mu1, sigma1 = apply_permutation(spec, planted, r20), apply_permutation(spec, planted, sigma0)
    keys = iter(jax.random.split(jax.random.key(5), len(jax.tree_util.tree_leaves(mu1))))
    noise = jax.tree_util.tree_map(lambda v: 0.3 * jnp.std(v) * jax.random.normal(next(keys), v.shape), mu1)
    mu1_noisy = jax.tree_util.tree_map(jnp.add, mu1, noise)
    match = wasserstein_alignment(jax.random.key(0), spec, (r20, sigma0), (mu1_noisy, sigma1))
    mu1_aligned, _ = apply_alignment(spec, match.perms, (mu1_noisy, sigma1))

    def sq(a, b):
        return sum(float(jnp.sum((u - v) ** 2)) for u, v in zip(jax.tree_util.tree_leaves(a),
                                                                jax.tree_util.tree_leaves(b)))

    assert sq(r20, mu1_aligned) == pytest.approx(sq(mu1, mu1_noisy), rel=1e-5)
    assert sq(r20, mu1_noisy) > 5 * sq(r20, mu1_aligned)
    x = images(2, 4, 3)
    np.testing.assert_allclose(resnet20_apply(mu1_aligned, x), resnet20_apply(mu1_noisy, x), atol=1e-4)


# --------------------------------------------------------------------------- scaling specs (symlib.symmetry.scaling)


@pytest.mark.parametrize("arch", ["resnet20", "resnet18"])
def test_scaling_spec_rescales_without_changing_the_function(arch, r20, r18):
    from symlib.symmetry import (apply_scaling, check_scaling_spec, resnet18_scaling_spec,
                                                 resnet20_scaling_spec, mass)
    net, apply, sspec = ((r20, resnet20_apply, resnet20_scaling_spec()) if arch == "resnet20"
                         else (r18, resnet18_apply, resnet18_scaling_spec()))
    sizes = check_scaling_spec(sspec, net)
    perm_sizes = check_spec(resnet20_permutation_spec() if arch == "resnet20" else resnet18_permutation_spec(), net)
    assert sizes == perm_sizes
    rng = np.random.default_rng(4)
    q = apply_scaling(sspec, net, {n: rng.uniform(0.3, 3.0, k) for n, k in sizes.items()})
    assert relative_change(apply, net, q, images(6, 2, 3)) < 1e-4
    assert abs(mass(sspec, q) - mass(sspec, net)) > 1e-3 * mass(sspec, net)


def test_min_mass_on_resnet20_keeps_the_function():
    from symlib.symmetry import min_mass, resnet20_scaling_spec
    net = unflatten_params({k: np.asarray(v, np.float64) for k, v in
                            flatten_params(randomized(resnet20_init(jax.random.PRNGKey(5), 1, 10, 1), 5)).items()})
    res = min_mass(resnet20_scaling_spec(), net)
    assert res.converged and res.mass < res.mass_before
    with jax.enable_x64(True):
        x = jnp.asarray(np.asarray(images(7, 2, 1, size=16)), jnp.float64)
        assert relative_change(resnet20_apply, res.params, net, x) < 1e-9


def test_scaling_spec_refuses_channels_before_a_norm():
    from symlib.symmetry import resnet18_scaling_spec, resnet20_scaling_spec
    with pytest.raises(ValueError, match=r"'stage_1/block_1/conv_0' have no scaling symmetry.*"
                                         r"'stage_1/block_1/norm_0' \(LayerNorm\).*group 'P_stage_1_block_1'"):
        resnet20_scaling_spec(["stage_1/block_1/conv_0"])
    with pytest.raises(ValueError, match=r"'stem/conv'.*'stem/norm' \(batch norm\).*up to its eps"):
        resnet18_scaling_spec(["stem/conv"])
    with pytest.raises(ValueError, match="unknown scaling group 'P_9'"):
        resnet20_scaling_spec(["P_9"])
    assert list(resnet20_scaling_spec(["P_stage_0"]).groups) == ["P_stage_0"]


def test_resnet18_training_mode_uses_batch_statistics_and_precise_bn_sets_them():
    from symlib.core.resnet import (resnet18_apply, resnet18_apply_train, resnet18_features, resnet18_init,
                                    resnet18_running_statistics)

    p = resnet18_init(jax.random.key(0), num_classes=7, base_width=2)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(12, 16, 16, 3)), jnp.float32)
    shuffled = jax.tree_util.tree_map_with_path(
        lambda path, a: a * 3.0 + 1.0 if str(path[-1].key) in ("mean", "var") else a, p)
    train = resnet18_apply_train(p, x)
    np.testing.assert_allclose(resnet18_apply_train(shuffled, x), train, rtol=1e-5, atol=1e-5)  # running stats unread
    q = resnet18_running_statistics(shuffled, x, batch_size=12)
    stem = jax.lax.conv_general_dilated(x, p["stem"]["conv"]["kernel"], (1, 1), ((1, 1), (1, 1)),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    m = stem.shape[0] * stem.shape[1] * stem.shape[2]
    np.testing.assert_allclose(q["stem"]["norm"]["mean"], stem.mean((0, 1, 2)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(q["stem"]["norm"]["var"], stem.var((0, 1, 2)) * m / (m - 1), rtol=1e-4)
    # inference with the re-estimated statistics is training mode up to the unbiased-variance factor
    np.testing.assert_allclose(resnet18_apply(q, x), train, atol=0.1)
    feats = resnet18_features(q, x)
    np.testing.assert_allclose(feats @ q["head"]["kernel"] + q["head"]["bias"], resnet18_apply(q, x), atol=1e-5)
    with pytest.raises(ValueError, match="at least 2"):
        resnet18_running_statistics(p, x[:1])
