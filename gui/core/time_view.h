// The GUI uses the timeline summary library (schema/timeline) under its own namespace: the types
// and functions of fleetscope::timeline are visible as fleetscope::gui names.
#pragma once

#include "fleetscope/timeline/time_view.h"

namespace fleetscope::gui {
using namespace fleetscope::timeline;  // NOLINT(google-build-using-namespace)
}  // namespace fleetscope::gui
