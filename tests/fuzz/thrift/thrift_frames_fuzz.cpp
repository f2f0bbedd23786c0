// Fuzz target: what a peer of fleetscoped sends, as framed Thrift binary-protocol messages, into
// the daemon's real server-side path. The first byte picks the endpoint; the rest is the byte
// stream of one connection, cut into frames by their 4-byte big-endian length prefix:
//   0  the API (service FleetscopeHost) as root over TCP (pid unknown)
//   1  the API as uid 1000, pid 4242
//   2  the agent link (service FleetscopeAgentLink) as pid 4242, uid 1000; once the input has
//      registered its agent, a trace window is opened on it (capture 1) so that pushRecords and
//      windowClosed reach the host database, the group committer and the analyzer
//   3  the agent-link batch decoder alone: each frame is decoded as a pushRecords call with the
//      daemon's limits and its RecordBatch written (batch_decoder.h) into an analyzer CaptureSink,
//      then the capture is finalized and analysed
// Endpoints 0-2 run the processor a connection gets (make_host_processor /
// make_agent_link_processor: generated dispatch -> adapter -> RpcHandler / AgentLinkHandler) over
// the framed transport with the daemon's frame and message limits, on a fresh DaemonCore over a
// temporary host database per input (so an input replays alike). awaitOrder frames are not
// dispatched: waiting up to its timeout_ms (<= 60 s) for an order is that call's job, not a hang.
//
// A Thrift exception ends the connection, as the threaded server does; any other exception, a
// crash, a sanitizer report or a hang is a finding.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include <thrift/TApplicationException.h>
#include <thrift/TOutput.h>
#include <thrift/protocol/TProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include "FleetscopeAgentLink.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/capture_sink.h"
#include "fleetscope/daemon/batch_decoder.h"
#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/thrift_server.h"
#include "fleetscope/rpc/transport.h"
#include "fleetscope/store/error.h"

namespace {

using apache::thrift::TException;
using apache::thrift::protocol::TMessageType;
using apache::thrift::protocol::TProtocol;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TMemoryBuffer;
using namespace fleetscope;

constexpr pid_t kAgentPid = 4242;
constexpr uid_t kUser = 1000;

const std::filesystem::path& work_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      std::string pattern =
          (std::filesystem::temp_directory_path() / "fleetscope-fuzz-thrift-XXXXXX").string();
      path = ::mkdtemp(pattern.data());
    }
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static Dir dir;
  return dir.path;
}

// The frames of one connection: each a length prefix and what follows of it (a frame cut short
// by the end of the input keeps its claimed length, so the transport sees a short read).
std::vector<std::string> split_frames(const uint8_t* data, size_t size) {
  std::vector<std::string> frames;
  size_t pos = 0;
  while (pos + 4 <= size) {
    const uint32_t claimed = (uint32_t{data[pos]} << 24) | (uint32_t{data[pos + 1]} << 16) |
                             (uint32_t{data[pos + 2]} << 8) | uint32_t{data[pos + 3]};
    const size_t available = std::min<size_t>(claimed, size - pos - 4);
    frames.emplace_back(reinterpret_cast<const char*>(data + pos), 4 + available);
    pos += 4 + available;
  }
  return frames;
}

std::shared_ptr<TMemoryBuffer> buffer_of(const std::string& bytes,
                                         const std::shared_ptr<apache::thrift::TConfiguration>& c) {
  auto buffer = std::make_shared<TMemoryBuffer>(static_cast<uint32_t>(bytes.size()) + 1, c);
  buffer->write(reinterpret_cast<const uint8_t*>(bytes.data()),
                static_cast<uint32_t>(bytes.size()));
  return buffer;
}

// The method a frame calls, when its message header reads. Read with the daemon's protocol (strict
// and limited): Thrift's default protocol takes a non-versioned header's first word as the length
// of the method name and allocates it (1.8 GB for "rnel", found by this target).
std::string method_of(const std::string& frame) {
  if (frame.size() <= 4) return {};
  try {
    const rpc::TransportLimits limits = daemon::server_transport_limits(daemon::DaemonConfig{});
    auto protocol = rpc::make_protocol_factory(limits)->getProtocol(
        buffer_of(frame.substr(4), rpc::make_configuration(limits)));
    std::string name;
    TMessageType type;
    int32_t sequence = 0;
    protocol->readMessageBegin(name, type, sequence);
    return name;
  } catch (const TException&) {
    return {};
  }
}

// Endpoints 0-2: one connection's frames through the processor.
void serve_connection(int endpoint, const std::vector<std::string>& frames) {
  const std::string database = (work_dir() / "host.db").string();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((database + suffix).c_str());
  daemon::DaemonConfig config;
  config.database = database;
  config.nvml_library = (work_dir() / "no-such-libnvidia-ml.so").string();
  config.trace_grace_ms = 100;
  std::ostringstream log;
  daemon::DaemonCore core(config, log);

  const rpc::TransportLimits limits = daemon::server_transport_limits(config);
  const auto configuration = rpc::make_configuration(limits);
  const auto protocols = rpc::make_protocol_factory(limits);
  const bool agent_link = endpoint == 2;
  const daemon::Caller caller =
      endpoint == 0 ? daemon::Caller{0, 0} : daemon::Caller{kAgentPid, kUser};
  auto processor = agent_link ? daemon::make_agent_link_processor(core, caller)
                              : daemon::make_host_processor(core, caller);
  bool window_open = false;
  for (const std::string& frame : frames) {
    if (agent_link && method_of(frame) == "awaitOrder") continue;
    auto in = std::make_shared<TFramedTransport>(buffer_of(frame, configuration), configuration);
    auto out = std::make_shared<TFramedTransport>(std::make_shared<TMemoryBuffer>(configuration),
                                                  configuration);
    try {
      processor->process(protocols->getProtocol(in), protocols->getProtocol(out), nullptr);
    } catch (const TException&) {
      break;  // the server closes the connection
    }
    if (agent_link && !window_open && !core.registry().in_tree_of(kAgentPid).empty()) {
      core.traces().start_for_pid(kAgentPid, daemon::WindowSpec{60'000, std::nullopt},
                                  daemon::Caller{0, 0});
      window_open = true;
    }
  }
}

// Endpoint 3: pushRecords arguments straight into the batch decoder.
void decode_batches(const std::vector<std::string>& frames) {
  const rpc::TransportLimits limits = daemon::server_transport_limits(daemon::DaemonConfig{});
  const auto configuration = rpc::make_configuration(limits);
  const auto protocols = rpc::make_protocol_factory(limits);
  analyzer::CaptureSink sink;
  store::Capture capture;
  capture.source = "fleetscope-agent";
  const int64_t capture_id = sink.add_capture(capture);
  for (const std::string& frame : frames) {
    auto in = std::make_shared<TFramedTransport>(buffer_of(frame, configuration), configuration);
    std::shared_ptr<TProtocol> protocol = protocols->getProtocol(in);
    rpc::FleetscopeAgentLink_pushRecords_args args;
    try {
      std::string name;
      TMessageType type;
      int32_t sequence = 0;
      protocol->readMessageBegin(name, type, sequence);
      args.read(protocol.get());
      protocol->readMessageEnd();
    } catch (const TException&) {
      break;
    }
    (void)daemon::write_batch(std::move(args.batch), capture_id, sink);
  }
  const analyzer::CaptureData data = sink.take(capture_id);
  (void)analyzer::analyze_capture(data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The generated processors print every malformed message through Thrift's GlobalOutput (a
  // line per input, "received invalid message type"): silenced, so the run's log shows findings.
  static const bool quiet = [] {
    apache::thrift::GlobalOutput.setOutputFunction([](const char*) {});
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  const int endpoint = data[0] % 4;
  const std::vector<std::string> frames = split_frames(data + 1, size - 1);
  try {
    if (endpoint == 3)
      decode_batches(frames);
    else
      serve_connection(endpoint, frames);
  } catch (const Error&) {
  }
  return 0;
}
