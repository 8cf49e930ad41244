"""A frozen causal LM for the latent-paging experiment: the Qwen3 decoder, Hugging Face
checkpoint loading, generation with a KV cache, and the checkpoint's tokenizer."""
