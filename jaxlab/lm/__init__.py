"""The Qwen3 decoder family (scanned layers, sharded by logical axis names, optional LoRA),
sharded Hugging Face checkpoint loading, generation with a KV cache, the checkpoint's tokenizer,
and the pretraining of a small base model on the training mesh."""
