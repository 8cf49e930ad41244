"""The page-encoder registry from a user's side: a module of one's own registers an encoder, a
config names the module in `imports` and the encoder in `pager.encoder`, and the pager's model is
built from the typed spec alone."""

import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

from jaxlab.core.config import ConfigError, load
from jaxlab.paging import encoders, experiment, pretrain
from jaxlab.paging.model import PagerModel
from jaxlab.paging.spec import PagerSpec

SMOKE = "configs/latent_pager.py:smoke"
MODULE = '''
from flax import nnx

from jaxlab.paging import encoders


class FirstTokens(nnx.Module):
  """A chunk's first `slots_per_chunk` token states (the chosen layers side by side) mapped to the LM's width."""

  def __init__(self, spec, d_lm, rngs):
    self.m = spec.slots_per_chunk
    self.proj = nnx.Linear(len(spec.hidden_layers) * d_lm, d_lm, rngs=rngs)

  def __call__(self, states, mask, key=None, embeds=None):
    *lead, c, l, d = states.shape
    return self.proj(states[..., :self.m, :, :].reshape(*lead, self.m, l * d))


encoders.register(encoders.Kind("first_tokens", lambda spec, lm, d_lm, rms, rngs: FirstTokens(spec, d_lm, rngs),
                                fields=("pager.slots_per_chunk", "pages.hidden_layers"),
                                frontier_counts="slots_per_chunk"))
'''


@pytest.fixture
def users_module(tmp_path, monkeypatch):
  (tmp_path / "my_pages.py").write_text(textwrap.dedent(MODULE))
  monkeypatch.syspath_prepend(str(tmp_path))
  monkeypatch.setattr(encoders, "KINDS", dict(encoders.KINDS))    # what the module registers goes with the test
  monkeypatch.delitem(sys.modules, "my_pages", raising=False)
  return "my_pages"


def test_a_users_module_registers_an_encoder_a_config_can_name(users_module):
  with pytest.raises(ConfigError, match=r"config\.pager\.encoder: must be one of .* `imports`"):
    load(SMOKE, ["--config.pager.encoder=first_tokens"], validate=experiment.validate)
  config = load(SMOKE, [f"--config.imports=('{users_module}',)", "--config.pager.encoder=first_tokens",
                        "--config.pager.decoder_lora_rank=0"], validate=experiment.validate)
  spec = PagerSpec.of(config)
  assert spec.encoder == "first_tokens" and hash(spec) == hash(PagerSpec.of(config))
  model = PagerModel(spec, 8, 1.0)
  layers, m = len(spec.hidden_layers), spec.slots_per_chunk
  states = jax.random.normal(jax.random.key(0), (2, 3, spec.chunk_tokens, layers, 8))
  mask = jnp.ones((2, 3, spec.chunk_tokens), bool)
  pages = model.encoder(states, mask)
  assert pages.shape == (2, 3, m, 8)
  soft = model.soft_from_pages(pages, mask.any(-1))           # depth 0: every page is a soft token
  assert soft.shape == (2, 3 * m, 8)


def test_a_module_that_cannot_be_imported_names_the_field():
  with pytest.raises(ConfigError, match=r"config\.imports: cannot import no_such_encoders"):
    load(SMOKE, ["--config.imports=('no_such_encoders',)"], validate=experiment.validate)


# Every variant that starts from a shipped encoder, and the folder it names.
SHIPPED = {"cpu": "latent_pager_pointer", "cpu_slots": "latent_pager_slots",
           "cpu_wordings": "latent_pager_pointer_wordings",
           "cpu_composed": "latent_pager_pointer_composed", "cpu_16x": "latent_pager_pointer_16x",
           "cpu_32x": "latent_pager_pointer_32x", "long_16x_long": "latent_pager_pointer_16x_long",
           "cpu_mean_pretrained": "latent_pager_mean", "long_16x_mean": "latent_pager_mean_16x",
           "cpu_16x_mean": "latent_pager_mean_16x", "long_16x_slots": "latent_pager_slots_16x",
           "cpu_16x_slots": "latent_pager_slots_16x", "long_16x_slots_fresh": "latent_pager_slots_16x",
           "long_16x_mean_fresh": "latent_pager_mean_16x",
           "cpu_32x_slots": "latent_pager_slots_32x", "cpu_32x_mean": "latent_pager_mean_32x",
           "long_16x_slots_long": "latent_pager_slots_16x_long", "long_16x_mean_long": "latent_pager_mean_16x_long",
           "long_32x_long": "latent_pager_pointer_32x_long",
           "long_32x_long_slots": "latent_pager_slots_32x_long",
           "long_32x_long_mean": "latent_pager_mean_32x_long",
           "long_32x_long_mean_fresh": "latent_pager_mean_32x_long",
           "long_16x_mean_long_fresh": "latent_pager_mean_16x_long",
           "long_16x_mean_long_fresh_seed1": "latent_pager_mean_16x_long",
           "long_16x_mean_long_fresh_seed2": "latent_pager_mean_16x_long"}


@pytest.mark.parametrize("variant", sorted(SHIPPED))
def test_every_shipped_encoder_loads_into_the_variant_that_names_it(variant):
  """The same LM (by fingerprint), encoder kind and shape fields as the variant's pager."""
  config = load(f"configs/latent_pager.py:{variant}", [], experiment.validate)
  assert config.pager.init == f"models/{SHIPPED[variant]}"
  state = pretrain.load(config.pager.init, config)
  assert state and all(k[0] in pretrain.PRETRAINED for k in state)
