// A read-only table model over a vector of rows: subclasses name the columns and render a cell.
// Qt::DisplayRole shows text, kSortRole gives the value to sort by (numbers stay numbers).
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <vector>

namespace fleetscope::gui {

inline constexpr int kSortRole = Qt::UserRole + 1;

template <class Row>
class RowTableModel : public QAbstractTableModel {
 public:
  explicit RowTableModel(QStringList headers, QObject* parent = nullptr)
      : QAbstractTableModel(parent), headers_(std::move(headers)) {}

  void set_rows(std::vector<Row> rows) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
  }
  const std::vector<Row>& rows() const { return rows_; }
  const Row* row_at(int row) const {
    return row >= 0 && size_t(row) < rows_.size() ? &rows_[size_t(row)] : nullptr;
  }

  int rowCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() ? 0 : int(rows_.size());
  }
  int columnCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() ? 0 : int(headers_.size());
  }
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override {
    if (role == Qt::DisplayRole && orientation == Qt::Horizontal && section >= 0 &&
        section < headers_.size())
      return headers_[section];
    return {};
  }
  QVariant data(const QModelIndex& index, int role) const override {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
      return {};
    return cell(rows_[size_t(index.row())], index.column(), role);
  }

 protected:
  virtual QVariant cell(const Row& row, int column, int role) const = 0;

 private:
  QStringList headers_;
  std::vector<Row> rows_;
};

// "12.3 ms" style duration.
QString format_duration(int64_t ns);

}  // namespace fleetscope::gui
