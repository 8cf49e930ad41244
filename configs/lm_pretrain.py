"""A small Qwen3-architecture base model trained from scratch on the pretrain corpus.

  jaxlab run configs/lm_pretrain.py:smoke --workdir checkpoints/lm_pretrain_smoke   # seconds
  jaxlab run configs/lm_pretrain.py:cpu --workdir checkpoints/lm_pretrain_cpu       # the 2-core recipe
  jaxlab run configs/lm_pretrain.py:gpu --workdir checkpoints/lm_pretrain_gpu       # accelerators (FSDP)
  jaxlab run configs/lm_pretrain.py:wordings --workdir DIR      # `cpu`, questions in three wordings
  jaxlab run configs/lm_pretrain.py:composed --workdir DIR      # `cpu`, questions in fifteen wordings
  jaxlab run configs/lm_pretrain.py:cpu --workdir DIR --config.stop_after=500       # a job time limit
  srun jaxlab run configs/lm_pretrain.py:gpu --workdir /shared/DIR --distributed    # several hosts:
                                                               # launch/slurm_example.sh, docs/scaling.md

A run resumes from the Orbax checkpoint in its workdir. It exports the model to DIR/hf (config.json,
model.safetensors, tokenizer.json) and writes in-window exact match on held-out questions
(validation and test) to DIR/summary.json and DIR/report.md. `cpu` (= `repro`) is the recipe of the
committed model in models/lm_base/.

The recipe is sized for 2 CPU cores: a word-level vocabulary of the generated world (about a
thousand words), rows packed with several questions per window, the loss on answers emphasised, and
a curriculum of short windows in short rows first, then windows that fill the 256-token context.
"""

import ml_collections

from jaxlab.core.config import select


def cpu():
  c = ml_collections.ConfigDict()
  c.experiment = "lm_pretrain"
  c.seed = 0
  c.steps = 6000
  c.batch_size = 16              # a multiple of data x fsdp: rows are split over them
  # The training mesh (jaxlab.core.mesh.training_mesh; -1: the devices left). Data parallel here,
  # as the committed model was trained: params and optimizer state replicated, rows split.
  c.mesh = ml_collections.ConfigDict(dict(data=-1, fsdp=1, tensor=1))
  c.checkpoint_every = 250
  c.log_every = 25
  c.stop_after = 0               # end this call after so many steps (0: run to the end)
  c.optim = ml_collections.ConfigDict(dict(
      learning_rate=5e-3, warmup_steps=200, weight_decay=0.1, clip_norm=1.0, init_std=0.02, qk_norm_init=1.5))
  c.data = ml_collections.ConfigDict(dict(
      num_train=30_000,
      # (share of the steps, seq_len, fewest words per window, most words per window)
      stages=((0.4, 64, 8, 28), (0.4, 128, 24, 72), (0.2, 256, 64, 160)),
      kinds=("qa", "fact_qa", "qa", "extract", "qa", "fact_qa"),   # cycled: 1/2 qa, 1/3 fact_qa, 1/6 extract
      questions_per_window=6, context_loss_weight=0.3, distractor_ratio=0.5,
      train_wordings=1))        # training questions worded by the first k of lexicon.TRAINING_WORDINGS
  c.model = ml_collections.ConfigDict(dict(
      hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
      num_key_value_heads=2, head_dim=32, rope_theta=10000.0, tie_word_embeddings=True,
      remat="none"))   # "full" or "dots": recompute each layer in the backward pass (jax.checkpoint_policies)
  c.eval = ml_collections.ConfigDict(dict(
      window_tokens=96, num_questions=400, num_during=100, every=500, batch_size=50, max_new_tokens=8))
  return c


def gpu():
  c = cpu()
  c.steps = 6000
  c.batch_size = 64
  c.checkpoint_every = 500
  # FSDP over every device of every host: each holds 1/N of every matrix and of its Adam moments.
  c.mesh.update(dict(data=1, fsdp=-1, tensor=1))
  c.data.num_train = 120_000
  c.model.update(dict(hidden_size=256, intermediate_size=768, num_hidden_layers=6, num_attention_heads=8,
                      num_key_value_heads=4))
  c.eval.update(dict(num_questions=500, num_during=200, every=500, batch_size=100))
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
  c.data.stages = ((0.5, 64, 16, 24), (0.5, 128, 24, 48))
  c.data.questions_per_window = 3
  c.model.update(dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=8))
  c.eval.update(dict(window_tokens=32, num_questions=8, num_during=8, every=0, batch_size=8, max_new_tokens=6))
  return c


def wordings():
  """`cpu` whose training questions are worded by all three training wordings (drawn per
  question; the same windows, questions and answers): what a reworded question costs the base model
  is measured on the held-out wording beside the canonical one."""
  c = cpu()
  c.data.train_wordings = 3
  return c


def composed():
  """`cpu` whose training questions are worded by the three hand-written wordings and the twelve
  composed ones (a frame around nested phrases, `lexicon.COMPOSED_WORDINGS`), drawn per question:
  whether many sentence shapes per relation teach the relation well enough that the held-out
  wording costs little."""
  c = cpu()
  c.data.train_wordings = 15
  return c


def get_config(arg=""):
  return select(arg, {"cpu": cpu, "repro": cpu, "gpu": gpu, "smoke": smoke, "wordings": wordings,
                      "composed": composed})
