"""The figures swarm-org-forms.md reports, keyed by the names our summary uses.

Each entry: our figure name -> (published mean, published sample sd, seeds behind it), the numbers
kept as the spec prints them so their rounding is known. Names are `study/.../metric`; `a-b` names
are paired differences over seeds.
"""

MAIN, SWEEP = 30, 10
SLICE = "spec=0.5/comm=0.1"

FIGURES = {
    # The plotted slice: modules, specialist share 0.5, communicator share 0.1.
    f"main/modules/coord=0/{SLICE}/cum_revenue": ("97.8542", "5.7335", MAIN),
    f"main/modules/coord=0.0625/{SLICE}/cum_revenue": ("100.4960", "6.4454", MAIN),
    f"main/modules/coord=0.125/{SLICE}/cum_revenue": ("96.6813", "8.1965", MAIN),
    f"main/modules/coord=0.25/{SLICE}/cum_revenue": ("104.4592", "6.8621", MAIN),
    f"main/modules/coord=0.5/{SLICE}/cum_revenue": ("108.9716", "10.2031", MAIN),
    f"main/modules/coord=0/{SLICE}/cum_discovery_high": ("4.4015", "1.6868", MAIN),
    f"main/modules/coord=0.0625/{SLICE}/cum_revenue_high": ("46.5997", "3.0175", MAIN),
    f"main/isolated/coord=0.5/{SLICE}/cum_revenue": ("161.2728", "12.5979", MAIN),
    f"main/flat/coord=0/{SLICE}/cum_revenue": ("138.3262", "7.9943", MAIN),
    f"main/flat/coord=0.5/{SLICE}/cum_revenue": ("110.0627", "7.9821", MAIN),
    f"main/flat/coord=0/{SLICE}/mean_effort": ("0.9370", "2.5651e-03", MAIN),
    f"main/flat/coord=0.5/{SLICE}/mean_effort": ("0.9714", "1.7608e-03", MAIN),
    f"main/flat/coord=0/{SLICE}/mean_coord_loss": ("0.6311", "1.1292e-16", MAIN),
    f"main/flat/coord=0.5/{SLICE}/mean_coord_loss": ("0.6090", "3.2049e-04", MAIN),
    # The largest within-run median idle share over all 2,700 main-grid runs (no spread: one maximum).
    "main/max_idle_median": ("0.2500", None, None),
    # The modules grid's winners.
    "main/modules/coord=0.5/spec=0.75/comm=0.1/cum_revenue": ("113.8151", "12.0336", MAIN),
    "main/modules/coord=0.5/spec=0.75/comm=0.1/cum_discovery": ("8.8004", "3.8421", MAIN),
    "main/modules/coord=0.25/spec=0.75/comm=0/cum_discovery": ("36.7658", "9.7684", MAIN),
    "main/modules/coord=0.25/spec=0.75/comm=0/cum_revenue": ("30.2240", "9.9102", MAIN),
    # The communicator switch at coordinator share 0.125, specialist share 0.5.
    "main/modules/coord=0.125/spec=0.5/comm=0/cum_revenue": ("30.9024", "6.1504", MAIN),
    "main/modules/coord=0.125/spec=0.5/comm=0.1/cum_discovery": ("8.4622", "2.6666", MAIN),
    "main/modules/coord=0.125/spec=0.5/comm=0/cum_discovery": ("26.7826", "6.9304", MAIN),
    "main/modules/coord=0.125/spec=0.5/comm=0.1/agree_pre": ("0.9575", "8.2146e-03", MAIN),
    "main/modules/coord=0.125/spec=0.5/comm=0/agree_pre": ("0.3046", "0.0575", MAIN),
    "main/modules/coord=0.125/spec=0.5/comm=0.1/agree_post": ("0.8293", "0.0541", MAIN),
    "main/modules/coord=0.125/spec=0.5/comm=0/agree_post": ("0.4639", "0.1381", MAIN),
    # Promotion, paired on seeds, beta1 = -1.
    "promotion/winner/peter-match/post_revenue": ("-0.6957", "2.0907", MAIN),
    "promotion/winner/peter-match/post_output": ("-0.0443", "0.0425", MAIN),
    "promotion/reference/peter-match/post_revenue": ("-0.6279", "0.8513", MAIN),
    "promotion/reference/peter-match/post_output": ("-0.0355", "8.4937e-03", MAIN),
    "promotion/winner/tournament-peter/post_output": ("0.0508", "0.0265", MAIN),
    "promotion/reference/tournament-peter/post_output": ("0.0490", "6.6503e-03", MAIN),
    "promotion/winner/tournament-peter/post_coord_loss": ("0.0180", "0.0173", MAIN),
    "promotion/reference/tournament-peter/post_coord_loss": ("6.6024e-03", "1.0691e-03", MAIN),
    "promotion/winner/peter-none/post_revenue": ("0.6377", "1.7219", MAIN),
    "promotion/winner/peter-none/post_discovery": ("-1.3867", "3.2789", MAIN),
    # Sweeps, 10 seeds.
    "alpha_gamma/alpha=0.5/gamma=-0.14/coord=0.0625/cum_revenue": ("194.0200", "15.4055", SWEEP),
    "alpha_gamma/alpha=0.5/gamma=-0.14/coord=0.5/cum_revenue": ("165.6943", "10.7996", SWEEP),
    "alpha_gamma/alpha=2/gamma=-0.14/coord=0/cum_revenue": ("25.4928", "1.3317", SWEEP),
    "alpha_gamma/alpha=2/gamma=-0.14/coord=0.5/cum_revenue": ("43.6735", "5.3893", SWEEP),
    "beta1/beta1=-1/peter-match/post_revenue": ("-1.0327", "2.9471", SWEEP),
    "beta1/beta1=0/peter-match/post_revenue": ("-0.8718", "4.0372", SWEEP),
    "beta1/beta1=1/peter-match/post_revenue": ("-1.0683", "4.1035", SWEEP),
    "graicunas/coord=0/cum_revenue": ("87.3742", "4.5665", SWEEP),
    "graicunas/coord=0.0625/cum_revenue": ("88.9694", "7.0479", SWEEP),
    "graicunas/coord=0.5/cum_revenue": ("65.5056", "4.9429", SWEEP),
}
