#!/usr/bin/env python3
"""Co-location measurement for the sharer's interference model (scripts/gpu-check, section 3).

One process runs a GPU workload in a loop and reports its mean iteration time and its GPU
utilization alone (kernel time / iteration time, from CUDA events):

  colocation.py run --kind compute|memory --duty D --seconds S [--start-at EPOCH]

  compute: fp16/fp32 matrix multiplications (SM-bound); memory: large tensor copies (DRAM
  bandwidth-bound). --duty is the share of each iteration spent in GPU work; the rest is a host
  sleep, so the job leaves the GPU idle like the jobs the planner co-locates.

The driver (`colocation.py pairs --out RUNS.csv`) runs every workload alone, then every pair
together on one GPU (two processes started at the same instant), and writes one row per job per
pair: own_utilization, others_utilization, measured_slowdown (= iteration time together / alone),
the CSV that `fleetscope share calibrate --runs` fits. It also prints the CUDA context memory of
one process (device memory in use after CUDA and PyTorch initialise, before any tensor).
"""
import argparse
import csv
import itertools
import json
import os
import subprocess
import sys
import time


def run_workload(kind, duty, seconds, start_at):
    import torch

    torch.cuda.init()
    device = torch.device("cuda")
    if kind == "compute":
        a = torch.randn(4096, 4096, device=device, dtype=torch.float16)
        b = torch.randn(4096, 4096, device=device, dtype=torch.float16)

        def work():
            for _ in range(4):
                torch.mm(a, b)
    else:
        src = torch.empty(256 * 1024 * 1024 // 4, device=device, dtype=torch.float32)
        dst = torch.empty_like(src)

        def work():
            for _ in range(4):
                dst.copy_(src)

    for _ in range(5):  # warm-up: cuBLAS handles, allocator
        work()
    torch.cuda.synchronize()
    # Size the host sleep so that GPU work is `duty` of an iteration when alone.
    begin = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    begin.record()
    work()
    end.record()
    end.synchronize()
    gpu_s = begin.elapsed_time(end) / 1000.0
    sleep_s = gpu_s * (1.0 - duty) / duty if duty < 1 else 0.0
    if start_at:
        time.sleep(max(0.0, start_at - time.time()))
    iterations = 0
    busy = 0.0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        begin.record()
        work()
        end.record()
        end.synchronize()
        busy += begin.elapsed_time(end) / 1000.0
        if sleep_s > 0:
            time.sleep(sleep_s)
        iterations += 1
    elapsed = time.perf_counter() - t0
    print(json.dumps({"kind": kind, "duty": duty, "iterations": iterations,
                      "iteration_s": elapsed / iterations, "utilization": min(1.0, busy / elapsed)}))


def context_bytes():
    import torch

    torch.cuda.init()
    torch.empty(0, device="cuda")
    free, total = torch.cuda.mem_get_info()
    return total - free


def run_pairs(out_path, seconds):
    me = os.path.abspath(__file__)
    workloads = [("compute", 1.0), ("compute", 0.5), ("memory", 1.0), ("memory", 0.5)]

    def launch(kind, duty, start_at):
        return subprocess.Popen([sys.executable, me, "run", "--kind", kind, "--duty", str(duty),
                                 "--seconds", str(seconds), "--start-at", str(start_at)],
                                stdout=subprocess.PIPE, text=True)

    alone = {}
    for kind, duty in workloads:
        process = launch(kind, duty, 0)
        alone[(kind, duty)] = json.loads(process.communicate()[0].strip().splitlines()[-1])
        print("alone", kind, duty, alone[(kind, duty)], file=sys.stderr)
    rows = []
    for first, second in itertools.combinations_with_replacement(workloads, 2):
        start_at = time.time() + 4.0  # both processes initialise, then start together
        processes = [launch(*first, start_at), launch(*second, start_at)]
        results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in processes]
        for me_key, other_key, result in ((first, second, results[0]),
                                          (second, first, results[1])):
            rows.append({"own_utilization": round(alone[me_key]["utilization"], 4),
                         "others_utilization": round(alone[other_key]["utilization"], 4),
                         "measured_slowdown": round(result["iteration_s"] /
                                                    alone[me_key]["iteration_s"], 4),
                         "pair": f"{me_key[0]}@{me_key[1]}+{other_key[0]}@{other_key[1]}",
                         "utilization_source": "measured_alone"})
        print("pair", first, second, rows[-2:], file=sys.stderr)
    import torch

    write_runs(out_path, rows, [
        f"Co-location slowdowns measured on one {torch.cuda.get_device_name()} "
        f"(torch {torch.__version__}, CUDA {torch.version.cuda}) on "
        f"{time.strftime('%Y-%m-%d', time.gmtime())} by scripts/gpu/colocation.py pairs "
        f"--seconds {seconds:g}: every workload alone, then every pair together.",
        "measured_slowdown = iteration time together / alone; own/others_utilization = kernel",
        "time / iteration time of each workload alone (CUDA events).",
    ])
    print(json.dumps({"runs": len(rows), "context_bytes": context_bytes()}))


COLUMNS = ["own_utilization", "others_utilization", "measured_slowdown", "pair",
           "utilization_source"]


def write_runs(out_path, rows, comments):
    """Writes the calibration CSV in the one format `fleetscope share calibrate --runs` reads and
    the published default (sharer/data/gavel_v100_colocation.csv) uses: '#' comment lines saying
    where the numbers come from, then the header, then one row per job per pair."""
    with open(out_path, "w", newline="") as handle:
        for line in comments:
            handle.write(f"# {line}\n")
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--kind", choices=["compute", "memory"], required=True)
    run.add_argument("--duty", type=float, default=1.0)
    run.add_argument("--seconds", type=float, default=10.0)
    run.add_argument("--start-at", type=float, default=0.0)
    pairs = sub.add_parser("pairs")
    pairs.add_argument("--out", required=True)
    pairs.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    if args.command == "run":
        if not 0 < args.duty <= 1:
            parser.error("--duty must be in (0, 1]")
        run_workload(args.kind, args.duty, args.seconds, args.start_at)
    else:
        run_pairs(args.out, args.seconds)


if __name__ == "__main__":
    main()
