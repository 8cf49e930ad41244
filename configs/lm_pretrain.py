"""A small Qwen3-architecture base model trained from scratch on the pretrain corpus (issue 7).

  jaxlab run configs/lm_pretrain.py:smoke --workdir checkpoints/lm_pretrain_smoke   # seconds
  jaxlab run configs/lm_pretrain.py:cpu --workdir checkpoints/lm_pretrain_cpu       # the 2-core recipe
  jaxlab run configs/lm_pretrain.py:gpu --workdir checkpoints/lm_pretrain_gpu       # an accelerator
  jaxlab run configs/lm_pretrain.py:cpu --workdir DIR --config.stop_after=500       # a job time limit

A run resumes from the Orbax checkpoint in its workdir. It exports the model to DIR/hf (config.json,
model.safetensors, tokenizer.json) and writes in-window exact match on held-out questions to
DIR/summary.json and DIR/report.md. `repro` is the CPU recipe.

The recipe follows the issue's measured starting point (a 2,000-token BPE model at context 512 was
near 1% exact match after 15 minutes on 2 cores): a word-level vocabulary of the generated world
(about a thousand words), windows of 96 words (about 130-250 tokens with punctuation) in sequences
of 256 tokens, and a small model. No curriculum: every example is already short.
"""

import ml_collections

from jaxlab.core.config import select


def cpu():
  c = ml_collections.ConfigDict()
  c.experiment = "lm_pretrain"
  c.seed = 0
  c.steps = 3000
  c.batch_size = 32              # a multiple of the device count: rows are sharded over the mesh
  c.checkpoint_every = 250
  c.log_every = 25
  c.stop_after = 0               # end this call after so many steps (0: run to the end)
  c.optim = ml_collections.ConfigDict(dict(
      learning_rate=2e-3, warmup_steps=200, weight_decay=0.1, clip_norm=1.0, init_std=0.02))
  c.data = ml_collections.ConfigDict(dict(
      num_train=24_000, window_tokens=96, seq_len=256, distractor_ratio=0.5,
      kinds=("document", "qa", "extract")))
  c.model = ml_collections.ConfigDict(dict(
      hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
      num_key_value_heads=2, head_dim=32, rope_theta=10000.0, tie_word_embeddings=True))
  c.eval = ml_collections.ConfigDict(dict(num_questions=200, batch_size=50, max_new_tokens=8))
  return c


def gpu():
  c = cpu()
  c.steps = 6000
  c.batch_size = 128
  c.checkpoint_every = 500
  c.data.num_train = 60_000
  c.model.update(dict(hidden_size=256, intermediate_size=768, num_hidden_layers=6, num_attention_heads=8,
                      num_key_value_heads=4))
  c.eval.num_questions = 500
  c.eval.batch_size = 100
  return c


def smoke():
  c = cpu()
  c.steps = 40
  c.batch_size = 16
  c.checkpoint_every = 20
  c.log_every = 5
  c.optim.learning_rate = 1e-2
  c.optim.warmup_steps = 5
  c.data.num_train = 160
  c.data.window_tokens = 32
  c.data.seq_len = 128
  c.model.update(dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=8))
  c.eval.update(dict(num_questions=8, batch_size=8, max_new_tokens=6))
  return c


def get_config(arg=""):
  return select(arg, {"cpu": cpu, "repro": cpu, "gpu": gpu, "smoke": smoke})
