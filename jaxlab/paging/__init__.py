"""Latent Pager Memory against a text-summary buffer (latent-pager.md) as a jaxlab experiment.

modules.py holds the PageCompressor and PageAggregator; pages.py the chunking, the frozen LM's pooled
hidden states and the per-document page store; pager.py soft tokens, the training loss and answers;
train.py QA fine-tuning on the core training loop; text_buffer.py the baseline; generation.py the
one set of generation settings both systems answer with; metrics.py the answer metrics; data.py the
questions and consistency probes; timing.py latency and peak memory; analysis.py summary.json,
reporting.py report.md, plots.py the plots, published.py the published figures; evaluation.py scores
a finished `compare` run on another JSONL test set (`jaxlab eval`), whose folder `data.export_test`
writes from a config (`jaxlab data`); pairs.py finished runs compared on
the same test questions (`jaxlab compare`: one system across two runs; `jaxlab seeds`: one system
against another over training seeds).
"""

from jaxlab.paging.data import export_test
from jaxlab.paging.evaluation import evaluate
from jaxlab.paging.experiment import report, run, validate
from jaxlab.paging.pairs import compare, over_seeds

__all__ = ["compare", "evaluate", "export_test", "report", "over_seeds", "run", "validate"]
