#include "fleetscope/daemon/daemon.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "fleetscope/daemon/config.h"
#include "fleetscope/daemon/daemon_core.h"
#include "fleetscope/daemon/prometheus.h"
#include "fleetscope/daemon/thrift_server.h"

namespace fleetscope::daemon {

int run_daemon(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  DaemonConfig config;
  const std::vector<std::string> command_line = args;
  if (auto code = parse_command_line(args, config, out, err)) return *code;

  // Signals are taken synchronously by this thread (sigwait); every thread started from here on
  // inherits the blocked mask, so none of them is interrupted by them.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<DaemonCore> core;
  std::unique_ptr<ThriftServers> servers;
  std::unique_ptr<MetricsEndpoint> metrics;
  try {
    core = std::make_unique<DaemonCore>(config, err);
    servers = std::make_unique<ThriftServers>(*core, config);
    servers->start();
    // The iteration gate (gate_socket, default beside the API socket) and the lane ledgers
    // (lane_directory, default $FLEETSCOPE_LANE_DIR, else /dev/shm).
    const std::string gate_socket = gate_socket_path(config);
    core->sharing().start(gate_socket,
                          lane_directory_path(config, std::getenv("FLEETSCOPE_LANE_DIR")), 200);
    err << "fleetscoped: iteration gate on " << gate_socket << '\n';
    if (config.prometheus_port >= 0) {
      metrics = std::make_unique<MetricsEndpoint>(config.prometheus_address,
                                                  static_cast<int>(config.prometheus_port),
                                                  [&core] { return core->exposition(); });
      err << "fleetscoped: Prometheus metrics on http://" << config.prometheus_address << ':'
          << metrics->port() << "/metrics\n";
    }
  } catch (const std::exception& e) {
    err << "fleetscoped: " << e.what() << '\n';
    return 1;
  }
  err << "fleetscoped: serving " << config.socket << " (API) and " << config.agent_socket
      << " (agents), database " << config.database << '\n';
  err.flush();

  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread ticker([&] {
    std::unique_lock lock(mutex);
    while (!stopping) {
      auto period = std::chrono::milliseconds(core->config().sample_interval_ms);
      if (wake.wait_for(lock, period, [&] { return stopping; })) break;
      lock.unlock();
      try {
        core->tick();
      } catch (const std::exception& e) {
        err << "fleetscoped: sampling: " << e.what() << '\n';
      }
      lock.lock();
    }
  });

  while (true) {
    int received = 0;
    sigwait(&signals, &received);
    if (received == SIGHUP) {
      DaemonConfig fresh;
      std::ostringstream ignored;
      if (auto code = parse_command_line(command_line, fresh, ignored, err); code && *code != 0) {
        err << "fleetscoped: reload failed; keeping the running configuration\n";
        continue;
      }
      core->reload(fresh);
      continue;
    }
    break;  // SIGTERM, SIGINT
  }
  err << "fleetscoped: stopping\n";
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  ticker.join();
  core->registry().close();
  core->traces().stop();
  servers->stop();
  if (metrics) metrics->stop();
  core->shutdown();
  err << "fleetscoped: database flushed and closed\n";
  return 0;
}

}  // namespace fleetscope::daemon
