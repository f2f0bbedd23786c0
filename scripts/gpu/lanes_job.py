"""A PyTorch job for the lanes section of scripts/gpu-check (run under libfleetscope_lanes.so).

  lanes_job.py fill CHUNK_MIB        allocate CHUNK_MIB tensors until CUDA reports out of memory;
                                     prints filled_bytes=N and oom=1
  lanes_job.py busy SECONDS          matmul loop for SECONDS; prints iterations=N errors=N
  lanes_job.py loop STEPS [--gate]   small training-like loop; with --gate calls
                                     fleetscope_step_boundary (ctypes) at each step; prints
                                     loop_seconds=S
  lanes_job.py train STEPS [--gate] [--width N] [--batch N]
                                     an MLP training loop (fleetscope_step_boundary at each step
                                     with --gate); prints persistent_bytes (model + optimizer
                                     state), ephemeral_bytes (peak within a step above that),
                                     loop_seconds and step_ms. Run with
                                     PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync for the
                                     async-pool check.
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


def option(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def train(steps, gate, width, batch):
    """P and T as the sharer defines them: P is what stays allocated between steps (weights,
    gradients, optimizer state), T the peak above P within a step (activations, workspace)."""
    step = ctypes.CDLL(None).fleetscope_step_boundary if gate else (lambda: None)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10)).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, width, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")

    def one_step():
        optimizer.zero_grad(set_to_none=False)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    for _ in range(5):  # optimizer state and gradients exist from here on
        one_step()
    torch.cuda.synchronize()
    persistent = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(steps):
        step()
        if not gate:  # the analyzer's iteration boundaries when traced (the gate has its own)
            torch.cuda.nvtx.range_push("step")
        one_step()
        if not gate:
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    ephemeral = torch.cuda.max_memory_allocated() - persistent
    print(f"persistent_bytes={persistent} ephemeral_bytes={ephemeral} loop_seconds={seconds:.6f} "
          f"step_ms={seconds / steps * 1e3:.3f}", flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "fill":
        fill(int(sys.argv[2]))
    elif mode == "busy":
        busy(float(sys.argv[2]))
    elif mode == "train":
        train(int(sys.argv[2]), "--gate" in sys.argv, option("--width", 4096), option("--batch", 1024))
    else:
        loop(int(sys.argv[2]), "--gate" in sys.argv)
