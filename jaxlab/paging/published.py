"""The published latent-pager figures, as printed (latent-pager.md, "The Results", "Performance by
Task Type", "Training Dynamics"). Keys: (task type, metric) -> (text buffer, latent pager)."""

SYSTEMS = ("text_buffer", "latent_pager")

FIGURES = {
    ("all", "f1"): ("0.0182", "0.0257"),
    ("all", "rouge_l"): ("0.0177", "0.0260"),
    ("all", "hallucination"): ("0.292", "0.580"),
    ("all", "exact_match"): ("0.000", "0.000"),
    ("all", "latency_s"): ("19.55", "7.65"),
    ("all", "peak_memory_gb"): ("1.02", "1.82"),
    ("single_fact", "f1"): ("0.0206", "0.0314"),
    ("single_fact", "rouge_l"): ("0.0210", "0.0323"),
    ("single_fact", "hallucination"): ("0.317", "0.662"),
    ("multi_hop", "f1"): ("0.0155", "0.0195"),
    ("multi_hop", "rouge_l"): ("0.0142", "0.0192"),
    ("multi_hop", "hallucination"): ("0.265", "0.491"),
}
N_TEST = {"all": 500, "single_fact": 260, "multi_hop": 240}

# Answer lengths in words and how often the normalized gold answer occurs in the answer, read from
# the published code's outputs (README "Facts from the published latent-pager code").
FIGURES[("all", "answer_words")] = ("173", "90")
FIGURES[("all", "contains_gold")] = ("0.260", "0.114")

# Training dynamics: epoch -> (train loss, val loss, val F1).
TRAINING = {1: (3.581, 3.102, 0.0238), 2: (3.321, 3.039, 0.0294), 3: (3.332, 3.020, 0.0266),
            4: (3.208, 3.096, 0.0233), 5: (3.166, 3.028, 0.0217), 6: (3.132, 3.034, 0.0183),
            7: (3.106, 3.029, 0.0189), 8: (3.084, 3.022, 0.0200), 9: (3.072, 3.023, 0.0167),
            10: (3.067, 3.025, 0.0191)}
