"""load_mnist offline: one error, whose first line says that the shipped subset is there."""
import pytest

from symlib.data import DataNotFoundError, load_mnist
from symlib.data import loading


def test_offline_full_load_says_first_that_the_subset_is_shipped(monkeypatch, tmp_path):
    monkeypatch.setenv("SYMLIB_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def offline(*args, **kwargs):
        raise DataNotFoundError("could not download train-images-idx3-ubyte.gz: no network")

    monkeypatch.setattr(loading, "download", offline)
    with pytest.raises(DataNotFoundError) as info:
        load_mnist("mnist", "train")
    first = str(info.value).splitlines()[0]
    assert "could not be downloaded" in first and "source='subset'" in first
    assert "no network" in str(info.value)  # the download's own error is kept, in the same message
    assert info.value.__cause__ is None and info.value.__suppress_context__  # one traceback, not two
