// Linked into every benchmark program (bench/CMakeLists.txt): prints the machine a run measured on
// (CPU model, online cores) and the load average when the program starts and when it ends, so that
// every figure copied into docs/benchmarks.md comes with what else the machine was doing. On a
// shared machine a ratio against a reference measured in the same run is what stays meaningful;
// the load says how much the absolute numbers can be trusted. Goes to stderr, so that programs
// whose stdout is parsed (JSON, CSV) are unchanged.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

std::string load_average() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return text;
}

struct MachineReport {
  MachineReport() {
    std::fprintf(stderr, "machine: %s, %ld cores online; load average (1/5/15 min) at start %s\n",
                 cpu_model().c_str(), sysconf(_SC_NPROCESSORS_ONLN), load_average().c_str());
  }
  ~MachineReport() {
    std::fprintf(stderr, "machine: load average (1/5/15 min) at end %s\n", load_average().c_str());
  }
};

const MachineReport report;

}  // namespace
