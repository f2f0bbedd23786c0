// The union of intervals that arrive one at a time, built as they come (unite_sorted on a small
// chunk at a time) instead of collected into one list and united at the end: the list of every
// kernel of a 10 M-kernel capture is 160 MB (256 MB with the vector's growth) beside the capture's
// own columns, the union is what is kept (docs/benchmarks.md, "Analyzer memory"). The result is
// unite() of the same intervals. Intervals in begin order (a start-sorted event column) are united
// chunk by chunk; once one arrives out of order the rest are collected and united at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "fleetscope/analyzer/intervals.h"

namespace fleetscope::analyzer {

class SortedUnion {
 public:
  void add(Interval interval) {
    if (any_ && interval.begin < last_begin_) in_order_ = false;
    any_ = true, last_begin_ = interval.begin;
    chunk_.push_back(interval);
    if (in_order_ && chunk_.size() >= kChunk) fold();
  }
  IntervalSet take() {
    if (!in_order_) {
      chunk_.insert(chunk_.begin(), set_.begin(), set_.end());
      set_ = unite(std::move(chunk_));
    } else {
      fold();
    }
    chunk_ = {};
    in_order_ = true, any_ = false;
    return std::move(set_);
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 16;

  // The set's last interval begins no later than the chunk's first (begin order), and ends before
  // any later one of the set could: uniting it with the chunk and appending the result keeps the
  // set normalized.
  void fold() {
    if (chunk_.empty()) return;
    if (!set_.empty()) {
      chunk_.insert(chunk_.begin(), set_.back());
      set_.pop_back();
    }
    for (const Interval& interval : unite_sorted(chunk_)) set_.push_back(interval);
    chunk_.clear();
  }

  IntervalSet set_;
  std::vector<Interval> chunk_;
  bool in_order_ = true, any_ = false;
  int64_t last_begin_ = 0;
};

}  // namespace fleetscope::analyzer
