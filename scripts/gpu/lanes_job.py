"""A PyTorch job for the lanes section of scripts/gpu-check (run under libfleetscope_lanes.so).

  lanes_job.py fill CHUNK_MIB        allocate CHUNK_MIB tensors until CUDA reports out of memory;
                                     prints filled_bytes=N and oom=1
  lanes_job.py busy SECONDS          matmul loop for SECONDS; prints iterations=N errors=N
  lanes_job.py loop STEPS [--gate]   small training-like loop; with --gate calls
                                     fleetscope_step_boundary (ctypes) at each step; prints
                                     loop_seconds=S
"""
import ctypes
import sys
import time

import torch


def fill(chunk_mib):
    chunks, filled = [], 0
    try:
        while True:
            chunks.append(torch.empty(chunk_mib << 20, dtype=torch.uint8, device="cuda"))
            filled += chunk_mib << 20
    except torch.cuda.OutOfMemoryError:
        print(f"filled_bytes={filled} oom=1", flush=True)
    free, total = torch.cuda.mem_get_info()
    print(f"mem_get_info_free={free} mem_get_info_total={total}", flush=True)


def busy(seconds):
    a = torch.randn(2048, 2048, device="cuda")
    iterations, errors, end = 0, 0, time.time() + seconds
    while time.time() < end:
        try:
            b = a @ a
            b.sum().item()
            iterations += 1
        except RuntimeError:
            errors += 1
    print(f"iterations={iterations} errors={errors}", flush=True)


def loop(steps, gate):
    step = ctypes.CDLL(None).fleetscope_step_boundary if gate else (lambda: None)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")
    for _ in range(20):
        optimizer.zero_grad(); torch.nn.functional.cross_entropy(model(x), y).backward(); optimizer.step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    torch.cuda.synchronize()
    print(f"loop_seconds={time.perf_counter() - start:.6f}", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "fill":
        fill(int(sys.argv[2]))
    elif mode == "busy":
        busy(float(sys.argv[2]))
    else:
        loop(int(sys.argv[2]), "--gate" in sys.argv)
