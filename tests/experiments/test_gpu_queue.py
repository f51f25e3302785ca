"""The GPU queue (symlib.experiments.gpu_queue, `python -m symlib gpu ...`) end to end on CPU,
with a tiny bank of OptuNets: a call killed mid-step keeps its finished steps and the next one
resumes, a damaged part is refused by name, folding twice changes nothing, and the folded steps
are what the experiment itself loads."""
import json
import math
import subprocess
from pathlib import Path

import jax
import numpy as np
import pytest

from symlib.__main__ import main
from symlib.experiments import cache, gpu_device, gpu_queue, registry
from symlib.experiments.judging import results
from symlib.experiments.laurent.optunet import optunet_block
from symlib.experiments.profiles import get_profile

ROOT = Path(__file__).resolve().parents[2]
TINY_JOB = {"name": "tiny-bank", "version": 1, "title": "a tiny bank", "kind": "blocks",
            "target": "symlib.experiments.laurent.posteriors:bank_blocks", "profile": "quick",
            "set": {"bank_nets": 4, "bank_block": 2, "bank_epochs": 1, "n_train": 600}, "label": "quick-tiny",
            "steps": 2, "estimate_gpu_minutes": 0.1}
LATER = {"name": "later", "version": 1, "title": "a later job", "kind": "planned", "steps": 1,
         "estimate_gpu_minutes": 1, "note": "no runner written yet"}


@pytest.fixture
def queue(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "repo" / "gpu" / "queue.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "jobs": [TINY_JOB, LATER]}))
    return path


def _next(queue, out, minutes=5.0):
    return gpu_device.next_steps(queue, out, minutes, command="test")


def test_killed_call_keeps_its_steps_and_the_next_resumes(queue, tmp_path, monkeypatch):
    calls = []
    train = registry.Blocks.train

    def killed_at_second(self, start):
        calls.append(start)
        if len(calls) == 2:
            raise KeyboardInterrupt("the call's time ran out")
        return train(self, start)

    monkeypatch.setattr(registry.Blocks, "train", killed_at_second)
    with pytest.raises(KeyboardInterrupt):
        _next(queue, tmp_path / "ret1")
    manifest = json.loads((tmp_path / "ret1" / "tiny-bank" / "manifest.json").read_text())
    assert manifest["files"] == ["step-0000.json", "step-0000.npz"]
    assert gpu_queue.fold(tmp_path / "ret1", queue)["new"] == 1

    monkeypatch.setattr(registry.Blocks, "train", lambda self, start: (calls.append(start), train(self, start))[1])
    calls.clear()
    assert _next(queue, tmp_path / "ret2") == {"tiny-bank": [1]}
    assert calls == [2]  # only the missing block was trained
    assert gpu_queue.fold(tmp_path / "ret2", queue) == {"new": 1, "already": 0, "results": 0, "stopped": 0}
    job = gpu_queue.load_queue(queue)["jobs"][0]
    assert job["progress"]["steps_done"] == 2 and gpu_queue.minutes_left(job) == 0

    # folding the same returns again changes nothing
    before = {p: p.read_bytes() for p in queue.parent.rglob("*") if p.is_file()}
    assert gpu_queue.fold(tmp_path / "ret1", queue) == {"new": 0, "already": 1, "results": 0, "stopped": 0}
    assert gpu_queue.fold(tmp_path / "ret2", queue) == {"new": 0, "already": 1, "results": 0, "stopped": 0}
    assert {p: p.read_bytes() for p in queue.parent.rglob("*") if p.is_file()} == before

    # the experiment loads the folded blocks from the cache, and they are the blocks an
    # uninterrupted run trains
    monkeypatch.setattr(registry.Blocks, "train", train)
    assert gpu_queue.install_steps(job, queue.parent / "tiny-bank") == 2
    blocks = gpu_queue.job_blocks(job)
    resumed = registry.run_blocks(blocks)
    assert cache.STEPS_RUN["optunet_bank"] == {"computed": 0, "loaded": 2}
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "fresh"))
    direct = registry.run_blocks(blocks)
    assert cache.STEPS_RUN["optunet_bank"] == {"computed": 2, "loaded": 0}
    for a, b in zip(jax.tree_util.tree_leaves(resumed), jax.tree_util.tree_leaves(direct)):
        np.testing.assert_array_equal(a, b)

    # the next job has no runner: skipped and named (and refused by name when asked for)
    assert _next(queue, tmp_path / "ret3") == {}
    assert "planned jobs without a runner yet: later" in (tmp_path / "ret3" / "gpu-log.txt").read_text()
    with pytest.raises(ValueError, match="'later'.*no runner yet: no runner written yet"):
        gpu_device.next_steps(queue, tmp_path / "ret4", 5.0, job_name="later")


def test_step_metadata_carries_provenance(queue, tmp_path):
    _next(queue, tmp_path / "ret")
    gpu_queue.fold(tmp_path / "ret", queue)
    meta = json.loads((queue.parent / "tiny-bank" / "step-0001.json").read_text())
    for field in ("device", "date", "commit", "clean", "command", "symlib_version", "jax", "matmul_precision",
                  "seconds", "sha256"):
        assert field in meta, field
    assert meta["label"] == 2 and meta["command"] == "test"
    step = gpu_queue.load_step(queue.parent / "tiny-bank", 1)
    assert step["params"]["conv_0"]["kernel"].shape[0] == 2 and step["losses"].shape == (2, 1)


def test_damaged_part_is_refused_by_name(queue, tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_device, "PART_BYTES", 4096)  # several parts
    _next(queue, tmp_path / "ret")
    parts = json.loads((tmp_path / "ret" / "tiny-bank" / "manifest.json").read_text())["parts"]
    assert len(parts) >= 3 and all(p["bytes"] <= 4096 for p in parts)
    second = tmp_path / "ret" / "tiny-bank" / parts[1]["name"]
    data = bytearray(second.read_bytes())
    data[100] ^= 0xFF
    second.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"part {parts[1]['name']} does not match its SHA-256"):
        gpu_queue.fold(tmp_path / "ret", queue)
    assert not (queue.parent / "tiny-bank").exists()  # nothing folded
    second.unlink()
    with pytest.raises(ValueError, match=f"part {parts[1]['name']} is missing"):
        gpu_queue.fold(tmp_path / "ret", queue)
    assert main(["gpu", "fold", str(tmp_path / "ret"), "--queue", str(queue)]) == 1


def test_return_of_another_job_version_is_refused(queue, tmp_path):
    _next(queue, tmp_path / "ret")
    changed = {**TINY_JOB, "set": {**TINY_JOB["set"], "bank_epochs": 2}}
    queue.write_text(json.dumps({"version": 1, "jobs": [changed, LATER]}))
    with pytest.raises(ValueError, match="not the queue's job now: nothing was folded"):
        gpu_queue.fold(tmp_path / "ret", queue)


def test_a_step_that_does_not_fit_the_minutes_is_not_started(queue, tmp_path, capsys):
    assert gpu_device.next_steps(queue, tmp_path / "ret", 0.05, command="test") == {"tiny-bank": []}
    assert "stopping: step 0 of tiny-bank needs about" in (tmp_path / "ret" / "gpu-log.txt").read_text()
    assert not (tmp_path / "ret" / "tiny-bank").exists()  # nothing to fold


def test_steps_of_unequal_cost_are_started_by_their_own_estimates(queue, tmp_path):
    """With step_minutes, step 1 (estimated at 10 minutes) is not started in a call of 0.2
    minutes however fast step 0 (0.01 minutes) ran: a measured step says nothing of another's cost."""
    job = {**TINY_JOB, "estimate_gpu_minutes": 10.01, "step_minutes": [0.01, 10]}
    queue.write_text(json.dumps({"version": 1, "jobs": [job, LATER]}))
    assert gpu_device.next_steps(queue, tmp_path / "ret", 0.2, command="test") == {"tiny-bank": [0]}
    log = (tmp_path / "ret" / "gpu-log.txt").read_text()
    assert "stopping: step 1 of tiny-bank needs about 600 s" in log
    for per, why in (([1.0], "one positive number per step"), ([5.0, -1.0], "one positive number per step"),
                     ([5.0, 5.0], "add up to 10, not its estimate 10.01")):
        queue.write_text(json.dumps({"version": 1, "jobs": [{**job, "step_minutes": per}]}))
        with pytest.raises(ValueError, match=f"step_minutes.*{why}" if "positive" in why else why):
            gpu_queue.load_queue(queue)


def test_a_step_finds_the_job_s_steps_folded_in_earlier_calls(queue, tmp_path, monkeypatch):
    """Each device call starts with an empty artifact cache: the job's steps folded before are
    put there, so a step that goes on from an earlier one (SGHMC's pieces) loads it instead of
    computing it again."""
    import _helpers

    job = {"name": "chained", "version": 1, "title": "steps that go on from the one before", "kind": "blocks",
           "target": "_helpers:chained_steps", "profile": "quick", "steps": 3, "estimate_gpu_minutes": 10.001,
           "step_minutes": [0.001, 5, 5]}
    queue.write_text(json.dumps({"version": 1, "jobs": [job]}))
    _helpers.CHAINED_CALLS.clear()
    assert gpu_device.next_steps(queue, tmp_path / "ret1", 0.2, command="test") == {"chained": [0]}
    gpu_queue.fold(tmp_path / "ret1", queue)
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "a-fresh-device-cache"))
    assert gpu_device.next_steps(queue, tmp_path / "ret2", 30.0, command="test") == {"chained": [1, 2]}
    assert _helpers.CHAINED_CALLS == ["a", "b", "c"]  # "a" was not computed again
    gpu_queue.fold(tmp_path / "ret2", queue)
    assert int(gpu_queue.load_step(queue.parent / "chained", 2)["value"]) == 3


def test_queue_file_is_checked(tmp_path):
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps({"version": 1, "jobs": [{**LATER, "needs": ["tiny-bank"]}, TINY_JOB]}))
    with pytest.raises(ValueError, match="must come before it"):
        gpu_queue.load_queue(bad)
    bad.write_text(json.dumps({"version": 1, "jobs": [{**LATER, "kind": "magic"}]}))
    with pytest.raises(ValueError, match="kind 'magic'"):
        gpu_queue.load_queue(bad)
    bad.write_text(json.dumps({"version": 2, "jobs": []}))
    with pytest.raises(ValueError, match="version 2"):
        gpu_queue.load_queue(bad)
    wrong_steps = tmp_path / "w.json"
    wrong_steps.write_text(json.dumps({"version": 1, "jobs": [{**TINY_JOB, "steps": 3}]}))
    with pytest.raises(ValueError, match="declares 3 steps but its profile gives 2 blocks"):
        gpu_queue.job_blocks(gpu_queue.load_queue(wrong_steps)["jobs"][0])


#: the minutes of book/running.md's device command (``gpu next --minutes 9``: the device allows
#: 10 a command, start-up included)
DEVICE_CALL_MINUTES = 9


def test_every_device_step_fits_in_one_call():
    """A step that `next` expects to outlast a call is never started (it waits for a longer call
    that the device does not give): the queue would stop at it for good. Version 2 of
    hmc-precision was one step of 8 minutes, which a call of 9 never started."""
    queue = gpu_queue.load_queue(ROOT / "gpu" / "queue.json")
    for job in queue["jobs"]:
        if job["kind"] not in ("blocks", "experiments") or job.get("where") == "here":
            continue
        per_step = max([gpu_queue.step_seconds(job, i) or job["progress"].get("seconds_per_step")
                        or 60.0 * gpu_queue.estimate_minutes(job) / int(job["steps"]) for i in range(int(job["steps"]))])
        assert gpu_device.MARGIN * per_step < 60.0 * DEVICE_CALL_MINUTES, job["name"]


def test_the_repository_queue(capsys):
    """gpu/queue.json: every job of issue 44's queue in order, the bank's steps those of the
    paper profile, its folded steps intact, the progress that of its folder."""
    path = ROOT / "gpu" / "queue.json"
    queue = gpu_queue.load_queue(path)
    names = [j["name"] for j in queue["jobs"]]
    assert names == ["laurent-bank", "laurent-bank-more", "laurent-table1", "laurent-table1-scores",
                     "laurent-fig7-collapse", "laurent-fig2-1000", "laurent-fig2-1000-summary", "hmc-precision", "hmc-precision-summary",
                     "xiao-hmc-reduction",
                     "xiao-hmc-1000", "rossi-grid-512", "rossi-1000epochs", "rossi-1000epochs-summary",
                     "rossi-grid-512-summary", "gpu-unit-tests"]
    bank = queue["jobs"][0]
    paper = get_profile("paper")
    assert bank["steps"] == math.ceil(paper.bank_nets / paper.bank_block)
    folded = gpu_queue.folded_steps(ROOT / "gpu" / "laurent-bank")
    assert bank["progress"]["steps_done"] == len(folded)
    for index, meta in folded.items():
        step = gpu_queue.load_step(ROOT / "gpu" / "laurent-bank", index)  # checks the SHA-256
        assert meta["label"] == index * paper.bank_block and meta["job_hash"] == gpu_queue.job_hash(bank)
        assert step["losses"].shape == (min(paper.bank_block, paper.bank_nets - meta["label"]), paper.bank_epochs)
        assert np.all(np.isfinite(step["losses"]))
    more = queue["jobs"][1]  # the bank's continuation: its networks follow the bank's
    assert more["steps"] == math.ceil(paper.bank_more / paper.bank_block) and "laurent-bank-more" in next(
        j for j in queue["jobs"] if j["name"] == "laurent-table1")["needs"]
    fig2, fig2_summary = (next(j for j in queue["jobs"] if j["name"] == n)
                          for n in ("laurent-fig2-1000", "laurent-fig2-1000-summary"))
    assert gpu_queue.job_profile(fig2) == gpu_queue.job_profile(fig2_summary)  # the summary finds the blocks
    fig2_profile = gpu_queue.job_profile(fig2)
    assert fig2_profile.optunet_nets == 1000 and fig2["steps"] == math.ceil(1000 / optunet_block(fig2_profile))
    rossi, rossi_summary, grid, grid_summary = (next(j for j in queue["jobs"] if j["name"] == n) for n in (
        "rossi-1000epochs", "rossi-1000epochs-summary", "rossi-grid-512", "rossi-grid-512-summary"))
    for job in (rossi_summary, grid, grid_summary):  # the summaries find the pairs, the grid its paper setting
        assert gpu_queue.job_profile(job) == gpu_queue.job_profile(rossi)
    assert len(gpu_queue.job_blocks(rossi).starts) == rossi["steps"] == 2 * 4 * 3  # datasets x widths x pairs
    assert len(gpu_queue.job_blocks(grid).starts) == grid["steps"] == 3 * 3  # the grid's other settings x pairs
    reduction, rest, tests = (next(j for j in queue["jobs"] if j["name"] == n)
                              for n in ("xiao-hmc-reduction", "xiao-hmc-1000", "gpu-unit-tests"))
    from symlib.experiments import xiao

    assert reduction["state"] == rest["state"] and rest["needs"] == ["xiao-hmc-reduction"]  # one run, continued
    assert gpu_queue.job_target(reduction) is xiao.hmc_pieces_run and reduction["until_kept"] < xiao.PIECES_SAMPLES
    for index in range(tests["steps"]):  # every step names test paths that exist, and every test folder is in one
        assert gpu_device.step_test_paths(tests, index, ROOT)
    assert {p.split("/")[1] for i in range(tests["steps"]) for p in gpu_device.step_test_paths(tests, i, ROOT)} >= {
        d.name for d in (ROOT / "tests").iterdir() if d.is_dir() and d.name != "__pycache__"}
    assert main(["gpu", "status", "--queue", str(path)]) == 0
    assert "left in all: about" in capsys.readouterr().out


def test_vi_alignment_pairs_run_a_step_each_and_are_summarised_here(queue, tmp_path):
    """rossi-1000epochs and rossi-grid-512 in miniature: vi_alignment's pairs and the
    robustness grid's as the device's steps, returned without their posteriors, and both
    experiments run here from the folded steps alone."""
    tiny = {"align_widths": "16", "align_sweep_width": 16, "align_epochs": 1, "align_pairs": 1, "align_n_train": 500,
            "align_n_eval": 100, "align_samples": 2, "n_lambdas": 3, "align_keep_posteriors": False}
    job = {"version": 1, "profile": "quick", "set": tiny, "label": "quick-tinypairs"}
    pairs = {**job, "name": "tiny-pairs", "title": "tiny pairs", "kind": "blocks",
             "target": "symlib.experiments.rossi.runs:vi_alignment_steps", "steps": 2, "estimate_gpu_minutes": 0.1}
    grid = {**job, "name": "tiny-grid", "title": "tiny grid", "kind": "blocks", "steps": 3,
            "target": "symlib.experiments.rossi.runs:vi_alignment_robustness_steps", "estimate_gpu_minutes": 0.1}
    here = {"kind": "experiments", "where": "here", "steps": 1, "estimate_gpu_minutes": 0, "estimate_minutes_here": 0.1}
    summary = {**job, **here, "name": "tiny-pairs-summary", "title": "their summary", "experiments": ["vi_alignment"],
               "needs": ["tiny-pairs"]}
    grid_summary = {**job, **here, "name": "tiny-grid-summary", "title": "the grid's summary",
                    "experiments": ["vi_alignment_robustness"], "needs": ["tiny-grid", "tiny-pairs"]}
    queue.write_text(json.dumps({"version": 1, "jobs": [pairs, grid, summary, grid_summary]}))
    assert _next(queue, tmp_path / "dev") == {"tiny-pairs": [0, 1], "tiny-grid": [0, 1, 2]}
    gpu_queue.fold(tmp_path / "dev", queue)
    step = gpu_queue.load_step(queue.parent / "tiny-pairs", 1)
    assert "posteriors" not in step and set(step["barrier"]) == {"marginal", "midpoint"}
    assert json.loads((queue.parent / "tiny-pairs" / "step-0001.json").read_text())["label"] == ["fashion_mnist", 16, 0]
    cache.STEPS_RUN.clear()
    assert gpu_device.next_steps(queue, tmp_path / "here", 5.0, here=True) == {"tiny-pairs-summary": [0],
                                                                              "tiny-grid-summary": [0]}
    assert cache.STEPS_RUN["vi_alignment"]["computed"] == 0  # every pair from the folded steps
    assert cache.STEPS_RUN["vi_alignment_robustness"] == {"computed": 0, "loaded": 3}
    assert gpu_queue.fold(tmp_path / "here", queue, tmp_path / "results")["results"] == 2
    grid_record = json.loads((tmp_path / "results" / "vi_alignment_robustness-quick-tinypairs.json").read_text())
    assert len(grid_record["summary"]["settings"]) == 4  # the paper's setting from vi_alignment's pairs
    record = json.loads((tmp_path / "results" / "vi_alignment-quick-tinypairs.json").read_text())
    assert record["summary"]["widths"] == {"mnist": [16], "fashion_mnist": [16]}
    for index, dataset in enumerate(("mnist", "fashion_mnist")):  # the barriers the device computed, summarised here
        barrier = gpu_queue.load_step(queue.parent / "tiny-pairs", index)["barrier"]["midpoint"]
        assert record["summary"]["midpoint"][dataset]["test"]["aligned"] == [float(barrier["test aligned"])]


def test_prepare_fills_an_ignored_carry(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # no downloaded copy is found instead
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    data = tmp_path / "data"
    for name in ("mnist", "fashion_mnist"):
        (data / name).mkdir(parents=True)
        for f in ("a", "b", "c", "d"):
            (data / name / f"{f}.gz").write_bytes(b"x")
    with pytest.raises(ValueError, match="not ignored by git"):
        gpu_queue.prepare(repo, data, wheels=False)
    (repo / ".gitignore").write_text("/.gpu-carry/\n")
    with pytest.raises(ValueError, match="holds 0 of the 4"):
        gpu_queue.prepare(repo, tmp_path / "nowhere", wheels=False, datasets=("mnist",))
    carry = gpu_queue.prepare(repo, data, wheels=False, datasets=("mnist",))
    assert sorted(p.name for p in (carry / "data" / "mnist").iterdir()) == ["a.gz", "b.gz", "c.gz", "d.gz"]
    assert not (carry / "data" / "fashion_mnist").exists()
    prov = json.loads((carry / "provenance.json").read_text())
    assert prov["commit"] is None or len(prov["commit"]) == 40
    # on the device, the carried provenance is what the step records; changed sources are not clean
    (carry / "provenance.json").write_text(json.dumps({"commit": "f" * 40, "clean": True,
                                                       "symlib_version": cache.code_version()}))
    assert results.git_commit(repo) == {"commit": "f" * 40, "clean": True, "from": "gpu prepare"}
    (carry / "provenance.json").write_text(json.dumps({"commit": "f" * 40, "clean": True, "symlib_version": "old"}))
    assert results.git_commit(repo)["from"] != "gpu prepare"  # other sources than those prepared: git's answer
    # what travels to a device call: the tree git would track (here .gitignore) and the carry, within 64 MiB
    (repo / "gpu").mkdir()
    (repo / "gpu" / "step.npz").write_bytes(b"s" * 1000)
    carry_bytes = sum(p.stat().st_size for p in carry.rglob("*") if p.is_file())
    tree_bytes = 1000 + (repo / ".gitignore").stat().st_size
    assert gpu_queue.travelling(repo) == {"tree": tree_bytes, "carry": carry_bytes}
    monkeypatch.setattr(gpu_queue, "TRAVEL_BYTES", tree_bytes)  # the carry is more than nothing
    with pytest.raises(ValueError, match=r"the working tree \(0\.0 MiB; largest: gpu 0\.0 MiB, \. 0\.0 MiB\)"):
        gpu_queue.prepare(repo, data, wheels=False, datasets=("mnist",))


def _accuracy_experiment(monkeypatch):
    """A registered experiment of the tiny bank's networks, for this test only."""
    from symlib.experiments.laurent.posteriors import bank_config

    def accuracy(profile):
        return {"accuracy": registry.run("optunet_bank", profile, verbose=False).artifact["test_accuracy"]}

    exp = registry.Experiment("tiny_accuracy", accuracy, bank_config, "the tiny bank's accuracies",
                              lambda art: {"mean_accuracy": float(np.mean(art["accuracy"]))}, registry.ExperimentResult)
    monkeypatch.setitem(registry.EXPERIMENTS, "tiny_accuracy", exp)
    return {"name": "tiny-accuracy", "version": 1, "title": "the tiny bank's accuracies", "kind": "experiments",
            "experiments": ["tiny_accuracy"], "needs": ["tiny-bank"], "profile": "quick", "set": TINY_JOB["set"],
            "label": TINY_JOB["label"], "steps": 1, "estimate_gpu_minutes": 0.1}


def test_one_call_runs_a_job_and_then_the_next_that_needs_it(queue, tmp_path, monkeypatch):
    job = _accuracy_experiment(monkeypatch)
    queue.write_text(json.dumps({"version": 1, "jobs": [TINY_JOB, job, LATER]}))
    assert _next(queue, tmp_path / "ret") == {"tiny-bank": [0, 1], "tiny-accuracy": [0]}
    # the second job found the first's blocks of this call in the cache instead of training them
    assert cache.STEPS_RUN["optunet_bank"] == {"computed": 0, "loaded": 2}
    assert sorted(p.name for p in (tmp_path / "ret").iterdir()) == ["gpu-log.txt", "tiny-accuracy", "tiny-bank"]
    assert sum(1 for p in (tmp_path / "ret").rglob("*") if p.is_file()) <= gpu_device.MAX_FILES
    counts = gpu_queue.fold(tmp_path / "ret", queue, tmp_path / "results")
    assert counts == {"new": 3, "already": 0, "results": 1, "stopped": 0}
    record = json.loads((tmp_path / "results" / "tiny_accuracy-quick-tiny.json").read_text())
    assert 0 <= record["summary"]["mean_accuracy"] <= 1
    assert gpu_queue.fold(tmp_path / "ret", queue, tmp_path / "results") == {"new": 0, "already": 3, "results": 0, "stopped": 0}
    assert [j["progress"]["steps_done"] for j in gpu_queue.load_queue(queue)["jobs"]] == [2, 1, 0]


def test_a_failing_job_does_not_spend_the_call(queue, tmp_path):
    """A job that fails (here its profile has no networks to add) is logged, a job that needs it
    is skipped, the next job runs, and the call then raises naming both."""
    broken = {**TINY_JOB, "name": "broken", "target": "symlib.experiments.laurent.posteriors:bank_more_blocks",
              "steps": 1}
    needs_broken = {**TINY_JOB, "name": "needs-broken", "needs": ["broken"]}
    queue.write_text(json.dumps({"version": 1, "jobs": [broken, needs_broken, TINY_JOB, LATER]}))
    with pytest.raises(ValueError, match=r"broken: ValueError: bank_more must be at least 1.*"
                                         r"needs-broken: needs job 'broken', which failed"):
        _next(queue, tmp_path / "ret")
    log = (tmp_path / "ret" / "gpu-log.txt").read_text()
    assert "job broken failed (ValueError: bank_more" in log and "skipping job needs-broken" in log
    assert "step 1 of tiny-bank started (about " in log  # the step in flight, had the call been killed
    assert sorted(p.name for p in (tmp_path / "ret").iterdir()) == ["gpu-log.txt", "tiny-bank"]
    assert gpu_queue.fold(tmp_path / "ret", queue)["new"] == 2
    with pytest.raises(ValueError, match="bank_more must be at least 1"):  # one job asked for: its own error
        gpu_device.next_steps(queue, tmp_path / "ret2", 5.0, job_name="broken")


def test_a_job_that_runs_here_is_skipped_on_the_device(queue, tmp_path, monkeypatch):
    job = {**_accuracy_experiment(monkeypatch), "where": "here", "estimate_minutes_here": 0.5}
    queue.write_text(json.dumps({"version": 1, "jobs": [TINY_JOB, job, LATER]}))
    assert _next(queue, tmp_path / "dev") == {"tiny-bank": [0, 1]}
    with pytest.raises(ValueError, match="'tiny-accuracy' needs job 'tiny-bank', which is not finished"):
        gpu_device.next_steps(queue, tmp_path / "here0", 5.0, here=True)
    gpu_queue.fold(tmp_path / "dev", queue, tmp_path / "results")
    assert gpu_device.next_steps(queue, tmp_path / "here", 5.0, here=True) == {"tiny-accuracy": [0]}
    assert gpu_queue.fold(tmp_path / "here", queue, tmp_path / "results")["results"] == 1
    lines = gpu_queue.status_lines(queue)
    assert "min here" in lines[1] and lines[-1].endswith("minutes here")
    bad = {**job}
    del bad["estimate_minutes_here"]
    queue.write_text(json.dumps({"version": 1, "jobs": [TINY_JOB, bad]}))
    with pytest.raises(ValueError, match="lacks 'estimate_minutes_here'"):
        gpu_queue.load_queue(queue)


def test_install_lets_a_reduction_read_an_unfinished_job(queue, tmp_path, monkeypatch, capsys):
    from symlib.experiments.profiles import reduced

    _next(queue, tmp_path / "ret")
    gpu_queue.fold(tmp_path / "ret", queue)
    first = gpu_queue.folded_provenance(queue, "tiny-bank", steps=1)  # what a reduction of its first step read
    for suffix in ("json", "npz"):  # the job as a lent GPU may leave it: its second step not folded yet
        (queue.parent / "tiny-bank" / f"step-0001.{suffix}").unlink()
    prov = gpu_queue.folded_provenance(queue, "tiny-bank")
    meta = json.loads((queue.parent / "tiny-bank" / "step-0000.json").read_text())
    assert (prov["steps"], prov["of"], prov["devices"], prov["first"]) == (1, 2, meta["device"], meta["date"][:10])
    assert prov["minutes"] == round(meta["seconds"] / 60, 1) and prov["commits"] == (meta["commit"] or "unknown")[:7]
    assert first == prov == gpu_queue.folded_provenance(queue, "tiny-bank", steps=1)
    with pytest.raises(ValueError, match=r"lacks folded step\(s\) \[1\] of its first 2"):
        gpu_queue.folded_provenance(queue, "tiny-bank", steps=2)
    with pytest.raises(ValueError, match="job 'later' has no folded step"):
        gpu_queue.folded_provenance(queue, "later")
    with pytest.raises(ValueError, match="no job 'nope'"):
        gpu_queue.folded_provenance(queue, "nope")
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "here"))  # this machine's cache: nothing trained in it
    assert main(["gpu", "install", "--queue", str(queue)]) == 0
    assert "tiny-bank: 1 folded step(s) in the artifact cache" in capsys.readouterr().out

    job = gpu_queue.load_queue(queue)["jobs"][0]
    profile = reduced(gpu_queue.job_profile(job), {"bank_used": "2"}, "quick-tiny-2nets")
    monkeypatch.setattr(registry.Blocks, "train", lambda self, start: pytest.fail(f"block {start} was trained"))
    bank = registry.run("optunet_bank", profile, verbose=False).artifact
    assert cache.STEPS_RUN["optunet_bank"] == {"computed": 0, "loaded": 1}
    folded = gpu_queue.load_step(queue.parent / "tiny-bank", 0)["params"]
    for a, b in zip(jax.tree_util.tree_leaves(bank["params"]), jax.tree_util.tree_leaves(folded)):
        np.testing.assert_array_equal(a, b)
    assert len(bank["test_accuracy"]) == 2

    with pytest.raises(ValueError, match="bank_used must be 0 .* a multiple of bank_block=2 .* got 3"):
        registry.run("optunet_bank", reduced(profile, {"bank_used": "3"}, "quick-tiny-2nets-3"), verbose=False)
    with pytest.raises(ValueError, match="not a blocks job of .*: later; blocks jobs: tiny-bank"):
        gpu_queue.install(queue, ["later"])
    assert main(["gpu", "install", "later", "--queue", str(queue)]) == 1


def test_optunets_are_trained_a_block_a_step_and_summarised_here(tmp_path, monkeypatch):
    """The shape of laurent-fig2-1000 in miniature: OptuNets with their per-step swap counts
    trained a block a step on the device (returned compressed), then ``laurent_optunets``
    summarised here from the folded blocks, none trained again."""
    import zipfile

    from symlib.experiments.laurent import optunet

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    common = {"profile": "quick", "set": {"optunet_nets": 2, "optunet_block": 1, "optunet_epochs": 2, "n_train": 600},
              "label": "quick-tiny", "version": 1}
    blocks = {"name": "tiny-optunets", "title": "two OptuNets", "kind": "blocks",
              "target": "symlib.experiments.laurent.optunet:optunet_blocks", "steps": 2, "estimate_gpu_minutes": 0.1,
              **common}
    summary = {"name": "tiny-optunets-summary", "title": "their summary", "kind": "experiments",
               "experiments": ["laurent_optunets"], "where": "here", "needs": ["tiny-optunets"], "steps": 1,
               "estimate_gpu_minutes": 0, "estimate_minutes_here": 0.5, **common}
    path = tmp_path / "repo" / "gpu" / "queue.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 1, "jobs": [blocks, summary]}))
    assert _next(path, tmp_path / "dev") == {"tiny-optunets": [0, 1]}
    assert gpu_queue.fold(tmp_path / "dev", path, tmp_path / "results") == {"new": 2, "already": 0, "results": 0, "stopped": 0}
    state = path.parent / "tiny-optunets"
    with zipfile.ZipFile(state / "step-0001.npz") as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    step = gpu_queue.load_step(state, 1)
    assert step["seen"]["step"].shape[:2] == (1, 2)  # one network of the second block, two epochs

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "here"))  # this machine's cache: nothing trained in it
    monkeypatch.setattr(registry.Blocks, "train", lambda self, start: pytest.fail(f"block {start} was trained"))
    monkeypatch.setattr(optunet, "CONVERGED_ACCURACY", 0.0)  # two epochs on 600 images: none reaches 15%
    assert gpu_device.next_steps(path, tmp_path / "here-ret", 5.0, here=True, command="test") == {
        "tiny-optunets-summary": [0]}
    assert cache.STEPS_RUN["laurent_optunets"] == {"computed": 0, "loaded": 2}
    assert gpu_queue.fold(tmp_path / "here-ret", path, tmp_path / "results")["results"] == 1
    record = json.loads((tmp_path / "results" / "laurent_optunets-quick-tiny.json").read_text())
    assert record["summary"]["nets"] == 2 and record["summary"]["swaps"]["units"] == [10, 3]
    # a labelled reduction of the blocks folded so far: optunet_used, whole blocks of the job's networks
    from symlib.experiments.profiles import reduced

    first = reduced(gpu_queue.job_profile(blocks), {"optunet_used": "1"}, "quick-tiny-first")
    cache.STEPS_RUN.clear()
    part = registry.run("laurent_optunets", first, verbose=False).artifact
    assert cache.STEPS_RUN["laurent_optunets"] == {"computed": 0, "loaded": 1} and len(part["test_accuracy"]) == 1
    whole = registry.run("laurent_optunets", gpu_queue.job_profile(blocks), verbose=False).artifact
    np.testing.assert_array_equal(part["swaps"], whole["swaps"][:1])
    with pytest.raises(ValueError, match="optunet_used must be 0 .* got 3"):
        optunet.optunet_blocks(reduced(first, {"optunet_used": "3"}, "quick-tiny-first-3"))


PIECES_JOBS = [
    {"name": "tiny-hmc-first", "version": 1, "title": "the first samples of a tiny pieced HMC run", "kind": "pieces",
     "target": "_helpers:tiny_pieced_run", "profile": "quick", "state": "tiny-hmc", "until_kept": 4, "steps": 1,
     "estimate_gpu_minutes": 0.1},
    {"name": "tiny-hmc-rest", "version": 1, "title": "the rest of the run", "kind": "pieces",
     "target": "_helpers:tiny_pieced_run", "profile": "quick", "state": "tiny-hmc", "needs": ["tiny-hmc-first"],
     "steps": 1, "estimate_gpu_minutes": 0.1}]


def test_pieces_jobs_carry_the_chains_and_attach_the_summaries_here(tmp_path, monkeypatch):
    """A pieced HMC run through the queue: the device advances the carried detached state by one
    piece a call, fold attaches each piece's partial state to the run here and refreshes the
    carry; the summaries equal those of the run advanced in one go; folding twice changes
    nothing; a carry that is missing or stale is refused by name."""
    from _helpers import tiny_pieced_run
    from symlib.experiments.xiao import hmc_pieces

    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    queue = tmp_path / "repo" / "gpu" / "queue.json"
    queue.parent.mkdir(parents=True)
    queue.write_text(json.dumps({"version": 1, "jobs": PIECES_JOBS}))
    (tmp_path / "repo" / gpu_queue.CARRY).mkdir()
    carried = gpu_queue.carried_piece(queue.parent, "tiny-hmc")
    run_dir = gpu_queue.pieces_state(queue, "tiny-hmc")

    assert _next(queue, tmp_path / "ret1") == {"tiny-hmc-first": [0]}  # one piece a run a call
    log = (tmp_path / "ret1" / "gpu-log.txt").read_text()
    assert "piece 0 of run 'tiny-hmc' from iteration 0" in log and "(the job is done)" in log
    assert "stopping: the run advanced in this call goes on in job(s) tiny-hmc-rest once this call is folded" in log
    assert not carried.exists() and gpu_queue.fold(tmp_path / "ret1", queue)["new"] == 1
    meta = json.loads((queue.parent / "tiny-hmc-first" / "step-0000.json").read_text())
    assert meta["piece"]["num_kept"] == 4 and meta["piece"]["until_iteration"] == 7 + 4 * 2
    assert meta["piece"]["state_sha256"] == hmc_pieces.load_state(run_dir)[0]["sha256"]
    assert hmc_pieces.load_state(carried)[0]["detached"]  # fold refreshed the carry
    assert not (queue.parent / "tiny-hmc-first" / "step-0000.npz").exists()  # the summaries stay in gpu/pieces/
    q = gpu_queue.load_queue(queue)
    assert gpu_queue.job_done(q, queue.parent, q["jobs"][0]) and not gpu_queue.job_done(q, queue.parent, q["jobs"][1])
    assert gpu_queue.minutes_left(q["jobs"][0]) == 0

    assert _next(queue, tmp_path / "ret2") == {"tiny-hmc-rest": [0]}
    assert gpu_queue.fold(tmp_path / "ret2", queue) == {"new": 1, "already": 0, "results": 0, "stopped": 0}
    before = {p: p.read_bytes() for p in queue.parent.rglob("*") if p.is_file()}
    assert gpu_queue.fold(tmp_path / "ret1", queue) == {"new": 0, "already": 1, "results": 0, "stopped": 0}
    assert gpu_queue.fold(tmp_path / "ret2", queue) == {"new": 0, "already": 1, "results": 0, "stopped": 0}
    assert {p: p.read_bytes() for p in queue.parent.rglob("*") if p.is_file()} == before
    assert _next(queue, tmp_path / "ret3") == {}  # nothing left

    whole = tmp_path / "whole"
    hmc_pieces.advance(whole, tiny_pieced_run())
    a, b = hmc_pieces.summaries(run_dir), hmc_pieces.summaries(whole)
    assert a.progress["complete"] and len(a.progress["pieces"]) == 2
    for x, y in ((a.q_d, b.q_d), (a.q_r["activation"], b.q_r["activation"])):
        for u, v in zip(jax.tree_util.tree_leaves((x.mu, x.sigma)), jax.tree_util.tree_leaves((y.mu, y.sigma))):
            np.testing.assert_allclose(u, v, atol=1e-6)
    np.testing.assert_array_equal(a.traces["test_loglik"], b.traces["test_loglik"])
    lines = gpu_queue.status_lines(queue)
    assert all(" 1/1 " in line for line in lines[:2]) and lines[-1].startswith("left in all: about 0 GPU-minutes")
    assert "[run 'tiny-hmc' at iteration 15, 4 kept samples per chain; this job ends at iteration 15]" in lines[0]


def test_pieces_job_refuses_a_missing_or_lost_state(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    queue = tmp_path / "repo" / "gpu" / "queue.json"
    queue.parent.mkdir(parents=True)
    queue.write_text(json.dumps({"version": 1, "jobs": PIECES_JOBS}))
    assert gpu_queue.detach_to_carry(queue, "tiny-hmc") is None  # not started: nothing to carry
    _next(queue, tmp_path / "ret1")
    gpu_queue.fold(tmp_path / "ret1", queue)  # no carry folder here: fold does not make one
    with pytest.raises(ValueError, match="detached state of run 'tiny-hmc'.*is missing: run `python -m symlib gpu "
                                         "prepare`"):
        gpu_device.next_steps(queue, tmp_path / "ret2", 5.0, job_name="tiny-hmc-rest")
    import shutil

    shutil.rmtree(gpu_queue.pieces_state(queue, "tiny-hmc"))
    with pytest.raises(ValueError, match="folded pieces of run 'tiny-hmc'.*its state .* is missing here"):
        gpu_queue.detach_to_carry(queue, "tiny-hmc")


def test_tests_job_reports_counts_failures_and_a_timeout(tmp_path, monkeypatch):
    """A ``tests`` job: pytest on each step's paths in the checkout, its counts and the messages
    of its failures and errors come back and are folded beside the queue."""
    repo = tmp_path / "repo"
    (repo / "tt").mkdir(parents=True)
    (repo / "tt" / "test_a.py").write_text(
        "import pytest\n\ndef test_ok():\n    assert 1\n\ndef test_bad():\n    assert 2 + 2 == 5, 'arithmetic'\n\n"
        "@pytest.mark.skip(reason='no')\ndef test_skipped():\n    pass\n")
    (repo / "tt" / "test_b.py").write_text("import a_module_that_is_not_there\n")
    job = {"name": "tiny-tests", "version": 1, "title": "tests", "kind": "tests", "args": ["-p", "no:xdist"],
           "paths": [["tt/test_a.py", "tt/test_b*.py"]], "steps": 1, "estimate_gpu_minutes": 0.1}
    queue = repo / "gpu" / "queue.json"
    queue.parent.mkdir()
    queue.write_text(json.dumps({"version": 1, "jobs": [job]}))
    assert _next(queue, tmp_path / "ret") == {"tiny-tests": [0]}
    assert gpu_queue.fold(tmp_path / "ret", queue)["new"] == 1
    report = json.loads((queue.parent / "tiny-tests" / "tests-0000.json").read_text())
    assert report["counts"] == {"tests": 4, "passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert report["returncode"] == 1 and "arithmetic" in report["failed"]["tt/test_a::test_bad"]
    assert "a_module_that_is_not_there" in next(iter(report["errors"].values()))
    assert "1 failed" in (queue.parent / "tiny-tests" / "tests-0000.log").read_text()
    stopped = gpu_device._run_tests(job, 0, repo, 1e-3)  # the time ran out: no counts, and it says so
    assert json.loads(stopped["tests-0000.json"])["returncode"] is None
    with pytest.raises(ValueError, match="matches nothing"):
        gpu_device.step_test_paths({**job, "paths": [["tt/none_*.py"]]}, 0, repo)
    with pytest.raises(ValueError, match="declares 2 steps but has 1 paths"):
        gpu_device.step_test_paths({**job, "steps": 2}, 0, repo)


def test_a_step_stopped_with_its_call_is_recorded_and_then_skipped(queue, tmp_path, monkeypatch):
    """A call killed at its time limit mid-step returns its log only: fold records the step's
    lower bound, and a later call whose minutes that bound does not fit skips the job (naming
    why) and goes on, instead of being killed on the same step again."""
    log = tmp_path / "ret" / "gpu-log.txt"
    log.parent.mkdir()
    log.write_text("23:58:00 call of up to 8 min on 1 x NVIDIA H200 (gpu), 2026-12-01 23:58:00 UTC, commit abc\n"
                   "23:58:05 job tiny-bank: 0 of 2 steps folded; up to 8 min\n"
                   "23:58:06 step 0 of tiny-bank started (about 60 s expected)\n"
                   "23:58:50 step 0 of tiny-bank (2 steps) done in 44.0 s\n"
                   "23:58:51 step 1 of tiny-bank started (about 44 s expected)\n"
                   "00:05:41 job later: something\n")  # past midnight, then the call was killed
    assert gpu_queue.stopped_steps(log.read_text()) == [
        {"job": "tiny-bank", "index": 1, "seconds": 410, "date": "2026-12-01 23:58:00 UTC", "call_minutes": 8.0}]
    assert gpu_queue.fold(tmp_path / "ret", queue) == {"new": 0, "already": 0, "results": 0, "stopped": 1}
    assert gpu_queue.fold(tmp_path / "ret", queue)["stopped"] == 0  # folding twice changes nothing
    job = gpu_queue.load_queue(queue)["jobs"][0]
    assert job["progress"]["stopped"] == {"1": {"seconds": 410, "date": "2026-12-01 23:58:00 UTC", "call_minutes": 8.0}}
    assert "[step 1 stopped with its call after at least 410 s on 2026-12-01" in gpu_queue.status_lines(queue)[0]
    with pytest.raises(ValueError, match="step 1 of tiny-bank was stopped with its call after at least 410 s.*split"):
        gpu_device.next_steps(queue, tmp_path / "ret2", 6.0, command="test")  # 1.25 x 410 s > 6 min
    log2 = (tmp_path / "ret2" / "gpu-log.txt").read_text()
    assert "step 0 of tiny-bank started" in log2 and "job tiny-bank failed" in log2  # the rest of the job ran
    assert gpu_device.next_steps(queue, tmp_path / "ret3", 9.0, command="test", job_name="tiny-bank") == {
        "tiny-bank": [0, 1]}  # a call long enough runs it
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no manifest.json, nor any folder with one"):
        gpu_queue.fold(tmp_path / "empty", queue)


def test_job_identity_does_not_depend_on_key_order():
    """A job's hash (what its folded steps are checked against) and the queue's status are the
    same with every job's keys in another order."""
    import random

    queue = gpu_queue.load_queue(ROOT / "gpu" / "queue.json")
    rng = random.Random(0)
    for job in queue["jobs"]:
        items = list(job.items())
        rng.shuffle(items)
        assert gpu_queue.job_hash(dict(items)) == gpu_queue.job_hash(job)
        assert gpu_queue.minutes_left(dict(items)) == gpu_queue.minutes_left(job)


def _npz(value) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, v=np.asarray(value))
    return buf.getvalue()


def _script(name):
    """The module of ``scripts/<name>.py``."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fabricated_return(out, job, steps, prov=None):
    """A job's return as a device call writes it (:class:`gpu_device.Bundle`), of made-up arrays
    (``steps``: index -> value): what is checked is the bookkeeping, not the training."""
    bundle = gpu_device.Bundle(out / job["name"], job)
    for index, value in steps.items():
        data = _npz(value)
        gpu_device._add_step(bundle, job, index, 1.0, prov or {"device": "cpu", "commit": None},
                             {f"step-{index:04d}.npz": data}, {"label": 2 * index, "sha256": gpu_queue.sha256_hex(data)})
    return bundle


def test_steps_of_an_older_job_version_are_ignored(queue, tmp_path):
    """A job whose definition changes is a new job: its older version's folded steps neither
    count as done nor go into the artifact cache under the new definition; the status says they
    are ignored, and folding the new version's steps replaces them. A step labelled with another
    block than the job expects at its index is refused by install."""
    from types import SimpleNamespace

    _fabricated_return(tmp_path / "v1", TINY_JOB, {0: 111.0, 1: 112.0})
    assert gpu_queue.fold(tmp_path / "v1", queue)["new"] == 2
    new = {**TINY_JOB, "version": 2, "set": {**TINY_JOB["set"], "bank_epochs": 5}}
    queue.write_text(json.dumps({"version": 1, "jobs": [new, LATER]}))
    q = gpu_queue.load_queue(queue)
    state = queue.parent / "tiny-bank"
    assert not gpu_queue.job_done(q, queue.parent, new)
    assert gpu_device.first_unfinished(q, queue.parent)["version"] == 2
    assert gpu_queue.folded_steps(state, new) == {} and len(gpu_queue.folded_steps(state)) == 2
    gpu_queue.update_progress(queue)
    line = gpu_queue.status_lines(queue)[0]
    assert "  0/2 " in line and "[2 folded step(s) of an older version ignored" in line
    assert gpu_queue.install(queue, ["tiny-bank"]) == {"tiny-bank": 0}
    with pytest.raises(ValueError, match="no folded step"):
        gpu_queue.folded_provenance(queue, "tiny-bank")

    _fabricated_return(tmp_path / "v2", new, {0: 221.0})  # the new version's step 0 replaces the older one's
    assert gpu_queue.fold(tmp_path / "v2", queue) == {"new": 1, "already": 0, "results": 0, "stopped": 0}
    assert float(gpu_queue.load_step(state, 0)["v"]) == 221.0
    assert list(gpu_queue.folded_steps(state, new)) == [0] and gpu_queue.older_steps(state, new) == [1]
    prog = gpu_queue.load_queue(queue)["jobs"][0]["progress"]
    assert prog["steps_done"] == 1 and prog["older_steps"] == [1]
    assert gpu_queue.fold(tmp_path / "v2", queue)["already"] == 1
    script = _script("gpu_bank_accuracy")  # the bank's accuracy check reads the current version only
    assert [float(b["v"]) for b in script.current_blocks(state)] == [221.0]

    blocks = SimpleNamespace(name="optunet_bank", cache_config={"tiny": 1}, starts=[0, 2])
    assert gpu_queue.install_steps(new, state, tmp_path / "c", blocks=blocks) == 1
    with pytest.raises(ValueError, match=r"step-0000\.json holds block 0, but job 'tiny-bank' expects block 4 at step "
                                         r"0: its blocks changed under the same definition; give the job a new version"):
        gpu_queue.install_steps(new, state, tmp_path / "c", blocks=SimpleNamespace(**{**vars(blocks), "starts": [4]}))


def test_a_step_computed_twice_is_refused_naming_both_files(queue, tmp_path):
    """A step folded already whose return holds other bytes is refused, naming the step's .json
    and its arrays to move away; following that advice folds the return (moving the arrays alone
    does not, nor leaves a .json without them); a duplicate with identical bytes is skipped, and a
    step whose arrays went missing is written again."""
    state = queue.parent / "tiny-bank"
    _fabricated_return(tmp_path / "ret1", TINY_JOB, {0: 1.0})
    _fabricated_return(tmp_path / "ret2", TINY_JOB, {0: 1.0000001, 1: 2.0})
    _fabricated_return(tmp_path / "same", TINY_JOB, {0: 1.0}, {"device": "another", "commit": None})
    assert gpu_queue.fold(tmp_path / "ret1", queue)["new"] == 1
    assert gpu_queue.fold(tmp_path / "same", queue) == {"new": 0, "already": 1, "results": 0, "stopped": 0}
    both = f"move away both {state / 'step-0000.json'} and {state / 'step-0000.npz'}"
    with pytest.raises(ValueError, match=f"step 0 of job 'tiny-bank' is folded already with other contents.*{both}"):
        gpu_queue.fold(tmp_path / "ret2", queue)
    assert not (state / "step-0001.json").exists()  # nothing folded
    (state / "step-0000.npz").rename(tmp_path / "moved.npz")  # half the advice: refused again, nothing written
    with pytest.raises(ValueError, match=both):
        gpu_queue.fold(tmp_path / "ret2", queue)
    assert not (state / "step-0000.npz").exists() and not (state / "step-0001.json").exists()
    assert gpu_queue.fold(tmp_path / "ret1", queue) == {"new": 1, "already": 0, "results": 0, "stopped": 0}  # repaired
    assert float(gpu_queue.load_step(state, 0)["v"]) == 1.0
    for suffix in ("json", "npz"):
        (state / f"step-0000.{suffix}").rename(tmp_path / f"moved.{suffix}")
    assert gpu_queue.fold(tmp_path / "ret2", queue) == {"new": 2, "already": 0, "results": 0, "stopped": 0}
    assert [float(gpu_queue.load_step(state, i)["v"]) for i in (0, 1)] == [1.0000001, 2.0]
    (state / "step-0001.npz").write_bytes(b"changed")
    with pytest.raises(ValueError, match=r"step-0001\.npz does not match the SHA-256 that .*step-0001\.json lists"):
        gpu_queue.fold(tmp_path / "ret2", queue)
    (state / "step-0001.json").unlink()
    with pytest.raises(ValueError, match=r"step-0001\.npz exists with other contents than step 1 .* move .* away"):
        gpu_queue.fold(tmp_path / "ret2", queue)


def test_a_call_killed_while_adding_a_step_keeps_its_return(queue, tmp_path, monkeypatch):
    """However a call is killed while it adds a step to a job's return (within a part's write,
    between parts, at a manifest's replacement), the return folds with the steps finished before
    it, and never has more parts than the finished return."""
    import builtins

    monkeypatch.setattr(gpu_device, "PART_BYTES", 4096)  # a step spans parts

    class Killed(BaseException):
        pass

    def killing_open(budget):  # open() for gpu_device whose writes stop the call after budget[0] bytes
        def opener(path, mode="r", *args, **kwargs):
            f = builtins.open(path, mode, *args, **kwargs)
            write = f.write

            def limited(data):
                left = budget[0]
                budget[0] -= len(data)
                if budget[0] < 0:
                    write(bytes(data[:left]))
                    raise Killed(f"killed after {left} more bytes")
                return write(data)

            f.write = limited
            return f
        return opener

    def killing_write_json(at):
        calls = []

        def write(path, obj):
            calls.append(path)
            if len(calls) == at:
                raise Killed("killed at the manifest's replacement")
            gpu_queue.write_json(path, obj)
        return write

    rng = np.random.default_rng(0)
    arrays = {i: rng.normal(size=700) for i in (0, 1)}  # about 5.7 kB a step: two parts or more each

    whole = _fabricated_return(tmp_path / "finished", TINY_JOB, arrays)
    before = _fabricated_return(tmp_path / "before", TINY_JOB, {0: arrays[0]})
    added = whole.num_bytes - before.num_bytes
    kills = [("manifest", 1), ("manifest", 2)]  # after the arrays' parts; after the step's .json
    kills += [("bytes", b) for b in sorted(set(range(0, added, 331)) | {1, 511, 512, 4095, 4096, added - 1})]
    for n, (how, at) in enumerate(kills):
        out = tmp_path / f"ret-{n}"
        bundle = _fabricated_return(out, TINY_JOB, {0: arrays[0]})
        data = _npz(arrays[1])
        with monkeypatch.context() as m, pytest.raises(Killed):
            if how == "bytes":
                m.setattr(gpu_device, "open", killing_open([at]), raising=False)
            else:
                m.setattr(gpu_device, "write_json", killing_write_json(at))
            gpu_device._add_step(bundle, TINY_JOB, 1, 1.0, {"device": "cpu", "commit": None},
                                 {"step-0001.npz": data}, {"label": 2, "sha256": gpu_queue.sha256_hex(data)})
        manifest, files = gpu_queue.read_return(out / "tiny-bank")
        assert len(manifest["parts"]) <= whole.num_parts
        assert len(list((out / "tiny-bank").iterdir())) <= whole.num_parts + 1  # and the manifest
        assert set(files) in ({"step-0000.json", "step-0000.npz"},
                              {"step-0000.json", "step-0000.npz", "step-0001.npz"}), (how, at)  # what was added whole
        assert gpu_queue.fold(out, queue)["new" if n == 0 else "already"] == 1, (how, at)  # step 0 is kept
    assert gpu_queue.fold(tmp_path / "finished", queue) == {"new": 1, "already": 1, "results": 0, "stopped": 0}
    assert [float(gpu_queue.load_step(queue.parent / "tiny-bank", i)["v"][0]) for i in (0, 1)] == [
        arrays[0][0], arrays[1][0]]


def test_a_piece_folded_already_with_other_contents_is_refused(tmp_path, monkeypatch):
    """A returned piece at an index already folded is skipped only if it is the folded piece
    (its files and record); another call's piece there is refused by name, not dropped."""
    monkeypatch.setenv("SYMLIB_CACHE", str(tmp_path / "cache"))
    job = {"name": "p", "version": 1, "title": "t", "kind": "pieces", "target": "x:y", "state": "s", "steps": 3,
           "estimate_gpu_minutes": 1}
    queue = tmp_path / "repo" / "gpu" / "queue.json"
    queue.parent.mkdir(parents=True)
    queue.write_text(json.dumps({"version": 1, "jobs": [job]}))
    piece = {"state": "s", "start_iteration": 0, "iteration": 50, "num_kept": 0, "num_iterations": 6100,
             "num_samples": 500, "until_iteration": 6100, "complete": False, "seconds_per_iteration": 1.0}

    def returned(out, arrays, iteration):
        bundle = gpu_device.Bundle(out / "p", job)
        gpu_device._add_step(bundle, job, 0, 60.0, {"device": "d", "commit": None},
                             {"piece-0000.state.json": b'{"state_file": "a.npz"}', "piece-0000.npz": arrays},
                             {"piece": {**piece, "iteration": iteration}})
        return json.loads(gpu_queue.read_return(out / "p")[1]["step-0000.json"])

    meta = returned(tmp_path / "same", b"arrays", 50)
    (queue.parent / "p").mkdir()
    gpu_queue.write_json(queue.parent / "p" / "step-0000.json",  # folded as fold writes it, with the run's checksum
                         {**meta, "piece": {**meta["piece"], "state_sha256": "a" * 64}})
    assert gpu_queue.fold(tmp_path / "same", queue) == {"new": 0, "already": 1, "results": 0, "stopped": 0}
    returned(tmp_path / "other", b"other arrays", 400)
    with pytest.raises(ValueError, match=r"piece 0 of job 'p' is folded already \(.*step-0000\.json\) with other "
                                         "contents than this return's .* cannot be attached"):
        gpu_queue.fold(tmp_path / "other", queue)


def test_reduction_provenance_is_the_queue_s_record_of_the_steps_a_reduction_read():
    """A labelled reduction that read 256 of the bank's networks read its first 2 steps of 128."""
    from symlib.experiments.profiles import get_profile

    record = {"command": "python -m symlib run bank_min_mass --profile paper --set bank_used=256 --label x"}
    block = get_profile("paper").bank_block
    assert block == 128
    prov = gpu_queue.reduction_provenance(record, "laurent-bank", "bank_used", block)
    queue = results.repository_root() / "gpu" / "queue.json"
    assert prov == gpu_queue.folded_provenance(queue, "laurent-bank", 2) and prov["steps"] == 2
    assert gpu_queue.reduction_provenance(record, "laurent-bank", "bank_used", block, queue) == prov
    with pytest.raises(ValueError, match="does not set 'bank_used'"):
        gpu_queue.reduction_provenance({"command": "run it --set bank_nets=24"}, "laurent-bank", "bank_used", block)
    with pytest.raises(ValueError, match="no job 'nothing'"):
        gpu_queue.reduction_provenance(record, "nothing", "bank_used", block)
