// Timeline performance on a large capture: time to first paint and repaint times while panning
// and zooming, against the named reference "a plain SELECT of the visible rows" (what a viewer
// without zoom levels must at least do per frame), measured in the same run on the same database.
//
// The database is generated here with store::Writer (never committed): EVENTS kernels (default
// 10 million) on 2 GPUs × 4 streams, durations 2–50 µs, gaps 1–20 µs, 1000 kernel names.
//
//   bench_gui_timeline [EVENTS] [--db PATH]   (PATH: reuse or keep the generated database)
//
// Reported:
//   summary at write      write_capture_summaries(DB): the step the importer runs once the
//                         database is in place (zoom levels of every capture, cached beside it)
//   first paint, first open  what the GUI does on its first open of the freshly written
//                         database: open_session + the summary + first frame (raw events then
//                         load in the background)
//   first paint, no summary  open + load_timeline (all events, zoom levels) + first frame: what
//                         the first open cost before the summary was written at import
//   reference             SELECT of the rows visible in the first frame (every row)
//   repaint p50/p99       one 1400×900 frame (TimelineWidget::render) per pan step of 70 px,
//                         40 steps at each of 8 zoom levels from the whole capture to 20 µs; wall
//                         time, and the painting thread's CPU time (apart from scheduling delays
//                         on a shared machine)
//   reference p50/p99     SELECT of the rows visible in those frames (index on start; at most 5 s
//                         of SELECTs per zoom level)
#include <unistd.h>
#include <QApplication>
#include <QImage>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "fleetscope/store/reader.h"
#include "fleetscope/store/writer.h"
#include "fleetscope/timeline/timeline_cache.h"
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

  // First open of the freshly written database, as the GUI's loader does it.
  t0 = Clock::now();
  auto session = gui::open_session(db);
  auto cached = gui::load_timeline_cache(session->cache_base(), 1);
  if (!cached) {
    std::fprintf(stderr, "the summary written at import was not found by the GUI\n");
    return 1;
  }
  gui::TimelineWidget first;
  first.resize(size);
  first.set_timeline(std::make_shared<gui::TimelineData>(std::move(*cached)));
  first.render(&image);
  const double first_open_ms = ms_since(t0);

  // Without a summary: every event read and the levels built before the first frame.
  t0 = Clock::now();
  auto reader = std::make_unique<store::Reader>(db);
  auto data = std::make_shared<gui::TimelineData>(gui::load_timeline(*reader, 1));
  gui::TimelineWidget widget;
  widget.resize(size);
  widget.set_timeline(data);
  widget.render(&image);
  const double cold_ms = ms_since(t0);
  const int64_t total = data->event_count();

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
  std::printf("summary at write (write_capture_summaries, once per database):    %8.0f ms\n",
              summary_ms);
  std::printf("first paint, first open of the written database (session + summary): %8.0f ms\n",
              first_open_ms);
  std::printf("first paint without a summary (load all events + zoom levels):      %8.0f ms\n",
              cold_ms);
  std::printf(
      "reference: SELECT of the %lld rows visible in that frame:  %8.0f ms (%.1fx the first "
      "paint)\n",
      (long long)all_rows, select_all_ms, select_all_ms / first_open_ms);
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
