// Event colours: one place, shared by the timeline and its tests (which check the colour at the
// computed x of a known kernel). Kernels, NVTX ranges and CPU ops get a hue from a hash of their
// name, so one kernel keeps its colour across zoom levels, captures and sessions.
#pragma once

#include <QColor>
#include <string>

#include "timeline_data.h"

namespace fleetscope::gui {

QColor event_color(EventKind kind, const std::string& name);

}  // namespace fleetscope::gui
