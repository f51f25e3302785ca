import pytest

from symlib.experiments.profiles import PROFILES, get_profile


def test_default_is_quick(monkeypatch):
    monkeypatch.delenv("SYMLIB_PROFILE", raising=False)
    assert get_profile().name == "quick"


@pytest.mark.parametrize("name", ["paper", "PAPER", " quick "])
def test_selected_by_env(monkeypatch, name):
    monkeypatch.setenv("SYMLIB_PROFILE", name)
    assert get_profile().name == name.strip().lower()


def test_argument_overrides_env(monkeypatch):
    monkeypatch.setenv("SYMLIB_PROFILE", "paper")
    assert get_profile("quick").name == "quick"


def test_unknown_profile_lists_valid(monkeypatch):
    monkeypatch.setenv("SYMLIB_PROFILE", "fast")
    with pytest.raises(ValueError) as err:
        get_profile()
    msg = str(err.value)
    assert "'fast'" in msg and "paper" in msg and "quick" in msg


def test_paper_profile_has_papers_sizes():
    # Xiao et al. App. A: one hidden layer of 512 units, Adam for 50 epochs, N(0, 1) prior.
    paper = PROFILES["paper"]
    assert (paper.hidden, paper.epochs, paper.prior_std, paper.data_source) == (512, 50, 1.0, "full")


def test_describe_names_profile_and_sizes():
    text = get_profile("quick").describe()
    assert "quick" in text and "784-128-10" in text and "n_train=9000" in text
