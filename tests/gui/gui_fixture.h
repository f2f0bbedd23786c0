// A small trace database with known contents for the GUI tests: one host, one process (workflow
// "train"), GPU 0 with streams 7 and 13, kernels with known names and times launched by runtime
// calls (correlation ids), a memcpy, CPU ops, iterations, memory events, and one stored finding
// of an earlier run that the GUI does not show: the capture's rows are there, so its findings are
// the analyzer's now (analyzer/analysis.h capture_findings(): few_blocks, worst instance the gemm
// at [1000, 1400) µs, and tensor_cores_unused). Times are kBase + µs offsets.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "fleetscope/store/table_io.h"
#include "fleetscope/store/writer.h"

namespace fleetscope::gui::testing {

constexpr int64_t kBase = 5'000'000'000;
constexpr int64_t kPid = 321;
inline int64_t at_us(int64_t us) {
  return kBase + us * 1000;
}

struct Fixture {
  int64_t capture = 0;
  // The worst instance (the focus) of the analyzer's few_blocks finding: the first "gemm" kernel,
  // at [1000, 1400) µs on stream 7.
  int64_t finding_begin = at_us(1000), finding_end = at_us(1400);
};

// `gemm_us`: the gemm kernel's length in each 1 ms step (900: the GPU 90 % busy, not a
// co-location candidate).
inline Fixture write_fixture(const std::string& path, int64_t gemm_us = 400) {
  store::Writer writer(store::Database::create(path));
  Fixture f;
  store::Capture capture;
  capture.source = "test";
  capture.source_path = "gui-fixture";
  capture.gpu_vendor = "nvidia";
  f.capture = writer.add_capture(capture);
  store::Host host;
  host.hostname = "node-a";
  const int64_t host_id = writer.add_host(host);
  store::Workflow wf;
  wf.name = "train";
  wf.user = "alice";
  const int64_t wf_id = writer.add_workflow(wf);
  store::Process proc;
  proc.globalPid = store::global_pid(kPid);
  proc.pid = kPid;
  proc.host_id = host_id;
  proc.workflow_id = wf_id;
  writer.upsert_process(proc);
  store::GpuInfo gpu;
  gpu.captureId = f.capture;
  gpu.name = "NVIDIA A100";
  gpu.totalMemory = int64_t{40} << 30;
  gpu.smCount = 108;
  writer.add_gpu(gpu);
  const int64_t tid = store::global_tid(kPid, kPid + 1);
  int64_t corr = 1;
  auto launch = [&](int64_t s_us, int64_t e_us, int32_t stream, const std::string& name) {
    store::RuntimeCall c;
    c.start = at_us(s_us - 20), c.end = at_us(s_us - 10), c.globalTid = tid;
    c.correlationId = corr, c.name = "cudaLaunchKernel", c.captureId = f.capture;
    writer.add(c);
    store::Kernel k;
    k.start = at_us(s_us), k.end = at_us(e_us), k.deviceId = 0, k.streamId = stream;
    k.correlationId = corr++, k.globalPid = store::global_pid(kPid);
    k.demangledName = "void " + name + "<float>(float*)";
    k.shortName = name;
    k.gridX = 80, k.gridY = k.gridZ = 1, k.blockX = 256, k.blockY = k.blockZ = 1;
    k.captureId = f.capture;
    writer.add(k);
  };
  // The model's weights: 1 GiB held for the whole run (P).
  store::MemoryEvent weights;
  weights.ts = at_us(100), weights.captureId = f.capture,
  weights.globalPid = store::global_pid(kPid);
  weights.bytes = int64_t{1} << 30, weights.total_allocated = int64_t{1} << 30;
  writer.add(weights);
  // Ten steps of 1 ms: gemm 400 µs (gemm_us) on stream 7, relu 100 µs on stream 13, then idle.
  for (int step = 0; step < 10; ++step) {
    const int64_t s = 1000 + step * 1000;
    launch(s, s + gemm_us, 7, "gemm");
    launch(s + 450, s + 550, 13, "relu");
    store::Iteration it;
    it.captureId = f.capture, it.globalPid = store::global_pid(kPid), it.step = step;
    it.start = at_us(s - 50), it.end = at_us(s + 950);
    writer.add(it);
    store::CpuOp op;
    op.start = at_us(s - 40), op.end = at_us(s + 10), op.globalTid = tid, op.name = "aten::mm";
    op.captureId = f.capture;
    writer.add(op);
    store::MemoryEvent alloc;
    alloc.ts = at_us(s + 1), alloc.captureId = f.capture, alloc.globalPid = store::global_pid(kPid);
    alloc.bytes = 64 << 20, alloc.total_allocated = (int64_t{1} << 30) + (64 << 20);
    writer.add(alloc);
    store::MemoryEvent release = alloc;
    release.ts = at_us(s + 600), release.bytes = -(64 << 20),
    release.total_allocated = int64_t{1} << 30;
    writer.add(release);
  }
  store::Memcpy copy;
  copy.start = at_us(500), copy.end = at_us(700), copy.deviceId = 0, copy.streamId = 7;
  copy.bytes = 1 << 20, copy.copyKind = store::kMemcpyHtoD,
  copy.globalPid = store::global_pid(kPid);
  copy.captureId = f.capture;
  writer.add(copy);
  writer.flush();
  store::Finding finding;
  finding.captureId = f.capture;
  finding.rule = "gpu_idle_gaps";
  finding.severity = "high";
  finding.deviceId = 0;
  finding.window_start = at_us(6000);
  finding.window_end = at_us(6500);
  finding.impact_ns = 4'000'000;
  finding.evidence_json = R"({"gaps":10})";
  finding.recommendation = "Overlap the steps.";
  writer.add_finding(finding);
  writer.finish();
  return f;
}

// The daemon's sharing records in a database (as HostStore writes them): a lane_plans row and its
// sharing_events, through the tables' generated insert code (table_io.h), so a column added in
// schema/tables.py reaches these rows too. Returns the plan's id; events whose plan_id is
// `kThisPlan` get it.
constexpr int64_t kThisPlan = -1;
inline int64_t write_sharing_records(const std::string& path, store::LanePlan plan,
                                     std::vector<store::SharingEvent> events) {
  auto db = store::Database::open(path, store::OpenMode::read_write);
  auto p = db.prepare(store::io::insert_sql<store::LanePlan>());
  store::io::bind_row(p, plan);
  p.execute();
  const int64_t plan_id = sqlite3_last_insert_rowid(db.raw());
  auto e = db.prepare(store::io::insert_sql<store::SharingEvent>());
  for (auto& event : events) {
    if (event.plan_id == kThisPlan) event.plan_id = plan_id;
    store::io::bind_row(e, event);
    e.execute();
  }
  return plan_id;
}

}  // namespace fleetscope::gui::testing
