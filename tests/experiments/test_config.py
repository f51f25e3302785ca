import pytest

from symlib.experiments.profiles import PROFILES, get_profile, reduced


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


# ------------------------------------------------------------ one profile per paper

_PROFILE_NAMES = ("profile", "p", "prof", "base")


def _profile_fields_read(source: str) -> set[str]:
    """The Profile fields that ``source`` reads as ``profile.<field>`` (or ``p.``, ``prof.``, ``base.``)."""
    import ast
    import dataclasses

    from symlib.experiments.profiles import Profile

    fields = {f.name for f in dataclasses.fields(Profile)}
    return {node.attr for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in _PROFILE_NAMES and node.attr in fields}


@pytest.mark.parametrize("paper", ["xiao", "rossi", "laurent"])
def test_each_papers_experiments_read_only_their_profile(paper):
    import dataclasses
    from pathlib import Path

    import symlib.experiments
    from symlib.experiments.profiles import PAPER_PROFILES

    own = {f.name for f in dataclasses.fields(PAPER_PROFILES[paper])}
    folder = Path(symlib.experiments.__file__).parent / paper
    read = {f"{path.name}: {name}" for path in sorted(folder.rglob("*.py"))
            for name in _profile_fields_read(path.read_text()) - own}
    assert not read, f"{paper}'s experiments read fields of another paper's profile: {sorted(read)}"
    assert _profile_fields_read("def f(profile):\n    return profile.align_widths, profile.hidden\n") == {
        "align_widths", "hidden"}  # the check sees a planted read


def test_paper_gives_a_papers_part_of_the_book_profile():
    import dataclasses

    from symlib.experiments.profiles import LaurentProfile, Profile, SharedProfile, XiaoProfile

    quick = get_profile("quick")
    xiao = quick.paper("xiao")
    assert type(xiao) is XiaoProfile and xiao.hmc_chains == quick.hmc_chains and xiao.n_train == quick.n_train
    assert not hasattr(xiao, "align_widths")
    every = set().union(*({f.name for f in dataclasses.fields(c)} for c in (XiaoProfile, LaurentProfile,
                                                                            get_profile("paper").paper("rossi").__class__)))
    assert every == {f.name for f in dataclasses.fields(Profile)}  # the book's profile is their union, nothing more
    assert {f.name for f in dataclasses.fields(SharedProfile)} <= {f.name for f in dataclasses.fields(LaurentProfile)}
    with pytest.raises(ValueError, match="unknown paper"):
        quick.paper("smith")


@pytest.mark.parametrize("text", ["1.5", "8,1.5", "True", "'8'", "8,lots"])
def test_a_tuple_field_wants_integers(text):
    with pytest.raises(ValueError, match=r"profile field 'align_widths' wants a value of type tuple, not"):
        reduced("paper", {"align_widths": text}, "paper-x")


def test_a_tuple_field_takes_integers():
    assert reduced("paper", {"align_widths": "8, 16"}, "paper-x").align_widths == (8, 16)
    assert reduced("paper", {"align_widths": "1_024"}, "paper-x").align_widths == (1024,)
    # a queue job's `set` gives a JSON list, whose str() is "[128, 512]": it was refused
    assert reduced("paper", {"align_widths": str([128, 512])}, "paper-x").align_widths == (128, 512)
    assert reduced("paper", {"align_widths": "(64,)"}, "paper-x").align_widths == (64,)
