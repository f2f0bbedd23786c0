#!/usr/bin/env python3
"""Write mtia_dma_rank-0.json.gz: a small hand-made MTIA trace in Kineto's format.

No real MTIA trace is in ../shared/data. This one has what HTA's kernel-type rule turns on: MTIA
DMA transfers named `dma_request` (memory in HTA's get_kernel_type, `^dma`) between compute kernels,
one DMA on a second stream overlapping compute. Event categories as libkineto names them
(ActivityType.h: mtia_runtime = host runtime calls, mtia_ccp_events = on-device work). HTA 0.5.0's
numbers for it are in ../hta_reference_mtia.json (compute_reference.py, README.md there).
"""
import gzip
import json
import os

HOST_PID, HOST_TID = 100, 101
events = [{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": HOST_PID, "tid": HOST_TID,
           "ts": 990, "dur": 600, "args": {}}]
# (name, start µs, duration µs, stream): DMA in, compute, a prefetch DMA on stream 2 overlapping
# the first matmul, DMA out, compute.
PLAN = [("dma_request", 1000, 40, 1), ("mtia_matmul_kernel", 1050, 300, 1),
        ("mtia_gelu_kernel", 1360, 90, 1), ("dma_request", 1200, 60, 2),
        ("mtia_matmul_kernel", 1460, 250, 1), ("dma_request", 1720, 35, 1),
        ("mtia_layernorm_kernel", 1800, 80, 1)]
launch_ts = 995
for correlation, (name, ts, dur, stream) in enumerate(PLAN, start=1):
    api = "mtiaMemcpyAsync" if name.startswith("dma") else "mtiaLaunchKernel"
    events.append({"ph": "X", "cat": "mtia_runtime", "name": api, "pid": HOST_PID,
                   "tid": HOST_TID, "ts": launch_ts, "dur": 4,
                   "args": {"correlation": correlation}})
    events.append({"ph": "X", "cat": "mtia_ccp_events", "name": name, "pid": 1, "tid": stream,
                   "ts": ts, "dur": dur,
                   "args": {"device": 1, "stream": stream, "correlation": correlation}})
    launch_ts += 6
doc = {"schemaVersion": 1, "distributedInfo": {"backend": "none", "rank": 0, "world_size": 1},
       "deviceProperties": [], "traceEvents": events, "traceName": "mtia_dma_rank-0.json"}
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mtia_dma_rank-0.json.gz")
with gzip.GzipFile(out, "wb", mtime=0) as fh:
    fh.write(json.dumps(doc, indent=0).encode())
