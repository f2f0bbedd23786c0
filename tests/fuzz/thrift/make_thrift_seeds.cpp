// Writes the seed corpus of the thrift_frames fuzz target: calls made with the generated Thrift
// clients (the messages the CLI and the agent really send), framed, behind the endpoint byte the
// target reads first (thrift_frames_fuzz.cpp). Usage: fleetscope_make_thrift_seeds OUTPUT_DIR
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include "FleetscopeAgentLink.h"
#include "FleetscopeHost.h"
#include "fleetscope_constants.h"

namespace {

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TMemoryBuffer;
using namespace fleetscope::rpc;

constexpr int kAgentPid = 4242;  // the pid the target's agent-link connection has
constexpr int64_t kT0 = 1'700'000'000'000'000'000;

template <typename Client>
std::string frames(const std::function<void(Client&)>& calls) {
  auto buffer = std::make_shared<TMemoryBuffer>();
  auto protocol = std::make_shared<TBinaryProtocol>(std::make_shared<TFramedTransport>(buffer));
  Client client(protocol);
  calls(client);
  return buffer->getBufferAsString();
}

RecordBatch batch(int64_t sequence) {
  RecordBatch b;
  b.capture_id = 1;
  b.sequence = sequence;
  const int64_t t = kT0 + sequence * 10'000'000;
  const int64_t pid = (int64_t{kAgentPid} << 24) * 256;  // nsys globalPid encoding
  for (int i = 0; i < 3; ++i) {
    KernelRecord k;
    k.start_ns = t + i * 100'000;
    k.end_ns = k.start_ns + 40'000;
    k.deviceId = 0;
    k.streamId = 7;
    k.__set_correlationId(100 + i);
    k.__set_globalPid(pid);
    k.demangledName = "void gemm_kernel<float>(float const*, float*)";
    k.__set_shortName("gemm_kernel");
    k.gridX = 128, k.gridY = 1, k.gridZ = 1;
    k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.__set_registersPerThread(64);
    k.__set_staticSharedMemory(4096);
    b.kernels.push_back(k);
    RuntimeCallRecord r;
    r.start_ns = k.start_ns - 8'000;
    r.end_ns = r.start_ns + 5'000;
    r.eventClass = 0;  // runtime API
    r.globalTid = pid + 1;
    r.__set_correlationId(100 + i);
    r.name = "cudaLaunchKernel";
    r.__set_cbid(211);
    b.runtime_calls.push_back(r);
  }
  MemcpyRecord m;
  m.start_ns = t + 400'000;
  m.end_ns = m.start_ns + 20'000;
  m.deviceId = 0;
  m.streamId = 7;
  m.bytes = 1 << 20;
  m.copyKind = 1;
  m.__set_srcKind(1);
  m.__set_dstKind(3);
  b.memcpys.push_back(m);
  MemsetRecord s;
  s.start_ns = t + 450'000;
  s.end_ns = s.start_ns + 2'000;
  s.deviceId = 0;
  s.streamId = 7;
  s.bytes = 4096;
  s.__set_value(0);
  b.memsets.push_back(s);
  SyncRecord y;
  y.start_ns = t + 460'000;
  y.end_ns = t + 500'000;
  y.__set_deviceId(0);
  y.__set_streamId(7);
  y.syncType = 3;
  b.syncs.push_back(y);
  NvtxEventRecord n;
  n.start_ns = t;
  n.__set_end_ns(t + 500'000);
  n.eventType = 59;
  n.text = "ProfilerStep#" + std::to_string(sequence);
  b.nvtx_events.push_back(n);
  IterationRecord it;
  it.__set_globalPid(pid);
  it.step = sequence;
  it.start_ns = t;
  it.end_ns = t + 500'000;
  it.source = "nvtx";
  b.iterations.push_back(it);
  MemoryEventRecord a;
  a.ts = t + 10;
  a.deviceId = 0;
  a.__set_address(0x7f0000000000);
  a.bytes = 1 << 20;
  a.__set_total_allocated(1 << 20);
  b.memory_events.push_back(a);
  ExternalCorrelationRecord e;
  e.correlationId = 100;
  e.externalKind = 1;
  e.externalId = 55;
  b.external_correlations.push_back(e);
  if (sequence == 0) {
    GpuInfoRecord g;
    g.id = 0;
    g.name = "NVIDIA H100 80GB HBM3";
    g.__set_totalMemory(int64_t{80} << 30);
    g.__set_smCount(132);
    g.__set_computeMajor(9);
    g.__set_computeMinor(0);
    b.gpus.push_back(g);
  }
  b.__isset.kernels = b.__isset.memcpys = b.__isset.memsets = b.__isset.runtime_calls = true;
  b.__isset.syncs = b.__isset.nvtx_events = b.__isset.iterations = b.__isset.memory_events = true;
  b.__isset.external_correlations = b.__isset.gpus = true;
  return b;
}

std::string api_calls() {
  return frames<FleetscopeHostClient>([](FleetscopeHostClient& c) {
    c.send_version();
    c.send_status();
    c.send_jobs();
    CaptureFilter filter;
    filter.__set_since_ns(kT0);
    filter.__set_limit(10);
    c.send_listCaptures(filter);
    c.send_getCapture(1);
    KernelWindowRequest window;
    window.capture_id = 1;
    window.window.begin_ns = kT0;
    window.window.end_ns = kT0 + 1'000'000'000;
    window.device_id = 0;
    window.__set_stream_id(7);
    c.send_kernelsInWindow(window);
    c.send_findings(1);
    MetricsQuery query;
    query.__set_workflow("job");
    query.__set_limit(5);
    c.send_metrics(query);
    TraceRequest trace;
    trace.__set_pid(kAgentPid);
    trace.__set_duration_ms(500);
    c.send_startTrace(trace);
    TraceByName by_name;
    by_name.workflow = "job";
    by_name.__set_iterations(3);
    c.send_startTraceOfWorkflow(by_name);
    c.send_traceProgress(1, 0);
  });
}

std::string agent_session(int batches, bool close) {
  return frames<FleetscopeAgentLinkClient>([&](FleetscopeAgentLinkClient& c) {
    AgentHello hello;
    hello.pid = kAgentPid;
    hello.parent_chain = {4000, 1000};
    hello.devices = {0};
    hello.workflow = "job";
    hello.workflow_source = "env";
    hello.__set_protocol_version(g_fleetscope_constants.AGENT_PROTOCOL_VERSION);
    hello.__set_command("python train.py");
    c.send_registerAgent(hello);
    c.send_awaitOrder(1, 0);
    for (int i = 0; i < batches; ++i) c.send_pushRecords(1, batch(i));
    if (close) {
      WindowClosed closed;
      closed.capture_id = 1;
      closed.dropped_records = 0;
      closed.collector_overhead_ns = 12'000;
      closed.__set_start_ns(kT0);
      closed.__set_end_ns(kT0 + 1'000'000'000);
      c.send_windowClosed(1, closed);
    }
  });
}

bool write(const std::string& dir, const std::string& name, char endpoint,
           const std::string& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out.put(endpoint);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  bool ok = write(dir, "api-root", '\0', api_calls()) &&
            write(dir, "api-user", '\1', api_calls()) &&
            write(dir, "agent-window", '\2', agent_session(2, true)) &&
            write(dir, "agent-open-only", '\2', agent_session(1, false)) &&
            write(dir, "batch-decoder", '\3', agent_session(2, false));
  if (!ok) std::fprintf(stderr, "cannot write the seeds into %s\n", dir.c_str());
  return ok ? 0 : 1;
}
