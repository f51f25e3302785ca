"""OptuNet (symlib.core.cnn) and its permutation spec (symlib.symmetry.architectures)."""
import jax
import numpy as np
import pytest

from symlib.core.cnn import OPTUNET_SHAPES, as_images, optunet_apply, optunet_hidden, optunet_init
from symlib.symmetry.architectures import optunet_permutation_spec
from symlib.symmetry.specs import PermutationSpec, apply_permutation, check_spec, random_permutations


@pytest.fixture(scope="module")
def net():
    return optunet_init(jax.random.PRNGKey(0))


@pytest.fixture(scope="module")
def images():
    return jax.random.normal(jax.random.PRNGKey(1), (6, 28, 28, 1))


def test_optunet_has_355_parameters(net):
    assert sum(np.size(v) for v in jax.tree_util.tree_leaves(net)) == 355
    assert sum(int(np.prod(s)) for s in OPTUNET_SHAPES.values()) == 355


def test_optunet_init_is_pytorchs_uniform_drawn_in_each_leafs_shape(net):
    """The flat draws reshaped (what compiles fast) are the numbers of a draw in the leaf's
    own shape, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with one key per leaf, vmapped or not."""
    keys = jax.random.split(jax.random.PRNGKey(0), len(OPTUNET_SHAPES))
    for k, (path, shape) in zip(keys, OPTUNET_SHAPES.items()):
        layer, leaf = path.split("/")
        bound = 1.0 / np.sqrt(np.prod(OPTUNET_SHAPES[f"{layer}/kernel"][:-1]))
        expected = jax.random.uniform(k, shape, jax.numpy.float32, -bound, bound)
        np.testing.assert_array_equal(net[layer][leaf], expected)
    stacked = jax.vmap(optunet_init)(jax.random.split(jax.random.PRNGKey(3), 3))
    for i, key in enumerate(jax.random.split(jax.random.PRNGKey(3), 3)):
        one = optunet_init(key)
        for a, b in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(stacked)):
            np.testing.assert_array_equal(a, b[i])


def test_optunet_shapes(net, images):
    assert optunet_apply(net, images).shape == (6, 10)
    hidden = optunet_hidden(net, images)
    assert hidden["conv_0"].shape == (6, 25, 25, 2)
    assert hidden["conv_1"].shape == (6, 4, 4, 10)
    assert hidden["dense_0"].shape == (6, 3)


def test_grouped_convolution_reads_one_channel_per_group(net, images):
    """Changing conv_0's channel 1 (only) leaves conv_1's channels 0-4 unchanged."""
    k = np.asarray(net["conv_0"]["kernel"]).copy()
    k[..., 1] *= -3.0
    other = {**net, "conv_0": {"kernel": k}}
    a, b = optunet_hidden(net, images)["conv_1"], optunet_hidden(other, images)["conv_1"]
    np.testing.assert_array_equal(a[..., :5], b[..., :5])
    assert np.abs(a[..., 5:] - b[..., 5:]).max() > 0


@pytest.mark.parametrize("seed", range(5))
def test_random_permutation_keeps_the_function(net, images, seed):
    spec = optunet_permutation_spec()
    perms = random_permutations(seed, spec, net)
    assert (perms["P_conv_1"][:5] < 5).all() and (perms["P_conv_1"][5:] >= 5).all()
    out = optunet_apply(apply_permutation(spec, perms, net), images)
    np.testing.assert_allclose(out, optunet_apply(net, images), atol=1e-5)


def test_permutation_across_groups_is_refused(net):
    spec = optunet_permutation_spec()
    with pytest.raises(ValueError, match="P_conv_1.*within its 2 groups"):
        apply_permutation(spec, {"P_conv_1": np.arange(10)[::-1], "P_dense_0": np.arange(3)}, net)


def test_spec_that_does_not_fit_names_the_parameter(net):
    spec = optunet_permutation_spec()
    wrong = {**net, "dense_0": {"kernel": np.zeros((12, 3)), "bias": np.zeros(3)}}
    with pytest.raises(ValueError, match="dense_0/kernel"):
        check_spec(spec, wrong)
    missing = {k: v for k, v in net.items() if k != "dense_1"}
    with pytest.raises(ValueError, match="dense_1"):
        check_spec(spec, missing)
    with pytest.raises(ValueError, match="not a multiple of 3"):
        check_spec(PermutationSpec(spec.axes, blocks={"P_conv_1": 3}), net)
    with pytest.raises(ValueError, match="P_nope"):
        PermutationSpec(spec.axes, blocks={"P_nope": 2})


def test_apply_names_the_parameter_that_does_not_fit(net, images):
    wrong = {**net, "conv_1": {"kernel": np.zeros((5, 5, 2, 10), np.float32)}}
    with pytest.raises(ValueError, match="conv_1/kernel"):
        optunet_apply(wrong, images)
    with pytest.raises(ValueError, match="missing parameter"):
        optunet_apply({k: v for k, v in net.items() if k != "conv_0"}, images)
    with pytest.raises(ValueError, match="images"):
        optunet_apply(net, np.zeros((2, 784), np.float32))
    assert as_images(np.zeros((2, 784))).shape == (2, 28, 28, 1)


def test_smallest_image_is_18_pixels(net):
    """18x18 leaves one 1x1 map after the second convolution; 17x17 leaves none (NaN logits)."""
    out = optunet_apply(net, np.ones((2, 18, 18, 1), np.float32))
    assert out.shape == (2, 10) and np.all(np.isfinite(np.asarray(out)))
    with pytest.raises(ValueError, match="17x17 pixels; OptuNet needs at least 18x18"):
        optunet_apply(net, np.ones((2, 17, 17, 1), np.float32))


@pytest.mark.parametrize("groups,c_in,c_out,k", [(1, 1, 2, 4), (2, 2, 10, 5), (1, 3, 4, 3), (3, 6, 9, 2)])
@pytest.mark.parametrize("impl", ["patches", "taps"])
def test_our_convolutions_equal_xla_in_value_and_gradient(groups, c_in, c_out, k, impl):
    """conv2d(impl="patches") and conv2d(impl="taps") are the same function as XLA's convolution, gradients included."""
    from symlib.core.cnn import conv2d

    kx, kk = jax.random.split(jax.random.key(groups * 100 + c_out))
    x = jax.random.normal(kx, (3, 11, 9, c_in))
    kernel = jax.random.normal(kk, (k, k, c_in // groups, c_out))
    outs = {i: conv2d(x, kernel, groups=groups, impl=i) for i in ("xla", impl)}
    np.testing.assert_allclose(outs[impl], outs["xla"], rtol=1e-5, atol=1e-5)
    grads = {i: jax.grad(lambda xx, kk_: (conv2d(xx, kk_, groups=groups, impl=i) ** 2).sum(), (0, 1))(x, kernel)
             for i in ("xla", impl)}
    for a, b in zip(grads[impl], grads["xla"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("conv", ["xla", "patches", ("patches", "taps")])
def test_optunet_convolutions_agree(net, images, conv):
    """OptuNet's default convolutions (OPTUNET_CONVS) and any other choice give the same logits."""
    np.testing.assert_allclose(optunet_apply(net, images), optunet_apply(net, images, conv=conv), rtol=1e-5, atol=1e-5)


def test_patches_convolution_refuses_what_it_does_not_do():
    from symlib.core.cnn import conv2d

    x, kernel = np.zeros((1, 8, 8, 1), np.float32), np.zeros((3, 3, 1, 2), np.float32)
    with pytest.raises(ValueError, match="impl must be one of"):
        conv2d(x, kernel, impl="fft")
    with pytest.raises(ValueError, match="stride 1 and padding 'VALID'"):
        conv2d(x, kernel, stride=2, impl="patches")
    with pytest.raises(ValueError, match="stride 1 and padding 'VALID'"):
        conv2d(x, kernel, padding="SAME", impl="patches")
    with pytest.raises(ValueError, match="impl='taps' takes stride 1"):
        conv2d(x, kernel, stride=2, impl="taps")
