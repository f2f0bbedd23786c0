// One self-overwriting progress line for long commands (import, analyze, export, fleet):
// "import: trace.json: 1.2/4.3 GB (28%), 2.9M events, 1.1M events/s, ETA 3 s". Shown only on a
// terminal (the caller passes isatty(STDERR_FILENO)); on a pipe or file nothing is written, so
// logs and scripts stay clean. Redrawn at most every 200 ms; finish() erases it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>

namespace fleetscope::common {

class ProgressLine {
 public:
  ProgressLine(std::ostream& err, std::string label, bool terminal)
      : err_(err), label_(std::move(label)), enabled_(terminal) {}
  ~ProgressLine() { finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }

  // `done`/`total` in `unit`s ("bytes" shows as MB/GB; anything else as a count), `events`
  // processed so far (0: not shown). total <= 0: no percentage and no ETA. `force`: draw even
  // if the last draw was less than 200 ms ago.
  void update(int64_t done, int64_t total, const char* unit, int64_t events = 0,
              bool force = false) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!force && drawn_ && now - last_ < std::chrono::milliseconds(200)) return;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::string line = "\r" + label_ + ": ";
    const bool bytes = std::string(unit) == "bytes";
    line += bytes ? size(done) : count(done);
    if (total > 0) line += "/" + (bytes ? size(total) : count(total));
    if (!bytes) line += std::string(" ") + unit;
    if (total > 0) line += " (" + std::to_string(done * 100 / total) + "%)";
    if (events > 0) line += ", " + count(events) + " events";
    if (elapsed > 0.05) {
      const double rate = static_cast<double>(events > 0 ? events : done) / elapsed;
      line += ", " + (events > 0 || !bytes ? count(static_cast<int64_t>(rate)) + " events/s"
                                           : size(static_cast<int64_t>(rate)) + "/s");
      if (total > 0 && done > 0 && done < total) {
        const double eta = elapsed * static_cast<double>(total - done) / static_cast<double>(done);
        char t[32];
        std::snprintf(t, sizeof t, ", ETA %.0f s", eta);
        line += t;
      }
    }
    line += "\x1b[K";  // erase what a longer previous line left
    err_ << line << std::flush;
    drawn_ = true;
    last_ = now;
  }

  void finish() {
    if (enabled_ && drawn_) err_ << "\r\x1b[K" << std::flush;
    drawn_ = false;
  }

  static std::string count(int64_t n) {
    char b[32];
    if (n >= 10'000'000)
      std::snprintf(b, sizeof b, "%.0fM", static_cast<double>(n) / 1e6);
    else if (n >= 1'000'000)
      std::snprintf(b, sizeof b, "%.1fM", static_cast<double>(n) / 1e6);
    else if (n >= 10'000)
      std::snprintf(b, sizeof b, "%.0fk", static_cast<double>(n) / 1e3);
    else
      std::snprintf(b, sizeof b, "%lld", static_cast<long long>(n));
    return b;
  }
  static std::string size(int64_t bytes) {
    char b[32];
    if (bytes >= 1'000'000'000)
      std::snprintf(b, sizeof b, "%.2f GB", static_cast<double>(bytes) / 1e9);
    else
      std::snprintf(b, sizeof b, "%.1f MB", static_cast<double>(bytes) / 1e6);
    return b;
  }

 private:
  std::ostream& err_;
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace fleetscope::common
