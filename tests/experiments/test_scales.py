"""Every run the book shows has a scale (symlib.experiments.judging.scales): every saved result in
``book/results/``, every experiment of the report's manifest in each profile it runs in; and
a labelled reduction says which dimension it reduced and by how much."""
import json
from pathlib import Path

import pytest

import symlib.experiments  # noqa: F401  (registers the experiments)
from symlib.experiments import report
from symlib.experiments.report import manifest
from symlib.experiments.judging import results, scales
from symlib.experiments.judging.scales import Scale

REPO = Path(__file__).resolve().parents[2]
SAVED = sorted((REPO / "book" / "results").glob("*.json"))
#: every OptuNet of the paper profile trains on its 50,000-image split (the paper: 60,000 images)
IMAGES = "50,000 of the paper's 60,000 training images (our paper profile holds 10,000 out for validation)"


@pytest.mark.parametrize("path", SAVED, ids=lambda p: p.name)
def test_every_saved_result_has_a_scale(path):
    record = json.loads(path.read_text())
    scale = scales.scale_of(record["experiment"], record["profile"], record)  # KeyError: not registered
    assert scale.kind in scales.KINDS
    if record["profile"] != "paper":
        assert scale.kind in (scales.REDUCTION, scales.STAND_IN), f"{path.name}: a labelled run is not the paper's scale"
        assert scale.reduced or scale.kind == scales.STAND_IN, f"{path.name}: say what {record['profile']} reduced"
    if scale.reduced:
        assert scales.says_how_much(scale.reduced), f"{path.name}: {scale.reduced!r} does not say how much"


def test_every_manifest_item_has_a_scale_in_each_profile():
    for item in manifest.MANIFEST:
        for exp in (*item.experiments, *item.saved_as):
            if not item.paper_only and exp in symlib.experiments.EXPERIMENTS:
                assert scales.scale_of(exp, "quick").kind in (scales.QUICK, scales.STAND_IN) or (
                    exp in scales.SAME_IN_EVERY_PROFILE), (item.label, exp)
            scale = scales.scale_of(exp, "paper")
            # the paper profile is the paper's scale, unless the registry says what it reduced
            # (laurent_optunets: 256 of the paper's 1,000 OptuNets)
            assert scale.kind in (scales.PAPER, scales.STAND_IN) or (
                scale.kind == scales.REDUCTION and (exp, "paper") in scales.REDUCTIONS), (item.label, exp)


def test_every_registered_reduction_says_what_and_how_much():
    for (exp, label), text in scales.REDUCTIONS.items():
        assert label == "paper" or label.startswith("paper-"), (exp, label)
        assert scales.says_how_much(text), (exp, label, text)


def test_every_registered_experiment_has_a_scale():
    for exp in symlib.experiments.EXPERIMENTS:
        assert scales.scale_of(exp, "quick").kind in (scales.QUICK, scales.STAND_IN) or (
            exp in scales.SAME_IN_EVERY_PROFILE), exp
        paper = scales.scale_of(exp, "paper")
        assert paper.kind in (scales.PAPER, scales.STAND_IN) or (exp, "paper") in scales.REDUCTIONS, exp
    with pytest.raises(KeyError, match="no scale registered"):
        scales.scale_of("an_unknown_experiment", "paper")


def test_runs_that_ignore_the_profile_are_paper_scale_in_every_profile():
    """An experiment whose cache config is the same in the quick and the paper profile runs the
    same thing in both (the toy perceptrons: the paper's 10,000 networks in every profile): its
    quick run is paper scale, not a quick miniature."""
    from symlib.experiments.profiles import get_profile

    assert scales.SAME_IN_EVERY_PROFILE == {"toy_perceptrons"}
    for exp in scales.SAME_IN_EVERY_PROFILE:
        e = symlib.experiments.EXPERIMENTS[exp]
        assert e.config_of(get_profile("quick")) == e.config_of(get_profile("paper")), exp
        assert scales.scale_of(exp, "quick") == scales.scale_of(exp, "paper") == Scale(scales.PAPER), exp
    assert scales.scale_of("toy_perceptrons", "quick").label == "paper scale"
    assert scales.scale_of("rebasin_barriers", "quick").kind == scales.QUICK


@pytest.mark.parametrize("text", ["fewer networks", "16 networks", "networks reduced by half", "16 of them"])
def test_a_reduction_without_its_dimension_or_amount_is_refused(text):
    assert not scales.says_how_much(text)
    with pytest.raises(ValueError, match="how much"):
        Scale(scales.REDUCTION, text)


def test_scale_labels():
    assert Scale(scales.PAPER).label == "paper scale"
    r = Scale(scales.REDUCTION, "16 of the paper's 1,000 networks")
    assert r.label == r.short == "labelled reduction: 16 of the paper's 1,000 networks"
    s = Scale(scales.STAND_IN, "64 of the 256 networks", "MNIST MLPs for an energy-efficiency MLP")
    assert s.label == "stand-in (MNIST MLPs for an energy-efficiency MLP); reduced: 64 of the 256 networks"
    assert s.short == "stand-in: 64 of the 256 networks"
    with pytest.raises(ValueError):
        Scale(scales.REDUCTION)
    with pytest.raises(ValueError):
        Scale(scales.STAND_IN)
    with pytest.raises(ValueError):
        Scale("big")
    # a quick run is a quick miniature whatever it stands in for (said in its label)
    assert scales.scale_of("vi_alignment_resnet20", "quick").kind == scales.QUICK
    assert scales.scale_of("vi_alignment_resnet20", "quick").label.startswith("quick miniature (stand-in: ResNet20")
    assert scales.scale_of("vi_alignment_resnet20", "quick").short == "quick miniature"
    assert scales.scale_of("rebasin_barriers", "quick").kind == scales.QUICK
    assert scales.scale_of("laurent_mlps", "paper").kind == scales.STAND_IN
    assert scales.scale_of("laurent_optunets", "paper-16nets").reduced == f"16 of the paper's 1,000 networks, {IMAGES}"
    for key in (("laurent_optunets", "paper"), ("laurent_optunets", "paper-768nets"),
                ("bank_min_mass", "paper-1024nets"), ("functional_collapse", "paper-24nets"),
                ("laurent_posteriors", "paper-1024nets-800ref-2epochs")):
        assert scales.scale_of(*key).reduced.endswith(IMAGES), key
    with pytest.raises(KeyError):
        scales.scale_of("laurent_optunets", "paper-3nets")


def test_saved_run_tables_name_the_scale(tmp_path, monkeypatch):
    from symlib.experiments.judging import claims
    from symlib.experiments.judging.thresholds import Threshold

    t = Threshold("test.x", 0.0, "above", "q", "r", "s")
    c = claims.Claim("laurent_optunets", "positive", "src", "x is positive",
                     lambda s: claims.exact(s["x"], t, "all", f"x {s['x']}"))
    monkeypatch.setitem(claims.CLAIMS, "laurent_optunets", [c])
    monkeypatch.setenv(results.ENV_VAR, str(tmp_path))
    for label in ("paper-16nets", "paper-8nets"):
        (tmp_path / f"laurent_optunets-{label}.json").write_text(json.dumps({
            "experiment": "laurent_optunets", "profile": label, "command": "cmd", "device": "cpu", "date": "d",
            "summary": {"x": 1.0, "nets": 16}}))
    line, table = report.saved_run_claims("laurent_optunets", "paper-16nets")
    assert line.endswith(f"\ncmd\nscale: labelled reduction: 16 of the paper's 1,000 networks, {IMAGES}")
    assert "labelled reduction: 16 of the paper's 1,000 networks" in table.headers[2]
    (tmp_path / "laurent_optunets-paper-2nets.json").write_text(json.dumps({
        "experiment": "laurent_optunets", "profile": "paper-2nets", "command": "cmd", "device": "cpu", "date": "d",
        "summary": {"x": 1.0}}))
    assert report.saved_run_claims("laurent_optunets", "paper-2nets")[0].endswith("scale: scale not registered in "
                                                                                  "symlib.experiments.judging.scales")
    (tmp_path / "laurent_optunets-paper-2nets.json").unlink()
    both = report.show_saved_run("laurent_optunets", "needs a GPU")
    assert [r[0] for r in both.rows] == [  # by size: 8 before 16
        f"paper-8nets (labelled reduction: 8 of the paper's 1,000 networks, {IMAGES})",
        f"paper-16nets (labelled reduction: 16 of the paper's 1,000 networks, {IMAGES})"]


def test_paper_vs_ours_names_the_scales():
    from symlib.experiments.report import PaperProfile, paper_vs_ours

    record = {"experiment": "laurent_mlps", "profile": "paper-64nets", "device": "cpu", "date": "2026-01-02"}
    column = PaperProfile.from_saved(record, ["1"])
    table = paper_vs_ours([("q", "p", "o")], "quick", column, scale=scales.scale_label("laurent_mlps", "quick"))
    assert table.headers[2].startswith("ours (quick profile, quick miniature (stand-in: MNIST ReLU MLPs")
    assert table.headers[3] == "ours (paper profile, stand-in: 64 of the 256 networks of our paper profile, cpu, 2026-01-02)"
    assert PaperProfile.from_saved({"device": "cpu", "date": "d"}, ["1"]).header() == "ours (paper profile, cpu, d)"


def test_an_unregistered_label_of_a_stand_in_is_refused():
    """A stand-in's labelled run is a reduction of it, and must say what it reduced, as any other
    experiment's must: an unregistered label is an error, not a plain stand-in."""
    assert scales.scale_of("laurent_mlps", "paper-64nets").reduced == "64 of the 256 networks of our paper profile"
    assert scales.scale_of("laurent_mlps", "paper") == Scale(scales.STAND_IN, stand_in=scales.STAND_INS["laurent_mlps"])
    for experiment in scales.STAND_INS:
        with pytest.raises(KeyError, match="no scale registered for the 'paper-typo' run"):
            scales.scale_of(experiment, "paper-typo")
