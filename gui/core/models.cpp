#include "models.h"

#include <QColor>
#include <QDateTime>
#include <QString>

#include "fleetscope/analyzer/report_document.h"

namespace fleetscope::gui {

QString format_duration(int64_t ns) {
  const double v = double(ns);
  if (std::abs(v) >= 1e9) return QString::number(v / 1e9, 'f', 3) + " s";
  if (std::abs(v) >= 1e6) return QString::number(v / 1e6, 'f', 3) + " ms";
  if (std::abs(v) >= 1e3) return QString::number(v / 1e3, 'f', 3) + " µs";
  return QString::number(ns) + " ns";
}

QString format_gpu_hours(double hours) {
  // One fixed format for every row and the totals (never "8.429e-05" beside "0.0001852"): six
  // decimals (3.6 ms of GPU time) below 100 GPU-hours, two above.
  return QString::number(hours, 'f', hours < 100 ? 6 : 2);
}

QString fleet_totals(const FleetRows& rows) {
  int64_t span = 0, busy = 0;
  for (const auto& r : rows) span += r.span_ns, busy += r.busy_ns;
  const double hours = double(span) / 3.6e12, wasted = double(span - busy) / 3.6e12;
  return QString("Total: %1 job(s), %2 GPU-hours, %3 wasted (%4 % GPU utilization)")
      .arg(rows.size())
      .arg(format_gpu_hours(hours), format_gpu_hours(wasted))
      .arg(QString::number(100.0 * analyzer::utilization_ratio(busy, span), 'f', 1));
}

namespace {
QString q(const std::string& s) {
  return QString::fromStdString(s);
}
QString time_text(int64_t ns) {
  if (!ns) return "—";
  return QDateTime::fromMSecsSinceEpoch(ns / 1'000'000, Qt::UTC)
      .toString("yyyy-MM-dd hh:mm:ss 'UTC'");
}
}  // namespace

FleetModel::FleetModel(QObject* parent)
    : RowTableModel({"Workflow", "User", "Captures", "GPU-hours", "GPU utilization",
                     "Wasted GPU-hours", "Top finding", "Sources"},
                    parent) {}

QVariant FleetModel::cell(const analyzer::WorkflowWaste& r, int column, int role) const {
  if (role == Qt::TextAlignmentRole && column >= captures && column <= wasted_gpu_hours)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  const bool sort = role == kSortRole;
  switch (column) {
    case workflow:
      return q(r.workflow);
    case user:
      return q(r.user);
    case captures:
      return sort ? QVariant(qlonglong(r.captures)) : QVariant(QString::number(r.captures));
    case gpu_hours:
      return sort ? QVariant(r.gpu_hours()) : QVariant(format_gpu_hours(r.gpu_hours()));
    case utilization:
      return sort ? QVariant(r.utilization())
                  : QVariant(QString::number(100 * r.utilization(), 'f', 1) + " %");
    case wasted_gpu_hours:
      return sort ? QVariant(r.wasted_gpu_hours())
                  : QVariant(format_gpu_hours(r.wasted_gpu_hours()));
    case top_finding:
      if (sort) return qlonglong(r.top_rule_impact_ns);
      return r.top_rule.empty()
                 ? QString("—")
                 : q(r.top_rule) + " (" + format_duration(r.top_rule_impact_ns) + ")";
    case sources: {
      QStringList refs;
      for (const auto& [source, id] : r.capture_refs)
        refs << QString("%1#%2").arg(q(source)).arg(id);
      return refs.join(", ");
    }
  }
  return {};
}

SourcesModel::SourcesModel(QObject* parent)
    : RowTableModel({"File", "Format", "Captures", "Jobs", "First capture", "Last capture"},
                    parent) {}

QVariant SourcesModel::cell(const SourceSummary& r, int column, int role) const {
  if (role == Qt::TextAlignmentRole && (column == captures || column == workflows))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  const bool sort = role == kSortRole;
  switch (column) {
    case file:
      return role == Qt::ToolTipRole ? q(r.path) : q(r.label);
    case format:
      return q(r.format);
    case captures:
      return sort ? QVariant(qlonglong(r.captures)) : QVariant(QString::number(r.captures));
    case workflows:
      return sort ? QVariant(qlonglong(r.workflows)) : QVariant(QString::number(r.workflows));
    case first:
      return sort ? QVariant(qlonglong(r.first_ns)) : QVariant(time_text(r.first_ns));
    case last:
      return sort ? QVariant(qlonglong(r.last_ns)) : QVariant(time_text(r.last_ns));
  }
  return {};
}

MetricDeltaModel::MetricDeltaModel(QObject* parent)
    : RowTableModel({"Metric", "Before", "After", "Change", "After / before"}, parent) {}

QVariant MetricDeltaModel::cell(const analyzer::MetricDelta& r, int column, int role) const {
  if (role == Qt::TextAlignmentRole && column != metric)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != kSortRole) return {};
  const bool sort = role == kSortRole;
  // Durations (metrics named *_ns) in units, fractions in percent, counts as they are.
  const bool ns = r.metric.size() > 3 && r.metric.compare(r.metric.size() - 3, 3, "_ns") == 0;
  const bool fraction = r.metric == "utilization";
  auto value = [&](double v) -> QVariant {
    if (sort) return v;
    if (ns) return format_duration(int64_t(v));
    if (fraction) return QString::number(100 * v, 'f', 1) + " %";
    return QString::number(v, 'g', 8);
  };
  switch (column) {
    case metric:
      return q(r.metric);
    case before:
      return value(r.before);
    case after:
      return value(r.after);
    case delta:
      return value(r.delta());
    case ratio:
      return sort ? QVariant(r.ratio())
                  : QVariant(r.before != 0 ? QString::number(r.ratio(), 'f', 3) + "x"
                                           : QString("—"));
  }
  return {};
}

KernelDeltaModel::KernelDeltaModel(QObject* parent)
    : RowTableModel(
          {"Kernel", "Count before", "Count after", "Total before", "Total after", "Change"},
          parent) {}

QVariant KernelDeltaModel::cell(const analyzer::KernelDelta& r, int column, int role) const {
  if (role == Qt::TextAlignmentRole && column != name)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  const bool sort = role == kSortRole;
  auto duration = [&](int64_t v) -> QVariant {
    return sort ? QVariant(qlonglong(v)) : QVariant(format_duration(v));
  };
  switch (column) {
    case name:
      return q(r.name);
    case count_before:
      return qlonglong(r.count_before);
    case count_after:
      return qlonglong(r.count_after);
    case total_before:
      return duration(r.total_ns_before);
    case total_after:
      return duration(r.total_ns_after);
    case change:
      return duration(r.total_ns_after - r.total_ns_before);
  }
  return {};
}

std::vector<FindingRow> finding_rows(const analyzer::AnalysisResult& result) {
  std::vector<FindingRow> rows;
  for (const auto& f : result.findings) rows.push_back({f, f.rule, {}});
  std::stable_sort(rows.begin(), rows.end(), [](const FindingRow& a, const FindingRow& b) {
    return a.finding->impact_ns > b.finding->impact_ns;
  });
  for (const auto* outcome : result.not_evaluated())
    rows.push_back({std::nullopt, outcome->rule, outcome->not_evaluated_text()});
  return rows;
}

FindingsModel::FindingsModel(QObject* parent)
    : RowTableModel({"Rule", "Severity", "Impact", "GPU", "Window", "Recommendation"}, parent) {}

QVariant FindingsModel::cell(const FindingRow& r, int column, int role) const {
  if (role == Qt::ForegroundRole && !r.finding) return QColor(Qt::gray);
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  const bool sort = role == kSortRole;
  if (!r.finding) {
    switch (column) {
      case rule:
        return q(r.rule);
      case severity:
        return QString("not evaluated");
      case impact:
        return sort ? QVariant(qlonglong(-1)) : QVariant(QString());
      case recommendation:
        return q(r.needs);
      default:
        return QString();
    }
  }
  const store::Finding& f = *r.finding;
  switch (column) {
    case rule:
      return q(f.rule);
    case severity:
      return q(f.severity);
    case impact:
      return sort ? QVariant(qlonglong(f.impact_ns)) : QVariant(format_duration(f.impact_ns));
    case device:
      return f.deviceId ? QVariant(*f.deviceId) : QVariant(QString("all"));
    case window:
      if (!f.window_start || !f.window_end) return QString("—");
      return sort ? QVariant(qlonglong(*f.window_start))
                  : QVariant(format_duration(*f.window_end - *f.window_start));
    case recommendation:
      return q(f.recommendation);
  }
  return {};
}

AggregateModel::AggregateModel(QObject* parent)
    : RowTableModel({"Kind", "Name", "Count", "Time", "Share of range"}, parent) {}

QVariant AggregateModel::cell(const AggregateRow& r, int column, int role) const {
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  const bool sort = role == kSortRole;
  switch (column) {
    case kind:
      return QString(to_string(r.kind));
    case name:
      return q(r.name);
    case count:
      return sort ? QVariant(qlonglong(r.count)) : QVariant(QString::number(r.count));
    case total:
      return sort ? QVariant(qlonglong(r.total_ns)) : QVariant(format_duration(r.total_ns));
    case share: {
      const double s = range_ns_ ? double(r.total_ns) / double(range_ns_) : 0.0;
      return sort ? QVariant(s) : QVariant(QString::number(100 * s, 'f', 1) + " %");
    }
  }
  return {};
}

SqlResultModel::SqlResultModel(QObject* parent) : RowTableModel({}, parent) {}

void SqlResultModel::set_result(const store::QueryResult& result) {
  beginResetModel();
  columns_.clear();
  for (const auto& c : result.columns) columns_ << q(c);
  endResetModel();
  set_rows(result.rows);
}

int SqlResultModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(columns_.size());
}

QVariant SqlResultModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role == Qt::DisplayRole && orientation == Qt::Horizontal && section >= 0 &&
      section < columns_.size())
    return columns_[section];
  return {};
}

QVariant SqlResultModel::cell(const std::vector<std::optional<std::string>>& row, int column,
                              int role) const {
  if (role != Qt::DisplayRole && role != kSortRole) return {};
  if (column < 0 || size_t(column) >= row.size()) return {};
  return row[size_t(column)] ? q(*row[size_t(column)]) : QString("NULL");
}

PlanJobsModel::PlanJobsModel(QObject* parent)
    : RowTableModel({"Job", "From GPU", "To GPU", "Lane", "Predicted slowdown", "Reason"}, parent) {
}

QVariant PlanJobsModel::cell(const sharer::PlannedJob& j, int column, int role) const {
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  switch (column) {
    case job:
      return q(j.job_id);
    case from_gpu:
      return q(j.from_gpu);
    case to_gpu:
      return j.to_gpu.empty() ? QString("(not placed)") : q(j.to_gpu);
    case lane:
      return j.lane_id;
    case slowdown:
      return role == kSortRole ? QVariant(j.predicted_slowdown)
                               : QVariant(QString::number(j.predicted_slowdown, 'f', 2) + "×");
    case reason:
      return q(j.reason);
  }
  return {};
}

CandidatesModel::CandidatesModel(QObject* parent)
    : RowTableModel({"Job", "GPU", "GPU utilization", "P (persistent)", "T (ephemeral peak)",
                     "GPU memory", "Verdict"},
                    parent) {}

QVariant CandidatesModel::cell(const analyzer::ConsolidationCandidate& c, int column,
                               int role) const {
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  const bool sort = role == kSortRole;
  auto bytes = [&](int64_t b, bool known) -> QVariant {
    if (sort) return qlonglong(known ? b : -1);
    return known ? q(analyzer::format_bytes(b)) : QString("not measured");
  };
  switch (column) {
    case job:
      return q(c.workflow.empty() ? "capture " + std::to_string(c.capture_id) : c.workflow);
    case gpu:
      return QString("#%1 GPU %2 %3").arg(c.capture_id).arg(c.device).arg(q(c.gpu_name));
    case utilization:
      return sort ? QVariant(c.utilization)
                  : QVariant(QString::number(100 * c.utilization, 'f', 1) + " %");
    case persistent:
      return bytes(c.persistent_bytes, c.memory_measured);
    case ephemeral:
      return bytes(c.ephemeral_peak_bytes, c.memory_measured);
    case capacity:
      return bytes(c.gpu_memory_bytes, c.gpu_memory_bytes > 0);
    case verdict:
      return (c.co_location_candidate ? QString("candidate: ") : QString("not a candidate: ")) +
             q(c.reason);
  }
  return {};
}

StoredPlansModel::StoredPlansModel(QObject* parent)
    : RowTableModel({"Plan", "Created (ns)", "Policy", "Applied", "Plan JSON"}, parent) {}

QVariant StoredPlansModel::cell(const StoredPlan& p, int column, int role) const {
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  switch (column) {
    case 0:
      return qlonglong(p.id);
    case 1:
      return qlonglong(p.created_ns);
    case 2:
      return q(p.policy);
    case 3:
      return p.applied ? QString("yes") : QString("no");
    case 4:
      return q(p.plan_json);
  }
  return {};
}

SharingEventsModel::SharingEventsModel(QObject* parent)
    : RowTableModel({"Time (UTC)", "Event", "Plan", "Job", "GPU", "Lane", "Detail"}, parent) {}

QVariant SharingEventsModel::cell(const SharingEvent& e, int column, int role) const {
  if (role != Qt::DisplayRole && role != kSortRole && role != Qt::ToolTipRole) return {};
  const bool sort = role == kSortRole;
  switch (column) {
    case time: {
      if (sort) return qlonglong(e.ts_ns);
      // The daemon stamps events with the wall clock (ns since the epoch).
      const auto when = QDateTime::fromMSecsSinceEpoch(e.ts_ns / 1'000'000, Qt::UTC);
      return when.toString("yyyy-MM-dd hh:mm:ss.zzz");
    }
    case kind:
      return q(e.kind);
    case plan:
      if (!e.plan_id) return sort ? QVariant(qlonglong(-1)) : QVariant(QString("—"));
      return qlonglong(*e.plan_id);
    case job: {
      if (sort && e.pid) return qlonglong(*e.pid);
      QString text = e.pid ? QString("pid %1").arg(*e.pid) : QString();
      if (!e.workflow.empty()) text += (text.isEmpty() ? "" : " ") + q(e.workflow);
      return text;
    }
    case gpu:
      return q(e.gpu);
    case lane:
      return q(e.lane);
    case detail:
      return q(e.detail_json);
  }
  return {};
}

KeyValueModel::KeyValueModel(QObject* parent) : RowTableModel({"Field", "Value"}, parent) {}

QVariant KeyValueModel::cell(const KeyValue& kv, int column, int role) const {
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  return column == 0 ? q(kv.first) : q(kv.second);
}

}  // namespace fleetscope::gui
