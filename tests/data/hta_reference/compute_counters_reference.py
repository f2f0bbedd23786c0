#!/usr/bin/env python3
"""Compute the counter events Holistic Trace Analysis (HTA) 0.5.0 adds to a trace with
TraceAnalysis.generate_trace_with_counters() (hta/trace_analysis.py), for the golden test of
`fleetscope export`'s counter tracks (tests/unit/export/analysis_counters_test.cpp).

HTA writes one "C" event per point of two time series (hta/analyzers/trace_counters.py):
  - "Queue Length": get_queue_length_time_series, one series per stream, written with "id" = the
    stream (Trace.convert_time_series_to_events), args {"Queue Length": n};
  - the memory-copy bandwidth: get_memory_bw_time_series, one series per copy kind, written with
    "name" = the kind ("Memcpy HtoD", "Memset", ...), args {"Memcpy BW": GB/s}.
The bandwidth comes from Kineto's "memory bandwidth (GB/s)" arg, computed by Kineto from the exact
ns duration; the store (and so the export) keeps bytes and the trace's times, so for the bandwidth
series HTA is run on a copy whose args are recomputed from the trace's own `bytes` and `dur`, as
compute_reference.py's memory_bw_from_trace_durations does. The queue length comes from the
unmodified trace.

Usage (venv with holistictraceanalysis==0.5.0, see README.md):
  /tmp/hta-venv/bin/python tests/data/hta_reference/compute_counters_reference.py \
      --traces-dir tests/data/traces/kineto --output tests/data/hta_reference/hta_reference_counters.json
"""

import argparse
import contextlib
import glob
import gzip
import io
import json
import logging
import os
import shutil
import tempfile

# Whole-µs traces without a last-step filter (fewer than two ProfilerSteps), so that every GPU
# event of the export is in HTA's series too.
TRACES = [
    "hta-critical_path_alexnet_trace.json.gz",
    "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
]


def counter_events(trace_dir):
    from hta.trace_analysis import TraceAnalysis

    with contextlib.redirect_stdout(io.StringIO()):
        TraceAnalysis(trace_dir=trace_dir).generate_trace_with_counters()
    out = [f for f in glob.glob(os.path.join(trace_dir, "*")) if "_with_counters" in f][0]
    with gzip.open(out, "rt") if out.endswith(".gz") else open(out) as fh:
        events = json.load(fh)["traceEvents"]
    # Plain ints and floats (pandas gives numpy scalars a JSON writer may not know).
    return [json.loads(json.dumps(e, default=float)) for e in events if e.get("ph") == "C"]


def with_recomputed_bandwidth(src, dst):
    with gzip.open(src, "rt") as fh:
        trace = json.load(fh)
    for event in trace.get("traceEvents", []):
        args = event.get("args") or {}
        if event.get("cat") in ("gpu_memcpy", "gpu_memset") and "bytes" in args:
            dur = float(event.get("dur", 0)) or 1.0  # HTA makes a 0-µs event 1 µs long
            args["memory bandwidth (GB/s)"] = float(args["bytes"]) / (dur * 1000.0)
    with gzip.open(dst, "wt") as fh:
        json.dump(trace, fh)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces-dir", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    import hta
    import pandas

    result = {
        "generator": "compute_counters_reference.py",
        "hta_version": "0.5.0",
        "pandas_version": pandas.__version__,
        "function": "TraceAnalysis.generate_trace_with_counters() (hta/trace_analysis.py)",
        "traces": {},
    }
    for name in TRACES:
        src = os.path.join(args.traces_dir, name)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(src, os.path.join(tmp, name))
            queue = [e for e in counter_events(tmp) if e["name"] == "Queue Length"]
        with tempfile.TemporaryDirectory() as tmp:
            with_recomputed_bandwidth(src, os.path.join(tmp, name))
            bandwidth = [e for e in counter_events(tmp) if "Memcpy BW" in e.get("args", {})]
        result["traces"][name] = {"queue_length": queue, "memcpy_bandwidth": bandwidth}
    with open(args.output, "w") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
