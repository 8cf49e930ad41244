import json
from pathlib import Path

import pytest

from jaxlab import experiments
from jaxlab.core import config as config_lib

CONFIGS = sorted(Path("configs").glob("*.py"))


def _validate(config):
  experiments.get(config.experiment).validate(config)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("variant", ["smoke", "repro"])
def test_every_config_loads_and_validates(path, variant):
  config = config_lib.load(f"{path}:{variant}", validate=_validate)
  assert config.variant == variant and config.experiment in experiments.EXPERIMENTS
  assert "jaxlab run" in (Path(path).read_text().split('"""')[1]), "the run command belongs in the docstring"


def test_override_changes_value():
  config = config_lib.load("configs/org_forms.py:smoke", ["--config.seeds=7", "--config.alpha=2"], _validate)
  assert config.seeds == 7 and config.alpha == 2.0


def test_unknown_field_names_it_and_suggests():
  with pytest.raises(config_lib.ConfigError, match=r"config\.sedes: no such field \(did you mean 'seeds'\?\)"):
    config_lib.load("configs/org_forms.py:smoke", ["--config.sedes=3"], _validate)


def test_wrong_type_is_an_error():
  with pytest.raises(config_lib.ConfigError, match=r"--config.seeds=many: config\.seeds: expected int"):
    config_lib.load("configs/org_forms.py:smoke", ["--config.seeds=many"], _validate)


def test_bad_value_from_override_names_the_override():
  with pytest.raises(config_lib.ConfigError,
                     match=r"--config.grid.coord_shares=\(0.5, 1.5\): config\.grid\.coord_shares"):
    config_lib.load("configs/org_forms.py:smoke", ["--config.grid.coord_shares=(0.5, 1.5)"], _validate)


def test_bad_value_in_file_names_file_and_line(tmp_path):
  text = Path("configs/org_forms.py").read_text().replace("c.seeds = 2", "c.seeds = -1")
  bad = tmp_path / "bad.py"
  bad.write_text(text)
  line = next(i for i, l in enumerate(text.splitlines(), 1) if "c.seeds = -1" in l)
  with pytest.raises(config_lib.ConfigError, match=rf"{bad}:{line}: config\.seeds: must be"):
    config_lib.load(f"{bad}:smoke", validate=_validate)


def test_bad_value_in_a_variant_names_that_variants_line(tmp_path):
  text = Path("configs/org_forms.py").read_text().replace("c.seeds = 30", "c.seeds = 0")
  bad = tmp_path / "bad_repro.py"
  bad.write_text(text)
  line = next(i for i, l in enumerate(text.splitlines(), 1) if "c.seeds = 0" in l)
  with pytest.raises(config_lib.ConfigError, match=rf"{bad}:{line}: config\.seeds"):
    config_lib.load(f"{bad}:repro", validate=_validate)


def test_unknown_variant_lists_the_known_ones():
  with pytest.raises(config_lib.ConfigError, match=r"unknown variant 'huge'.*'repro', 'smoke'"):
    config_lib.load("configs/org_forms.py:huge")


def test_shared_predicates_reject_booleans_and_wrong_shapes():
  assert config_lib.is_positive(0.5) and not config_lib.is_positive(True) and not config_lib.is_positive(0)
  assert config_lib.is_non_negative(0) and not config_lib.is_non_negative(-1e-9)
  assert config_lib.is_probability(1) and not config_lib.is_probability(1.01) and not config_lib.is_probability("0.5")
  assert config_lib.int_at_least(2)(2) and not config_lib.int_at_least(2)(2.0) and not config_lib.int_at_least(0)(False)
  assert config_lib.tuple_of(2, config_lib.is_probability)((0.1, 0.9))
  assert not config_lib.tuple_of(2, config_lib.is_probability)((0.1,))
  positives = config_lib.tuple_of(None, config_lib.is_positive)
  assert positives([1, 2, 3]) and not positives(())


def test_differences_read_config_json_as_written():
  smoke = config_lib.load("configs/org_forms.py:smoke", validate=_validate)
  written = json.loads(json.dumps(smoke.to_dict()))       # tuples come back as lists
  assert config_lib.differences(written, smoke) == []
  repro = config_lib.load("configs/org_forms.py:repro", validate=_validate)
  assert config_lib.differences(written, repro) == ["block", "chunk_size", "seeds", "sweep_seeds", "variant"]


def test_derive_sets_dotted_fields_in_a_copy_and_refuses_unknown_ones():
  base = config_lib.load("configs/org_forms.py:smoke", validate=_validate)
  run = config_lib.derive(base, {"seeds": 5, "grid.coord_shares": [0.25, 0.5]})
  assert run.seeds == 5 and run.grid.coord_shares == (0.25, 0.5)
  assert config_lib.differences(base, run) == ["grid.coord_shares", "seeds"]      # the original is untouched
  with pytest.raises(config_lib.ConfigError, match=r"config\.grid\.nope: no such field"):
    config_lib.derive(base, {"grid.nope": 1})
  with pytest.raises(config_lib.ConfigError, match=r"config\.seeds\.inner: no such field"):
    config_lib.derive(base, {"seeds.inner": 1})
  with pytest.raises(config_lib.ConfigError, match=r"config\.seeds: expected int"):
    config_lib.derive(base, {"seeds": "many"})          # a locked config keeps its types


def test_an_unused_extension_field_the_older_config_lacks_is_no_difference():
  now = config_lib.load("configs/latent_pager.py:smoke", validate=_validate)
  older = {k: v for k, v in json.loads(json.dumps(now.to_dict())).items() if k != "imports"}
  assert now.imports == () and config_lib.differences(older, now) == []
  used = config_lib.derive(now, {"imports": ("my_pages",)})
  assert config_lib.differences(older, used) == ["imports"]
