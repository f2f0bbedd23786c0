#include "fleetscope/agent/window_config.h"

#include <cstdlib>

namespace fleetscope::agent {
namespace {

// Parses a non-negative integer; a malformed value keeps the default and is reported.
void read_int(const EnvLookup& getenv, const char* name, int64_t& target,
              std::vector<std::string>& problems) {
  const char* text = getenv(name);
  if (!text || !*text) return;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < 0) {
    problems.push_back(std::string(name) + "='" + text +
                       "' is not a non-negative integer; ignored");
    return;
  }
  target = value;
}

std::string read_text(const EnvLookup& getenv, const char* name) {
  const char* text = getenv(name);
  return text ? std::string(text) : std::string();
}

}  // namespace

WindowConfig WindowConfig::from_env(const EnvLookup& getenv) {
  WindowConfig config;
  config.output = read_text(getenv, "FLEETSCOPE_OUTPUT");
  config.part_dir = read_text(getenv, "FLEETSCOPE_PART_DIR");
  config.cupti_path = read_text(getenv, "FLEETSCOPE_CUPTI_PATH");
  config.step_names = StepNames::parse(read_text(getenv, "FLEETSCOPE_STEP_NAMES"));
  read_int(getenv, "FLEETSCOPE_DELAY_MS", config.delay_ms, config.problems);
  read_int(getenv, "FLEETSCOPE_DURATION_MS", config.duration_ms, config.problems);
  read_int(getenv, "FLEETSCOPE_ITERATIONS", config.iterations, config.problems);
  read_int(getenv, "FLEETSCOPE_BUFFER_SIZE_KB", config.buffer_size_kb, config.problems);
  read_int(getenv, "FLEETSCOPE_BUFFER_POOL_MB", config.buffer_pool_mb, config.problems);
  read_int(getenv, "FLEETSCOPE_SIGNAL_FLUSH_MS", config.signal_flush_ms, config.problems);
  if (const char* filter = getenv("FLEETSCOPE_RUNTIME_FILTER")) config.runtime_filter = filter;
  config.control_fifo = read_text(getenv, "FLEETSCOPE_CONTROL_FIFO");
  config.control_reply = read_text(getenv, "FLEETSCOPE_CONTROL_REPLY");
  if (std::string detach = read_text(getenv, "FLEETSCOPE_DETACH"); !detach.empty()) {
    if (detach == "always") {
      config.detach = Detach::always;
    } else if (detach == "never") {
      config.detach = Detach::never;
    } else {
      config.problems.push_back("FLEETSCOPE_DETACH='" + detach +
                                "' is not always or never; using always");
    }
  }
  if (config.buffer_pool_mb < 1) {
    config.problems.push_back("FLEETSCOPE_BUFFER_POOL_MB below 1; using 1");
    config.buffer_pool_mb = 1;
  }
  if (config.buffer_size_kb < 64) {
    // CUPTI needs room for at least a few records; tiny buffers only multiply callbacks.
    config.problems.push_back("FLEETSCOPE_BUFFER_SIZE_KB below 64; using 64");
    config.buffer_size_kb = 64;
  }
  std::string trace = read_text(getenv, "FLEETSCOPE_TRACE");
  bool forced_idle = trace == "0";
  config.active = !forced_idle && (!config.output.empty() || !config.part_dir.empty());
  return config;
}

std::string WindowConfig::output_path(int64_t pid) const {
  if (!part_dir.empty()) return part_dir + "/part-" + std::to_string(pid) + ".db";
  // Windows asked for by a control source other than the environment, with no output named.
  std::string path = output.empty() ? std::string("fleetscope-%p.db") : output;
  std::string id = std::to_string(pid);
  if (path.find("%p") == std::string::npos) {
    // No %p: the pid goes before the extension ("trace.db" -> "trace-1234.db").
    auto slash = path.rfind('/');
    auto dot = path.rfind('.');
    bool has_ext =
        dot != std::string::npos && dot > 0 && (slash == std::string::npos || dot > slash + 1);
    path.insert(has_ext ? dot : path.size(), "-%p");
  }
  for (auto pos = path.find("%p"); pos != std::string::npos; pos = path.find("%p", pos))
    path.replace(pos, 2, id);
  return path;
}

WindowRequest WindowConfig::request() const {
  WindowRequest r;
  r.delay_ms = delay_ms;
  r.duration_ms = duration_ms;
  r.iterations = iterations;
  r.start_at_next_step = iterations > 0;
  r.requester = "environment";
  return r;
}

}  // namespace fleetscope::agent
