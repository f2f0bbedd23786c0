#include "run_gui.h"

#include <unistd.h>

#include <QApplication>
#include <QBuffer>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPixmap>
#include <QPushButton>
#include <QRegularExpression>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "capture_view.h"
#include "fleetscope/common/new_file.h"
#include "fleetscope/store/database.h"
#include "fleetscope/store/error.h"
#include "main_window.h"
#include "panels.h"
#include "timeline_widget.h"

namespace fleetscope::gui {

// --timing: the time from the start to the first paint of a capture's timeline (from its zoom
// summary or its events) and to the first paint with every event loaded, on stderr.
void report_timing(TimelineWidget* timeline, QElapsedTimer clock) {
  struct State {
    bool first = true, all = false;
  };
  auto state = std::make_shared<State>();
  QObject::connect(timeline, &TimelineWidget::painted, timeline, [timeline, clock, state](bool) {
    const TimelineData* data = timeline->timeline();
    const bool all = data && data->complete();
    if (state->first) {
      state->first = false;
      std::fprintf(stderr, "fleetscope-gui: first paint %lld ms (%s)\n", (long long)clock.elapsed(),
                   all                ? "events"
                   : data->has_events ? "first part of the events"
                                      : "zoom summary");
    }
    if (all && !state->all) {
      state->all = true;
      std::fprintf(stderr, "fleetscope-gui: painted with all events %lld ms\n",
                   (long long)clock.elapsed());
    }
  });
}

bool write_screenshot(const QStringList& files, const QString& view, QSize size, const QString& png,
                      QString& error, const QElapsedTimer* timing, bool analyze) {
  // Each side at most 8192 (8K is 7680x4320): a typo like 30000x30000 rendered for 44 s in 7 GB.
  constexpr int largest = 8192;
  if (size.width() < 1 || size.height() < 1 || size.width() > largest || size.height() > largest) {
    error = QString("--size %1x%2: expected WxH, each from 1 to %3 pixels")
                .arg(size.width())
                .arg(size.height())
                .arg(largest);
    return false;
  }
  MainWindow window(/*interactive=*/false);
  window.resize(size);
  if (timing) report_timing(window.capture_view()->timeline(), *timing);
  if (!window.show_view(view)) {
    error = "unknown view '" + view +
            "' (expected fleet, timeline, findings, sharing, diff, daemon or sql)";
    return false;
  }
  window.show();
  // Smaller than the window can be, the picture is the window's smallest size: said, not silent.
  if (window.size() != size)
    std::fprintf(stderr,
                 "fleetscope-gui: note: --size %dx%d is below the window's smallest size; the "
                 "picture is %dx%d\n",
                 size.width(), size.height(), window.width(), window.height());
  window.open(files);
  if (!window.wait_loaded(120000)) {
    error = window.last_error().isEmpty() ? files.join(", ") + ": loading did not finish"
                                          : window.last_error();
    return false;
  }
  QPushButton* analyze_button = window.findings_panel()->analyze_button();
  if (analyze && !analyze_button->isHidden() && analyze_button->isEnabled()) {
    analyze_button->click();
    if (!window.wait_loaded(600000)) {
      error = window.last_error().isEmpty() ? files.join(", ") + ": the analysis did not finish"
                                            : window.last_error();
      return false;
    }
  }
  // The diff view compares the first two captures.
  if (view == "diff" && window.diff_view()->compare_button()->isEnabled()) {
    window.diff_view()->compare_button()->click();
    if (!window.wait_loaded(120000)) {
      error = window.last_error();
      return false;
    }
  }
  // Show the top finding where it helps the picture: its window highlighted on the timeline,
  // its evidence in the findings view.
  if (window.findings_panel()->model()->rowCount() > 0 &&
      (view == "findings" || view == "timeline")) {
    window.findings_panel()->select_row(0);
    if (view == "timeline") {
      // The whole capture, with a range selected in its middle so the aggregate table shows.
      TimelineWidget* t = window.capture_view()->timeline();
      const TimeRange all = t->view().bounds();
      t->show_range(all);
      t->set_selection(
          TimeRange{all.begin + all.length() * 2 / 5, all.begin + all.length() * 3 / 5});
    }
  }
  window.show_view(view);
  QApplication::processEvents();
  const QImage image = window.grab().toImage();
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) {
    error = png + ": cannot encode the PNG";
    return false;
  }
  // Through the one output path (store::AtomicOutput): never over a file it shows (QImage::save
  // wrote the PNG over the database when both had one name), never through a link planted under
  // the temporary name, complete or absent.
  try {
    store::AtomicOutput output(png.toStdString());
    const int fd = common::create_new_file(output.temp_path());
    if (fd < 0) throw Error(png.toStdString() + ": cannot write: " + std::strerror(errno));
    const bool written = common::write_all(fd, std::string_view(bytes.constData(), bytes.size()));
    const int write_error = errno;
    ::close(fd);
    if (!written) throw Error(png.toStdString() + ": write failed: " + std::strerror(write_error));
    output.commit();
  } catch (const std::exception& e) {
    error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

namespace {

struct Options {
  QCommandLineOption shot{
      "screenshot", "Render offscreen and write a PNG instead of showing a window.", "OUT.png"};
  QCommandLineOption view{
      "view",
      "View for --screenshot: fleet, timeline, findings, sharing, diff, daemon, "
      "sql.",
      "VIEW", "timeline"};
  QCommandLineOption size{"size", "Window size for --screenshot, WxH.", "WxH", "1400x900"};
  QCommandLineOption daemon{"connect", "Connect to fleetscoped's API socket at start.", "SOCKET"};
  QCommandLineOption timing{"timing",
                            "Print the time to the first paint of the timeline on stderr."};
  QCommandLineOption analyze{"analyze",
                             "With --screenshot: analyse a capture that waits for the Analyze "
                             "button (a large one) before the picture, as that button does."};
};

void describe(QCommandLineParser& parser, const Options& o) {
  parser.setApplicationDescription("Browse fleetscope traces, findings and consolidation plans.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addOptions({o.shot, o.view, o.size, o.daemon, o.timing, o.analyze});
  parser.addPositionalArgument(
      "FILE...",
      "fleetscope databases, Kineto JSON traces (.json, .json.gz), nsys SQLite exports, or "
      "folders of them; several open together (ranks of a job, hosts of a fleet)");
}

}  // namespace

int run_gui(int argc, char** argv) {
  QElapsedTimer clock;
  clock.start();
  bool screenshot = false, info = false;
  for (int i = 1; i < argc; ++i) {
    const QString a(argv[i]);
    screenshot |= a == "--screenshot";
    info |= a == "--help" || a == "-h" || a == "-?" || a == "--help-all" || a == "--version" ||
            a == "-v";
  }
  const Options options;
  if (info) {
    // --help and --version need no display: answered before any window system is touched.
    QCoreApplication core(argc, argv);
    QCoreApplication::setApplicationName("fleetscope-gui");
    QCoreApplication::setApplicationVersion(FLEETSCOPE_GUI_VERSION);
    QCommandLineParser parser;
    describe(parser, options);
    if (!parser.parse(QCoreApplication::arguments())) {
      std::fprintf(stderr, "fleetscope-gui: %s\n", qPrintable(parser.errorText()));
      return 2;
    }
    if (parser.isSet("version"))
      std::printf("fleetscope-gui %s\n", FLEETSCOPE_GUI_VERSION);
    else
      std::printf("%s", qPrintable(parser.helpText()));
    return 0;
  }
  if (screenshot && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
    qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName("fleetscope-gui");
  QApplication::setApplicationVersion(FLEETSCOPE_GUI_VERSION);
  QCommandLineParser parser;
  describe(parser, options);
  const QCommandLineOption& shot = options.shot;
  const QCommandLineOption& view = options.view;
  const QCommandLineOption& size = options.size;
  const QCommandLineOption& daemon = options.daemon;
  if (!parser.parse(QApplication::arguments())) {
    std::fprintf(stderr, "fleetscope-gui: %s\n", qPrintable(parser.errorText()));
    return 2;
  }
  const QStringList files = parser.positionalArguments();
  if (parser.isSet(shot)) {
    // At most 9 digits each, so that toInt() cannot overflow (write_screenshot bounds them).
    const auto m = QRegularExpression("^(\\d{1,9})x(\\d{1,9})$").match(parser.value(size));
    if (!files.isEmpty() && !m.hasMatch()) {
      std::fprintf(stderr, "fleetscope-gui: --size '%s': expected WxH, e.g. 1400x900\n",
                   qPrintable(parser.value(size)));
      return 2;
    }
    if (files.isEmpty()) {
      std::fprintf(
          stderr,
          "fleetscope-gui: usage: --screenshot OUT.png [--view VIEW] [--size WxH] FILE...\n");
      return 2;
    }
    QString error;
    if (!write_screenshot(files, parser.value(view),
                          QSize(m.captured(1).toInt(), m.captured(2).toInt()), parser.value(shot),
                          error, parser.isSet(options.timing) ? &clock : nullptr,
                          parser.isSet(options.analyze))) {
      std::fprintf(stderr, "fleetscope-gui: %s\n", qPrintable(error));
      return 1;
    }
    return 0;
  }
  MainWindow window;
  if (parser.isSet(options.timing)) report_timing(window.capture_view()->timeline(), clock);
  window.resize(1400, 900);
  window.show();
  if (parser.isSet(daemon)) window.connect_to_daemon(parser.value(daemon));
  if (!files.isEmpty()) window.open(files);
  return QApplication::exec();
}

}  // namespace fleetscope::gui
