"""Fixtures shared by the data tests."""
import pytest

import symlib.data.files


@pytest.fixture
def md5_calls(monkeypatch):
    """The files whose MD5 ``symlib.data.files`` computes during a test, in order."""
    hashed = []
    real = symlib.data.files.md5_file

    def counting_md5(path):
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(symlib.data.files, "md5_file", counting_md5)
    return hashed
