// The agent's control channel and its settings: text commands, the FIFO source's replies, refusal
// texts, the environment window, the buffer pool's cap and the runtime filter.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cupti_runtime_cbid.h>

#include <map>
#include <string>
#include <vector>

#include "fleetscope/agent/buffer_pool.h"
#include "fleetscope/agent/control_command.h"
#include "fleetscope/agent/environment_control.h"
#include "fleetscope/agent/line_control.h"
#include "fleetscope/agent/refusal.h"
#include "fleetscope/agent/runtime_filter.h"
#include "fleetscope/agent/window_config.h"

namespace fleetscope::agent {
namespace {

// Records what sources ask for and answers like the agent would.
class RecordingController final : public WindowController {
 public:
  WindowReply open_window(const WindowRequest& request) override {
    requests.push_back(request);
    if (phase_ != WindowPhase::idle) return {false, refusal::window_already_open()};
    phase_ = WindowPhase::open;
    return {true, "window open"};
  }
  WindowReply close_window() override {
    if (phase_ == WindowPhase::idle) return {false, refusal::no_window_open()};
    phase_ = WindowPhase::idle;
    return {true, "window closed"};
  }
  WindowPhase phase() const override { return phase_; }
  std::vector<WindowRequest> requests;

 private:
  WindowPhase phase_ = WindowPhase::idle;
};

TEST(ControlCommand, OpenTakesLimitsAndStartAtNextStep) {
  auto command = parse_control_command("open duration-ms=2000 delay-ms=5");
  auto* open = std::get_if<OpenCommand>(&command);
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(open->request.duration_ms, 2000);
  EXPECT_EQ(open->request.delay_ms, 5);
  EXPECT_FALSE(open->request.start_at_next_step);

  auto steps = std::get<OpenCommand>(parse_control_command("  open iterations=3\r"));
  EXPECT_EQ(steps.request.iterations, 3);
  EXPECT_TRUE(steps.request.start_at_next_step);  // iterations count from a step boundary
  EXPECT_TRUE(
      std::get<OpenCommand>(parse_control_command("open at-next-step")).request.start_at_next_step);
  EXPECT_TRUE(std::holds_alternative<CloseCommand>(parse_control_command("close")));
  EXPECT_TRUE(std::holds_alternative<StatusCommand>(parse_control_command("status")));
}

TEST(ControlCommand, BadInputNamesTheWord) {
  auto bad = [](const char* line) { return std::get<BadCommand>(parse_control_command(line)).why; };
  EXPECT_NE(bad("start").find("'start'"), std::string::npos);
  EXPECT_NE(bad("open duration-ms=-5").find("'duration-ms=-5'"), std::string::npos);
  EXPECT_NE(bad("open duration-ms=1x").find("non-negative integer"), std::string::npos);
  EXPECT_NE(bad("open speed=3").find("'speed=3'"), std::string::npos);
  EXPECT_NE(bad("").find("empty"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<BadCommand>(parse_control_command("close now")));
}

TEST(LineControl, RepliesAreOneLineAndRefusalsCarryTheReason) {
  RecordingController controller;
  EXPECT_EQ(LineControl::execute("status", controller), "ok: idle");
  EXPECT_EQ(LineControl::execute("open duration-ms=10", controller), "ok: window open");
  EXPECT_EQ(controller.requests.back().requester, "fifo");
  EXPECT_EQ(LineControl::execute("open", controller), "refused: " + refusal::window_already_open());
  EXPECT_EQ(LineControl::execute("status", controller), "ok: open");
  EXPECT_EQ(LineControl::execute("close", controller), "ok: window closed");
  EXPECT_EQ(LineControl::execute("close", controller), "refused: " + refusal::no_window_open());
  EXPECT_EQ(LineControl::execute("frobnicate", controller).rfind("refused: bad-request: ", 0), 0u);
}

TEST(Refusal, EveryReasonIsOneLineWithAStableKeyword) {
  std::vector<std::pair<std::string, std::string>> reasons = {
      {refusal::another_subscriber("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"),
       "another-cupti-subscriber: "},
      {refusal::window_already_open(), "window-already-open: "},
      {refusal::no_window_open(), "no-window-open: "},
      {refusal::cupti_unavailable("x"), "cupti-unavailable: "},
      {refusal::output_unavailable("x"), "output-unavailable: "},
      {refusal::cannot_start_tracing("x"), "cannot-start-tracing: "},
      {refusal::forked_child(), "forked-child: "},
      {refusal::bad_request("x"), "bad-request: "}};
  for (const auto& [text, keyword] : reasons) {
    EXPECT_EQ(text.rfind(keyword, 0), 0u) << text;
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  }
  EXPECT_NE(reasons[0].first.find("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"),
            std::string::npos);
}

WindowConfig config_of(std::map<std::string, std::string> env) {
  return WindowConfig::from_env([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(EnvironmentControl, AsksForTheConfiguredWindowOnceAndLogsARefusal) {
  RecordingController busy;
  busy.open_window({});  // something else holds the window
  std::vector<std::string> log;
  EnvironmentControl source(
      config_of({{"FLEETSCOPE_OUTPUT", "t.db"}, {"FLEETSCOPE_ITERATIONS", "4"}}),
      [&](const std::string& line) { log.push_back(line); });
  source.start(busy);
  ASSERT_EQ(busy.requests.size(), 2u);
  EXPECT_EQ(busy.requests[1].iterations, 4);
  EXPECT_TRUE(busy.requests[1].start_at_next_step);
  EXPECT_EQ(busy.requests[1].requester, "environment");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "not tracing: " + refusal::window_already_open());

  RecordingController idle;
  EnvironmentControl quiet(config_of({{"FLEETSCOPE_OUTPUT", "t.db"}, {"FLEETSCOPE_TRACE", "0"}}),
                           [&](const std::string& line) { log.push_back(line); });
  quiet.start(idle);
  EXPECT_TRUE(idle.requests.empty());
}

TEST(WindowConfig, OutputNamesCarryThePidByDefault) {
  EXPECT_EQ(config_of({{"FLEETSCOPE_OUTPUT", "/tmp/trace.db"}}).output_path(42),
            "/tmp/trace-42.db");
  EXPECT_EQ(config_of({{"FLEETSCOPE_OUTPUT", "/tmp/run.v2/trace"}}).output_path(42),
            "/tmp/run.v2/trace-42");
  EXPECT_EQ(config_of({{"FLEETSCOPE_OUTPUT", "/tmp/%p/t-%p.db"}}).output_path(7), "/tmp/7/t-7.db");
  EXPECT_EQ(config_of({}).output_path(9), "fleetscope-9.db");
  EXPECT_EQ(config_of({{"FLEETSCOPE_PART_DIR", "/p"}}).output_path(3), "/p/part-3.db");
}

TEST(WindowConfig, BufferPoolAndControlSettings) {
  WindowConfig defaults = config_of({});
  EXPECT_EQ(defaults.buffer_size_kb, 4096);
  EXPECT_EQ(defaults.buffer_pool_mb, 128);
  EXPECT_EQ(defaults.signal_flush_ms, 2000);
  EXPECT_FALSE(defaults.active);
  WindowConfig c = config_of({{"FLEETSCOPE_BUFFER_POOL_MB", "0"},
                              {"FLEETSCOPE_CONTROL_FIFO", "/run/ctl"},
                              {"FLEETSCOPE_RUNTIME_FILTER", "none"},
                              {"FLEETSCOPE_SIGNAL_FLUSH_MS", "abc"}});
  EXPECT_EQ(c.buffer_pool_mb, 1);
  EXPECT_EQ(c.control_fifo, "/run/ctl");
  EXPECT_EQ(c.runtime_filter, "none");
  EXPECT_EQ(c.signal_flush_ms, 2000);
  EXPECT_EQ(c.problems.size(), 2u);
}

TEST(WindowConfig, DetachPolicy) {
  using Detach = WindowConfig::Detach;
  EXPECT_EQ(config_of({}).detach, Detach::always);
  EXPECT_EQ(config_of({{"FLEETSCOPE_DETACH", "always"}}).detach, Detach::always);
  EXPECT_EQ(config_of({{"FLEETSCOPE_DETACH", "never"}}).detach, Detach::never);
  WindowConfig bad = config_of({{"FLEETSCOPE_DETACH", "sometimes"}});
  EXPECT_EQ(bad.detach, Detach::always);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_NE(bad.problems[0].find("FLEETSCOPE_DETACH='sometimes'"), std::string::npos);
}

TEST(BufferPool, DeclinesPastTheCapAndCountsIt) {
  BufferPool pool(64 * 1024, 256 * 1024);
  EXPECT_EQ(pool.max_buffers(), 4u);
  std::vector<uint8_t*> held;
  for (int i = 0; i < 4; ++i) {
    uint8_t* b = pool.acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u);  // CUPTI's alignment
    held.push_back(b);
  }
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2);
  EXPECT_EQ(pool.outstanding(), 4u);
  pool.release(held.back());
  held.pop_back();
  uint8_t* again = pool.acquire();  // a returned buffer makes room again
  EXPECT_NE(again, nullptr);
  held.push_back(again);
  for (uint8_t* b : held) pool.release(b);
  EXPECT_EQ(pool.outstanding(), 0u);
  EXPECT_EQ(pool.take_refused(), 2);
  EXPECT_EQ(pool.refused(), 0);
  pool.trim();  // the spare buffers go back to the system; the pool still works
  uint8_t* after = pool.acquire();
  EXPECT_NE(after, nullptr);
  pool.release(after);
}

TEST(BufferPool, KinetoDefaults) {
  BufferPool pool(BufferPool::kDefaultBufferBytes, BufferPool::kDefaultCapBytes);
  EXPECT_EQ(pool.max_buffers(), 32u);  // 128 MB of 4 MiB buffers
}

TEST(RuntimeFilter, DefaultIsKinetosListAndTextReplacesIt) {
  RuntimeFilter defaults;
  EXPECT_EQ(defaults.names(), kDefaultFilteredRuntimeCalls);
  EXPECT_TRUE(defaults.drops("cudaGetDevice"));
  EXPECT_TRUE(defaults.drops("cudaEventCreateWithFlags"));
  EXPECT_FALSE(defaults.drops("cudaLaunchKernel"));
  EXPECT_FALSE(defaults.drops("cudaEventRecord"));  // Kineto keeps it (stream waits)
  RuntimeFilter custom = RuntimeFilter::parse(" cudaEventQuery , cudaStreamQuery");
  EXPECT_TRUE(custom.drops("cudaStreamQuery"));
  EXPECT_FALSE(custom.drops("cudaGetDevice"));
  EXPECT_TRUE(RuntimeFilter::parse("none").empty());
  EXPECT_EQ(RuntimeFilter::parse("default").names(), kDefaultFilteredRuntimeCalls);
  EXPECT_EQ(RuntimeFilter::known_name(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020),
            "cudaGetDevice");
}

}  // namespace
}  // namespace fleetscope::agent
