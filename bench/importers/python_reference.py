#!/usr/bin/env python3
"""Second reference for bench_importers: Python's json.loads on the same decompressed bytes
(what HTA and TensorBoard's profiler plugin do before any analysis), best of N.

    python3 bench/importers/python_reference.py [TRACE.json.gz] [REPEATS]
"""
import gzip
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    here, "../../tests/data/traces/kineto/hta-ns_resolution_trace_rank-0.json.gz")
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
best = float("inf")
for _ in range(repeats):
    t0 = time.perf_counter()
    doc = json.loads(raw)
    best = min(best, time.perf_counter() - t0)
n = len(doc["traceEvents"])
mb = len(raw) / 1e6
print("  %-46s %9.1f ms %9.1f MB/s %12.0f events/s" % ("reference: Python json.loads (no rows)", best * 1e3,
                                                        mb / best, n / best))
