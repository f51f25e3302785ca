"""Helpers shared by the tests (imported as ``from _helpers import ...``).

JAX is imported only by the helpers that need it, so the data tests stay free of it.
"""
from __future__ import annotations

import functools
import http.server
import socket
import threading
from pathlib import Path

import numpy as np


def check_data_dir_and_md5(load, dataset: str, archive: Path, root: Path, monkeypatch, n: int) -> None:
    """A loader of one archive (``load(data_dir=..., md5=...)``, TinyImageNet, Textures) finds a
    copy of ``archive`` in ``root/<dataset>/`` with its mirror unreachable, checks an MD5
    given in any case (``n`` images) and rejects a wrong one."""
    import pytest

    from symlib import data

    monkeypatch.setitem(data.MIRRORS, dataset, [unreachable_url()])
    (root / dataset).mkdir()
    (root / dataset / archive.name).write_bytes(archive.read_bytes())
    x, _ = load(data_dir=root, md5=data.md5_file(archive).upper())
    assert len(x) == n
    with pytest.raises(data.ChecksumError, match="expected MD5 0+, got"):
        load(data_dir=root, md5="0" * 32)


def check_missing_message(load, dataset: str, url: str, root: Path, monkeypatch) -> None:
    """Offline and without the file, ``load(download_if_missing=False)`` says which file it
    wanted, where it looked, the variable to set, the loader and the file's URL."""
    import pytest

    from symlib import data

    monkeypatch.setenv("SYMLIB_DATA_DIR", str(root / "env"))
    with pytest.raises(data.DataNotFoundError) as err:
        load(download_if_missing=False)
    msg = str(err.value)
    assert url.rsplit("/", 1)[1] in msg and str(root / "env" / dataset) in msg and "SYMLIB_DATA_DIR" in msg
    assert url in msg and load.func.__name__ in msg


def random_mlp(rng: np.random.Generator, sizes, bias_scale=1.0) -> dict:
    """Generic float64 MLP params (non-zero biases)."""
    return {
        f"dense_{l}": {"kernel": rng.normal(size=(a, b)) / np.sqrt(a), "bias": bias_scale * rng.normal(size=(b,))}
        for l, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def conv_spec_pair(rng: np.random.Generator):
    """A generic permutation spec with 4-D kernels (two convolutions and a head) and two random
    networks of it: ``(spec, params_a, params_b)``."""
    from symlib.symmetry.specs import PermutationSpec

    spec = PermutationSpec({
        "c0/kernel": (None, None, None, "P_a"),
        "c0/bias": ("P_a",),
        "c1/kernel": (None, None, "P_a", "P_b"),
        "c1/bias": ("P_b",),
        "head/kernel": ("P_b", None),
    })

    def conv():
        return {"c0": {"kernel": rng.normal(size=(3, 3, 3, 24)), "bias": rng.normal(size=(24,))},
                "c1": {"kernel": rng.normal(size=(3, 3, 24, 40)), "bias": rng.normal(size=(40,))},
                "head": {"kernel": rng.normal(size=(40, 5))}}

    return spec, conv(), conv()


def stack_trees(trees):
    """Stack pytrees of arrays on a new leading axis (numpy)."""
    import jax

    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *trees)


def assert_tree_close(a, b, **kw):
    from symlib.symmetry.specs import flatten_params

    fa, fb = flatten_params(a), flatten_params(b)
    assert sorted(fa) == sorted(fb)
    for k in fa:
        np.testing.assert_allclose(np.asarray(fa[k]), np.asarray(fb[k]), err_msg=k, **kw)


def optunet_logits64(params, x) -> np.ndarray:
    """OptuNet's logits computed in float64 (for "the function is unchanged" checks)."""
    import jax

    from symlib.core.cnn import optunet_apply

    with jax.enable_x64(True):
        return np.asarray(optunet_apply(params, x))


# --------------------------------------------------------------------------- #
# data files and loopback servers (tests of symlib.data)
# --------------------------------------------------------------------------- #
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def unreachable_url() -> str:
    """A loopback URL on a port nobody listens on (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


class LoopbackServer:
    """Serves ``directory`` on 127.0.0.1 (a free port) in a thread; ``url`` ends in ``/``
    and ``requests`` lists the paths asked for."""

    def __init__(self, directory: Path):
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                outer.requests.append(self.path)
                super().do_GET()

        handler = functools.partial(Handler, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def corrupt(path: Path) -> None:
    """Flip the bits of the byte in the middle of a file."""
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


def leftovers(directory: Path) -> list[str]:
    """The sorted names in ``directory`` (none if it does not exist)."""
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


#: the tiny pieced HMC run of the tests (a 6-8-3 MLP, 2 chains, 12 kept samples each)
PIECES_SIZES = [6, 8, 3]
PIECES_CHUNK = 4


def pieces_cfg():
    from symlib.inference.hmc import HMCConfig

    return HMCConfig(step_size=0.05, num_leapfrog=3, num_burnin=7, num_samples=12, thin=2, num_chains=2,
                     adapt_step_size=True)


def pieces_data():
    """Training and test data of the tiny pieced run: ``(x, y, x_test, y_test)``."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, PIECES_SIZES[0])).astype(np.float32)
    y = rng.integers(0, PIECES_SIZES[-1], 80).astype(np.int32)
    x_test = rng.normal(size=(40, PIECES_SIZES[0])).astype(np.float32)
    y_test = rng.integers(0, PIECES_SIZES[-1], 40).astype(np.int32)
    return x, y, x_test, y_test


def pieces_init():
    """One start per chain of the tiny pieced run."""
    import jax

    from symlib.core.models import mlp_init

    inits = [mlp_init(k, PIECES_SIZES) for k in jax.random.split(jax.random.key(0), pieces_cfg().num_chains)]
    return jax.tree.map(lambda *a: np.stack(a), *inits)


def tiny_pieced_run(profile=None, **kw):
    """A fresh definition of the tiny pieced run (new Python objects every call, as a new process
    would build). ``profile`` is ignored: the GPU queue's ``pieces`` jobs call their target with one."""
    import jax

    from symlib.core.models import mlp_apply
    from symlib.experiments.xiao.hmc_pieces import PiecedHMC
    from symlib.inference.hmc import make_logdensity

    x, y, x_test, y_test = pieces_data()
    return PiecedHMC(jax.random.key(1), pieces_init(), make_logdensity(x, y, apply_fn=mlp_apply),
                     kw.pop("cfg", pieces_cfg()), x_test, y_test, x_match=x[:30], chunk_size=PIECES_CHUNK,
                     init_per_chain=True, **kw)


#: the labels ``chained_steps``' steps were computed for, in order (a test empties it)
CHAINED_CALLS: list[str] = []


def chained_steps(profile):
    """Three GPU-queue steps (a ``blocks`` job's target), each going on from the step before
    through the artifact cache, as the pieces of SGHMC's chain do (``laurent.posteriors.zoo_steps``)."""
    from symlib.experiments.cache import cached_steps
    from symlib.experiments.registry import Steps

    labels = ["a", "b", "c"]

    def train(label):
        CHAINED_CALLS.append(label)
        k = labels.index(label)
        before = int(cached_steps("chained", {}, labels[:k], train, verbose=False)[-1]["value"]) if k else 0
        return {"value": np.asarray(before + 1)}

    return Steps("chained", {}, labels, train)
