#include "fleetscope/daemon/daemon.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

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
#include "fleetscope/daemon/state_directories.h"
#include "fleetscope/daemon/thrift_server.h"

namespace fleetscope::daemon {
namespace {

// A database made by an earlier version (or copied in) may be world-readable: no other user
// reads it (0640; group `fleetscope` for readers an operator allows, docs/daemon.md).
// The -shm index stays group-writable: readers of a WAL database write their read marks there.
void narrow_database_modes(const std::string& database) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string file = database + suffix;
    const mode_t keep = std::string(suffix) == "-shm" ? 07770 : 07750;
    struct stat info {};
    if (::stat(file.c_str(), &info) == 0 && (info.st_mode & 07777 & ~keep) != 0)
      ::chmod(file.c_str(), info.st_mode & keep);
  }
}

}  // namespace

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

  // Descriptors: the soft limit up to the hard one (the unit sets LimitNOFILE=65536); the
  // connection limits are fitted to what this gives (connection_limits()).
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  // Files the daemon creates are not world-readable (the unit's UMask=0027 says the same):
  // the host database holds every user's command lines and traces.
  ::umask(::umask(0) | 0027);

  // Before the first open: SQLite gives the -wal and -shm files the mode of the database file
  // when it creates them, so a world-readable database would hand its mode on.
  narrow_database_modes(config.database);

  std::unique_ptr<DaemonCore> core;
  std::unique_ptr<ThriftServers> servers;
  std::unique_ptr<MetricsEndpoint> metrics;
  try {
    prepare_state_directories(config);
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
      WebConfig web;
      if (!config.prometheus_web_config.empty())
        web = load_web_config(config.prometheus_web_config);
      metrics = std::make_unique<MetricsEndpoint>(
          config.prometheus_address, static_cast<int>(config.prometheus_port),
          [&core] { return core->exposition(); }, EndpointLimits{}, std::move(web));
      const bool tls = !config.prometheus_web_config.empty() &&
                       load_web_config(config.prometheus_web_config).tls.has_value();
      err << "fleetscoped: Prometheus metrics on " << (tls ? "https" : "http") << "://"
          << config.prometheus_address << ':' << metrics->port() << "/metrics\n";
    }
  } catch (const std::exception& e) {
    err << "fleetscoped: " << e.what() << '\n';
    return 1;
  }
  narrow_database_modes(config.database);  // again: -wal and -shm made while opening
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
  // Listeners first: no new connection, and every connection waiting for a request ends now, so
  // no client (however slow) holds the shutdown. Calls in progress end with the core below.
  servers->interrupt();
  if (metrics) metrics->stop();
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  ticker.join();
  int status = 0;
  // Every step runs whatever the one before did: a failure is said with what was kept, and the
  // exit code is 1 (systemd's Restart=on-failure applies), never an abort.
  auto step = [&](const char* what, const auto& run) {
    try {
      run();
      return true;
    } catch (const std::exception& e) {
      err << "fleetscoped: " << what << " failed: " << e.what() << '\n';
    } catch (...) {
      err << "fleetscoped: " << what << " failed\n";
    }
    status = 1;
    return false;
  };
  step("closing the agent registry", [&] { core->registry().close(); });
  step("stopping the trace windows", [&] { core->traces().stop(); });
  step("ending the connections", [&] { servers->stop(); });
  const bool committed = step("committing the queued rows", [&] { core->store().flush(); });
  if (!committed)
    err << "fleetscoped: rows committed before stay in " << config.database
        << "; rows queued since the last commit are lost\n";
  if (step("closing the database", [&] { core->shutdown(); })) {
    err << "fleetscoped: database flushed and closed\n";
  } else if (committed) {
    err << "fleetscoped: every row was committed to " << config.database
        << " (its -wal file holds what the last checkpoint did not copy; SQLite replays it at "
           "the next open)\n";
  }
  err.flush();
  return status;
}

}  // namespace fleetscope::daemon
