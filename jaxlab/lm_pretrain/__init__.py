"""Pretraining a small Qwen3-architecture base model (the latent pager's frozen LM): data.py the
rows, tokenizer and curriculum; train.py the model, optimizer and step on the core training loop;
evaluation.py exact match and the report; experiment.py ties them to `jaxlab run`."""

from jaxlab.lm_pretrain.experiment import report, run, validate

__all__ = ["report", "run", "validate"]
