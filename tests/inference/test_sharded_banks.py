"""Banks of networks split over devices: ``fit_ensemble`` shards the network
axis over every device (here 2 CPU devices, ``--xla_force_host_platform_device_count=2``,
in a subprocess) and give the one-device results; MMD's blocks dealt out to processes add
up to the whole statistic."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = textwrap.dedent("""
    import json, jax, jax.numpy as jnp, numpy as np
    from symlib.core.models import mlp_apply, mlp_init
    import optax
    from symlib.inference import Data, Model, TrainConfig, fit_ensemble
    assert len(jax.devices()) == 2, jax.devices()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 1).astype(np.int32)
    cfg = TrainConfig(epochs=2, batch_size=32, optimizer=optax.adam(1e-2))
    init = lambda k: mlp_init(k, [4, 8, 3])
    norm = lambda p: sum(jnp.sum(a ** 2) for a in jax.tree_util.tree_leaves(p))
    out = {}
    for name, devices in (("two", None), ("one", jax.devices()[:1])):
        # 5 networks: not a multiple of 2 (the stack is padded, then cut back)
        init_key, data_key = jax.random.split(jax.random.key(3))
        ens = fit_ensemble(data_key, jax.vmap(init)(jax.random.split(init_key, 5)), Model(mlp_apply), Data(x, y), cfg,
                           observe_epoch=norm, devices=devices)
        params, losses, seen = ens.samples, ens.info["epoch_loss"], ens.info["observed"]
        out[name] = {"params": np.concatenate([np.asarray(a).reshape(5, -1) for a in jax.tree_util.tree_leaves(params)],
                                              1).tolist(),
                     "losses": np.asarray(losses).tolist(), "norms": np.asarray(seen["epoch"]).tolist(),
                     "devices": len(losses.sharding.device_set)}
    print("RESULT" + json.dumps(out))
""")


@pytest.mark.slow  # over 5 s on 2 cores (make test runs it; make test-fast does not)
def test_fit_ensemble_over_two_devices_equals_one():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT", 1)[1])
    two, one = out["two"], out["one"]
    assert two["devices"] == 2 and one["devices"] == 1
    assert np.shape(two["params"]) == np.shape(one["params"]) == (5, 4 * 8 + 8 + 8 * 3 + 3)
    for key in ("params", "losses", "norms"):
        np.testing.assert_allclose(two[key], one[key], rtol=1e-5, atol=1e-6, err_msg=key)


def test_mmd_blocks_dealt_to_processes_add_up():
    """The blocks of ``share = (i, 3)``, i = 0, 1, 2, are disjoint and cover the statistic:
    their sums add up to the one-process sums (what ``processes=True`` relies on; the
    2-process run itself is in tests/inference/test_multiprocess_hmc.py)."""
    from symlib.evaluation import mmd

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(50, 7)), rng.normal(size=(30, 7))
    bws = {"gaussian": np.array([1.0, 3.0]), "laplace": np.array([2.0, 5.0])}
    metrics = ("l1", "l2")

    def sums(a, b, share):
        blocks = mmd._distance_blocks(a, b, ("a", "b"), metrics, 16, None, share)
        return mmd._kernel_sums(blocks, bws, b is None)

    for part in (lambda share: sums(x, None, share), lambda share: sums(x, y, share)):
        whole = part(None)
        pieces = [part((i, 3)) for i in range(3)]
        assert all(np.any(p["gaussian"] != 0) for p in pieces)
        for k in bws:
            np.testing.assert_allclose(sum(p[k] for p in pieces), whole[k], rtol=1e-12)
    # one process: processes=True changes nothing
    np.testing.assert_array_equal(mmd.mmd2_unbiased(x, y, bandwidth=[1.0, 2.0], chunk_size=16, processes=True),
                                  mmd.mmd2_unbiased(x, y, bandwidth=[1.0, 2.0], chunk_size=16))
