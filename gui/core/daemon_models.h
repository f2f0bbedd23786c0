// The daemon panel's tables: the agents registered with the daemon, its GPUs as its device
// sampler sees them, and the trace windows open now (DaemonStatusView, daemon_link.h).
#pragma once

#include "daemon_link.h"
#include "table_model.h"

namespace fleetscope::gui {

class DaemonAgentsModel : public RowTableModel<DaemonAgent> {
 public:
  enum Column { agent, pid, uid, workflow, devices, open_capture, command };
  explicit DaemonAgentsModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const DaemonAgent& row, int column, int role) const override;
};

class DaemonDevicesModel : public RowTableModel<DaemonDevice> {
 public:
  enum Column { gpu, name, utilization, memory, power };
  explicit DaemonDevicesModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const DaemonDevice& row, int column, int role) const override;
};

class DaemonWindowsModel : public RowTableModel<DaemonWindow> {
 public:
  enum Column { capture, pids, opened, deadline };
  explicit DaemonWindowsModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const DaemonWindow& row, int column, int role) const override;
};

// "agent 3 · 2 GPUs · 1 open window" style one-line summary of a status, for the panel header.
QString daemon_summary(const DaemonStatusView& status);

}  // namespace fleetscope::gui
