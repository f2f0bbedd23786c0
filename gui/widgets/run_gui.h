// The fleetscope-gui program: command line, the window, and the offscreen screenshot mode.
//   fleetscope-gui [--timing] [FILE...]          (files and folders, opened together)
//   fleetscope-gui --screenshot OUT.png [--view fleet|timeline|findings|sharing|diff|daemon|sql]
//                  [--size WxH] [--timing] FILE...
//   fleetscope-gui --help | --version      (no display needed)
// --timing prints the time to the timeline's first paint (and to the paint with every event) on
// stderr. Exit codes: 0 ok, 1 the file could not be opened or the PNG not written, 2 usage error.
#pragma once

#include <QElapsedTimer>
#include <QSize>
#include <QString>
#include <QStringList>

namespace fleetscope::gui {

int run_gui(int argc, char** argv);

// Opens `files` in a non-interactive window of `size`, waits for the load, shows `view` and
// writes the window to `png`. Needs a QApplication. Returns false with `error` set on failure.
// With `timing`, the first paints are reported on stderr as times since it started. With
// `analyze`, a capture that waits for the Analyze button (over the automatic analysis limit) is
// analysed before the picture, as a click on that button does.
bool write_screenshot(const QStringList& files, const QString& view, QSize size, const QString& png,
                      QString& error, const QElapsedTimer* timing = nullptr, bool analyze = false);

}  // namespace fleetscope::gui
