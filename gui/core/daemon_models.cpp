#include "daemon_models.h"

#include <QDateTime>

namespace fleetscope::gui {

namespace {

QString q(const std::string& s) {
  return QString::fromStdString(s);
}

QString join(const std::vector<int32_t>& values) {
  QStringList parts;
  for (int32_t v : values) parts << QString::number(v);
  return parts.isEmpty() ? QString("-") : parts.join(",");
}

// Wall-clock ns since the epoch (the daemon's clock) as local time.
QString wall_time(int64_t ns) {
  return QDateTime::fromMSecsSinceEpoch(ns / 1'000'000).toString("yyyy-MM-dd hh:mm:ss");
}

QString gib(int64_t bytes) {
  return QString::number(double(bytes) / (1024.0 * 1024 * 1024), 'f', 1) + " GiB";
}

bool shown(int role) {
  return role == Qt::DisplayRole || role == kSortRole || role == Qt::ToolTipRole;
}

}  // namespace

DaemonAgentsModel::DaemonAgentsModel(QObject* parent)
    : RowTableModel({"Agent", "PID", "UID", "Workflow", "GPUs", "Open capture", "Command"},
                    parent) {}

QVariant DaemonAgentsModel::cell(const DaemonAgent& a, int column, int role) const {
  if (!shown(role)) return {};
  switch (column) {
    case agent:
      return qint64(a.agent_id);
    case pid:
      return a.pid;
    case uid:
      return a.uid;
    case workflow:
      return q(a.workflow) + " (" + q(a.workflow_source) + ")";
    case devices:
      return join(a.devices);
    case open_capture:
      if (!a.open_capture_id) return role == kSortRole ? QVariant(qint64(-1)) : QVariant("-");
      return qint64(*a.open_capture_id);
    case command:
      return q(a.command);
  }
  return {};
}

DaemonDevicesModel::DaemonDevicesModel(QObject* parent)
    : RowTableModel({"GPU", "Name", "NVML utilization rate", "Memory", "Power"}, parent) {}

QVariant DaemonDevicesModel::cell(const DaemonDevice& d, int column, int role) const {
  if (!shown(role)) return {};
  switch (column) {
    case gpu:
      return d.index;
    case name:
      return q(d.name);
    case utilization:
      if (!d.utilization_pct) return role == kSortRole ? QVariant(-1.0) : QVariant("-");
      return role == kSortRole ? QVariant(*d.utilization_pct)
                               : QVariant(QString::number(*d.utilization_pct, 'f', 1) + "%");
    case memory:
      if (!d.memory_used_bytes || !d.memory_total_bytes)
        return role == kSortRole ? QVariant(qint64(-1)) : QVariant("-");
      return role == kSortRole
                 ? QVariant(qint64(*d.memory_used_bytes))
                 : QVariant(gib(*d.memory_used_bytes) + " / " + gib(*d.memory_total_bytes));
    case power:
      if (!d.power_watts) return role == kSortRole ? QVariant(-1.0) : QVariant("-");
      return role == kSortRole ? QVariant(*d.power_watts)
                               : QVariant(QString::number(*d.power_watts, 'f', 0) + " W");
  }
  return {};
}

DaemonWindowsModel::DaemonWindowsModel(QObject* parent)
    : RowTableModel({"Capture", "PIDs", "Opened", "Deadline"}, parent) {}

QVariant DaemonWindowsModel::cell(const DaemonWindow& w, int column, int role) const {
  if (!shown(role)) return {};
  switch (column) {
    case capture:
      return qint64(w.capture_id);
    case pids:
      return join(w.pids);
    case opened:
      return role == kSortRole ? QVariant(qint64(w.start_ns)) : QVariant(wall_time(w.start_ns));
    case deadline:
      if (!w.deadline_ns) return role == kSortRole ? QVariant(qint64(-1)) : QVariant("none");
      return role == kSortRole ? QVariant(qint64(*w.deadline_ns))
                               : QVariant(wall_time(*w.deadline_ns));
  }
  return {};
}

QString daemon_summary(const DaemonStatusView& s) {
  QString text = QString("fleetscoped %1 on %2 at %3 (API %4, schema %5), database %6.\n")
                     .arg(q(s.daemon_version), q(s.hostname), q(s.address))
                     .arg(s.api_version)
                     .arg(s.schema_version)
                     .arg(q(s.database_path));
  text += QString("%1 agent(s), %2 GPU(s), %3 open trace window(s)")
              .arg(s.agents.size())
              .arg(s.devices.size())
              .arg(s.open_windows.size());
  text += s.device_sampling ? QString("; device sampling on.")
                            : QString("; device sampling off: %1.").arg(q(s.device_sampling_note));
  return text;
}

}  // namespace fleetscope::gui
