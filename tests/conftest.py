"""Settings for every unit test (XLA's compilation cache off, its cheaper optimization level on),
the fixture that restores full optimization for one test, and the fixtures of the data tests
(tests/data/test_data.py, tests/data/test_cifar.py)."""
from __future__ import annotations

import os
from pathlib import Path

import jax
import pytest

from _helpers import PROXY_VARS, LoopbackServer

# XLA's on-disk compilation cache (symlib.experiments.cache.use_compilation_cache) stays off in
# the unit tests: pytest-xdist's workers would write to one folder at once, and a test's
# result must not depend on what an earlier run compiled. tests/experiments/test_cache.py tests it in
# subprocesses of its own.
os.environ.setdefault("SYMLIB_XLA_CACHE", "0")

# Most of the unit tests' time is XLA compiling small programs that then run for milliseconds, so
# the tests ask XLA for less optimization (jax_disable_most_optimizations: LLVM at -O0; the HLO
# passes, fusion included, still run). On tests/inference: 352 instead of 471 s, back to back
# (2026-11-30). The notebooks (make nbval, make book) keep XLA's full optimization, so the optimized
# programs are still exercised. JAX_DISABLE_MOST_OPTIMIZATIONS=0 runs the tests fully optimized.
# Set in the environment too, for the subprocesses some tests start.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
jax.config.update("jax_disable_most_optimizations", os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "1")


@pytest.fixture
def xla_fully_optimized():
    """XLA's full optimization for one test (its programs compiled afresh before and after), for
    a test that pins the bits of a result computed with it."""
    before = jax.config.values["jax_disable_most_optimizations"]
    jax.config.update("jax_disable_most_optimizations", False)
    jax.clear_caches()
    yield
    jax.config.update("jax_disable_most_optimizations", before)
    jax.clear_caches()


@pytest.fixture
def isolated_data_env(tmp_path, monkeypatch):
    """No data dir, an empty private cache, no proxies (loopback must be direct)."""
    monkeypatch.delenv("SYMLIB_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def serve():
    """``serve(directory)`` starts a :class:`LoopbackServer`; all are closed afterwards."""
    servers = []

    def start(directory: Path) -> LoopbackServer:
        servers.append(LoopbackServer(directory))
        return servers[-1]

    yield start
    for s in servers:
        s.close()
