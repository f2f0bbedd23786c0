#!/usr/bin/env python3
"""Expected verdicts of fleetscope's 19 antipattern rules on the shared Kineto traces.

Computed from the raw Chrome-trace events alone (Python 3 standard library: gzip, json, decimal),
independently of the C++ importer and analyzer, following the rule definitions in
docs/analyzer.md and the thresholds cited in analyzer/src/rules_builtin.cpp. The output,
expected.json, is what tests/unit/analyzer/golden_rules_test.cpp pins the C++ rules against.

    python3 tests/data/golden_rules/derive.py [--data DIR] [--out FILE]

All times are integer nanoseconds. Kineto writes `ts`/`dur` in microseconds (integers, or
decimals with up to three digits for ns-resolution traces); each value is read from its JSON text
as an exact decimal and rounded to the nearest ns (ties away from zero), plus
`baseTimeNanoseconds` when the file has it. An event ends at ts + max(0, dur).
"""

import argparse
import decimal
import glob
import gzip
import json
import math
import os
import re
import sys

# --------------------------------------------------------------------------------------------
# Thresholds (defaults of rules_builtin.cpp; each one's source is cited there).
MIN_GAP_NS = 500_000_000            # gpu_idle_gaps: nsys analyze gpu_gaps, 500 ms
MIN_UTILIZATION = 0.5               # low_gpu_utilization: PyTorch profiler advice
RUNTIME_CUTOFF_NS = 50_000          # HTA cuda_kernel_launch_stats runtime_cutoff
KERNEL_WAIT_NS = 30_000             # HTA consecutive_kernel_delay
MIN_SHORT_SHARE = 0.3               # launch_bound_small_kernels
LAUNCH_DELAY_CUTOFF_NS = 100_000    # HTA launch_delay_cutoff
MIN_DELAY_SHARE = 0.05              # launch_delay_outliers
MAX_DATALOADER_SHARE = 0.05         # PyTorch profiler DataLoader advice
MAX_SYNC_PER_STEP = 2               # excessive_sync
MAX_CAPACITY_SHARE = 0.9            # memory_near_capacity
MAX_CONSOLIDATION_UTIL = 0.5        # consolidation_candidate
MAX_COMM_SHARE = 0.3                # comm_heavy
MAX_NON_TC_SHARE = 0.2              # tensor_cores_unused
MIN_NON_TC_NS = 1_000_000
FUSION_MAX_KERNEL_NS = 10_000       # fusion_candidates
FUSION_MIN_RUN = 8
MAX_EXPOSED_COPY_SHARE = 0.05       # exposed_transfers
MIN_COMM_OVERLAP = 0.5              # low_comm_overlap
MIN_EXPOSED_COMM_NS = 1_000_000
MIN_IDLE_SHARE = 0.5                # host_bound
MIN_CPU_COVER = 0.5
MAX_FEW_BLOCKS_SHARE = 0.1          # few_blocks
MAX_OCCUPANCY_PERCENT = 25          # low_occupancy
MAX_LOW_OCCUPANCY_SHARE = 0.1
MIN_MEDIAN_TO_P99 = 0.7             # tail_steps: nvidia-resiliency-ext straggler score
TAIL_MIN_STEPS = 3

RULES = [
    "gpu_idle_gaps", "low_gpu_utilization", "launch_bound_small_kernels", "launch_delay_outliers",
    "dataloader_bottleneck", "pageable_memcpy", "sync_memcpy", "sync_memset", "excessive_sync",
    "memory_near_capacity", "consolidation_candidate", "comm_heavy", "tensor_cores_unused",
    "fusion_candidates", "exposed_transfers", "low_comm_overlap", "host_bound", "few_blocks",
    "low_occupancy", "tail_steps",
]

LAUNCH_APIS = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync"}

# --------------------------------------------------------------------------------------------
# Interval algebra on half-open [begin, end) integer intervals. A "set" is sorted and disjoint.


def unite(intervals):
    out = []
    for b, e in sorted(intervals):
        if e < b:
            continue
        if out and b <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([b, e])
    # Zero-length intervals carry no time; drop them once merged.
    return [(b, e) for b, e in out if e > b]


def length(intervals):
    return sum(e - b for b, e in intervals)


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a, b):
    out = []
    j = 0
    for lo, hi in a:
        cur = lo
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < hi:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            k += 1
        if cur < hi:
            out.append((cur, hi))
    return out


def gaps_within(busy, span):
    return subtract([span], busy) if span[1] > span[0] else []


# --------------------------------------------------------------------------------------------
# Reading a trace.


def to_ns(value):
    """Microseconds (int or exact Decimal from the JSON text) to integer ns, ties away from 0."""
    if isinstance(value, int):
        return value * 1000
    return int((decimal.Decimal(value) * 1000).quantize(decimal.Decimal(1),
                                                        rounding=decimal.ROUND_HALF_UP))


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    return {"traceEvents": doc} if isinstance(doc, list) else doc


def as_int(v):
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, decimal.Decimal)):
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v):
        return int(v)
    return None


MEMORY_KINDS = {"pageable", "pinned", "device", "array", "managed", "device static",
                "managed static", "unknown"}


def memcpy_kinds(name):
    """'Memcpy HtoD (Pageable -> Device)' -> ('pageable', 'device'); None for unknown words."""
    m = re.search(r"\(([^()]*)->([^()]*)\)", name)
    if not m:
        return None, None
    src, dst = m.group(1).strip().lower(), m.group(2).strip().lower()
    return (src if src in MEMORY_KINDS else None), (dst if dst in MEMORY_KINDS else None)


class Trace:
    """The events of one file, in the shapes the rules need."""

    def __init__(self, path):
        self.path = path
        doc = load_json(path)
        base = as_int(doc.get("baseTimeNanoseconds")) or 0
        self.sm_count = {}
        self.total_memory = {}
        # "computeProperties" is the older PyTorch-profiler spelling (the TensorBoard test trace).
        for p in (doc.get("deviceProperties") or doc.get("computeProperties") or []):
            dev = as_int(p.get("id"))
            if dev is None:
                continue
            sms = as_int(p.get("numSms", p.get("multiProcessorCount")))
            if sms:
                self.sm_count[dev] = sms
            if as_int(p.get("totalGlobalMem")):
                self.total_memory[dev] = as_int(p.get("totalGlobalMem"))
        kernels, memcpys, memsets = [], [], []
        self.runtime = []      # {start, end, name, corr, size}
        self.syncs = []        # cuda_sync events that carry a stream: {start, end, device}
        self.host_ops = []     # (start, end, category, name) for cpu_op-like events
        self.memory_events = 0
        steps = {}
        for ev in doc.get("traceEvents", []):
            ph = ev.get("ph")
            name = ev.get("name", "")
            if ph in ("i", "I") and name == "[memory]":
                self.memory_events += 1
                continue
            if ph != "X":
                continue
            cat = (ev.get("cat") or "").lower()
            args = ev.get("args") or {}
            start = base + to_ns(ev["ts"])
            end = start + max(0, to_ns(ev["dur"]))
            if cat in ("kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset"):
                dev = as_int(args.get("device"))
                if dev is None:
                    dev = as_int(ev.get("pid"))
                stream = as_int(args.get("stream"))
                if stream is None:
                    stream = as_int(ev.get("tid"))
                e = {"start": start, "end": end, "dev": dev, "stream": stream, "name": name,
                     "corr": as_int(args.get("correlation")), "bytes": as_int(args.get("bytes")) or 0}
                if cat == "kernel":
                    e["kind"] = "kernel"
                    grid = args.get("grid")
                    e["blocks"] = (int(grid[0]) * int(grid[1]) * int(grid[2])
                                   if isinstance(grid, list) and len(grid) == 3 else None)
                    occ = args.get("est. achieved occupancy %")
                    e["occupancy"] = None if occ is None else decimal.Decimal(occ)
                    kernels.append(e)
                elif cat in ("gpu_memcpy", "memcpy"):
                    e["kind"] = "memcpy"
                    e["src"], e["dst"] = memcpy_kinds(name)
                    memcpys.append(e)
                else:
                    e["kind"] = "memset"
                    memsets.append(e)
            elif cat in ("cuda_runtime", "runtime", "cuda_driver", "driver"):
                self.runtime.append({"start": start, "end": end, "name": name,
                                     "corr": as_int(args.get("correlation")),
                                     "size": as_int(args.get("size"))})
            elif cat == "cuda_sync":
                stream = as_int(args.get("stream"))
                if stream is None or stream < 0:
                    continue  # Event/Context Sync written with stream -1: not a GPU event
                dev = as_int(args.get("device"))
                if dev is None:
                    dev = as_int(ev.get("pid"))
                self.syncs.append({"start": start, "end": end, "dev": dev})
            elif cat in ("cpu_op", "operator", "user_annotation", "gpu_user_annotation",
                         "python_function"):
                self.host_ops.append((start, end, cat, name))
                m = re.fullmatch(r"ProfilerStep#(\d+)", name)
                if m and cat != "gpu_user_annotation":
                    key = (ev.get("pid"), int(m.group(1)))
                    if key in steps:
                        steps[key] = (min(steps[key][0], start), max(steps[key][1], end))
                    else:
                        steps[key] = (start, end)
        self.steps = sorted(steps.values())
        # One GPU-event list, stably sorted by (start, end) from kernels, memcpys, memsets.
        self.gpu = sorted(kernels + memcpys + memsets, key=lambda e: (e["start"], e["end"]))
        self.runtime.sort(key=lambda r: (r["start"], r["end"]))
        # The launching call of a GPU event: the first runtime call (in start order) with its
        # correlation id.
        first_call = {}
        for r in self.runtime:
            if r["corr"] is not None and r["corr"] >= 0 and r["corr"] not in first_call:
                first_call[r["corr"]] = r
        for e in self.gpu:
            e["call"] = first_call.get(e["corr"]) if e["corr"] is not None else None
            if e["kind"] == "memcpy" and e["bytes"] == 0 and e["call"] and (e["call"]["size"] or 0) > 0:
                e["bytes"] = e["call"]["size"]  # ROCm: hipMemcpy* 'size' argument
        devices = sorted({e["dev"] for e in self.gpu})
        for s in self.syncs:
            if s["dev"] is None and len(devices) == 1:
                s["dev"] = devices[0]
        self.syncs = [s for s in self.syncs if s["dev"] is not None]
        self.devices = devices
        self.by_device = {d: [e for e in self.gpu if e["dev"] == d] for d in devices}
        self.busy = {d: unite((e["start"], e["end"]) for e in self.by_device[d]) for d in devices}
        self.span = {d: (self.by_device[d][0]["start"], max(e["end"] for e in self.by_device[d]))
                     for d in devices}
        self.any_busy = unite((e["start"], e["end"]) for e in self.gpu)
        self.gpu_span = (self.gpu[0]["start"], max(e["end"] for e in self.gpu)) if self.gpu else None
        self.step_span = ((self.steps[0][0], max(s[1] for s in self.steps))
                          if self.steps else None)


def is_comm(e):
    """HTA: a name matching ^nccl.*Kernel is communication."""
    return e["kind"] == "kernel" and re.match(r"nccl.*Kernel", e["name"]) is not None


def is_compute(e):
    """HTA get_kernel_type == COMPUTATION: not ^nccl.*Kernel, not MEMORY (^Memcpy|^Memset|^dma),
    and is_compute_kernel: not re.match((^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync))."""
    if e["kind"] != "kernel" or e["name"].startswith("dma"):
        return False
    return re.match(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)", e["name"]) is None


def silent(why, needs=None):
    out = {"fires": False, "why": why}
    if needs:
        out["not_evaluable_needs"] = needs
    return out


def fires(findings):
    return {"fires": True, "findings": findings}


# --------------------------------------------------------------------------------------------
# The rules.


def gpu_idle_gaps(t):
    findings = []
    for d in t.devices:
        long_gaps = [g for g in gaps_within(t.busy[d], t.span[d]) if g[1] - g[0] > MIN_GAP_NS]
        if long_gaps:
            findings.append({"device": d, "gap_count": len(long_gaps),
                             "gap_total_ns": length(long_gaps), "impact_ns": length(long_gaps),
                             "info": {"longest_gap_ns": max(e - b for b, e in long_gaps)}})
    if not t.gpu:
        return silent("no GPU events")
    return fires(findings) if findings else silent("no idle gap longer than 500 ms on any device")


def utilization_rows(t):
    rows = []
    for d in t.devices:
        window = t.step_span if t.step_span else t.span[d]
        busy = length(intersect(t.busy[d], [window]))
        rows.append((d, window, busy))
    return rows


def low_gpu_utilization(t):
    findings, notes = [], []
    for d, window, busy in utilization_rows(t):
        w = window[1] - window[0]
        util = busy / w if w > 0 else 0.0
        notes.append(f"device {d}: {busy}/{w} ns = {util:.4f}")
        if w > 0 and util < MIN_UTILIZATION:
            findings.append({"device": d, "busy_ns": busy, "window_ns": w, "utilization": util,
                             "window_is_steps": t.step_span is not None, "impact_ns": w - busy})
    if not t.gpu:
        return silent("no GPU events")
    return fires(findings) if findings else silent("utilization >= 50 %: " + "; ".join(notes))


def launches(t):
    """HTA launch stats over the whole capture: GPU events joined to launch-API calls."""
    out = []
    for e in t.gpu:
        c = e["call"]
        if c is None or c["name"] not in LAUNCH_APIS:
            continue
        out.append({"e": e, "cpu_start": c["start"], "cpu_dur": c["end"] - c["start"],
                    "gpu_start": e["start"], "gpu_dur": e["end"] - e["start"],
                    "delay": e["start"] - c["end"]})
    return out


def idle_breakdown(t):
    """HTA idle time breakdown per (device, stream): host wait / kernel wait sums."""
    host, kernel = 0, 0
    streams = {}
    for e in t.gpu:
        streams.setdefault((e["dev"], e["stream"]), []).append(e)
    for members in streams.values():
        h = k = 0
        for prev, cur in zip(members, members[1:]):
            gap = cur["start"] - prev["end"]
            if cur["call"] is not None and cur["call"]["start"] > prev["end"]:
                h += gap
            elif gap < KERNEL_WAIT_NS:
                k += gap
        host += max(0, h)
        kernel += max(0, k)
    return host, kernel


def temporal_idle_total(t):
    """HTA temporal breakdown idle time summed over devices (GPU events + stream syncs)."""
    total = 0
    for d in sorted(set(t.devices) | {s["dev"] for s in t.syncs}):
        iv = [(e["start"], e["end"]) for e in t.by_device.get(d, [])]
        iv += [(s["start"], s["end"]) for s in t.syncs if s["dev"] == d]
        first, last = min(b for b, _ in iv), max(e for _, e in iv)
        total += (last - first) - length(unite(iv))
    return total


def launch_bound_small_kernels(t):
    ls = launches(t)
    if not ls:
        return silent("no launch-API call joined to a GPU event")
    short = [l for l in ls if l["cpu_dur"] <= RUNTIME_CUTOFF_NS and l["gpu_dur"] < l["cpu_dur"]]
    share = len(short) / len(ls)
    if share < MIN_SHORT_SHARE:
        return silent(f"{len(short)} of {len(ls)} launches short ({share:.3f} < 0.3)")
    host_wait, kernel_wait = idle_breakdown(t)
    gpu_ns = sum(l["gpu_dur"] for l in short)
    cpu_ns = sum(l["cpu_dur"] for l in short)
    impact = min(max(kernel_wait, cpu_ns - gpu_ns), temporal_idle_total(t))
    return fires([{"device": None, "launches": len(ls), "short_kernels": len(short),
                   "short_kernel_gpu_ns": gpu_ns, "short_kernel_launch_ns": cpu_ns,
                   "host_wait_ns": host_wait, "kernel_wait_ns": kernel_wait,
                   "impact_ns": impact}])


def launch_delay_outliers(t):
    ls = launches(t)
    if not ls:
        return silent("no launch-API call joined to a GPU event")
    delayed = [l for l in ls if l["delay"] > LAUNCH_DELAY_CUTOFF_NS]
    share = len(delayed) / len(ls)
    if not delayed or share < MIN_DELAY_SHARE:
        return silent(f"{len(delayed)} of {len(ls)} launches delayed > 100 us ({share:.3f})")
    impact = 0
    for d in t.devices:
        waits = unite((l["cpu_start"] + l["cpu_dur"], l["gpu_start"]) for l in delayed
                      if l["e"]["dev"] == d)
        impact += length(intersect(waits, gaps_within(t.busy[d], t.span[d])))
    return fires([{"device": None, "launches": len(ls), "delayed_launches": len(delayed),
                   "launch_delay_max_ns": max(l["delay"] for l in ls),
                   "impact_ns": impact}])


def is_dataloader(name):
    return name.lower().startswith("enumerate(dataloader)")


def dataloader_bottleneck(t):
    loading = unite((s, e) for s, e, _, n in t.host_ops if is_dataloader(n))
    if not t.steps:
        return silent("no ProfilerStep iterations (the rule's denominator)")
    if not loading:
        return silent("no enumerate(DataLoader)* op")
    steps = unite(t.steps)
    step_ns = length(steps)
    in_steps = intersect(loading, steps)
    loading_ns = length(in_steps)
    share = loading_ns / step_ns
    if share <= MAX_DATALOADER_SHARE:
        return silent(f"DataLoader {loading_ns} of {step_ns} step ns ({share:.4f} <= 0.05)")
    return fires([{"device": None, "steps": len(t.steps), "step_ns": step_ns,
                   "dataloader_ns": loading_ns,
                   "impact_ns": length(subtract(in_steps, t.any_busy))}])


def pageable_memcpy(t):
    findings = []
    unknown = 0
    for d in t.devices:
        copies = [e for e in t.by_device[d] if e["kind"] == "memcpy"
                  and "pageable" in (e["src"], e["dst"])]
        unknown += sum(1 for e in t.by_device[d] if e["kind"] == "memcpy"
                       and e["src"] is None and e["dst"] is None)
        if copies:
            total = sum(e["end"] - e["start"] for e in copies)
            findings.append({"device": d, "copies": len(copies),
                             "bytes": sum(e["bytes"] for e in copies), "copy_ns": total,
                             "impact_ns": total})
    if findings:
        return fires(findings)
    if unknown:
        return silent(f"{unknown} copies name no CUDA memory kind (e.g. ROCm 'Host')",
                      needs="the copy's host memory kind (Pageable/Pinned) in its name")
    return silent("no copy from or to pageable memory")


def sync_memory_call(t, memset):
    prefixes = ("cudaMemset", "cuMemset") if memset else ("cudaMemcpy", "cuMemcpy")
    findings = []
    for d in t.devices:
        hits = [e for e in t.by_device[d] if e["kind"] != "kernel" and e["call"] is not None
                and e["call"]["name"].startswith(prefixes) and "Async" not in e["call"]["name"]]
        if not hits:
            continue
        idle = gaps_within(t.busy[d], t.span[d])
        begins = {g[0]: g for g in idle}
        after = unite(begins[e["end"]] for e in hits if e["end"] in begins)
        findings.append({"device": d, "calls": len(hits), "impact_ns": length(after)})
    if findings:
        return fires(findings)
    api = "cudaMemset/cuMemset" if memset else "cudaMemcpy/cuMemcpy"
    return silent(f"no GPU {'memset' if memset else 'copy'} launched by a non-Async {api} call")


def excessive_sync(t):
    calls = [r for r in t.runtime if re.match(r"cu\w*Synchronize", r["name"])]
    if not t.steps:
        # "Calls per step" has no denominator without steps; counting the capture as one step
        # would call a benchmark's timing syncs a per-step antipattern.
        return silent(f"{len(calls)} sync calls but no ProfilerStep iterations",
                      needs="ProfilerStep#N iterations (the per-step denominator)")
    if not calls:
        return silent("no cu*/cuda*Synchronize call")
    steps = len(t.steps)
    per_step = len(calls) / steps
    if per_step <= MAX_SYNC_PER_STEP:
        return silent(f"{len(calls)} sync calls / {steps} step(s) <= 2")
    after = []
    if t.gpu_span:
        idle = gaps_within(t.any_busy, t.gpu_span)
        for r in calls:
            for b, e in idle:
                if b <= r["end"] < e:
                    after.append((r["end"], e))
    return fires([{"device": None, "calls": len(calls), "steps": len(t.steps),
                   "impact_ns": length(unite(after))}])


def memory_near_capacity(t):
    if not t.memory_events:
        return silent("no [memory] events in the trace",
                      needs="[memory] instant events (profile_memory=True)")
    raise NotImplementedError("traces with [memory] events: extend derive.py")


def consolidation_candidate(t):
    if not t.gpu:
        return silent("no GPU events")
    if not t.memory_events:
        return silent("persistent/ephemeral memory unknown without [memory] events",
                      needs="[memory] instant events (profile_memory=True)")
    raise NotImplementedError("traces with [memory] events: extend derive.py")


def comm_overlap(events):
    comm = unite((e["start"], e["end"]) for e in events if is_comm(e))
    compute = unite((e["start"], e["end"]) for e in events if is_compute(e))
    return length(comm), length(subtract(comm, compute))


def comm_heavy(t):
    findings, notes = [], []
    for d in t.devices:
        comm_ns, exposed = comm_overlap(t.by_device[d])
        if comm_ns == 0:
            continue
        busy = length(t.busy[d])
        notes.append(f"device {d}: comm {comm_ns} of busy {busy}")
        if comm_ns / busy > MAX_COMM_SHARE:
            findings.append({"device": d, "comm_ns": comm_ns, "busy_ns": busy,
                             "exposed_comm_ns": exposed, "impact_ns": exposed})
    if findings:
        return fires(findings)
    return silent("; ".join(notes) + " (<= 30 %)" if notes else "no nccl*Kernel kernels")


def low_comm_overlap(t):
    findings, notes = [], []
    for d in t.devices:
        comm_ns, exposed = comm_overlap(t.by_device[d])
        if comm_ns == 0:
            continue
        overlap = 1 - exposed / comm_ns
        notes.append(f"device {d}: overlap {overlap:.3f}, exposed {exposed} ns")
        if overlap < MIN_COMM_OVERLAP and exposed >= MIN_EXPOSED_COMM_NS:
            findings.append({"device": d, "comm_ns": comm_ns, "exposed_comm_ns": exposed,
                             "impact_ns": exposed})
    if findings:
        return fires(findings)
    return silent("; ".join(notes) if notes else "no nccl*Kernel kernels")


TC_MARKERS = ("h884", "h1688", "s1688", "s16816", "i8816", "xmma", "hmma", "wmma", "tensorop",
              "tf32", "bf16", "fp16")


def gemm_like(name):
    """A GEMM or convolution kernel: 'gemm', 'conv' or 'matmul' in the lower-cased name, where
    'gemm' inside 'fbgemm' does not count: fbgemm_gpu is a library (embedding lookups, FP8
    quantization, permutes), and its kernels carry 'fbgemm_gpu::' in their names or template
    arguments without being matrix products. Nor does 'conv' inside 'convert'."""
    n = name.lower().replace("fbgemm", "")
    return "gemm" in n or "matmul" in n or re.search(r"conv(?!ert)", n) is not None


def tensor_cores_unused(t):
    findings, notes = [], []
    for d in t.devices:
        ks = [e for e in t.by_device[d] if e["kind"] == "kernel"]
        plain = [e for e in ks if gemm_like(e["name"])
                 and not any(m in e["name"].lower() for m in TC_MARKERS)]
        if not plain:
            continue
        kernel_ns = length(unite((e["start"], e["end"]) for e in ks))
        plain_ns = length(unite((e["start"], e["end"]) for e in plain))
        notes.append(f"device {d}: {plain_ns} of {kernel_ns} kernel ns")
        if plain_ns / kernel_ns > MAX_NON_TC_SHARE and plain_ns >= MIN_NON_TC_NS:
            findings.append({"device": d, "non_tc_gemm_ns": plain_ns, "kernel_busy_ns": kernel_ns,
                             "impact_ns": plain_ns,
                             "info": {"names": sorted({e["name"][:80] for e in plain})}})
    if findings:
        return fires(findings)
    return silent("; ".join(notes) if notes else "no GEMM/conv kernel without a TC marker")


def fusion_candidates(t):
    per = {}
    streams = {}
    for e in t.gpu:
        streams.setdefault((e["dev"], e["stream"]), []).append(e)
    for (d, _), members in sorted(streams.items()):
        run = []
        for e in members + [None]:
            if e is not None and e["kind"] == "kernel" and e["end"] - e["start"] < FUSION_MAX_KERNEL_NS:
                run.append(e)
                continue
            if len(run) >= FUSION_MIN_RUN:
                p = per.setdefault(d, {"device": d, "run_count": 0, "kernel_count": 0,
                                       "gap_total_ns": 0})
                p["run_count"] += 1
                p["kernel_count"] += len(run)
                p["gap_total_ns"] += sum(max(0, b["start"] - a["end"]) for a, b in zip(run, run[1:]))
            run = []
    if not per:
        return silent("no run of 8+ consecutive kernels shorter than 10 us on a stream")
    return fires([dict(p, impact_ns=p["gap_total_ns"]) for _, p in sorted(per.items())])


def exposed_transfers(t):
    findings, notes = [], []
    for d in t.devices:
        copies = unite((e["start"], e["end"]) for e in t.by_device[d] if e["kind"] == "memcpy")
        if not copies:
            continue
        kernels = unite((e["start"], e["end"]) for e in t.by_device[d] if e["kind"] == "kernel")
        exposed = length(subtract(copies, kernels))
        span = t.span[d][1] - t.span[d][0]
        notes.append(f"device {d}: {exposed} exposed of {span} span")
        if span > 0 and exposed / span > MAX_EXPOSED_COPY_SHARE:
            findings.append({"device": d, "memcpy_ns": length(copies), "exposed_ns": exposed,
                             "impact_ns": exposed})
    if findings:
        return fires(findings)
    return silent("; ".join(notes) + " (<= 5 %)" if notes else "no memcpy")


def host_bound(t):
    """GPU idle > 50 % of the steps (or GPU span) and host activity covers > 50 % of that idle.

    Host activity = host-executed ranges: cpu_op / python_function / user_annotation events,
    CUDA runtime and driver calls. NOT counted: ProfilerStep#N ranges (they are the window
    itself, so counting them makes the cover 100 % by construction) and gpu_user_annotation
    ranges (drawn on the GPU timeline, not host work)."""
    if not t.gpu:
        return silent("no GPU events")
    windows = unite(t.steps) if t.steps else [t.gpu_span]
    window_ns = length(windows)
    idle = subtract(windows, t.any_busy)
    idle_ns = length(idle)
    idle_share = idle_ns / window_ns
    if idle_share <= MIN_IDLE_SHARE:
        return silent(f"GPU idle {idle_share:.4f} of the window (<= 0.5)")
    host = [(s, e) for s, e, cat, n in t.host_ops
            if cat != "gpu_user_annotation" and not re.fullmatch(r"ProfilerStep#\d+", n)]
    host += [(r["start"], r["end"]) for r in t.runtime]
    covered = length(intersect(idle, unite(host)))
    cover = covered / idle_ns
    if cover <= MIN_CPU_COVER:
        return silent(f"GPU idle {idle_share:.4f} of the window but host activity covers only "
                      f"{cover:.4f} of that idle time (<= 0.5)")
    return fires([{"device": None, "window_ns": window_ns, "gpu_idle_ns": idle_ns,
                   "impact_ns": covered, "steps": len(t.steps)}])


def few_blocks(t):
    findings, notes, missing = [], [], []
    for d in t.devices:
        ks = [e for e in t.by_device[d] if e["kind"] == "kernel"]
        if not ks:
            continue
        sms = t.sm_count.get(d)
        if not sms:
            missing.append("SM count (deviceProperties numSms)")
            continue
        if all(e["blocks"] is None for e in ks):
            missing.append("kernel grid dimensions (args.grid)")
            continue
        flagged = unite((e["start"], e["end"]) for e in ks if e["blocks"] and 0 < e["blocks"] < sms)
        kernel_ns = length(unite((e["start"], e["end"]) for e in ks))
        notes.append(f"device {d}: {length(flagged)} of {kernel_ns} kernel ns below {sms} blocks")
        if length(flagged) and length(flagged) / kernel_ns > MAX_FEW_BLOCKS_SHARE:
            findings.append({"device": d, "sm_count": sms, "few_block_kernel_ns": length(flagged),
                             "kernel_busy_ns": kernel_ns, "impact_ns": length(flagged)})
    if findings:
        return fires(findings)
    if missing and not notes:
        return silent("cannot be evaluated", needs=", ".join(sorted(set(missing))))
    return silent("; ".join(notes) + " (<= 10 %)" if notes else "no kernels")


def low_occupancy(t):
    findings, notes = [], []
    known_any = False
    for d in t.devices:
        ks = [e for e in t.by_device[d] if e["kind"] == "kernel"]
        if not ks:
            continue
        known = [e for e in ks if e["occupancy"] is not None]
        if not known:
            continue
        known_any = True
        flagged = unite((e["start"], e["end"]) for e in known if e["occupancy"] < MAX_OCCUPANCY_PERCENT)
        kernel_ns = length(unite((e["start"], e["end"]) for e in ks))
        share = length(flagged) / kernel_ns if kernel_ns else 0.0
        notes.append(f"device {d}: {length(flagged)} of {kernel_ns} kernel ns below 25 %")
        if length(flagged) and share > MAX_LOW_OCCUPANCY_SHARE:
            findings.append({"device": d, "low_occupancy_kernel_ns": length(flagged),
                             "kernel_busy_ns": kernel_ns, "impact_ns": length(flagged)})
    if findings:
        return fires(findings)
    if not known_any:
        return silent("cannot be evaluated",
                      needs="kernel 'est. achieved occupancy %' (not in this trace)")
    return silent("; ".join(notes) + " (<= 10 %)")


def nearest_rank(values, q):
    """metrics.cpp quantile(): the ceil(q * n)-th smallest value (1-based; the smallest for 0)."""
    ordered = sorted(values)
    rank = math.ceil(q * len(ordered))
    return ordered[max(rank, 1) - 1]


def tail_steps(t):
    if not t.gpu:
        return silent("no GPU activity", needs="GPU activity")
    if not t.steps:
        return silent("no ProfilerStep iterations", needs="profiler steps")
    durations = [e - b for b, e in t.steps]
    if len(durations) < TAIL_MIN_STEPS:
        return silent(f"{len(durations)} step(s) < {TAIL_MIN_STEPS}")
    p50, p99 = nearest_rank(durations, 0.5), nearest_rank(durations, 0.99)
    if p99 <= 0 or p50 / p99 >= MIN_MEDIAN_TO_P99:
        return silent(f"median/p99 = {p50}/{p99} >= {MIN_MEDIAN_TO_P99}")
    cut = p50 / MIN_MEDIAN_TO_P99
    slow = [d for d in durations if d > cut]
    return fires([{"device": None, "steps": len(durations), "p50_ns": p50, "p99_ns": p99,
                   "slow_steps": len(slow), "impact_ns": sum(d - p50 for d in slow)}])


EVALUATORS = {
    "gpu_idle_gaps": gpu_idle_gaps,
    "low_gpu_utilization": low_gpu_utilization,
    "launch_bound_small_kernels": launch_bound_small_kernels,
    "launch_delay_outliers": launch_delay_outliers,
    "dataloader_bottleneck": dataloader_bottleneck,
    "pageable_memcpy": pageable_memcpy,
    "sync_memcpy": lambda t: sync_memory_call(t, memset=False),
    "sync_memset": lambda t: sync_memory_call(t, memset=True),
    "excessive_sync": excessive_sync,
    "memory_near_capacity": memory_near_capacity,
    "consolidation_candidate": consolidation_candidate,
    "comm_heavy": comm_heavy,
    "tensor_cores_unused": tensor_cores_unused,
    "fusion_candidates": fusion_candidates,
    "exposed_transfers": exposed_transfers,
    "low_comm_overlap": low_comm_overlap,
    "host_bound": host_bound,
    "few_blocks": few_blocks,
    "low_occupancy": low_occupancy,
    "tail_steps": tail_steps,
}
assert list(EVALUATORS) == RULES


SHORT_NAMES = {
    "hta-amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz": "amd_mi250",
    "hta-cpu_only_rank-34.json.gz": "cpu_only",
    "hta-critical_path_alexnet_trace.json.gz": "alexnet",
    "hta-critical_path_cuda_event_sync_event_sync_trace.json.gz": "event_sync",
    "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz":
        "multi_stream_event_sync",
    "hta-critical_path_simple_add_trace.json.gz": "simple_add",
    "hta-cupti_profiler_trace.json.gz": "cupti_profiler",
    "hta-nccl_parser_config_nccl_data.json.gz": "nccl_data",
    "hta-ns_resolution_trace_rank-0.json.gz": "ns_resolution",
    "hta-rank_non_gpu_rank_non_gpu.json.gz": "rank_non_gpu",
    "hta-timeline_analysis_sampled_rank-0.json.gz": "timeline_rank0",
    "hta-trace_filter_sampled_rank-1.json.gz": "trace_filter_rank1",
    "hta-triton_example_triton_example.json.gz": "triton",
    "tb-gpu_metrics_input.json": "tb_gpu_metrics",
}


def short_name(file_name):
    if file_name in SHORT_NAMES:
        return SHORT_NAMES[file_name]
    return re.sub(r"[^A-Za-z0-9]", "_", re.sub(r"^(hta|tb)-", "", file_name.split(".json")[0]))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="tests/data/traces/kineto")
    parser.add_argument("--out", default=os.path.join(here, "expected.json"))
    a = parser.parse_args()
    # Every gzip trace, plus the TensorBoard plugin's test input (the only trace with a
    # DataLoader inside a ProfilerStep); tb-gpu_metrics_expected.json is not a trace.
    files = sorted(glob.glob(os.path.join(a.data, "*.json.gz")))
    files += [p for p in [os.path.join(a.data, "tb-gpu_metrics_input.json")] if os.path.exists(p)]
    out = {"generator": "tests/data/golden_rules/derive.py", "unit": "ns", "traces": {}}
    table = []
    for path in files:
        name = os.path.basename(path)
        t = Trace(path)
        entry = {"short": short_name(name), "gpu_events": len(t.gpu), "devices": t.devices,
                 "steps": len(t.steps), "runtime_calls": len(t.runtime),
                 "memory_events": t.memory_events, "rules": {}}
        for rule in RULES:
            entry["rules"][rule] = EVALUATORS[rule](t)
        out["traces"][name] = entry
        fired = [r for r in RULES if entry["rules"][r]["fires"]]
        table.append((entry["short"], len(t.gpu), fired))
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=False, default=str)
        f.write("\n")
    for short, n, fired in table:
        print(f"{short:55s} gpu_events={n:5d}  fires: {', '.join(fired) or '-'}")
    print()
    for name, entry in out["traces"].items():
        print(f"== {entry['short']}")
        for rule in RULES:
            v = entry["rules"][rule]
            if v["fires"]:
                for f in v["findings"]:
                    nums = ", ".join(f"{k}={x}" for k, x in f.items()
                                     if k != "info" and not isinstance(x, float))
                    print(f"   FIRES  {rule:28s} {nums}")
            else:
                print(f"   silent {rule:28s} {v['why'][:100]}"
                      + (f"  [needs {v['not_evaluable_needs']}]" if "not_evaluable_needs" in v else ""))
    never = [r for r in RULES if not any(e["rules"][r]["fires"] for e in out["traces"].values())]
    print("\nrules that fire on no shared trace:", ", ".join(never))
    return 0


if __name__ == "__main__":
    sys.exit(main())
