// The fleetscope-gui program: command line, the window, and the offscreen screenshot mode.
//   fleetscope-gui [FILE]
//   fleetscope-gui --screenshot OUT.png [--view fleet|timeline|findings|sharing|sql]
//                  [--size WxH] FILE
// Exit codes: 0 ok, 1 the file could not be opened or the PNG not written, 2 usage error.
#pragma once

#include <QSize>
#include <QString>

namespace fleetscope::gui {

int run_gui(int argc, char** argv);

// Opens `file` in a non-interactive window of `size`, waits for the load, shows `view` and writes
// the window to `png`. Needs a QApplication. Returns false with `error` set on failure.
bool write_screenshot(const QString& file, const QString& view, QSize size, const QString& png,
                      QString& error);

}  // namespace fleetscope::gui
