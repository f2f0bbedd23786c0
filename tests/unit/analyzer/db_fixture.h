// Writes the shared hand-computed case (see metrics_test.cpp) into a trace database through
// store::Writer, plus the facts the loader and consolidation read (GPU, workflow, process, steps,
// memory events).
#pragma once

#include "capture_builder.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::analyzer::testing {

constexpr int64_t kBase = 1'000'000'000;
constexpr int64_t kPid = 4242;

struct FixtureIds {
  int64_t capture = 0;
  int64_t workflow = 0;
};

inline FixtureIds write_shared_case(const std::string& path,
                                    const std::string& workflow_name = "resnet-train") {
  store::Writer writer(store::Database::create(path));
  store::Capture capture;
  capture.kind = store::CaptureKind::imported;
  capture.source = "test";
  capture.source_path = "hand-computed";
  capture.gpu_vendor = "nvidia";
  FixtureIds ids;
  ids.capture = writer.add_capture(capture);
  store::Workflow wf;
  wf.name = workflow_name;
  wf.user = "alice";
  wf.labels_json = R"({"priority":"batch"})";
  ids.workflow = writer.add_workflow(wf);
  store::Process proc;
  proc.globalPid = store::global_pid(kPid);
  proc.pid = kPid;
  proc.workflow_id = ids.workflow;
  writer.upsert_process(proc);
  store::GpuInfo gpu;
  gpu.id = 0;
  gpu.captureId = ids.capture;
  gpu.name = "NVIDIA A100-SXM4-40GB";
  gpu.totalMemory = int64_t{40} << 30;
  writer.add_gpu(gpu);

  int64_t corr = 1;
  const int64_t tid = store::global_tid(kPid, kPid);
  auto at = [](int64_t t_us) { return kBase + us(t_us); };
  auto call = [&](int64_t s, int64_t e, const std::string& api) {
    store::RuntimeCall c;
    c.start = at(s), c.end = at(e), c.globalTid = tid, c.correlationId = corr, c.name = api;
    c.captureId = ids.capture;
    writer.add(c);
    return corr++;
  };
  auto kernel = [&](int64_t s, int64_t e, int32_t stream, const std::string& name,
                    std::optional<int64_t> correlation) {
    store::Kernel k;
    k.start = at(s), k.end = at(e), k.deviceId = 0, k.streamId = stream;
    k.correlationId = correlation, k.globalPid = store::global_pid(kPid);
    k.demangledName = name, k.captureId = ids.capture;
    writer.add(k);
  };
  kernel(0, 100, 7, "gemm", call(-10, -5, "cudaLaunchKernel"));
  {
    store::Memcpy m;
    m.start = at(290), m.end = at(320), m.deviceId = 0, m.streamId = 7;
    m.correlationId = call(280, 285, "cudaMemcpyAsync"), m.globalPid = store::global_pid(kPid);
    m.bytes = 4096, m.copyKind = store::kMemcpyHtoD, m.srcKind = store::kMemPageable;
    m.dstKind = store::kMemDevice, m.captureId = ids.capture;
    writer.add(m);
  }
  kernel(400, 500, 7, "gemm", call(250, 255, "cudaLaunchKernel"));
  kernel(50, 150, 8, "gemm", call(40, 45, "cudaLaunchKernel"));
  kernel(160, 170, 8, "add", call(100, 112, "cudaLaunchKernel"));
  kernel(200, 300, 9, "ncclKernel_AllReduce_RING_LL_Sum_float", std::nullopt);

  // Two steps of 250 µs; memory: 1 GiB persistent, then 256 MiB / 512 MiB of per-step peaks.
  for (int step = 0; step < 2; ++step) {
    store::Iteration it;
    it.captureId = ids.capture, it.globalPid = store::global_pid(kPid), it.step = 10 + step;
    it.start = at(step * 250), it.end = at(step * 250 + 250);
    writer.add(it);
  }
  auto mem = [&](int64_t t_us, int64_t bytes) {
    store::MemoryEvent e;
    e.ts = at(t_us), e.captureId = ids.capture, e.globalPid = store::global_pid(kPid);
    e.deviceId = 0, e.bytes = bytes;
    writer.add(e);
  };
  mem(-50, int64_t{1} << 30);
  mem(10, int64_t{256} << 20), mem(100, -(int64_t{256} << 20));
  mem(260, int64_t{512} << 20), mem(300, -(int64_t{512} << 20));
  writer.finish();
  return ids;
}

}  // namespace fleetscope::analyzer::testing
