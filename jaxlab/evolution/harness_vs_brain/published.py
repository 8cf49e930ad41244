"""The figures evolution-harness-vs-brain.md reports (8 seeds), keyed by our summary's names, as printed."""

SEEDS = 8

FIGURES = {
    "model_first/K=1/elite_fitness": ("0.148", "0.025", SEEDS),
    "model_first/K=2/elite_fitness": ("0.320", "0.025", SEEDS),
    "model_first/K=4/elite_fitness": ("0.596", "0.083", SEEDS),
    "model_first/K=8/elite_fitness": ("0.697", "0.017", SEEDS),
    "harness_first/K=1/elite_fitness": ("0.616", "0.051", SEEDS),
    "harness_first/K=2/elite_fitness": ("0.522", "0.140", SEEDS),
    "harness_first/K=4/elite_fitness": ("0.573", "0.104", SEEDS),
    "harness_first/K=8/elite_fitness": ("0.591", "0.105", SEEDS),
    "harness_first/K=8/deceptive": ("0.981", "0.182", SEEDS),
    "brain_directed/K=8/deceptive": ("0.677", "0.189", SEEDS),
    "harness_first/K=8/key_retention": ("0.375", None, SEEDS),
    "brain_directed/K=8/key_retention": ("0.000", None, SEEDS),
    "harness_first/K=1/deceptive": ("0.941", None, SEEDS),
    "brain_directed/K=1/deceptive": ("0.581", None, SEEDS),
    "coevolution/K=1/elite_fitness": ("0.664", None, SEEDS),
    "coevolution/K=8/elite_fitness": ("0.685", None, SEEDS),
    "conservative/K=1/elite_fitness": ("0.556", None, SEEDS),
    "conservative/K=8/elite_fitness": ("0.660", None, SEEDS),
    "coevolution/K=8/turnover": ("0.122", None, SEEDS),
    "conservative/K=8/turnover": ("0.079", None, SEEDS),
    "coevolution/K=1/turnover": ("0.099", None, SEEDS),
    "conservative/K=1/turnover": ("0.067", None, SEEDS),
}
