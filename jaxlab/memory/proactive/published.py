"""The results table of proactive-memory-value.md: one planted day, so no sd and n = 1.

policy -> {metric: published value, as the spec prints it (its rounding counts as agreement in
`core.report.compare`)}; metric names are the keys `sim.METRICS` uses.
"""

FIGURES = {
    "full": {"precision": "0.53", "recall": "0.50", "accept_rate": "0.27", "spam_per_day": "5.0",
             "quiet_violations": "0", "ttu_h": "2.4"},
    "no_osc": {"precision": "0.40", "recall": "0.40", "accept_rate": "0.13", "spam_per_day": "5.0",
               "quiet_violations": "0", "ttu_h": "8.0"},
}
LABELS = {"full": "Full (osc + fatigue + hysteresis)", "no_osc": "No oscillation",
          "learned": "Learned oscillation"}
