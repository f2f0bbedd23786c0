// The GUI's table models: fleet, findings, range aggregate, SQL results, sharing plan jobs,
// recorded plans and sharing events, key/value details. Each is a RowTableModel over rows the
// libraries produce.
#pragma once

#include <optional>

#include "aggregate.h"
#include "fleetscope/analyzer/analysis.h"
#include "fleetscope/analyzer/diff.h"
#include "fleetscope/sharer/planner.h"
#include "fleetscope/store/reader.h"
#include "session.h"
#include "table_model.h"

namespace fleetscope::gui {

// GPU-hours as every view prints them: fixed decimals, the same for every row and the totals.
QString format_gpu_hours(double hours);
// "Total: 2 job(s), 2.000000 GPU-hours, 1.000000 wasted (50.0 % utilization)".
QString fleet_totals(const FleetRows& rows);

// The fleet ranking of the analysis session (analyzer/fleet.h, as `fleetscope fleet` prints it).
class FleetModel : public RowTableModel<analyzer::WorkflowWaste> {
 public:
  enum Column {
    workflow,
    user,
    captures,
    gpu_hours,
    utilization,
    wasted_gpu_hours,
    top_finding,
    sources
  };
  explicit FleetModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const analyzer::WorkflowWaste& row, int column, int role) const override;
};

// One row per open source (database or trace): the summary across the open files.
class SourcesModel : public RowTableModel<SourceSummary> {
 public:
  enum Column { file, format, captures, workflows, first, last };
  explicit SourcesModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const SourceSummary& row, int column, int role) const override;
};

// `fleetscope diff` in the GUI: the capture-wide metrics of two captures and their change
// (analyzer/diff.h), and the kernels whose total time changed most.
class MetricDeltaModel : public RowTableModel<analyzer::MetricDelta> {
 public:
  enum Column { metric, before, after, delta, ratio };
  explicit MetricDeltaModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const analyzer::MetricDelta& row, int column, int role) const override;
};
class KernelDeltaModel : public RowTableModel<analyzer::KernelDelta> {
 public:
  enum Column { name, count_before, count_after, total_before, total_after, change };
  explicit KernelDeltaModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const analyzer::KernelDelta& row, int column, int role) const override;
};

// Findings sorted by impact, then the rules that were not evaluated (with what they need).
struct FindingRow {
  std::optional<store::Finding> finding;
  std::string rule;
  std::string needs;  // not evaluated: what is missing
};
std::vector<FindingRow> finding_rows(const analyzer::AnalysisResult& result);

class FindingsModel : public RowTableModel<FindingRow> {
 public:
  enum Column { rule, severity, impact, device, window, recommendation };
  explicit FindingsModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const FindingRow& row, int column, int role) const override;
};

class AggregateModel : public RowTableModel<AggregateRow> {
 public:
  enum Column { kind, name, count, total, share };
  explicit AggregateModel(QObject* parent = nullptr);
  void set_range_length(int64_t ns) { range_ns_ = ns; }

 protected:
  QVariant cell(const AggregateRow& row, int column, int role) const override;

 private:
  int64_t range_ns_ = 0;
};

class SqlResultModel : public RowTableModel<std::vector<std::optional<std::string>>> {
 public:
  explicit SqlResultModel(QObject* parent = nullptr);
  void set_result(const store::QueryResult& result);
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 protected:
  QVariant cell(const std::vector<std::optional<std::string>>& row, int column,
                int role) const override;

 private:
  QStringList columns_;
};

class PlanJobsModel : public RowTableModel<sharer::PlannedJob> {
 public:
  enum Column { job, from_gpu, to_gpu, lane, slowdown, reason };
  explicit PlanJobsModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const sharer::PlannedJob& row, int column, int role) const override;
};

// The analyzer's consolidation candidates: per job and GPU, utilization, P and T, and its verdict.
class CandidatesModel : public RowTableModel<analyzer::ConsolidationCandidate> {
 public:
  enum Column { job, gpu, utilization, persistent, ephemeral, capacity, verdict };
  explicit CandidatesModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const analyzer::ConsolidationCandidate& row, int column, int role) const override;
};

class StoredPlansModel : public RowTableModel<StoredPlan> {
 public:
  explicit StoredPlansModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const StoredPlan& row, int column, int role) const override;
};

// The sharing service's decisions (sharing_events): who was given which lane, queued, released,
// and the plans applied, withdrawn and switched off.
class SharingEventsModel : public RowTableModel<SharingEvent> {
 public:
  enum Column { time, kind, plan, job, gpu, lane, detail };
  explicit SharingEventsModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const SharingEvent& row, int column, int role) const override;
};

using KeyValue = std::pair<std::string, std::string>;
class KeyValueModel : public RowTableModel<KeyValue> {
 public:
  explicit KeyValueModel(QObject* parent = nullptr);

 protected:
  QVariant cell(const KeyValue& row, int column, int role) const override;
};

}  // namespace fleetscope::gui
