#!/usr/bin/env python3
"""Compute what Holistic Trace Analysis (HTA) 0.5.0's get_aten_op_kernels_and_delay
(hta/analyzers/cuda_kernel_analysis.py) gives on shared traces, for
tests/unit/analyzer_hta/aten_op_delay_parity_test.cpp (fleetscope's analyzer/aten_op_delay.h).

Per trace: every row of HTA's table (aten_op_name, kernel_sequence, occurrence_count,
avg_aten_op_launch_delay, avg_runtime_delay; µs, HTA rounds the averages to 3 decimals). The
ns-resolution trace is analysed as compute_reference.py's `ns_exact` run: a copy rebased exactly
and HTA_DISABLE_NS_ROUNDING=1, so HTA sees the trace's own ns times (fleetscope keeps integer ns).

Usage (venv with holistictraceanalysis==0.5.0, see README.md):
  /tmp/hta-venv/bin/python tests/data/hta_reference/compute_aten_op_reference.py \
      --traces-dir tests/data/traces/kineto --output tests/data/hta_reference/hta_reference_aten_op.json
"""

import argparse
import contextlib
import io
import json
import logging
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compute_reference import write_rebased_copy  # noqa: E402

# (trace, ns-resolution float timestamps?)
TRACES = [
    ("hta-critical_path_alexnet_trace.json.gz", False),
    ("hta-critical_path_simple_add_trace.json.gz", False),
    ("hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz", False),
    ("hta-ns_resolution_trace_rank-0.json.gz", True),
]


def rows(path, rebase):
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        if rebase:
            write_rebased_copy(path, copy)
        else:
            shutil.copy(path, copy)
        with contextlib.redirect_stdout(io.StringIO()):
            table = TraceAnalysis(trace_dir=tmp).get_aten_op_kernels_and_delay()[0]
    return [{"aten_op_name": r["aten_op_name"],
             "kernel_sequence": r["kernel_sequence"],
             "occurrence_count": int(r["occurrence_count"]),
             "avg_aten_op_launch_delay_us": float(r["avg_aten_op_launch_delay"]),
             "avg_runtime_delay_us": float(r["avg_runtime_delay"])}
            for r in table.to_dict("records")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces-dir", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    import pandas

    result = {"generator": "compute_aten_op_reference.py", "hta_version": "0.5.0",
              "pandas_version": pandas.__version__,
              "function": "TraceAnalysis.get_aten_op_kernels_and_delay() (ranks [0])",
              "traces": {}}
    for name, ns in TRACES:
        if ns:
            os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
        try:
            result["traces"][name] = {"ns_exact": ns,
                                      "rows": rows(os.path.join(args.traces_dir, name), ns)}
        finally:
            os.environ.pop("HTA_DISABLE_NS_ROUNDING", None)
    with open(args.output, "w") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
