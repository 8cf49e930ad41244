"""`jaxlab eval`: a finished latent-pager `compare` run (`smoke` on the tiny random Qwen3 of
test_latent_pager.py) scored on its own test split, exported as JSONL, gives its summary.json and
predictions byte for byte and trains nothing; every refusal is one line on stderr."""

import json
import shutil

import pytest

from jaxlab.core import config as config_lib
from jaxlab.paging import data, experiment, pairs
from launch import main
from tests.test_latent_pager import _load, tiny_lm_folder


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
  """A finished `smoke` comparison in its workdir."""
  root = tmp_path_factory.mktemp("eval")
  workdir = root / "compare"
  config = _load("smoke", tiny_lm_folder(root / "lm"), workdir)
  experiment.run(config, workdir)
  return config, workdir


def test_jaxlab_data_writes_a_configs_test_world_as_eval_reads_it(tmp_path, capsys):
  overrides = ["--config.data.test_seed=7", "--config.data.num_test=3"]
  out = tmp_path / "data"
  assert main.main(["data", "configs/latent_pager.py:smoke", "--out", str(out), *overrides]) == 0
  assert sorted(p.name for p in out.iterdir()) == ["held_out.jsonl", "test.jsonl", "world.json"]
  spec = data.DataSpec.of(config_lib.load("configs/latent_pager.py:smoke", overrides))
  assert json.loads((out / "world.json").read_text()) == data.test_world(spec) and data.test_world(spec)["seed"] == 7
  direct = data.export_jsonl(data.load(spec, tmp_path, splits=("test",)), tmp_path / "direct",
                             held_out=data.load_held_out(spec, tmp_path))
  for name in ("test.jsonl", "held_out.jsonl"):
    assert (out / name).read_bytes() == (direct / name).read_bytes(), name
  assert len({json.loads(line)["document"] for line in (out / "test.jsonl").read_text().splitlines()}) == 3
  # Refusals, one line each: data already in files, an experiment without test data to write, a bad field.
  capsys.readouterr()
  smoke = "configs/latent_pager.py:smoke"
  for config, extra, said in ((smoke, [f"--config.data.jsonl_dir={out}"], "JSONL data already"),
                              ("configs/org_forms.py", [], "has no `export_test`"),
                              (smoke, ["--config.data.num_test=0"], "data.num_test")):
    assert main.main(["data", config, "--out", str(tmp_path / "refused"), *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1, err
  assert not (tmp_path / "refused").exists()


def _eval(capsys, workdir, folder, out):
  code = main.main(["eval", str(workdir), "--data", str(folder), "--out", str(out)])
  return code, capsys.readouterr().err


@pytest.mark.float_sensitive
def test_the_runs_own_test_split_scores_as_the_run_did(finished, tmp_path, capsys):
  config, workdir = finished
  spec = data.DataSpec.of(config)
  folder = data.export_jsonl(data.load(spec, workdir, splits=("test",)), tmp_path / "data",
                             world=data.test_world(spec), held_out=data.load_held_out(spec, workdir))
  assert sorted(p.name for p in folder.iterdir()) == ["held_out.jsonl", "test.jsonl", "world.json"]
  assert not any('"probe"' in line for line in (folder / "test.jsonl").read_text().splitlines())
  checkpoints = sorted(p.name for p in (workdir / "checkpoints").iterdir())
  log = (workdir / "train_log.jsonl").read_bytes()
  out = tmp_path / "out"
  code, err = _eval(capsys, workdir, folder, out)
  assert code == 0, err
  for name in ("summary.json", "predictions.jsonl", "held_out.jsonl", "validation.jsonl", "history.json"):
    assert (out / name).read_bytes() == (workdir / name).read_bytes(), name
  # Nothing trained: the same checkpoints and training log.
  assert sorted(p.name for p in (workdir / "checkpoints").iterdir()) == checkpoints
  assert (workdir / "train_log.jsonl").read_bytes() == log
  ours, theirs = (json.loads((d / "config.json").read_text()) for d in (out, workdir))
  assert ours["data"].pop("jsonl_dir") == str(folder) and theirs["data"].pop("jsonl_dir") == ""
  assert ours == theirs
  evaluated = json.loads((out / "evaluated.json").read_text())
  rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
  assert evaluated["data_dir"] == str(folder) and len(evaluated["test_sha256"]) == 64
  assert evaluated["questions"] + evaluated["probes"] == len(rows) and evaluated["documents_in_training"] == 0
  timing = json.loads((out / "timing.json").read_text())
  assert timing["latent_pager"]["ids"] == json.loads((workdir / "timing.json").read_text())["latent_pager"]["ids"]
  assert (out / "report.md").is_file()


def test_a_larger_world_is_scored_whole_in_both_wordings(finished, tmp_path, capsys):
  config, workdir = finished
  n = config.data.num_test + 2   # more documents than the run read, from a world of their own
  folder = data.export_test(config_lib.derive(config, {"data.num_test": n, "data.test_seed": 11}), tmp_path / "data")
  code, err = _eval(capsys, workdir, folder, tmp_path / "out")
  assert code == 0, err
  rows = lambda name: [json.loads(line) for line in (tmp_path / "out" / name).read_text().splitlines()]
  scored, held = rows("predictions.jsonl"), rows("held_out.jsonl")
  assert [r["id"] for r in held] == [r["id"] for r in scored]
  assert len({r["document"] for r in scored}) == n
  assert json.loads((tmp_path / "out" / "evaluated.json").read_text())["documents"] == n


def test_test_jsonl_alone_is_enough(finished, tmp_path, capsys):
  config, workdir = finished
  folder = data.export_jsonl(data.load(data.DataSpec.of(config), workdir, splits=("test",)), tmp_path / "data")
  assert [p.name for p in folder.iterdir()] == ["test.jsonl"]
  code, err = _eval(capsys, workdir, folder, tmp_path / "out")
  assert code == 0, err
  summary = json.loads((tmp_path / "out" / "summary.json").read_text())
  assert summary["test_world"] == {"seed": None, "builder": None} and "wording" not in summary["bar"]
  assert not (tmp_path / "out" / "held_out.jsonl").exists()


def test_refusals_are_one_line(finished, tmp_path, capsys):
  _, workdir = finished
  out = tmp_path / "out"
  empty = tmp_path / "empty"
  empty.mkdir()
  code, err = _eval(capsys, workdir, empty, out)
  assert code == 2 and "test.jsonl not found" in err and err.count("\n") == 1
  bad = tmp_path / "bad"
  bad.mkdir()
  (bad / "test.jsonl").write_text('{"id": "a"}\n')
  code, err = _eval(capsys, workdir, bad, out)
  assert code == 2 and f"{bad / 'test.jsonl'}:1" in err and err.count("\n") == 1
  code, err = _eval(capsys, tmp_path / "nowhere", empty, out)
  assert code == 2 and "config.json not found" in err
  # Another mode, and an experiment without `evaluate`.
  for name, fields in (("rot", {"mode": "rot"}), ("org_forms", {"experiment": "org_forms"})):
    other = tmp_path / name
    other.mkdir()
    (other / "config.json").write_text(json.dumps({**json.loads((workdir / "config.json").read_text()), **fields}))
    code, err = _eval(capsys, other, empty, out)
    assert code == 2 and err.count("\n") == 1
    assert ("mode 'rot'" if name == "rot" else "org_forms experiment has no `evaluate`") in err
  assert not out.exists()


def test_an_unfinished_run_is_refused_not_trained(finished, tmp_path, capsys):
  config, workdir = finished
  unfinished = tmp_path / "unfinished"
  shutil.copytree(workdir, unfinished, ignore=shutil.ignore_patterns("checkpoints"))
  folder = data.export_jsonl({"test": data.load(data.DataSpec.of(config), workdir, splits=("test",))["test"][:2]},
                             tmp_path / "data")
  code, err = _eval(capsys, unfinished, folder, tmp_path / "out")
  assert code == 2 and "training never started" in err and err.count("\n") == 1
  assert not (unfinished / "checkpoints").exists() and not (tmp_path / "out").exists()
  # Stopped part way: the last step's checkpoint gone, the best one kept.
  stopped = tmp_path / "stopped"
  shutil.copytree(workdir, stopped)
  steps = sorted(int(p.name) for p in (stopped / "checkpoints").iterdir() if p.name.isdigit())
  shutil.rmtree(stopped / "checkpoints" / str(steps[-1]))
  code, err = _eval(capsys, stopped, folder, tmp_path / "out")
  assert code == 2 and f"of {steps[-1]}; finish it" in err and err.count("\n") == 1
  assert {int(p.name) for p in (stopped / "checkpoints").iterdir() if p.name.isdigit()} == set(steps[:-1])
  assert not (tmp_path / "out").exists()


def test_compare_pairs_a_comparisons_questions_without_its_probes(finished):
  """`jaxlab compare` on a `compare` run: its figures are the run's own over the test questions
  without the consistency probes, and a run against itself differs by zero."""
  _, workdir = finished
  figures = json.loads((workdir / "summary.json").read_text())["figures"]
  rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text().splitlines()]
  assert any(r["probe"] for r in rows)
  result = pairs.paired_runs(workdir, workdir, "latent_pager")
  assert result["questions"] == sum(not r["probe"] for r in rows)
  ours = result["figures"][0]
  assert ours["f1_raw"]["mean"] == pytest.approx(figures["all/latent_pager/f1_raw"]["mean"], abs=1e-12)
  assert ours["hallucination"]["mean"] == pytest.approx(figures["every/latent_pager/hallucination"]["mean"], abs=1e-12)
  assert all(d is None or d["diff"] == 0 for d in result["differences"].values())
