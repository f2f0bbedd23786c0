#!/usr/bin/env python3
"""Compute Holistic Trace Analysis (HTA) 0.5.0's get_gpu_kernels_with_user_annotations
(hta/analyzers/breakdown_analysis.py) on the shared traces that have gpu_user_annotation events,
for tests/unit/analyzer_hta/annotation_parity_test.cpp (fleetscope's
gpu_kernels_with_user_annotations, analyzer/kernel_annotations.h).

HTA returns one row per GPU row with a `user_annotation` column (the name, or -1). This writes,
per trace, the row count and per annotation name (and "-1" for none) the rows it got: their
count, the sum of their durations (µs) and the sum of their Kineto correlation ids (which pins the
very rows, not only how many).

Each trace is analysed as compute_reference.py's `ns_exact` run (a copy rebased exactly, with
HTA_DISABLE_NS_ROUNDING=1), so HTA sees the trace's own times.

Usage (venv with holistictraceanalysis==0.5.0, see README.md):
  /tmp/hta-venv/bin/python tests/data/hta_reference/compute_kernel_annotation_reference.py \
      --traces-dir tests/data/traces/kineto \
      --output tests/data/hta_reference/hta_reference_kernel_annotations.json
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


def attribution(path):
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        write_rebased_copy(path, copy)
        with contextlib.redirect_stdout(io.StringIO()):
            df = TraceAnalysis(trace_dir=tmp).get_gpu_kernels_with_user_annotations(
                rank=0, expand_names=True, shortern_names=False)
    by = {}
    for row in df.itertuples():
        key = str(row.s_user_annotation) if row.user_annotation != -1 else "-1"
        entry = by.setdefault(key, {"rows": 0, "dur_us": 0.0, "correlation_sum": 0})
        entry["rows"] += 1
        entry["dur_us"] += float(row.dur)
        entry["correlation_sum"] += int(row.correlation)
    return {"rows": int(len(df)), "by_annotation": by}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces-dir", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    import pandas

    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    result = {"generator": "compute_kernel_annotation_reference.py", "hta_version": "0.5.0",
              "pandas_version": pandas.__version__,
              "function": "TraceAnalysis.get_gpu_kernels_with_user_annotations(rank=0, "
                          "expand_names=True, shortern_names=False)",
              "traces": {name: attribution(os.path.join(args.traces_dir, name)) for name in TRACES}}
    with open(args.output, "w") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
