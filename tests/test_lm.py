"""jaxlab.lm against Hugging Face transformers (PyTorch, CPU) on tiny random Qwen3 models."""

import json
import re
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
import torch
import transformers
from flax import nnx
from jax.sharding import PartitionSpec as P

from jaxlab.lm import checkpoint_io, qwen3, tokenizer
from jaxlab.lm.generate import generate, penalize_repeats
from jaxlab.lm.qwen3 import add_lora, forward

PAD = 5  # every prompt starts with this token: see _prompts


def _save_hf(folder, tie: bool, shard: bool):
  torch.manual_seed(0 if tie else 1)
  cfg = transformers.Qwen3Config(
      vocab_size=128, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=128,
      rope_parameters={"rope_type": "default", "rope_theta": 5000.0}, tie_word_embeddings=tie,
      initializer_range=0.2, pad_token_id=PAD, eos_token_id=None, bos_token_id=None)
  model = transformers.Qwen3ForCausalLM(cfg).eval()
  model.config._attn_implementation = "eager"
  with torch.no_grad():  # norm weights start at one, which would hide a q_norm/k_norm mix-up
    for name, p in model.named_parameters():
      if "norm" in name:
        p.copy_(1 + 0.3 * torch.randn_like(p))
  model.save_pretrained(folder, max_shard_size="100KB" if shard else "1GB")
  return model


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
  folder = tmp_path_factory.mktemp("tied")
  return _save_hf(folder, tie=True, shard=False), checkpoint_io.load(folder), folder


@pytest.fixture(scope="module")
def untied(tmp_path_factory):
  folder = tmp_path_factory.mktemp("untied")
  hf = _save_hf(folder, tie=False, shard=True)
  assert (folder / "model.safetensors.index.json").is_file()
  return hf, checkpoint_io.load(folder), folder


# The HF comparisons run on both models; the other tests on the tied one, as each model's
# generation loop compiles on its own.
both = pytest.mark.parametrize("name", ["tied", "untied"])


def _prompts():
  """Three left-padded prompts. Each starts with PAD, so Hugging Face's repetition penalty, which
  also counts the pad ids of left padding, penalizes the same tokens as jaxlab's."""
  rng = np.random.default_rng(0)
  ids = np.full((3, 9), PAD, np.int64)
  mask = np.zeros((3, 9), np.int64)
  for row, n in enumerate([9, 6, 3]):
    ids[row, -n:] = np.concatenate([[PAD], rng.integers(0, 128, n - 1)])
    mask[row, -n:] = 1
  return ids, mask


@both
def test_logits_and_every_hidden_state_match_transformers(name, request):
  hf, model, _ = request.getfixturevalue(name)
  ids, mask = _prompts()
  with torch.no_grad():
    positions = (torch.tensor(mask).cumsum(-1) - 1).clamp(min=0)
    ref = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), position_ids=positions,
             output_hidden_states=True)
  n = len(ref.hidden_states)
  logits, states = forward(model, jnp.asarray(ids), jnp.asarray(mask), hidden_layers=(*range(n), -1))
  real = mask.astype(bool)
  np.testing.assert_allclose(np.asarray(logits)[real], ref.logits.numpy()[real], atol=1e-4, rtol=0)
  for i in range(n):
    np.testing.assert_allclose(np.asarray(states[i])[real], ref.hidden_states[i].numpy()[real],
                               atol=1e-4, rtol=0, err_msg=f"hidden state {i}")
  np.testing.assert_array_equal(states[-1], states[n - 1])
  by_embeds, _ = forward(model, inputs_embeds=model.embed(jnp.asarray(ids)), attention_mask=jnp.asarray(mask))
  np.testing.assert_allclose(np.asarray(by_embeds)[real], np.asarray(logits)[real], atol=1e-6)


def _hf_generate(hf, ids, mask, eos=None):
  out = hf.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=20,
                    do_sample=False, repetition_penalty=1.3, pad_token_id=PAD, eos_token_id=eos)
  new = out[:, ids.shape[1]:].numpy()
  return np.pad(new, ((0, 0), (0, 20 - new.shape[1])), constant_values=PAD)


@both
def test_greedy_generation_with_repetition_penalty_matches_transformers(name, request):
  hf, model, _ = request.getfixturevalue(name)
  ids, mask = _prompts()
  expected = _hf_generate(hf, ids, mask)
  ours = generate(model, ids, mask, max_new_tokens=20, repetition_penalty=1.3, pad_id=PAD)
  np.testing.assert_array_equal(np.asarray(ours), expected)
  unpenalized = generate(model, ids, mask, max_new_tokens=20, pad_id=PAD)
  assert (np.asarray(unpenalized) != expected).any()  # the penalty changes these outputs
  # EOS: a token row 0 emits mid-way stops each row at its first occurrence, then pads.
  eos = int(expected[0, 7])
  stopped = _hf_generate(hf, ids, mask, eos=eos)
  ours = generate(model, ids, mask, max_new_tokens=20, repetition_penalty=1.3, pad_id=PAD, eos_id=eos)
  np.testing.assert_array_equal(np.asarray(ours), stopped)
  assert (stopped[0, 8:] == PAD).all()


def test_generation_scores_are_the_answer_log_probability_and_the_prompt_state(tied):
  """`return_scores`: the same tokens; their log-probability under Hugging Face's raw logits
  (before the penalty, up to and including EOS); the prompt's last final-norm state."""
  hf, model, _ = tied
  ids, mask = _prompts()
  eos = int(_hf_generate(hf, ids, mask)[0, 7])
  with torch.no_grad():
    ref = hf.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=20,
                      do_sample=False, repetition_penalty=1.3, pad_token_id=PAD, eos_token_id=eos,
                      output_logits=True, return_dict_in_generate=True)
    positions = (torch.tensor(mask).cumsum(-1) - 1).clamp(min=0)
    last = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), position_ids=positions,
              output_hidden_states=True).hidden_states[-1][:, -1].numpy()
  new = ref.sequences[:, ids.shape[1]:].numpy()
  logp = torch.stack(ref.logits, 1).log_softmax(-1).numpy()
  want = []
  for row in range(len(ids)):
    n = list(new[row]).index(eos) + 1 if eos in new[row] else new.shape[1]
    want.append(sum(logp[row, t, new[row, t]] for t in range(n)))
  assert eos in new[0] and eos not in new[2]  # one row stops early, one runs to the budget
  got = generate(model, ids, mask, max_new_tokens=20, repetition_penalty=1.3, pad_id=PAD, eos_id=eos,
                 return_scores=True)
  plain = generate(model, ids, mask, max_new_tokens=20, repetition_penalty=1.3, pad_id=PAD, eos_id=eos)
  np.testing.assert_array_equal(np.asarray(got.tokens), np.asarray(plain))
  np.testing.assert_array_equal(np.asarray(got.tokens)[:, :new.shape[1]], new)
  np.testing.assert_allclose(np.asarray(got.logprob), want, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(np.asarray(got.last_state), last, atol=1e-4, rtol=0)


def test_repetition_penalty_is_hugging_faces():
  logits = np.random.default_rng(1).normal(size=(2, 16)).astype(np.float32)
  seen_ids = np.array([[0, 3, 3, 9], [1, 2, 15, 4]])
  seen = np.zeros((2, 16), bool)
  np.put_along_axis(seen, seen_ids, True, axis=1)
  processor = transformers.RepetitionPenaltyLogitsProcessor(penalty=1.3)
  expected = processor(torch.tensor(seen_ids), torch.tensor(logits)).numpy()
  np.testing.assert_allclose(penalize_repeats(logits, seen, 1.3), expected, rtol=1e-6)


def test_soft_token_prefix_equals_the_tokens_it_embeds(tied):
  _, model, _ = tied
  ids, mask = _prompts()
  head = np.array([[7, 8, 9, 10]] * 3)
  as_tokens = generate(model, np.concatenate([head, ids], 1), np.concatenate([np.ones_like(head), mask], 1),
                       max_new_tokens=20, pad_id=PAD)
  as_prefix = generate(model, ids, mask, prefix_embeds=model.embed(jnp.asarray(head)), max_new_tokens=20,
                       pad_id=PAD)
  np.testing.assert_array_equal(np.asarray(as_prefix), np.asarray(as_tokens))


def test_sampling_narrowed_to_one_token_is_greedy(tied):
  _, model, _ = tied
  ids, mask = _prompts()
  greedy = np.asarray(generate(model, ids, mask, max_new_tokens=20))
  key = jax.random.key(3)
  top_k = generate(model, ids, mask, max_new_tokens=20, greedy=False, top_k=1, temperature=0.7, key=key)
  top_p = generate(model, ids, mask, max_new_tokens=20, greedy=False, top_p=1e-6, key=key)
  np.testing.assert_array_equal(np.asarray(top_k), greedy)
  np.testing.assert_array_equal(np.asarray(top_p), greedy)
  hot = generate(model, ids, mask, max_new_tokens=20, greedy=False, temperature=5.0, key=key)
  assert (np.asarray(hot) != greedy).any()


def test_sharded_load_keeps_the_checkpoint_dtype_and_places_slices(tied, tmp_path):
  hf, model, folder = tied
  hf.to(torch.bfloat16).save_pretrained(tmp_path)
  hf.to(torch.float32)
  half = checkpoint_io.load(tmp_path)   # no dtype given: the file's bf16 stays bf16
  weight = half.model.layers.self_attn.q_proj.kernel[...]
  assert weight.dtype == jnp.bfloat16 and model.dtype == jnp.float32
  # FSDP over all 8 devices by default: each device holds 1/8 of the matrix.
  assert weight.sharding.spec == P(None, "fsdp", "tensor") and not weight.sharding.is_fully_replicated
  assert weight.addressable_shards[0].data.shape == (2, 8, 64)
  ids, mask = _prompts()
  full, _ = forward(model, jnp.asarray(ids), jnp.asarray(mask))
  low, _ = forward(half, jnp.asarray(ids), jnp.asarray(mask))
  real = mask.astype(bool)
  np.testing.assert_allclose(np.asarray(low, np.float32)[real], np.asarray(full)[real], atol=0.3)
  converted = checkpoint_io.load(tmp_path, dtype=jnp.float32)
  assert converted.model.layers.self_attn.q_proj.kernel[...].dtype == jnp.float32


def _copy_config(src, dst, **changes):
  dst.mkdir()
  config = json.loads((src / "config.json").read_text())
  (dst / "config.json").write_text(json.dumps({**config, **changes}))


def test_clear_errors(tied, tmp_path):
  _, _, folder = tied
  with pytest.raises(ValueError, match="config.json: no such file"):
    checkpoint_io.load(tmp_path)
  _copy_config(folder, tmp_path / "llama", model_type="llama", architectures=["LlamaForCausalLM"])
  with pytest.raises(ValueError, match="unsupported architecture.*llama"):
    checkpoint_io.load(tmp_path / "llama")
  _copy_config(folder, tmp_path / "empty")
  with pytest.raises(ValueError, match="model.safetensors"):
    checkpoint_io.load(tmp_path / "empty")
  _copy_config(folder, tmp_path / "wide", vocab_size=130)
  for f in folder.glob("model*.safetensors*"):
    shutil.copy(f, tmp_path / "wide")
  with pytest.raises(ValueError, match=r"tensor \S+ has shape \(128, 64\) but the config needs \(130, 64\)"):
    checkpoint_io.load(tmp_path / "wide")


def _folder_with(folder, dst, safetensors: bytes | None = None, config: str | None = None):
  dst.mkdir()
  (dst / "config.json").write_text(config if config is not None else (folder / "config.json").read_text())
  (dst / "model.safetensors").write_bytes(
      safetensors if safetensors is not None else (folder / "model.safetensors").read_bytes())
  return dst


@pytest.mark.parametrize("case, problem", [
    ("empty", "the file is empty"),
    ("cut_in_header", "ends inside its header"),
    ("truncated", "truncated"),
])
def test_sharded_load_names_a_damaged_safetensors_file(tied, tmp_path, case, problem):
  _, _, folder = tied
  data = (folder / "model.safetensors").read_bytes()
  damaged = {"empty": b"", "cut_in_header": data[:40], "truncated": data[:-100]}[case]
  bad = _folder_with(folder, tmp_path / case, safetensors=damaged)
  with pytest.raises(ValueError, match=re.escape(str(bad / "model.safetensors")) + ": .*" + problem):
    checkpoint_io.load(bad)


@pytest.mark.parametrize("case, problem", [
    ("not_json", "not valid JSON"),
    ("missing_keys", "missing required field.*hidden_size.*num_hidden_layers"),
])
def test_sharded_load_names_an_invalid_config(tied, tmp_path, case, problem):
  _, _, folder = tied
  hf = json.loads((folder / "config.json").read_text())
  text = {"not_json": (folder / "config.json").read_text()[:-20],
          "missing_keys": json.dumps({k: v for k, v in hf.items() if k not in ("hidden_size", "num_hidden_layers")})}
  bad = _folder_with(folder, tmp_path / case, config=text[case])
  with pytest.raises(ValueError, match=re.escape(str(bad / "config.json")) + ": " + problem):
    checkpoint_io.load(bad)


def test_generation_stops_at_the_checkpoints_eos_ids_by_default(tied, tmp_path):
  hf, model, folder = tied
  ids, mask = _prompts()
  free = np.asarray(generate(model, ids, mask, max_new_tokens=20, pad_id=PAD))
  # Two EOS ids, as a list in generation_config.json (which Hugging Face prefers to config.json).
  eos = [int(free[0, 5]), int(free[1, 9])]
  stopping = tmp_path / "eos"
  stopping.mkdir()
  for f in folder.iterdir():
    shutil.copy(f, stopping)
  (stopping / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))
  with_eos = checkpoint_io.load(stopping)
  assert with_eos.cfg.eos_token_ids == tuple(eos)
  ours = np.asarray(generate(with_eos, ids, mask, max_new_tokens=20, pad_id=PAD))
  expected = hf.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=20,
                         do_sample=False, pad_token_id=PAD, eos_token_id=eos)[:, ids.shape[1]:].numpy()
  np.testing.assert_array_equal(ours[:, :expected.shape[1]], expected)
  assert (ours[0, 6:] == PAD).all() and (ours[:, expected.shape[1]:] == PAD).all()
  # eos_id=() switches stopping off.
  np.testing.assert_array_equal(np.asarray(generate(with_eos, ids, mask, max_new_tokens=20, pad_id=PAD, eos_id=())),
                                free)


def test_begin_suppress_matches_transformers_begin_suppress_tokens(tied):
  """No row starts with a suppressed id; the rest follows, as Hugging Face's
  `begin_suppress_tokens`; the log-probability still reads the model's own distribution."""
  hf, model, _ = tied
  ids, mask = _prompts()
  free = generate(model, ids, mask, max_new_tokens=12, repetition_penalty=1.3, pad_id=PAD, return_scores=True)
  firsts = sorted({int(t) for t in np.asarray(free.tokens)[:, 0]})
  got = generate(model, ids, mask, max_new_tokens=12, repetition_penalty=1.3, pad_id=PAD, return_scores=True,
                 begin_suppress=firsts)
  with torch.no_grad():
    ref = hf.generate(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), max_new_tokens=12,
                      do_sample=False, repetition_penalty=1.3, pad_token_id=PAD, begin_suppress_tokens=firsts)
  new = ref[:, ids.shape[1]:].numpy()
  tokens = np.asarray(got.tokens)
  np.testing.assert_array_equal(tokens[:, :new.shape[1]], new)
  assert not np.isin(tokens[:, 0], firsts).any() and (tokens[:, 1:] != np.asarray(free.tokens)[:, 1:]).any()
  # Each row's first token as chosen without suppression: the unsuppressed run's.
  np.testing.assert_array_equal(np.asarray(got.first), np.asarray(free.tokens)[:, 0])
  np.testing.assert_array_equal(np.asarray(free.first), np.asarray(free.tokens)[:, 0])
  # The answer's log-probability teacher forced after its prompt: the model's own, unsuppressed.
  full = np.concatenate([ids, tokens], axis=1)
  logits, _ = forward(model, full, np.concatenate([mask, np.ones_like(tokens)], axis=1))
  logp = jax.nn.log_softmax(np.asarray(logits, np.float32)[:, ids.shape[1] - 1:-1], axis=-1)
  want = np.take_along_axis(np.asarray(logp), tokens[..., None], axis=-1)[..., 0].sum(axis=1)
  np.testing.assert_allclose(np.asarray(got.logprob), want, rtol=1e-4, atol=1e-4)


def test_generation_refuses_right_padding_and_sampling_without_a_key(tied):
  _, model, _ = tied
  ids, mask = _prompts()
  right = np.stack([np.roll(m, -int((~m.astype(bool)).sum())) for m in mask])
  with pytest.raises(ValueError, match=r"rows \[1, 2\] end in padding.*left padded"):
    generate(model, ids, right, max_new_tokens=4)
  with pytest.raises(ValueError, match="needs an explicit key"):
    generate(model, ids, mask, max_new_tokens=4, greedy=False)


def test_lora_starts_at_the_base_model_and_trains_apart_from_it(tied):
  _, _, folder = tied
  model = checkpoint_io.load(folder)
  ids, mask = jnp.asarray(_prompts()[0]), jnp.asarray(_prompts()[1])
  base, _ = forward(model, ids, mask)
  add_lora(model, 4, jax.random.key(0))
  lora_a = model.model.layers.self_attn.lora.q_proj.lora_a
  assert isinstance(lora_a, nnx.LoRAParam) and lora_a.shape == (2, 64, 4)   # stacked over the 2 layers
  np.testing.assert_array_equal(forward(model, ids, mask)[0], base)          # B starts at zero
  graphdef, adapters, rest = nnx.split(model, nnx.LoRAParam, ...)
  frozen = [np.asarray(x) for x in jax.tree.leaves(rest)]

  @jax.jit
  def grads(adapters, rest):
    def loss(adapters):
      logits, _ = nnx.merge(graphdef, adapters, rest)(ids, mask)
      return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], ids[:, 1:]))
    return jax.grad(loss)(adapters)

  adapters = jax.tree.map(lambda p, g: p - 0.5 * g, adapters, grads(adapters, rest))
  nnx.update(model, adapters)
  for a, b in zip(jax.tree.leaves(nnx.state(model, qwen3.BASE)), frozen, strict=True):
    np.testing.assert_array_equal(np.asarray(a), b)
  assert np.abs(np.asarray(forward(model, ids, mask)[0]) - np.asarray(base)).max() > 1e-3
  np.testing.assert_array_equal(forward(model, ids, mask, lora=False)[0], base)   # the same object, no adapters


def test_remat_policies_give_the_same_gradients():
  cfg = qwen3.Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=8, rms_norm_eps=1e-6,
                          rope_theta=1e4, tie_word_embeddings=True)
  ids = jnp.asarray(np.random.default_rng(0).integers(0, 64, (2, 10)))
  grads = {}
  for remat in ("none", "full", "dots"):
    graphdef, params = nnx.split(qwen3.Qwen3(cfg, remat=remat, rngs=nnx.Rngs(0)))

    def loss(params):
      logits, _ = nnx.merge(graphdef, params)(ids)
      return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], ids[:, 1:]))

    grads[remat] = jax.tree.leaves(jax.jit(jax.grad(loss))(params))
  for remat in ("full", "dots"):
    for a, b in zip(grads[remat], grads["none"], strict=True):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)   # recomputation reorders float sums
  with pytest.raises(ValueError, match="remat='some'"):
    qwen3.Qwen3(cfg, remat="some", rngs=nnx.Rngs(0))


def test_tokenizer_left_pads_and_cuts_at_eos(tmp_path):
  from tokenizers import Tokenizer, models, pre_tokenizers
  vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "the", "cat", "sat"])}
  tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
  tok.pre_tokenizer = pre_tokenizers.Whitespace()
  tok.save(str(tmp_path / "tokenizer.json"))
  loaded = tokenizer.load_tokenizer(tmp_path)
  ids, mask = tokenizer.encode_batch(loaded, ["the cat sat", "cat"], pad_id=0)
  np.testing.assert_array_equal(ids, [[2, 3, 4], [0, 0, 3]])
  np.testing.assert_array_equal(mask, [[True] * 3, [False, False, True]])
  texts = tokenizer.decode_batch(loaded, np.array([[3, 4, 1, 2], [2, 2, 2, 2]]), eos_id=1)
  assert texts == ["cat sat", "the the the the"]
  with pytest.raises(ValueError, match="tokenizer.json: no such file"):
    tokenizer.load_tokenizer(tmp_path / "nowhere")
