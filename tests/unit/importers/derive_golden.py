#!/usr/bin/env python3
"""Derives the golden values of golden_test.cpp from the shared Kineto traces, independently of
the C++ importer (plain json + gzip + decimal). Run once, paste the output into golden_test.cpp:

    python3 tests/unit/importers/derive_golden.py tests/data/traces/kineto

Counting rules (what the importer is expected to store):
  kernels   complete ('X') events with cat kernel / Kernel
  memcpy    gpu_memcpy / Memcpy;  memset  gpu_memset / Memset
  runtime   cuda_runtime / Runtime / cuda_driver
  sync      cuda_sync
  cpu_ops   cpu_op / Operator / user_annotation / gpu_user_annotation / python_function
  iters     distinct (pid, N) of ProfilerStep#N among CPU-side ops (not gpu_user_annotation)
  gpus      deviceProperties / computeProperties ids, plus devices that ran GPU work
  span      min(ts) .. max(ts + dur) over the events above, in ns: baseTimeNanoseconds + ts * 1000
            (ts is µs; decimal arithmetic so ns digits are exact)
"""
import decimal
import gzip
import json
import os
import sys

GROUPS = {
    "kernel": "kernels", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
    "memset": "memset", "cuda_runtime": "runtime", "runtime": "runtime", "cuda_driver": "runtime",
    "cuda_sync": "sync", "cpu_op": "cpu_ops", "operator": "cpu_ops", "user_annotation": "cpu_ops",
    "gpu_user_annotation": "cpu_ops", "python_function": "cpu_ops",
}


def ns(base, us):
    return base + int((decimal.Decimal(us) * 1000).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP))


def derive(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    base = int(doc.get("baseTimeNanoseconds", 0))
    counts = dict.fromkeys(["kernels", "memcpy", "memset", "runtime", "sync", "cpu_ops"], 0)
    steps, devices = set(), set()
    for d in doc.get("deviceProperties", doc.get("computeProperties", [])):
        devices.add(d["id"])
    lo = hi = None
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        group = GROUPS.get(cat)
        if not group:
            continue
        counts[group] += 1
        start = ns(base, e["ts"])
        end = start + max(0, ns(0, e.get("dur", 0)))
        lo = start if lo is None else min(lo, start)
        hi = end if hi is None else max(hi, end)
        args = e.get("args", {})
        if group in ("kernels", "memcpy", "memset"):
            devices.add(args.get("device", e.get("pid")))
        if group == "sync" and "device" in args:
            devices.add(args["device"])
        name = e.get("name", "")
        if group == "cpu_ops" and cat != "gpu_user_annotation" and name.startswith("ProfilerStep#"):
            steps.add((e.get("pid"), name))
    return counts, len(steps), len(devices), lo, hi


def main():
    folder = sys.argv[1]
    for name in sorted(os.listdir(folder)):
        if not (name.endswith(".json") or name.endswith(".json.gz")) or name == "tb-gpu_metrics_expected.json":
            continue
        c, iters, gpus, lo, hi = derive(os.path.join(folder, name))
        print('    {"%s", %d, %d, %d, %d, %d, %d, %d, %d, %sLL, %sLL},' % (
            name, c["kernels"], c["memcpy"], c["memset"], c["runtime"], c["sync"], c["cpu_ops"], iters, gpus,
            lo, hi))


if __name__ == "__main__":
    main()
