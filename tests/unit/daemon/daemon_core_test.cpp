// TraceControl, RpcHandler and AgentLinkHandler driven directly (no sockets), on a real host
// database in a temporary directory.
#include <gtest/gtest.h>

#include "fleetscope/common/untrusted_text.h"
#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/rpc_handler.h"
#include "fleetscope/store/database.h"
#include "fleetscope_constants.h"
#include "temp_dir.h"

namespace fleetscope::daemon {
namespace {

using namespace std::chrono_literals;

struct Fixture : ::testing::Test {
  test_support::TempDir dir;
  std::ostringstream log;
  int64_t now = 1'700'000'000'000'000'000;
  std::unique_ptr<DaemonCore> core;

  void SetUp() override {
    DaemonConfig config;
    config.database = dir.file("host.db");
    config.nvml_library = dir.file("no-such-libnvidia-ml.so");
    config.trace_grace_ms = 100;
    config.proc_root = dir.file("no-proc");  // fabricated pids: no real /proc/PID/cgroup is read
    core = std::make_unique<DaemonCore>(config, log, [this] { return now; });
  }

  // Registers an agent for (pid, uid) through the agent link handler, as its connection would.
  std::pair<std::unique_ptr<AgentLinkHandler>, int64_t> agent(int pid, uid_t uid,
                                                              std::vector<int> chain = {},
                                                              std::string workflow = "job") {
    auto handler = std::make_unique<AgentLinkHandler>(*core, Caller{pid, uid});
    rpc::AgentHello hello;
    hello.pid = pid;
    hello.parent_chain = std::move(chain);
    hello.workflow = std::move(workflow);
    hello.workflow_source = "env";
    hello.__set_protocol_version(rpc::g_fleetscope_constants.AGENT_PROTOCOL_VERSION);
    int64_t id = handler->register_agent(hello).agent_id;
    return {std::move(handler), id};
  }

  // Opens a one-minute window on process `pid` through `api`; its agent (`agent_id` on `link`) has
  // taken the order. Returns the capture.
  int64_t open_window(RpcHandler& api, AgentLinkHandler& link, int64_t agent_id, int pid) {
    rpc::TraceRequest request;
    request.__set_pid(pid);
    request.__set_duration_ms(60'000);
    const int64_t capture = api.start_trace(request).capture_id;
    EXPECT_EQ(link.await_order(agent_id, 0).kind, rpc::AgentOrderKind::OPEN_WINDOW);
    return capture;
  }

  rpc::RecordBatch kernels(int64_t capture, int64_t sequence, int count, int pid) {
    rpc::RecordBatch batch;
    batch.capture_id = capture;
    batch.sequence = sequence;
    for (int i = 0; i < count; ++i) {
      rpc::KernelRecord k;
      k.start_ns = now + i * 1000;
      k.end_ns = k.start_ns + 800;
      k.__set_globalPid(store::global_pid(pid));
      k.demangledName = "k";
      k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
      batch.kernels.push_back(k);
    }
    batch.__isset.kernels = true;
    return batch;
  }
};

TEST_F(Fixture, WithoutNvmlTheDaemonSaysSoOnceAndWorks) {
  EXPECT_FALSE(core->device_sampling());
  EXPECT_NE(log.str().find("device sampling is off: cannot load"), std::string::npos) << log.str();
  core->tick();
  RpcHandler api(*core, Caller{1, 0});
  auto status = api.status();
  EXPECT_FALSE(status.device_sampling);
  EXPECT_TRUE(status.devices.empty());
  EXPECT_NE(status.device_sampling_note.find("no-such-libnvidia-ml.so"), std::string::npos);
  EXPECT_EQ(api.version().api_version, 3);
}

TEST_F(Fixture, WindowLifecycleCommitsBatchesAndAnalyzes) {
  auto [link, id] = agent(500, 1000);
  RpcHandler api(*core, Caller{42, 1000});
  rpc::TraceRequest request;
  request.__set_pid(500);
  request.__set_duration_ms(1000);
  auto started = api.start_trace(request);
  EXPECT_EQ(started.pids, std::vector<int32_t>{500});
  auto order = link->await_order(id, 0);
  ASSERT_EQ(order.kind, rpc::AgentOrderKind::OPEN_WINDOW);
  EXPECT_EQ(order.capture_id, started.capture_id);
  EXPECT_EQ(order.duration_ms, 1000);
  EXPECT_EQ(api.status().open_windows.size(), 1u);
  link->push_records(id, kernels(started.capture_id, 0, 10, 500));
  // Out of order and replayed batches are refused.
  EXPECT_THROW(link->push_records(id, kernels(started.capture_id, 0, 10, 500)),
               rpc::InvalidRequest);
  EXPECT_THROW(link->push_records(id, kernels(started.capture_id, 5, 10, 500)),
               rpc::InvalidRequest);
  // A batch for a capture not open in this process is refused.
  EXPECT_THROW(link->push_records(id, kernels(started.capture_id + 1, 1, 10, 500)),
               rpc::InvalidRequest);
  link->push_records(id, kernels(started.capture_id, 1, 5, 500));
  // Another process cannot push into this agent's window, even with its id.
  AgentLinkHandler intruder(*core, Caller{501, 1000});
  EXPECT_THROW(intruder.push_records(id, kernels(started.capture_id, 2, 1, 501)),
               rpc::InvalidRequest);
  rpc::WindowClosed closed;
  closed.capture_id = started.capture_id;
  closed.dropped_records = 3;
  closed.collector_overhead_ns = 777;
  link->window_closed(id, closed);
  auto progress = api.trace_progress(started.capture_id, 10'000);
  ASSERT_TRUE(progress.done);
  EXPECT_EQ(progress.records, 15);
  EXPECT_EQ(progress.kernels, 15);
  EXPECT_EQ(progress.dropped_records, 3);
  auto capture = api.get_capture(started.capture_id);
  EXPECT_EQ(capture.dropped_records, 3);
  EXPECT_EQ(capture.collector_overhead_ns, 777);
  EXPECT_EQ(capture.kind, rpc::CaptureKind::ON_DEMAND);
  EXPECT_TRUE(api.status().open_windows.empty());
  rpc::KernelWindowRequest window;
  window.capture_id = started.capture_id;
  window.window.begin_ns = now;
  window.window.end_ns = now + 5000;
  window.device_id = 0;
  auto rows = api.kernels_in_window(window);
  EXPECT_EQ(rows.rows.size(), 10u);  // five of each batch start in [now, now + 5 us)
  auto jobs = api.jobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].capture_ids, std::vector<int64_t>{started.capture_id});
}

// kernelsInWindow's rows carry every field of the RPC view (rpc::KernelRow, generated from the
// kernel table's rpc= columns in schema/tables.py) with the values the agent sent: names resolved,
// grid and block as lists, shared memory summed.
TEST_F(Fixture, KernelsInWindowCarryEveryFieldOfTheRpcView) {
  auto [link, id] = agent(600, 1000);
  RpcHandler api(*core, Caller{43, 1000});
  const int64_t capture = open_window(api, *link, id, 600);
  rpc::RecordBatch batch = kernels(capture, 0, 2, 600);
  rpc::KernelRecord& full = batch.kernels[0];
  full.deviceId = 1;
  full.streamId = 7;
  full.__set_correlationId(99);
  full.demangledName = "void gemm<float>(float*)";
  full.__set_shortName("gemm");
  full.gridX = 80, full.gridY = 2, full.gridZ = 3;
  full.blockX = 128, full.blockY = 4, full.blockZ = 5;
  full.__set_registersPerThread(96);
  full.__set_staticSharedMemory(512);
  full.__set_dynamicSharedMemory(1024);
  rpc::KernelRecord& bare = batch.kernels[1];  // optional columns unset
  bare.deviceId = 1;
  bare.streamId = 8;
  bare.__isset.globalPid = false;
  link->push_records(id, std::move(batch));
  rpc::WindowClosed closed;
  closed.capture_id = capture;
  closed.dropped_records = 0;
  closed.collector_overhead_ns = 0;
  link->window_closed(id, closed);

  rpc::KernelWindowRequest window;
  window.capture_id = capture;
  window.window.begin_ns = now;
  window.window.end_ns = now + 10'000;
  window.device_id = 1;
  auto rows = api.kernels_in_window(window).rows;
  ASSERT_EQ(rows.size(), 2u);
  const rpc::KernelRow& a = rows[0];
  EXPECT_EQ(a.start_ns, now);
  EXPECT_EQ(a.end_ns, now + 800);
  EXPECT_EQ(a.device_id, 1);
  EXPECT_EQ(a.stream_id, 7);
  ASSERT_TRUE(a.__isset.correlation_id);
  EXPECT_EQ(a.correlation_id, 99);
  ASSERT_TRUE(a.__isset.global_pid);
  EXPECT_EQ(a.global_pid, store::global_pid(600));
  EXPECT_EQ(a.name, "void gemm<float>(float*)");
  ASSERT_TRUE(a.__isset.short_name);
  EXPECT_EQ(a.short_name, "gemm");
  EXPECT_EQ(a.grid, (std::vector<int32_t>{80, 2, 3}));
  EXPECT_EQ(a.block, (std::vector<int32_t>{128, 4, 5}));
  ASSERT_TRUE(a.__isset.registers_per_thread);
  EXPECT_EQ(a.registers_per_thread, 96);
  ASSERT_TRUE(a.__isset.shared_memory_bytes);
  EXPECT_EQ(a.shared_memory_bytes, 1536);
  const rpc::KernelRow& b = rows[1];
  EXPECT_EQ(b.stream_id, 8);
  EXPECT_FALSE(b.__isset.correlation_id);
  EXPECT_FALSE(b.__isset.global_pid);
  EXPECT_FALSE(b.__isset.registers_per_thread);
  EXPECT_EQ(b.name, "k");
  EXPECT_EQ(b.short_name, "k");  // derived from the demangled name when the agent sent none
  EXPECT_EQ(b.grid, (std::vector<int32_t>{1, 1, 1}));
  EXPECT_TRUE(b.__isset.shared_memory_bytes);  // both parts unknown: 0, as before
  EXPECT_EQ(b.shared_memory_bytes, 0);
}

TEST_F(Fixture, AcknowledgementsSayWhatIsCommittedAndClosingCommitsTheWholeWindow) {
  auto [link, id] = agent(800, 1000);
  RpcHandler api(*core, Caller{10, 1000});
  const int64_t capture = open_window(api, *link, id, 800);
  int64_t last_ack = -1;
  for (int64_t sequence = 0; sequence < 40; ++sequence) {
    int64_t ack = link->push_records(id, kernels(capture, sequence, 200, 800));
    EXPECT_GE(ack, last_ack) << "acknowledged durability never goes back";
    EXPECT_LE(ack, sequence) << "a batch is never acknowledged before it was sent";
    // The bounded window: at most kUncommittedBatchesPerAgent batches wait uncommitted.
    EXPECT_GE(ack, sequence - kUncommittedBatchesPerAgent);
    // Whatever is acknowledged is in the database already, seen by a separate connection.
    auto db = store::Database::open(dir.file("host.db"));
    auto count = db.prepare("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = ?");
    count.bind(1, capture);
    ASSERT_TRUE(count.step());
    EXPECT_GE(count.column_int(0), (ack + 1) * 200);
    last_ack = ack;
  }
  rpc::WindowClosed closed;
  closed.capture_id = capture;
  closed.dropped_records = 0;
  closed.collector_overhead_ns = 1;
  link->window_closed(id, closed);  // returns once all 40 batches are committed
  auto db = store::Database::open(dir.file("host.db"));
  auto count = db.prepare("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE captureId = ?");
  count.bind(1, capture);
  ASSERT_TRUE(count.step());
  EXPECT_EQ(count.column_int(0), 40 * 200);
  auto progress = api.trace_progress(capture, 10'000);
  ASSERT_TRUE(progress.done);
  EXPECT_EQ(progress.records, 40 * 200);
}

TEST_F(Fixture, OtherUsersProcessesAreInvisibleAndUntraceable) {
  auto [root_link, root_id] = agent(600, 0, {}, "root-job");
  auto [user_link, user_id] = agent(700, 1000, {}, "user-job");
  RpcHandler user(*core, Caller{50, 1000});
  RpcHandler root(*core, Caller{51, 0});
  EXPECT_EQ(user.status().agents.size(), 1u);
  EXPECT_EQ(root.status().agents.size(), 2u);
  EXPECT_EQ(user.jobs().size(), 1u);
  rpc::TraceRequest request;
  request.__set_pid(600);
  request.__set_duration_ms(100);
  EXPECT_THROW(user.start_trace(request), rpc::PermissionDenied);
  rpc::TraceByName by_name;
  by_name.workflow = "root-job";
  by_name.__set_duration_ms(100);
  EXPECT_THROW(user.start_trace_of_workflow(by_name), rpc::PermissionDenied);
  rpc::MetricsQuery query;
  query.__set_workflow("root-job");
  EXPECT_THROW(user.metrics(query), rpc::PermissionDenied);
  // Root may trace the user's process; the user then cannot see root's progress or capture.
  request.__set_pid(600);
  auto started = root.start_trace(request);
  EXPECT_THROW(user.trace_progress(started.capture_id, 0), rpc::PermissionDenied);
  EXPECT_THROW(user.get_capture(started.capture_id), rpc::PermissionDenied);
  EXPECT_TRUE(user.list_captures(rpc::CaptureFilter()).empty());
  EXPECT_EQ(root.list_captures(rpc::CaptureFilter()).size(), 1u);
}

TEST_F(Fixture, AgentThatVanishesOrOverrunsIsClosedWithANote) {
  auto [link, id] = agent(800, 1000);
  RpcHandler api(*core, Caller{1, 1000});
  rpc::TraceRequest request;
  request.__set_pid(800);
  request.__set_duration_ms(10);
  auto first = api.start_trace(request);
  link->push_records(id, kernels(first.capture_id, 0, 4, 800));
  link.reset();  // the control connection ends: the agent is gone
  auto progress = api.trace_progress(first.capture_id, 10'000);
  ASSERT_TRUE(progress.done);
  EXPECT_NE(progress.note.find("went away mid-window"), std::string::npos);
  EXPECT_EQ(progress.kernels, 4);

  auto [late, late_id] = agent(801, 1000);
  request.__set_pid(801);
  auto second = api.start_trace(request);
  late->await_order(late_id, 0);  // the OPEN order
  now += 20'000'000;              // past the deadline: a CLOSE order goes out
  core->traces().expire();
  EXPECT_EQ(late->await_order(late_id, 0).kind, rpc::AgentOrderKind::CLOSE_WINDOW);
  now += 200'000'000;  // past the grace period
  core->traces().expire();
  progress = api.trace_progress(second.capture_id, 10'000);
  ASSERT_TRUE(progress.done);
  EXPECT_NE(progress.note.find("did not close its window in time"), std::string::npos)
      << progress.note;
}

TEST_F(Fixture, BadRequestsGetClearAnswers) {
  RpcHandler api(*core, Caller{1, 1000});
  rpc::TraceRequest both;
  both.__set_pid(5);
  both.__set_workflow_id(1);
  both.__set_duration_ms(10);
  EXPECT_THROW(api.start_trace(both), rpc::InvalidRequest);
  rpc::TraceRequest none;
  none.__set_pid(99999);
  none.__set_duration_ms(10);
  try {
    api.start_trace(none);
    FAIL();
  } catch (const rpc::NotFound& e) {
    EXPECT_NE(e.message.find("pid 99999"), std::string::npos);
  }
  auto [link, id] = agent(900, 1000);
  rpc::TraceRequest zero;
  zero.__set_pid(900);
  zero.__set_duration_ms(0);
  EXPECT_THROW(api.start_trace(zero), rpc::InvalidRequest);
  EXPECT_THROW(api.trace_progress(12345, 0), rpc::NotFound);
  EXPECT_THROW(api.get_capture(12345), rpc::NotFound);
  EXPECT_THROW(link->await_order(id + 1, 0), rpc::InvalidRequest);
}

TEST_F(Fixture, AWorkflowBelongsToTheUidThatRegisteredItFirst) {
  auto [alice_link, alice_id] = agent(1100, 1000, {}, "alice-wf");
  // Another uid's process declaring the same name is refused: it cannot join the workflow...
  try {
    agent(1200, 2000, {}, "alice-wf");
    FAIL() << "a second uid joined alice's workflow";
  } catch (const rpc::InvalidRequest& e) {
    EXPECT_NE(e.message.find("belongs to uid 1000"), std::string::npos) << e.message;
  }
  // ...so nothing of it is shown to that uid, even with the name.
  RpcHandler bob(*core, Caller{60, 2000});
  RpcHandler alice(*core, Caller{61, 1000});
  EXPECT_FALSE(bob.may_see_workflow("alice-wf"));
  EXPECT_TRUE(alice.may_see_workflow("alice-wf"));
  rpc::MetricsQuery query;
  query.__set_workflow("alice-wf");
  EXPECT_THROW(bob.metrics(query), rpc::PermissionDenied);
  EXPECT_NO_THROW(alice.metrics(query));
  EXPECT_TRUE(bob.jobs().empty());
  EXPECT_EQ(alice.jobs().size(), 1u);
  // More processes of the owner join it.
  auto [second_link, second_id] = agent(1101, 1000, {}, "alice-wf");
  EXPECT_EQ(alice.jobs().at(0).agents.size(), 2u);
  // The owner is kept in the database: a restarted daemon still refuses bob.
  alice_link.reset();
  second_link.reset();
  core->shutdown();
  core.reset();
  SetUp();
  EXPECT_THROW(agent(1201, 2000, {}, "alice-wf"), rpc::InvalidRequest);
  RpcHandler bob_again(*core, Caller{62, 2000});
  EXPECT_FALSE(bob_again.may_see_workflow("alice-wf"));
}

TEST_F(Fixture, SharingEventsShowAnotherUsersJobsToNoOne) {
  auto [link, id] = agent(1300, 1000, {}, "mine");
  auto [other, other_id] = agent(1400, 2000, {}, "theirs");
  RpcHandler me(*core, Caller{70, 1000});
  RpcHandler root(*core, Caller{71, 0});
  const std::string admitted_theirs = R"({"pid":1400,"uid":2000,"workflow":"theirs","lane":"l0"})";
  const std::string admitted_mine = R"({"pid":1300,"uid":1000,"workflow":"mine","lane":"l0"})";
  const std::string plan = R"({"workflows":["mine","theirs"],"policy":"fifo"})";
  EXPECT_FALSE(me.visible_event_detail(admitted_theirs));
  EXPECT_FALSE(me.visible_event_detail(R"({"pid":1400,"position":1})"));
  EXPECT_FALSE(me.visible_event_detail("not json"));
  ASSERT_TRUE(me.visible_event_detail(admitted_mine));
  auto shown = me.visible_event_detail(plan);
  ASSERT_TRUE(shown);
  EXPECT_EQ(shown->find("theirs"), std::string::npos) << *shown;
  EXPECT_NE(shown->find("mine"), std::string::npos) << *shown;
  EXPECT_TRUE(me.visible_event_detail(R"({"reason":"sharing off"})"));
  EXPECT_NE(root.visible_event_detail(plan)->find("theirs"), std::string::npos);
}

TEST_F(Fixture, AgentStringsAreValidatedAndBoundedAtTheBoundary) {
  // 8 MB of name with an escape sequence and bytes that are not UTF-8.
  std::string name = "job\x1b]0;owned\x07\xff\xfe";
  name += std::string(8u << 20, 'n');
  rpc::AgentHello hello;
  hello.pid = 1500;
  hello.workflow = name;
  hello.workflow_source = "env\xc3";
  hello.__set_protocol_version(rpc::g_fleetscope_constants.AGENT_PROTOCOL_VERSION);
  hello.__set_command(std::string(100'000, 'c'));
  hello.parent_chain.assign(10'000, 1);
  AgentLinkHandler link(*core, Caller{1500, 1000});
  link.register_agent(hello);
  RpcHandler api(*core, Caller{72, 1000});
  auto status = api.status();
  ASSERT_EQ(status.agents.size(), 1u);
  const auto& agent = status.agents[0];
  const std::string note = " [cut at 256 bytes]";
  ASSERT_GT(agent.workflow.size(), note.size());
  EXPECT_EQ(agent.workflow.substr(agent.workflow.size() - note.size()), note);
  EXPECT_LE(agent.workflow.size(), kMaxNameBytes + note.size());
  EXPECT_TRUE(text::is_valid_utf8(agent.workflow));
  EXPECT_NE(agent.workflow.find("\xEF\xBF\xBD"), std::string::npos);  // U+FFFD for 0xff
  EXPECT_EQ(agent.workflow_source, "env\xEF\xBF\xBD");
  EXPECT_LE(agent.command.size(), kMaxCommandBytes + 32);
  EXPECT_NE(agent.command.find("[cut at 4096 bytes]"), std::string::npos);
  EXPECT_EQ(agent.parent_chain.size(), kMaxListEntries);
}

TEST_F(Fixture, SchedulerLabelsReachStatusAndThePrometheusPageKnownKeysOnly) {
  rpc::AgentHello hello;
  hello.pid = 1600;
  hello.workflow = "slurm:80";
  hello.workflow_source = "slurm";
  hello.__set_protocol_version(rpc::g_fleetscope_constants.AGENT_PROTOCOL_VERSION);
  hello.__set_labels({"slurm_job_id=80", "k8s_pod_uid=1d5bd3f2-7b1c-4e0e-9a8f-0123456789ab",
                      "evil{x}=1", "slurm_job_id=81", "no-equals-sign"});
  AgentLinkHandler link(*core, Caller{1600, 1000});
  link.register_agent(hello);
  RpcHandler api(*core, Caller{73, 1000});
  auto status = api.status();
  ASSERT_EQ(status.agents.size(), 1u);
  EXPECT_EQ(status.agents[0].labels,
            (std::vector<std::string>{"slurm_job_id=80",
                                      "k8s_pod_uid=1d5bd3f2-7b1c-4e0e-9a8f-0123456789ab"}));
  const std::string page = core->exposition();
  EXPECT_EQ(page.find("evil"), std::string::npos);
}

}  // namespace
}  // namespace fleetscope::daemon
