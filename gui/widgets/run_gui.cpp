#include "run_gui.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QImage>
#include <QPixmap>
#include <QRegularExpression>
#include <cstdio>

#include "capture_view.h"
#include "main_window.h"
#include "panels.h"
#include "timeline_widget.h"

namespace fleetscope::gui {

bool write_screenshot(const QString& file, const QString& view, QSize size, const QString& png,
                      QString& error) {
  MainWindow window(/*interactive=*/false);
  window.resize(size);
  if (!window.show_view(view)) {
    error =
        "unknown view '" + view + "' (expected fleet, timeline, findings, sharing, daemon or sql)";
    return false;
  }
  window.show();
  window.open(file);
  if (!window.wait_loaded(120000)) {
    error = window.last_error().isEmpty() ? file + ": loading did not finish" : window.last_error();
    return false;
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
  if (!image.save(png, "PNG")) {
    error = png + ": cannot write the PNG";
    return false;
  }
  return true;
}

int run_gui(int argc, char** argv) {
  bool screenshot = false;
  for (int i = 1; i < argc; ++i) screenshot |= QString(argv[i]) == "--screenshot";
  if (screenshot && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
    qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName("fleetscope-gui");
  QCommandLineParser parser;
  parser.setApplicationDescription("Browse fleetscope traces, findings and consolidation plans.");
  parser.addHelpOption();
  QCommandLineOption shot(
      "screenshot", "Render offscreen and write a PNG instead of showing a window.", "OUT.png");
  QCommandLineOption view("view",
                          "View for --screenshot: fleet, timeline, findings, sharing, daemon, sql.",
                          "VIEW", "timeline");
  QCommandLineOption size("size", "Window size for --screenshot, WxH.", "WxH", "1400x900");
  QCommandLineOption daemon("connect", "Connect to fleetscoped's API socket at start.", "SOCKET");
  parser.addOptions({shot, view, size, daemon});
  parser.addPositionalArgument(
      "FILE", "fleetscope database, Kineto JSON (.json, .json.gz) or nsys SQLite export");
  if (!parser.parse(QApplication::arguments())) {
    std::fprintf(stderr, "fleetscope-gui: %s\n", qPrintable(parser.errorText()));
    return 2;
  }
  if (parser.isSet("help")) {
    std::printf("%s", qPrintable(parser.helpText()));
    return 0;
  }
  const QStringList files = parser.positionalArguments();
  if (parser.isSet(shot)) {
    const auto m = QRegularExpression("^(\\d+)x(\\d+)$").match(parser.value(size));
    if (files.size() != 1 || !m.hasMatch()) {
      std::fprintf(stderr,
                   "fleetscope-gui: usage: --screenshot OUT.png [--view VIEW] [--size WxH] FILE\n");
      return 2;
    }
    QString error;
    if (!write_screenshot(files.front(), parser.value(view),
                          QSize(m.captured(1).toInt(), m.captured(2).toInt()), parser.value(shot),
                          error)) {
      std::fprintf(stderr, "fleetscope-gui: %s\n", qPrintable(error));
      return 1;
    }
    return 0;
  }
  MainWindow window;
  window.resize(1400, 900);
  window.show();
  if (parser.isSet(daemon)) window.connect_to_daemon(parser.value(daemon));
  if (!files.isEmpty()) window.open(files.front());
  return QApplication::exec();
}

}  // namespace fleetscope::gui
