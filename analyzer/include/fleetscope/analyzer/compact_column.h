// One column of a capture's event arrays (capture_data.h) that costs no memory while every value
// in it is the same. Many columns of a large capture are: a capture of kernels only has no copy
// bytes or memory kinds, one process per GPU has one globalPid, a capture without runtime calls
// links no GPU event to a launch, a Kineto trace without "est. achieved occupancy" has NaN in
// every row; as arrays they cost up to 8 bytes per event each (docs/benchmarks.md, "Analyzer
// memory"). The column keeps the one value and the length, and turns into an ordinary array at
// the first value that differs; reads are by index and return the value, so code that reads
// `column[i]` does not change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <type_traits>
#include <vector>

namespace fleetscope::analyzer {

template <class T>
class CompactColumn {
  static_assert(std::is_trivially_copyable_v<T>, "values are compared byte for byte");

 public:
  using value_type = T;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T operator[](size_t i) const { return materialized_ ? values_[i] : uniform_; }
  T front() const { return (*this)[0]; }
  T back() const { return (*this)[size_ - 1]; }

  void push_back(T value) {
    if (!materialized_) {
      if (size_ == 0) {
        uniform_ = value;
      } else if (!same(value, uniform_)) {
        materialize();
      }
    }
    if (materialized_) values_.push_back(value);
    ++size_;
  }
  // Grows with `value` (or shrinks) to `n` values.
  void resize(size_t n, T value = T{}) {
    if (n > size_ && !materialized_ && (size_ == 0 || same(value, uniform_))) {
      if (size_ == 0) uniform_ = value;
    } else if (n > size_ || materialized_) {
      materialize();
      values_.resize(n, value);
    }
    size_ = n;
  }
  void set(size_t i, T value) {
    if (!materialized_ && same(value, uniform_)) return;
    materialize();
    values_[i] = value;
  }
  // Capacity for `n` values, taken only once the column holds an array.
  void reserve(size_t n) {
    if (materialized_) values_.reserve(n);
  }
  void clear() {
    values_ = {};
    materialized_ = false;
    size_ = 0;
  }
  // Reorders the values: new value i = old value order[i] (order is a permutation of size()).
  void permute(const std::vector<uint32_t>& order) {
    if (!materialized_) return;
    std::vector<T> sorted(values_.size());
    for (size_t i = 0; i < order.size(); ++i) sorted[i] = values_[order[i]];
    values_.swap(sorted);
  }
  // Whether the column holds one value per row (an array) rather than the one shared value.
  bool materialized() const { return materialized_; }

  // Equal sizes and equal values (operator== of T, as std::vector's).
  bool operator==(const CompactColumn& other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!((*this)[i] == other[i])) return false;
    return true;
  }

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;
    const_iterator() = default;
    const_iterator(const CompactColumn* column, size_t index) : column_(column), index_(index) {}
    T operator*() const { return (*column_)[index_]; }
    const_iterator& operator++() {
      ++index_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++index_;
      return old;
    }
    bool operator==(const const_iterator& other) const { return index_ == other.index_; }

   private:
    const CompactColumn* column_ = nullptr;
    size_t index_ = 0;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  static bool same(const T& a, const T& b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }
  void materialize() {
    if (materialized_) return;
    values_.assign(size_, uniform_);
    materialized_ = true;
  }

  T uniform_{};
  size_t size_ = 0;
  bool materialized_ = false;
  std::vector<T> values_;
};

}  // namespace fleetscope::analyzer
