"""The Qwen3 decoder family (scanned layers, sharded by logical axis names, optional LoRA),
sharded Hugging Face checkpoint loading, generation with a KV cache, and the checkpoint's
tokenizer. The pretraining of our small base model is an experiment of its own (`jaxlab.lm_pretrain`)."""
