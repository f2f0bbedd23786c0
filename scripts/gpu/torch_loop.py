#!/usr/bin/env python3
"""A small PyTorch training loop for overhead measurements (scripts/gpu-check).

Trains a 4-layer MLP on random data on the GPU. Each step is an NVTX range named "step" so that
the fleetscope agent's iteration window can count it. Prints the time of the measured loop
(after warm-up, synchronized) as `loop_seconds=...`. With --torch-profiler the same loop runs
under torch.profiler (CPU + CUDA activities), for comparison with the agent.
"""
import argparse
import os
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--torch-profiler", action="store_true",
                        help="run the measured loop under torch.profiler")
    parser.add_argument("--profiler-trace", default="",
                        help="where torch.profiler writes its Chrome trace (default: none)")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA device", file=sys.stderr)
        return 1
    device = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(args.width, 10)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(args.batch, args.width, device=device)
    y = torch.randint(0, 10, (args.batch,), device=device)

    def step() -> None:
        torch.cuda.nvtx.range_push("step")
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        torch.cuda.nvtx.range_pop()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    # CUDA is up (the agent is loaded): scripts/gpu-check waits for this line before it opens
    # windows or sends signals, since importing torch alone takes seconds.
    print("ready", flush=True)

    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            start = time.perf_counter()
            for _ in range(args.steps):
                step()
                prof.step()
            torch.cuda.synchronize()
            loop = time.perf_counter() - start
        if args.profiler_trace:
            prof.export_chrome_trace(args.profiler_trace)
    else:
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
        loop = time.perf_counter() - start

    print(f"loop_seconds={loop:.6f} steps={args.steps} pid={os.getpid()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
