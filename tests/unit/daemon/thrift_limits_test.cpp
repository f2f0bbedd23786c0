// The limits the daemon reads requests with (server_transport_limits): a list longer than any
// request may carry is refused before Thrift allocates it. Found by the thrift_frames fuzz target:
// a 1.6 KB pushRecords message claiming 16 Mi kernels made the generated reader allocate 3.4 GB.
#include <gtest/gtest.h>

#include <sstream>

#include <thrift/TProcessor.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/protocol/TProtocolException.h>
#include <thrift/transport/TBufferTransports.h>

#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/rpc_handler.h"
#include "fleetscope/daemon/thrift_server.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::protocol::TProtocolException;
using apache::thrift::transport::TFramedTransport;
using apache::thrift::transport::TMemoryBuffer;

// A framed pushRecords call whose batch claims `kernels` KernelRecords and carries none.
std::string push_records_claiming(int32_t kernels) {
  auto buffer = std::make_shared<TMemoryBuffer>();
  auto framed = std::make_shared<TFramedTransport>(buffer);
  TBinaryProtocol out(framed);
  out.writeMessageBegin("pushRecords", apache::thrift::protocol::T_CALL, 1);
  out.writeStructBegin("args");
  out.writeFieldBegin("agent_id", apache::thrift::protocol::T_I64, 1);
  out.writeI64(1);
  out.writeFieldBegin("batch", apache::thrift::protocol::T_STRUCT, 2);
  out.writeStructBegin("RecordBatch");
  out.writeFieldBegin("capture_id", apache::thrift::protocol::T_I64, 1);
  out.writeI64(1);
  out.writeFieldBegin("sequence", apache::thrift::protocol::T_I64, 2);
  out.writeI64(0);
  out.writeFieldBegin("kernels", apache::thrift::protocol::T_LIST, 3);
  out.writeListBegin(apache::thrift::protocol::T_STRUCT, static_cast<uint32_t>(kernels));
  out.getTransport()->writeEnd();
  out.getTransport()->flush();
  return buffer->getBufferAsString();
}

TEST(ThriftLimits, ServersReadListsOfAtMostOneRecordBatch) {
  DaemonConfig config;
  const rpc::TransportLimits limits = server_transport_limits(config);
  EXPECT_EQ(limits.max_container_elements, kMaxBatchRows);
  EXPECT_EQ(limits.max_frame_bytes, config.max_frame_bytes);
  EXPECT_LT(limits.max_container_elements, rpc::TransportLimits{}.max_container_elements);
}

TEST(ThriftLimits, AClaimedHugeListIsRefusedBeforeItIsAllocated) {
  test_support::TempDir dir;
  DaemonConfig config;
  config.database = dir.file("host.db");
  config.nvml_library = dir.file("no-such-libnvidia-ml.so");
  std::ostringstream log;
  DaemonCore core(config, log);
  const rpc::TransportLimits limits = server_transport_limits(config);
  auto processor = make_agent_link_processor(core, Caller{4242, 1000});
  auto run = [&](const std::string& frame) {
    auto in_buffer = std::make_shared<TMemoryBuffer>(static_cast<uint32_t>(frame.size()));
    in_buffer->write(reinterpret_cast<const uint8_t*>(frame.data()),
                     static_cast<uint32_t>(frame.size()));
    auto configuration = rpc::make_configuration(limits);
    auto in = std::make_shared<TFramedTransport>(in_buffer, configuration);
    auto out = std::make_shared<TFramedTransport>(std::make_shared<TMemoryBuffer>(), configuration);
    auto protocols = rpc::make_protocol_factory(limits);
    processor->process(protocols->getProtocol(in), protocols->getProtocol(out), nullptr);
  };
  for (int32_t claimed : {16 * 1024 * 1024, kMaxBatchRows + 1}) {
    try {
      run(push_records_claiming(claimed));
      ADD_FAILURE() << "a list of " << claimed << " kernels was accepted";
    } catch (const TProtocolException& e) {
      EXPECT_EQ(e.getType(), TProtocolException::SIZE_LIMIT) << e.what();
    }
  }
  // A list within the limit gets past the container check (and fails later: it carries no rows).
  try {
    run(push_records_claiming(kMaxBatchRows));
    ADD_FAILURE() << "a batch without its rows was accepted";
  } catch (const TProtocolException& e) {
    EXPECT_NE(e.getType(), TProtocolException::SIZE_LIMIT) << e.what();
  } catch (const apache::thrift::transport::TTransportException&) {
    // end of the frame while reading the first kernel: what a truncated message gives
  }
}

}  // namespace
}  // namespace fleetscope::daemon
