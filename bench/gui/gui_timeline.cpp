// Timeline performance on a large capture: time to first paint (with and without the zoom
// summary) and repaint times while panning and zooming, against named references measured in the
// same run on the same database:
//   - "the Perfetto route": the same capture written by `fleetscope export` as a Chrome trace and
//     that JSON parsed once (nlohmann::json SAX, no DOM: a lower bound of what a JSON trace
//     viewer does before its first frame);
//   - "a plain SELECT of the visible rows" (what a viewer without zoom levels reads at least, per
//     frame).
//
// The database is generated here with store::Writer (never committed): EVENTS kernels (default
// 10 million) on 2 GPUs × 4 streams, durations 2–50 µs, gaps 1–20 µs, 1000 kernel names.
//
//   bench_gui_timeline [EVENTS] [--db PATH]   (PATH: reuse or keep the generated database)
//
// Reported:
//   summary at write      write_capture_summaries(DB): the step the importer runs once the
//                         database is in place (zoom levels of every capture, cached beside it)
//   first paint, summary  the GUI's loader (gui::Loader::open, as `fleetscope-gui DB` runs it) on
//                         the written database until its first timeline frame is rendered
//   first paint, no summary  the same with the summary removed: the loader shows the first part of
//                         the capture (load_timeline_head) while the rest is read
//   all events painted    load_timeline (every event, the zoom levels) + a frame: what the loader
//                         then delivers, and what the first paint cost before the staged load
//   reference (Perfetto route)  export_chrome of the capture + a SAX parse of the JSON
//   reference (SELECT)    SELECT of the rows visible in the first frame (every row)
//   repaint p50/p99       one 1400×900 frame (TimelineWidget::render) per pan step of 70 px,
//                         40 steps at each of 8 zoom levels from the whole capture to 20 µs; wall
//                         time, and the painting thread's CPU time (apart from scheduling delays
//                         on a shared machine)
//   reference p50/p99     SELECT of the rows visible in those frames (index on start; at most 5 s
//                         of SELECTs per zoom level)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <QApplication>
#include <QEventLoop>
#include <QImage>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "fleetscope/export/chrome_trace.h"
#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "fleetscope/timeline/timeline_cache.h"
#include "loader.h"
#include "session.h"
#include "timeline_data.h"
#include "timeline_widget.h"

using namespace fleetscope;
using Clock = std::chrono::steady_clock;

namespace {

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

void generate(const std::string& path, int64_t events) {
  store::WriterOptions options;
  store::Writer writer(store::Database::create(path), options);
  store::Capture capture;
  capture.source = "bench";
  capture.source_path = "bench_gui_timeline";
  const int64_t capture_id = writer.add_capture(capture);
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("kernel_" + std::to_string(i));
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> duration(2'000, 50'000), gap(1'000, 20'000);
  std::uniform_int_distribution<int> name(0, 999);
  constexpr int kStreams = 8;
  std::vector<int64_t> clock(kStreams, 1'700'000'000'000'000'000);
  for (int64_t i = 0; i < events; ++i) {
    const int s = int(i % kStreams);
    store::Kernel k;
    k.start = clock[size_t(s)] + gap(rng);
    k.end = k.start + duration(rng);
    clock[size_t(s)] = k.end;
    k.deviceId = s / 4;
    k.streamId = 7 + s % 4;
    k.correlationId = i;
    k.globalPid = store::global_pid(4242);
    k.demangledName = names[size_t(name(rng))];
    k.shortName = k.demangledName;
    k.captureId = capture_id;
    writer.add(std::move(k));
  }
  writer.finish();
}

struct Frame {
  double paint_ms = 0, select_ms = 0;
  int64_t rows = 0;
};

// The reference: the visible rows, as a viewer without summaries reads them.
int64_t select_visible(const store::Reader& reader, gui::TimeRange vis, int64_t max_duration) {
  auto st = reader.database().prepare(
      "SELECT start, end, deviceId, streamId, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL "
      "WHERE captureId = 1 AND start >= ?1 AND start < ?2 AND end > ?3");
  st.bind(1, vis.begin - max_duration).bind(2, vis.end).bind(3, vis.begin);
  int64_t rows = 0, sum = 0;
  while (st.step()) sum += st.column_int(0) + st.column_int(4), ++rows;
  return rows + (sum == 42 ? 1 : 0);  // keeps the loop from being optimised away
}

// Opens `db` with the GUI's loader and renders the first timeline it delivers (summary, first
// part or all events); then cancels the rest. Returns the ms from open() to that frame and what
// the frame showed.
double loader_first_paint(const std::string& db, QSize size, QImage& image, std::string& what) {
  gui::Loader loader;
  gui::TimelineWidget widget;
  widget.resize(size);
  QEventLoop loop;
  double ms = -1;
  const auto t0 = Clock::now();
  QObject::connect(&loader, &gui::Loader::timeline_ready, &loop,
                   [&](int, int, gui::TimelinePtr timeline, bool) {
                     if (ms >= 0) return;
                     widget.set_timeline(timeline);
                     widget.render(&image);
                     ms = ms_since(t0);
                     what = timeline->complete()   ? "all events"
                            : timeline->has_events ? "first part of the events"
                                                   : "zoom summary";
                     loop.quit();
                   });
  QObject::connect(&loader, &gui::Loader::failed, &loop, [&](int, QString, QString m) {
    std::fprintf(stderr, "loader failed: %s\n", qPrintable(m));
    loop.quit();
  });
  loader.open(QString::fromStdString(db));
  loop.exec();
  loader.cancel();
  loader.wait();
  return ms;
}

// Counts the trace events of a Chrome trace with a SAX parse (no DOM).
struct EventCounter : nlohmann::json_sax<nlohmann::json> {
  int depth = 0;
  int64_t objects = 0;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    objects += depth == 2;  // {"traceEvents": [ {...}, ... ]}
    ++depth;
    return true;
  }
  bool end_object() override { return --depth, true; }
  bool start_array(std::size_t) override { return ++depth, true; }
  bool end_array() override { return --depth, true; }
  bool key(string_t&) override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    std::fprintf(stderr, "JSON parse error at byte %zu: %s\n", position, e.what());
    return false;
  }
};

// The Perfetto route: the capture exported as a Chrome trace, then that file parsed once.
struct PerfettoRoute {
  double export_ms = 0, parse_ms = 0;
  int64_t bytes = 0, events = 0;
};
PerfettoRoute perfetto_route(const store::Reader& reader, const std::string& json) {
  PerfettoRoute r;
  auto t0 = Clock::now();
  exporter::ChromeExportOptions options;
  options.capture_id = 1;
  options.gzip = false;
  exporter::export_chrome(reader, json, options);
  r.export_ms = ms_since(t0);
  t0 = Clock::now();
  const int fd = ::open(json.c_str(), O_RDONLY);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) throw std::runtime_error(json + ": cannot open");
  r.bytes = st.st_size;
  void* map = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw std::runtime_error(json + ": cannot map");
  const char* text = static_cast<const char*>(map);
  EventCounter counter;
  const bool ok = nlohmann::json::sax_parse(text, text + st.st_size, &counter);
  ::munmap(map, size_t(st.st_size));
  r.parse_ms = ms_since(t0);
  if (!ok) throw std::runtime_error(json + ": not valid JSON");
  r.events = counter.objects;
  std::filesystem::remove(json);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  int64_t events = 10'000'000;
  std::string db;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--db" && i + 1 < argc)
      db = argv[++i];
    else
      events = std::stoll(a);
  }
  std::filesystem::path temp;
  if (db.empty()) {
    temp = std::filesystem::temp_directory_path() /
           ("fleetscope-bench-gui-" + std::to_string(::getpid()));
    std::filesystem::create_directories(temp);
    db = (temp / "timeline.db").string();
  }
  if (!std::filesystem::exists(db)) {
    const auto t0 = Clock::now();
    generate(db, events);
    std::printf("generated %lld kernels into %s in %.1f s\n", (long long)events, db.c_str(),
                ms_since(t0) / 1e3);
  }
  // The write step: what `fleetscope import` runs once its database is in place.
  std::filesystem::remove(gui::timeline_cache_path(db, 1));
  auto t0 = Clock::now();
  if (timeline::write_capture_summaries(db) != 1) {
    std::fprintf(stderr, "no summary written for %s\n", db.c_str());
    return 1;
  }
  const double summary_ms = ms_since(t0);
  const QSize size(1400, 900);
  QImage image(size, QImage::Format_ARGB32_Premultiplied);

  // First open of the freshly written database, as the GUI's loader does it: from the summary.
  std::string what_summary, what_cold;
  const double first_open_ms = loader_first_paint(db, size, image, what_summary);
  // The same without the summary (a database written by another tool, or changed since).
  std::filesystem::rename(gui::timeline_cache_path(db, 1),
                          gui::timeline_cache_path(db, 1) + ".off");
  const double first_cold_ms = loader_first_paint(db, size, image, what_cold);

  // Every event read and the levels built (what the loader delivers next).
  t0 = Clock::now();
  auto reader = std::make_unique<store::Reader>(db);
  auto data = std::make_shared<gui::TimelineData>(gui::load_timeline(*reader, 1));
  gui::TimelineWidget widget;
  widget.resize(size);
  widget.set_timeline(data);
  widget.render(&image);
  const double cold_ms = ms_since(t0);
  const int64_t total = data->event_count();
  std::filesystem::rename(gui::timeline_cache_path(db, 1) + ".off",
                          gui::timeline_cache_path(db, 1));

  // Reference: the Perfetto route on the same capture.
  const PerfettoRoute perfetto = perfetto_route(*reader, db + ".export.json");

  int64_t max_duration = 0;
  for (const auto& e : data->events) max_duration = std::max(max_duration, e.max_duration);
  t0 = Clock::now();
  const int64_t all_rows = select_visible(*reader, data->span, max_duration);
  const double select_all_ms = ms_since(t0);

  // Repaint while panning at zoom levels from the whole capture down to 20 µs.
  std::vector<Frame> frames;
  std::vector<double> paint, paint_cpu, select;
  std::printf("\n%-12s %10s %10s %10s %12s %12s %8s %11s\n", "visible", "paint p50", "paint p99",
              "(CPU p99)", "SELECT p50", "SELECT p99", "SELECTs", "rows/frame");
  const gui::TimeRange span = data->span;
  for (int level = 0; level < 8; ++level) {
    const int64_t length =
        level == 0 ? span.length()
                   : std::max<int64_t>(20'000, span.length() / int64_t(std::pow(12.0, level)));
    widget.show_range({span.begin + (span.length() - length) / 3,
                       span.begin + (span.length() - length) / 3 + length});
    std::vector<double> p, pc, s;
    int64_t rows = 0;
    double select_total = 0;
    for (int step = 0; step < 40; ++step) {
      widget.view().pan(step % 20 < 10 ? 70 : -70);
      const double c0 = thread_cpu_ms();
      auto f0 = Clock::now();
      widget.render(&image);
      p.push_back(ms_since(f0));
      pc.push_back(thread_cpu_ms() - c0);
      // The reference reads every visible row; at the widest zooms that takes seconds per frame,
      // so it is measured on the frames that fit 5 s per zoom level (at least one).
      if (select_total < 5000) {
        f0 = Clock::now();
        rows += select_visible(*reader, widget.view().visible(), max_duration);
        s.push_back(ms_since(f0));
        select_total += s.back();
      }
    }
    paint.insert(paint.end(), p.begin(), p.end());
    paint_cpu.insert(paint_cpu.end(), pc.begin(), pc.end());
    select.insert(select.end(), s.begin(), s.end());
    char label[32];
    std::snprintf(label, sizeof label, "%.3g ms", double(widget.view().visible().length()) / 1e6);
    std::printf("%-12s %7.2f ms %7.2f ms %7.2f ms %9.2f ms %9.2f ms %8zu %11lld\n", label,
                quantile(p, 0.5), quantile(p, 0.99), quantile(pc, 0.99), quantile(s, 0.5),
                quantile(s, 0.99), s.size(), (long long)(rows / int64_t(s.size())));
    std::fflush(stdout);
  }
  std::printf("\nevents: %lld on %zu tracks, span %.1f s\n", (long long)total, data->tracks.size(),
              double(span.length()) / 1e9);
  const double route_ms = perfetto.export_ms + perfetto.parse_ms;
  std::printf("summary at write (write_capture_summaries, once per database):    %8.0f ms\n",
              summary_ms);
  std::printf("first paint, loader, with the summary (%s):              %8.0f ms\n",
              what_summary.c_str(), first_open_ms);
  std::printf("first paint, loader, no summary (%s):        %8.0f ms\n", what_cold.c_str(),
              first_cold_ms);
  std::printf("all events loaded and painted (load_timeline + zoom levels + frame): %8.0f ms\n",
              cold_ms);
  std::printf(
      "reference, the Perfetto route: fleetscope export %.0f ms (%lld events, %.0f MB) + JSON "
      "SAX parse %.0f ms = %.0f ms\n",
      perfetto.export_ms, (long long)perfetto.events, double(perfetto.bytes) / 1e6,
      perfetto.parse_ms, route_ms);
  std::printf("  ratio reference / first paint: %.1fx with the summary, %.1fx without\n",
              route_ms / first_open_ms, route_ms / first_cold_ms);
  std::printf("  ratio reference / all events painted: %.1fx\n", route_ms / cold_ms);
  std::printf(
      "reference: SELECT of the %lld rows visible in that frame:  %8.0f ms (%.1fx the first "
      "paint without a summary)\n",
      (long long)all_rows, select_all_ms, select_all_ms / first_cold_ms);
  std::printf(
      "repaint over all zoom levels (%zu frames): p50 %.2f ms, p99 %.2f ms (thread CPU p99 %.2f "
      "ms); "
      "reference SELECT p50 %.2f ms, p99 %.2f ms (%.1fx the repaint at p99)\n",
      paint.size(), quantile(paint, 0.5), quantile(paint, 0.99), quantile(paint_cpu, 0.99),
      quantile(select, 0.5), quantile(select, 0.99),
      quantile(select, 0.99) / std::max(1e-9, quantile(paint, 0.99)));
  if (!temp.empty()) std::filesystem::remove_all(temp);
  return 0;
}
