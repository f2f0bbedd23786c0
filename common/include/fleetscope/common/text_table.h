// Aligned text tables for the commands' `--format table` output: every column as wide as its
// widest cell (header included), two spaces between columns, numbers right-aligned. A column may
// have a width limit; longer cells are cut in the middle, keeping the start and the end (where
// names differ: "resnet50-train-2026-11…-rank3"), unless the table is printed wide (`--wide`).
// Cells come from files and agents: control characters are escaped (untrusted_text.h), so that no
// name in a trace drives the terminal it is printed on.
#pragma once

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "fleetscope/common/untrusted_text.h"

namespace fleetscope::common {

// Characters on screen of UTF-8 text (one per code point; no wide-glyph handling).
inline size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++width;
  return width;
}

// `text` in at most `width` characters: unchanged when it fits, else its first part, "…" and its
// last part (the end gets the larger half: it is where run names, ranks and dates differ).
// Cuts only between UTF-8 code points.
inline std::string cut_middle(const std::string& text, size_t width) {
  const size_t length = display_width(text);
  if (length <= width) return text;
  if (width == 0) return "";
  if (width == 1) return "…";
  const size_t keep = width - 1;
  const size_t head = keep / 2;
  const size_t tail = keep - head;
  // Byte offset of the code point with index `n`.
  auto offset_of = [&](size_t n) {
    size_t seen = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
      if (seen++ == n) return i;
    }
    return text.size();
  };
  return text.substr(0, offset_of(head)) + "…" + text.substr(offset_of(length - tail));
}

class TextTable {
 public:
  enum class Align { left, right };
  struct Column {
    std::string header;
    Align align = Align::left;
    size_t max_width = 0;  // 0: no limit
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // One row; missing cells are empty, extra cells are an error of the caller (ignored).
  void add_row(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    for (auto& cell : cells) cell = text::terminal_safe(cell);
    rows_.push_back(std::move(cells));
  }
  // A line printed under the last row as it is (e.g. "  not placed: no GPU has room").
  void add_note(std::string note) { notes_.emplace_back(rows_.size(), std::move(note)); }

  size_t rows() const { return rows_.size(); }

  // Prints the header and the rows. `wide`: no cell is cut.
  void print(std::ostream& out, bool wide = false) const {
    std::vector<std::vector<std::string>> shown = rows_;
    std::vector<size_t> widths(columns_.size());
    for (size_t c = 0; c < columns_.size(); ++c) {
      widths[c] = display_width(columns_[c].header);
      for (auto& row : shown) {
        if (!wide && columns_[c].max_width > 0)
          row[c] = cut_middle(row[c], std::max(columns_[c].max_width, widths[c]));
        widths[c] = std::max(widths[c], display_width(row[c]));
      }
    }
    std::vector<std::string> header;
    for (const auto& column : columns_) header.push_back(column.header);
    print_line(out, header, widths);
    size_t note = 0;
    for (size_t r = 0; r < shown.size(); ++r) {
      print_line(out, shown[r], widths);
      for (; note < notes_.size() && notes_[note].first == r + 1; ++note)
        out << notes_[note].second << "\n";
    }
    for (; note < notes_.size(); ++note) out << notes_[note].second << "\n";
  }

 private:
  void print_line(std::ostream& out, const std::vector<std::string>& cells,
                  const std::vector<size_t>& widths) const {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      const size_t pad = widths[c] - display_width(cells[c]);
      const bool last = c + 1 == cells.size();
      if (c > 0) line += "  ";
      if (columns_[c].align == Align::right) {
        line += std::string(pad, ' ') + cells[c];
      } else {
        line += cells[c];
        if (!last) line += std::string(pad, ' ');
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::pair<size_t, std::string>> notes_;  // (rows printed before it, text)
};

}  // namespace fleetscope::common
