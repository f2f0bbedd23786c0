// Proves the generated RPC code builds and links, and that a Finding survives the binary protocol.
#include <gtest/gtest.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <memory>

#include "FleetscopeDaemon.h"
#include "fleetscope_constants.h"
#include "fleetscope_types.h"

namespace fleetscope::rpc {
namespace {

using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::transport::TMemoryBuffer;

TEST(RpcFinding, RoundTripsThroughBinaryProtocol) {
  Finding original;
  original.id = 42;
  original.capture_id = 7;
  original.rule = "launch_bound_small_kernels";
  original.severity = Severity::HIGH;
  original.impact_ns = 1'234'567'890'123;
  TimeWindow first, second;
  first.begin_ns = 1'700'000'000'000'000'000;
  first.end_ns = 1'700'000'000'500'000'000;
  second.begin_ns = 1'700'000'001'000'000'000;
  second.end_ns = 1'700'000'001'250'000'000;
  original.windows = {first, second};
  original.evidence_json = R"({"top":[{"kernel":"gemm","count":3}]})";
  original.recommendation = "Fuse the small kernels or capture them in a CUDA graph.";
  original.__set_device_id(3);

  auto buffer = std::make_shared<TMemoryBuffer>();
  TBinaryProtocol protocol(buffer);
  const uint32_t written = original.write(&protocol);
  EXPECT_GT(written, 100u);
  EXPECT_EQ(buffer->available_read(), written);

  Finding decoded;
  decoded.read(&protocol);
  EXPECT_EQ(decoded.id, 42);
  EXPECT_EQ(decoded.capture_id, 7);
  EXPECT_EQ(decoded.rule, "launch_bound_small_kernels");
  EXPECT_EQ(decoded.severity, Severity::HIGH);
  EXPECT_EQ(decoded.impact_ns, 1'234'567'890'123);
  ASSERT_EQ(decoded.windows.size(), 2u);
  EXPECT_EQ(decoded.windows[0].begin_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(decoded.windows[1].end_ns, 1'700'000'001'250'000'000);
  EXPECT_EQ(decoded.evidence_json, original.evidence_json);
  EXPECT_EQ(decoded.recommendation, original.recommendation);
  ASSERT_TRUE(decoded.__isset.device_id);
  EXPECT_EQ(decoded.device_id, 3);
  EXPECT_FALSE(decoded.__isset.created_ns);
  EXPECT_EQ(decoded, original);
}

TEST(RpcFinding, ApiVersionConstantIsOne) {
  EXPECT_EQ(g_fleetscope_constants.API_VERSION, 1);
}

TEST(RpcFinding, MissingRequiredFieldIsRejected) {
  // A TimeWindow with only begin_ns set: the reader must refuse it (end_ns is required).
  auto buffer = std::make_shared<TMemoryBuffer>();
  TBinaryProtocol protocol(buffer);
  protocol.writeStructBegin("TimeWindow");
  protocol.writeFieldBegin("begin_ns", apache::thrift::protocol::T_I64, 1);
  protocol.writeI64(5);
  protocol.writeFieldEnd();
  protocol.writeFieldStop();
  protocol.writeStructEnd();
  TimeWindow window;
  EXPECT_THROW(window.read(&protocol), apache::thrift::protocol::TProtocolException);
}

}  // namespace
}  // namespace fleetscope::rpc
