#!/usr/bin/env python3
"""Compute Holistic Trace Analysis (HTA) 0.5.0's get_gpu_user_annotation_breakdown
(hta/analyzers/breakdown_analysis.py; use_gpu_annotation=True, num_kernels=1000,
duration_ratio=0.8) on the shared traces that have gpu_user_annotation events, for
tests/unit/analyzer_hta/annotation_parity_test.cpp (fleetscope's gpu_user_annotation_stats,
analyzer/kernel_stats.h).

Each trace is analysed as compute_reference.py's `ns_exact` run (a copy rebased exactly, with
HTA_DISABLE_NS_ROUNDING=1), so HTA sees the trace's own times; values in µs.

Usage (venv with holistictraceanalysis==0.5.0, see README.md):
  /tmp/hta-venv/bin/python tests/data/hta_reference/compute_annotation_reference.py \
      --traces-dir tests/data/traces/kineto \
      --output tests/data/hta_reference/hta_reference_annotations.json
"""

import argparse
import contextlib
import io
import json
import logging
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compute_reference import write_rebased_copy  # noqa: E402

TRACES = [
    "hta-ns_resolution_trace_rank-0.json.gz",
    "hta-nccl_parser_config_nccl_data.json.gz",
]


def breakdown(path):
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        write_rebased_copy(path, copy)
        with contextlib.redirect_stdout(io.StringIO()):
            table = TraceAnalysis(trace_dir=tmp).get_gpu_user_annotation_breakdown(visualize=False)
    return [{"name": r["name"], "sum_us": float(r["sum (us)"]), "max_us": float(r["max (us)"]),
             "min_us": float(r["min (us)"]), "mean_us": float(r["mean (us)"]),
             "std_us": float(r["stddev"]), "rank": int(r["rank"])}
            for r in table.to_dict("records")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces-dir", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    import pandas

    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    result = {"generator": "compute_annotation_reference.py", "hta_version": "0.5.0",
              "pandas_version": pandas.__version__,
              "function": "TraceAnalysis.get_gpu_user_annotation_breakdown(visualize=False)",
              "traces": {name: breakdown(os.path.join(args.traces_dir, name)) for name in TRACES}}
    with open(args.output, "w") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
