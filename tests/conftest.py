"""Fixtures shared by the data tests (tests/data/test_data.py, tests/data/test_cifar.py)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from _helpers import PROXY_VARS, LoopbackServer

# XLA's on-disk compilation cache (symlib.experiments.cache.use_compilation_cache) stays off in
# the unit tests: pytest-xdist's workers would write to one folder at once, and a test's
# result must not depend on what an earlier run compiled. tests/experiments/test_cache.py tests it in
# subprocesses of its own.
os.environ.setdefault("SYMLIB_XLA_CACHE", "0")


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
