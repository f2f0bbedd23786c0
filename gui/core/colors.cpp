#include "colors.h"

namespace fleetscope::gui {

namespace {

uint32_t fnv1a(const std::string& text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace

QColor event_color(EventKind kind, const std::string& name) {
  switch (kind) {
    case EventKind::kernel:
      return QColor::fromHsv(int(fnv1a(name) % 360), 150, 220);
    case EventKind::memcpy:
      if (name.find("HtoD") != std::string::npos) return QColor(70, 160, 70);
      if (name.find("DtoH") != std::string::npos) return QColor(200, 80, 60);
      return QColor(200, 160, 40);
    case EventKind::memset:
      return QColor(130, 130, 130);
    case EventKind::runtime:
      return QColor(90, 120, 190);
    case EventKind::nvtx:
      return QColor::fromHsv(int(fnv1a(name) % 360), 90, 200);
    case EventKind::cpu_op:
      return QColor::fromHsv(int(fnv1a(name) % 360), 60, 210);
    case EventKind::iteration:
      return QColor(170, 190, 215);
  }
  return Qt::black;
}

}  // namespace fleetscope::gui
