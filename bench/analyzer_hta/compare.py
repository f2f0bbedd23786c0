#!/usr/bin/env python3
"""fleetscope vs Holistic Trace Analysis (HTA): load + temporal breakdown + idle-time breakdown.

Times, in one run and on the same shared Kineto traces,
  HTA:        TraceAnalysis(trace_dir) + get_temporal_breakdown() + get_idle_time_breakdown()
  fleetscope: Kineto import into a trace database + load_capture + temporal_breakdown()
              + idle_time_breakdown()   (the analyzer_hta_bench Google Benchmark program)
and prints a table with the ratio HTA time / fleetscope time per trace and in total.

HTA is not a build or test dependency. This script creates a venv outside the repository when the
one named by --venv does not exist (python3 -m venv VENV; VENV/bin/pip install
holistictraceanalysis==VERSION) and runs HTA there. It is not part of `make test`.

Usage (from the repository root, after building analyzer_hta_bench in BUILD):
  python3 bench/analyzer_hta/compare.py --build-dir BUILD [--venv ~/.cache/fleetscope/hta-venv]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HTA_VERSION = "0.5.0"  # the version that made tests/data/hta_reference/hta_reference.json

TRACES = [
    "hta-ns_resolution_trace_rank-0.json.gz",
    "hta-critical_path_alexnet_trace.json.gz",
    "hta-critical_path_simple_add_trace.json.gz",
    "hta-nccl_parser_config_nccl_data.json.gz",
    "hta-timeline_analysis_sampled_rank-0.json.gz",
    "hta-trace_filter_sampled_rank-1.json.gz",
    "hta-triton_example_triton_example.json.gz",
    "hta-critical_path_cuda_event_sync_event_sync_trace.json.gz",
    "hta-critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def log(message):
    print(message, file=sys.stderr, flush=True)


# ---- HTA side (runs inside the venv: this same file with --hta-worker) ---------------------------


def hta_worker(traces_dir, repetitions):
    import contextlib
    import io
    import logging
    import shutil
    import tempfile

    logging.disable(logging.WARNING)  # HTA logs every parse step at WARNING
    from hta.trace_analysis import TraceAnalysis

    results = {}
    for name in TRACES:
        times = []
        for _ in range(repetitions):
            with tempfile.TemporaryDirectory(prefix="hta-bench-") as tmp:
                shutil.copy(os.path.join(traces_dir, name), os.path.join(tmp, name))
                with contextlib.redirect_stdout(io.StringIO()):
                    wall, cpu = time.perf_counter(), time.process_time()
                    analysis = TraceAnalysis(trace_dir=tmp)
                    analysis.get_temporal_breakdown(visualize=False)
                    analysis.get_idle_time_breakdown(ranks=analysis.t.get_ranks(), visualize=False)
                    times.append((time.perf_counter() - wall, time.process_time() - cpu))
        results[name] = {
            "wall_ms": 1000 * statistics.median(t[0] for t in times),
            "cpu_ms": 1000 * statistics.median(t[1] for t in times),
        }
        log(f"  HTA {name}: {results[name]['cpu_ms']:.1f} ms CPU, {results[name]['wall_ms']:.1f} ms wall")
    json.dump(results, sys.stdout)


def ensure_venv(venv):
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        log(f"creating {venv} with holistictraceanalysis=={HTA_VERSION} (PyPI)")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run(
            [python, "-m", "pip", "install", "--quiet", f"holistictraceanalysis=={HTA_VERSION}"],
            check=True,
        )
    version = subprocess.run(
        [python, "-c", "from importlib.metadata import version; print(version('holistictraceanalysis'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    return python, version


def run_hta(python, traces_dir, repetitions):
    out = subprocess.run(
        [python, os.path.abspath(__file__), "--hta-worker", "--traces-dir", traces_dir,
         "--repetitions", str(repetitions)],
        check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    return json.loads(out)


# ---- fleetscope side -----------------------------------------------------------------------------


# What analyzer_hta_bench times, per trace:
#   AnalyzeDirect        `fleetscope analyze TRACE.json.gz`: import into a CaptureData + breakdowns;
#   AnalyzeInMemory      Kineto import into an in-memory database + load + both breakdowns (the
#                        same CaptureData as AnalyzeDirect, through SQLite);
#   ImportAndBreakdowns  `fleetscope import` into a new database file + load + both breakdowns;
#   LoadAndBreakdowns    load from an existing trace database + both breakdowns: the analysis of
#                        what the collector or an earlier import stored.
FAMILIES = ("AnalyzeDirect", "AnalyzeInMemory", "ImportAndBreakdowns", "LoadAndBreakdowns")


def run_fleetscope(bench, repetitions):
    """{family: {trace: {wall_ms, cpu_ms, gpu_events}}} for every family in FAMILIES, medians."""
    out = subprocess.run(
        [bench, "--benchmark_format=json", f"--benchmark_repetitions={repetitions}",
         "--benchmark_filter=^(" + "|".join(FAMILIES) + ")/"],
        check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    runs = {}
    for row in json.loads(out)["benchmarks"]:
        if row.get("run_type") != "iteration":
            continue
        family, name = row["run_name"].split("/")[:2]  # FAMILY/TRACE/process_time/real_time
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[row["time_unit"]]
        entry = runs.setdefault(family, {}).setdefault(name, {"wall": [], "cpu": [], "gpu_events": 0})
        entry["wall"].append(row["real_time"] * scale)
        entry["cpu"].append(row["cpu_time"] * scale)
        entry["gpu_events"] = int(row.get("gpu_events", 0))
    return {
        family: {
            name: {"wall_ms": statistics.median(r["wall"]), "cpu_ms": statistics.median(r["cpu"]),
                   "gpu_events": r["gpu_events"]}
            for name, r in traces.items()
        }
        for family, traces in runs.items()
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", help="CMake build dir with bench/analyzer_hta/analyzer_hta_bench")
    parser.add_argument("--venv", default=os.path.expanduser("~/.cache/fleetscope/hta-venv"),
                        help="venv with holistictraceanalysis (created when missing)")
    parser.add_argument("--traces-dir", default=os.path.join(REPO, "..", "shared", "data", "traces", "kineto"))
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--hta-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    traces_dir = os.path.abspath(args.traces_dir)

    if args.hta_worker:
        hta_worker(traces_dir, args.repetitions)
        return 0
    if not args.build_dir:
        parser.error("--build-dir is required")
    bench = os.path.join(args.build_dir, "bench", "analyzer_hta", "analyzer_hta_bench")
    if not os.path.exists(bench):
        parser.error(f"{bench} not built (cmake --build {args.build_dir} --target analyzer_hta_bench)")

    python, version = ensure_venv(args.venv)
    log(f"HTA {version}: {args.repetitions} runs per trace")
    hta = run_hta(python, traces_dir, args.repetitions)
    log(f"fleetscope: {args.repetitions} repetitions per trace")
    fleetscope = run_fleetscope(bench, args.repetitions)

    print(f"HTA {version} (load + temporal + idle breakdown) vs fleetscope (import + load + "
          f"temporal + idle breakdown); median of {args.repetitions} runs; one process each. "
          f"CPU time is the whole process's on both sides.")
    for family in FAMILIES:
        print()
        print(f"fleetscope path: {family}")
        print()
        print("| trace | GPU events | HTA CPU ms | fleetscope CPU ms | HTA / fleetscope (CPU) "
              "| HTA wall ms | fleetscope wall ms | HTA / fleetscope (wall) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        totals = {"hc": 0.0, "fc": 0.0, "hw": 0.0, "fw": 0.0}
        for name in TRACES:
            h, f = hta[name], fleetscope[family][name]
            totals["hc"] += h["cpu_ms"]
            totals["fc"] += f["cpu_ms"]
            totals["hw"] += h["wall_ms"]
            totals["fw"] += f["wall_ms"]
            short = name.removeprefix("hta-").removesuffix(".json.gz")
            print(f"| {short} | {f['gpu_events']} | {h['cpu_ms']:.1f} | {f['cpu_ms']:.2f} | "
                  f"{h['cpu_ms'] / f['cpu_ms']:.1f}x | {h['wall_ms']:.1f} | {f['wall_ms']:.2f} | "
                  f"{h['wall_ms'] / f['wall_ms']:.1f}x |")
        print(f"| **all {len(TRACES)} traces** | | {totals['hc']:.1f} | {totals['fc']:.2f} | "
              f"**{totals['hc'] / totals['fc']:.1f}x** | {totals['hw']:.1f} | {totals['fw']:.2f} | "
              f"**{totals['hw'] / totals['fw']:.1f}x** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
