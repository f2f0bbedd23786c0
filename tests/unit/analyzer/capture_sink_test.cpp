// analyzer::CaptureSink / load_trace_file: importer rows straight into a CaptureData must give
// exactly the CaptureData of the database path (importers::import_to_memory + load_capture).
// Equality: every column of every array, names compared as text (the sink also reproduces the
// store's string ids, checked separately), and end to end the findings and metrics_json.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture_builder.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/analyzer/loader.h"
#include "fleetscope/analyzer/metrics_json.h"
#include "fleetscope/importers/importers.h"
#include "fleetscope/store/reader.h"

namespace fleetscope::analyzer {
namespace {

bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// Compares a name-id column (std::vector or CompactColumn) as text.
template <class Column>
void expect_same_names(const CaptureData& a, const Column& ia, const CaptureData& b,
                       const Column& ib, const std::string& what) {
  ASSERT_EQ(ia.size(), ib.size()) << what;
  for (size_t i = 0; i < ia.size(); ++i)
    if (a.name(ia[i]) != b.name(ib[i])) {
      ADD_FAILURE() << what << "[" << i << "]: " << a.name(ia[i]) << " vs " << b.name(ib[i]);
      return;
    }
}

// std::vector or CompactColumn.
template <class Column>
void expect_column(const Column& a, const Column& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i])) {
      ADD_FAILURE() << what << " differs at row " << i;
      return;
    }
}

template <class Column>
requires std::is_same_v<typename Column::value_type, double>
void expect_column(const Column& a, const Column& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_double(a[i], b[i])) {
      ADD_FAILURE() << what << " differs at row " << i << ": " << a[i] << " vs " << b[i];
      return;
    }
}

void expect_ranges(const CaptureData& a, const std::vector<HostRange>& ra, const CaptureData& b,
                   const std::vector<HostRange>& rb, const std::string& what) {
  ASSERT_EQ(ra.size(), rb.size()) << what;
  for (size_t i = 0; i < ra.size(); ++i) {
    const auto& x = ra[i];
    const auto& y = rb[i];
    if (x.start != y.start || x.end != y.end || x.global_tid != y.global_tid ||
        a.name(x.name_id) != b.name(y.name_id)) {
      ADD_FAILURE() << what << " differs at row " << i;
      return;
    }
  }
}

auto gpu_tie(const store::GpuInfo& g) {
  return std::tie(g.id, g.captureId, g.name, g.uuid, g.busLocation, g.totalMemory, g.smCount,
                  g.computeMajor, g.computeMinor, g.clockRate, g.memoryBandwidth,
                  g.maxThreadsPerBlock, g.maxWarpsPerSm, g.maxBlocksPerSm, g.maxRegistersPerSm,
                  g.maxShmemPerSm, g.threadsPerWarp, g.vendor);
}
auto process_tie(const store::Process& p) {
  return std::tie(p.globalPid, p.pid, p.host_id, p.workflow_id, p.rank, p.world_size, p.command,
                  p.start_ns, p.end_ns);
}
auto workflow_tie(const store::Workflow& w) {
  return std::tie(w.id, w.name, w.user, w.labels_json);
}
auto iteration_tie(const store::Iteration& i) {
  return std::tie(i.captureId, i.globalPid, i.step, i.start, i.end, i.source);
}
auto memory_tie(const store::MemoryEvent& m) {
  return std::tie(m.ts, m.captureId, m.globalPid, m.deviceId, m.address, m.bytes, m.total_allocated,
                  m.total_reserved);
}
auto capture_tie(const store::Capture& c) {
  return std::tie(c.id, c.kind, c.source, c.source_path, c.start_ns, c.end_ns, c.dropped_records,
                  c.collector_overhead_ns, c.gpu_vendor, c.note);
}
auto finding_tie(const store::Finding& f) {
  return std::tie(f.captureId, f.rule, f.severity, f.deviceId, f.window_start, f.window_end,
                  f.impact_ns, f.evidence_json, f.recommendation);
}

template <class T, class Tie>
void expect_rows(const std::vector<T>& a, const std::vector<T>& b, Tie tie,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    if (tie(a[i]) != tie(b[i])) {
      ADD_FAILURE() << what << " differs at row " << i;
      return;
    }
}

// a: database path, b: direct path.
void expect_same_capture(const CaptureData& a, const CaptureData& b) {
  EXPECT_TRUE(capture_tie(a.capture) == capture_tie(b.capture)) << "capture row";
  expect_rows(a.gpus, b.gpus, gpu_tie, "gpus");
  expect_rows(a.processes, b.processes, process_tie, "processes");
  expect_rows(a.workflows, b.workflows, workflow_tie, "workflows");
  expect_rows(a.iterations, b.iterations, iteration_tie, "iterations");
  expect_rows(a.memory, b.memory, memory_tie, "memory");
  expect_ranges(a, a.dataloader_ops, b, b.dataloader_ops, "dataloader_ops");
  expect_ranges(a, a.cpu_ops, b, b.cpu_ops, "cpu_ops");

  const GpuEvents &ga = a.gpu, &gb = b.gpu;
  expect_column(ga.start, gb.start, "gpu.start");
  expect_column(ga.end, gb.end, "gpu.end");
  expect_column(ga.device, gb.device, "gpu.device");
  expect_column(ga.stream, gb.stream, "gpu.stream");
  expect_column(ga.correlation, gb.correlation, "gpu.correlation");
  expect_column(ga.global_pid, gb.global_pid, "gpu.global_pid");
  expect_same_names(a, ga.name_id, b, gb.name_id, "gpu.name");
  expect_column(ga.kind, gb.kind, "gpu.kind");
  expect_column(ga.work_class, gb.work_class, "gpu.work_class");
  expect_column(ga.bytes, gb.bytes, "gpu.bytes");
  expect_column(ga.copy_kind, gb.copy_kind, "gpu.copy_kind");
  expect_column(ga.src_kind, gb.src_kind, "gpu.src_kind");
  expect_column(ga.dst_kind, gb.dst_kind, "gpu.dst_kind");
  expect_column(ga.grid_blocks, gb.grid_blocks, "gpu.grid_blocks");
  expect_column(ga.est_occupancy, gb.est_occupancy, "gpu.est_occupancy");

  const GpuSyncs &sa = a.gpu_syncs, &sb = b.gpu_syncs;
  expect_column(sa.start, sb.start, "gpu_syncs.start");
  expect_column(sa.end, sb.end, "gpu_syncs.end");
  expect_column(sa.device, sb.device, "gpu_syncs.device");
  expect_column(sa.stream, sb.stream, "gpu_syncs.stream");
  expect_same_names(a, sa.name_id, b, sb.name_id, "gpu_syncs.name");
  expect_column(sa.work_class, sb.work_class, "gpu_syncs.work_class");
  expect_column(sa.correlation, sb.correlation, "gpu_syncs.correlation");
  expect_column(sa.call_of, sb.call_of, "gpu_syncs.call_of");
  EXPECT_TRUE(a.sync_waits == b.sync_waits)
      << "sync_waits (" << a.sync_waits.size() << " vs " << b.sync_waits.size() << ")";

  const RuntimeCalls &ra = a.runtime, &rb = b.runtime;
  expect_column(ra.start, rb.start, "runtime.start");
  expect_column(ra.end, rb.end, "runtime.end");
  expect_column(ra.correlation, rb.correlation, "runtime.correlation");
  expect_same_names(a, ra.name_id, b, rb.name_id, "runtime.name");
  expect_column(ra.global_tid, rb.global_tid, "runtime.global_tid");

  // finalize()'s indexes.
  EXPECT_TRUE(a.events_by_device == b.events_by_device) << "events_by_device";
  EXPECT_TRUE(a.events_by_stream == b.events_by_stream) << "events_by_stream";
  expect_column(a.launch_call_of, b.launch_call_of, "launch_call_of");
  EXPECT_TRUE(a.busy_by_device == b.busy_by_device) << "busy_by_device";

  // Stronger than the text comparison above: the sink reproduces the store's string ids.
  EXPECT_TRUE(a.names == b.names) << "names (" << a.names.size() << " vs " << b.names.size() << ")";
}

void expect_same_analysis(const CaptureData& a, const CaptureData& b) {
  const AnalysisResult ra = analyze_capture(a);
  const AnalysisResult rb = analyze_capture(b);
  expect_rows(ra.findings, rb.findings, finding_tie, "findings");
  EXPECT_EQ(metrics_json(a).dump(), metrics_json(b).dump());
}

CaptureData load_through_database(const std::string& path) {
  importers::MemoryImport imported = importers::import_to_memory(path);
  const int64_t id = imported.result.capture_id;
  store::Reader reader(std::move(imported.database));
  return load_capture(reader, id);
}

TEST(CaptureSink, EverySharedKinetoTraceLoadsAsThroughTheDatabase) {
  const std::filesystem::path dir = std::string(FLEETSCOPE_SHARED_DATA) + "/traces/kineto";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << " is missing";
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.is_regular_file()) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 13u);
  int compared = 0;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    std::optional<CaptureData> a;
    std::string database_error;
    try {
      a = load_through_database(file);
    } catch (const InputError& e) {
      database_error = e.what();
    }
    if (!a) {  // not a trace the importer accepts: the direct path fails the same way
      try {
        load_trace_file(file);
        ADD_FAILURE() << "direct path accepted a file the database path rejects: "
                      << database_error;
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), database_error);
      }
      continue;
    }
    std::vector<std::string> stages;
    const CaptureData b =
        load_trace_file(file, [&](const std::string& stage, int64_t) { stages.push_back(stage); });
    EXPECT_EQ(stages,
              (std::vector<std::string>{"kernels", "gpu events", "runtime calls", "indexed"}));
    expect_same_capture(*a, b);
    expect_same_analysis(*a, b);
    ++compared;
  }
  EXPECT_GE(compared, 13);
}

// A small capture built by hand through both sinks, covering what the Kineto traces may lack:
// rows of every kind, a replaced iteration, ties in memory-event ts and iteration start,
// DataLoader ops spelled in another case, gpu_user_annotation ops, syncs without a stream or a
// device, kernels with and without a short name, and strings split over several batches.
void feed(store::RowSink& sink) {
  store::Capture capture;
  capture.source = "test";
  capture.source_path = "/x/trace.json";
  capture.id = sink.add_capture(capture);
  const int64_t cid = capture.id;
  const int64_t pid = store::global_pid(42);
  const int64_t tid = store::global_tid(42, 7);
  for (int i = 0; i < 20; ++i) {
    store::Kernel k;
    k.start = 1000 + 100 * (i % 7);
    k.end = k.start + 50 + (i % 3);
    k.deviceId = i % 2;
    k.streamId = 7 + i % 3;
    if (i % 4) k.correlationId = i;
    if (i % 5) k.globalPid = pid;
    k.demangledName = i % 2 ? "void at::native::gemm<float>(int)" : "ncclKernel_AllReduce";
    if (i % 3 == 0) k.shortName = "short" + std::to_string(i);
    k.gridX = i + 1, k.gridY = 2, k.gridZ = 1;
    if (i % 2) k.estOccupancy = i % 4 ? 12.5 * i : -0.0;
    if (i == 5) k.estOccupancy = std::nan("");
    k.captureId = cid;
    sink.add(k);
    store::RuntimeCall r;
    r.start = k.start - 20;
    r.end = k.start - 5;
    r.globalTid = tid;
    if (i % 4) r.correlationId = i;
    r.name = i % 2 ? "cudaLaunchKernel" : "cudaMemcpyAsync";
    r.captureId = cid;
    sink.add(r);
  }
  for (int i = 0; i < 6; ++i) {
    store::Memcpy m;
    m.start = 900 + 150 * i;
    m.end = m.start + 40;
    m.streamId = 7;
    m.bytes = 1 << i;
    m.copyKind = 1 + i % 3;
    if (i % 2) m.srcKind = store::kMemPageable;
    if (i % 3) m.dstKind = store::kMemDevice;
    m.correlationId = 100 + i;
    m.captureId = cid;
    sink.add(m);
    store::Memset s;
    s.start = 950 + 150 * i;
    s.end = s.start + 10;
    s.streamId = 8;
    s.bytes = 64;
    if (i % 2) s.memKind = store::kMemDevice;
    s.captureId = cid;
    sink.add(s);
  }
  for (int i = 0; i < 5; ++i) {
    store::Sync y;
    y.start = 2000 + 10 * i;
    y.end = y.start + 5;
    if (i != 1) y.streamId = 7;
    if (i == 2) y.deviceId = 1;
    y.syncType = i % 5;
    if (i % 2) y.correlationId = 3;
    y.captureId = cid;
    sink.add(y);
  }
  const char* names[] = {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                         "ENUMERATE(dataloader)#x", "aten::mm", "ProfilerStep#1",
                         "enumerate(DataLoade"};
  for (int i = 0; i < 10; ++i) {
    store::CpuOp op;
    op.start = 500 + 10 * (i % 4);
    op.end = op.start + 100;
    op.globalTid = tid;
    op.name = names[i % 5];
    op.category = i % 3 == 0 ? "gpu_user_annotation" : "cpu_op";
    op.captureId = cid;
    sink.add(op);
  }
  store::NvtxEvent nvtx;
  nvtx.text = "nvtx range";
  nvtx.captureId = cid;
  sink.add(nvtx);
  store::DeviceSample sample;
  sample.metric = "gpu_util_pct";
  sink.add(sample);
  sink.add(store::ExternalCorrelation{cid, 1, 3, 9});
  for (int step = 0; step < 5; ++step) {
    store::Iteration it;
    it.captureId = cid;
    it.globalPid = step == 4 ? std::nullopt : std::optional<int64_t>(pid);
    it.step = step % 3;
    it.start = 400 + 100 * (step % 2);
    it.end = it.start + 90 + step;
    sink.add(it);
  }
  for (int i = 0; i < 6; ++i) {
    store::MemoryEvent m;
    m.ts = 700 + 10 * (i / 3);
    m.captureId = cid;
    m.globalPid = pid;
    m.bytes = i % 2 ? -64 : 128;
    m.total_allocated = 1000 + i;
    sink.add(m);
  }
  const int64_t host = sink.add_host({0, "node1", std::nullopt});
  store::Workflow wf;
  wf.name = "job";
  const int64_t workflow = sink.add_workflow(wf);
  for (int p : {42, 41, 42}) {
    store::Process process;
    process.globalPid = store::global_pid(p);
    process.pid = p;
    process.host_id = host;
    process.workflow_id = workflow;
    process.command = "python train.py " + std::to_string(p);
    sink.upsert_process(process);
  }
  for (int d : {1, 0, 1}) {
    store::GpuInfo gpu;
    gpu.id = d;
    gpu.captureId = cid;
    gpu.name = "GPU " + std::to_string(d);
    gpu.smCount = 100 + d;
    sink.add_gpu(gpu);
  }
  capture.start_ns = 400;
  capture.end_ns = 3000;
  capture.gpu_vendor = "nvidia";
  sink.update_capture(capture);
}

TEST(CaptureSink, ConstructedCaptureEqualsTheDatabasePath) {
  for (size_t batch_rows : {size_t{65536}, size_t{7}, size_t{1}}) {
    SCOPED_TRACE("batch_rows " + std::to_string(batch_rows));
    store::Database database = store::Database::create_in_memory();
    {
      store::WriterOptions options;
      options.batch_rows = batch_rows;
      options.build_indexes = false;
      store::Writer writer(database.another_connection(), options);
      feed(writer);
      writer.finish();
    }
    store::Reader reader(std::move(database));
    const CaptureData a = load_capture(reader, 1);
    CaptureSink sink(batch_rows);
    feed(sink);
    const CaptureData b = sink.take(1);
    ASSERT_EQ(a.gpu.size(), 32u);
    ASSERT_EQ(a.iterations.size(), 4u);  // the repeated (pid, step 0) key replaced the first row
    ASSERT_FALSE(a.dataloader_ops.empty());
    expect_same_capture(a, b);
    expect_same_analysis(a, b);
  }
}

TEST(CaptureSink, UnknownCaptureIsAnInputError) {
  CaptureSink sink;
  EXPECT_THROW(sink.take(1), InputError);
}

TEST(CaptureSink, BadInputIsAnInputError) {
  testing::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.file(name), std::ios::binary) << text;
    return dir.file(name);
  };
  const std::string garbage = write("garbage.json", "not a trace");
  const std::string bad_json = write("bad.json", R"({"traceEvents": [{"ph": "X", )");
  const std::string empty = write("empty.json", "");
  for (const std::string& path : {garbage, bad_json, empty, dir.file("missing.json")}) {
    SCOPED_TRACE(path);
    std::string expected;
    try {
      importers::import_to_memory(path);
    } catch (const InputError& e) {
      expected = e.what();
    }
    ASSERT_FALSE(expected.empty());
    try {
      load_trace_file(path);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
}

}  // namespace
}  // namespace fleetscope::analyzer
