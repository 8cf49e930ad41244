"""The figures swarm-hidden-gems.md reports (one offline run: 24 seeds, N0 = 40, top 5).

Each entry: our figure name (at the config's main rho) -> (published mean, published sd, seeds).
The spec gives no spreads, so sd is None. Precision is the share of planted gems in the top 5.
"""

SEEDS = 24

FIGURES = {
    "precision/independent/g": (0.708, None, SEEDS),
    "precision/independent/raw": (0.550, None, SEEDS),
    "precision/independent/q": (0.125, None, SEEDS),
    "precision/tally/raw": (0.342, None, SEEDS),
    # "Sealed q and frozen g stayed at precision 0.708" is the independent g figure again (g is frozen
    # before the tally), so it is the by-construction claim in analysis.py, not two more rows.
    "delta/tally": (0.224, None, SEEDS),
    "delta/sorted": (0.175, None, SEEDS),
    # g ranked an obscure-mediocre item above a famous-excellent one in 405 of 600 pairs.
    "pairs_g_share": (405 / 600, None, SEEDS),
}

Q_ONE_OF_ONE = 0.207        # a single five-star
Q_FOURTEEN_OF_TWENTY = 0.481  # n = 20 at positive rate 0.7
PAIRS = (405, 600)
