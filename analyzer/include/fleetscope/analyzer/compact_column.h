// One column of a capture's event arrays (capture_data.h) that costs no memory while every value
// in it is the same. Many columns of a large capture are: a capture of kernels only has no copy
// bytes or memory kinds, one process per GPU has one globalPid, a capture without runtime calls
// links no GPU event to a launch, a Kineto trace without "est. achieved occupancy" has NaN in
// every row; as arrays they cost up to 8 bytes per event each (docs/benchmarks.md, "Analyzer
// memory"). The column keeps the one value and the length, and turns into an ordinary array at
// the first value that differs (for 64-bit integers a 32-bit array while every value fits); reads
// are by index and return the value, so code that reads `column[i]` does not change.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <type_traits>
#include <vector>

namespace fleetscope::analyzer {

template <class T>
class CompactColumn {
  static_assert(std::is_trivially_copyable_v<T>, "values are compared byte for byte");
  // 64-bit integers (ids, counts) are held in 32 bits while every value fits (int32_t), then in
  // 64: a string id or a CUPTI correlation id rarely needs more, and the 10 M-kernel capture's
  // name and correlation columns cost 80 MB less (docs/benchmarks.md, "Analyzer memory").
  static constexpr bool kNarrowable = std::is_same_v<T, int64_t>;
  using Narrow = int32_t;

 public:
  using value_type = T;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T operator[](size_t i) const {
    switch (state_) {
      case State::uniform:
        return uniform_;
      case State::narrow:
        return static_cast<T>(narrow_[i]);
      case State::wide:
        break;
    }
    return values_[i];
  }
  T front() const { return (*this)[0]; }
  T back() const { return (*this)[size_ - 1]; }

  void push_back(T value) {
    if (state_ == State::uniform) {
      if (size_ == 0) {
        uniform_ = value;
      } else if (!same(value, uniform_)) {
        materialize(value);
      }
    } else if (state_ == State::narrow && !fits(value)) {
      widen();
    }
    if (state_ == State::narrow) narrow_.push_back(static_cast<Narrow>(value));
    if (state_ == State::wide) values_.push_back(value);
    ++size_;
  }
  // Grows with `value` (or shrinks) to `n` values.
  void resize(size_t n, T value = T{}) {
    if (state_ == State::uniform && n > size_ && size_ != 0 && !same(value, uniform_))
      materialize(value);
    if (state_ == State::uniform) {
      if (size_ == 0) uniform_ = value;
    } else {
      if (state_ == State::narrow && n > size_ && !fits(value)) widen();
      if (state_ == State::narrow) narrow_.resize(n, static_cast<Narrow>(value));
      if (state_ == State::wide) values_.resize(n, value);
    }
    size_ = n;
  }
  void set(size_t i, T value) {
    if (state_ == State::uniform) {
      if (same(value, uniform_)) return;
      materialize(value);
    }
    if (state_ == State::narrow && !fits(value)) widen();
    if (state_ == State::narrow) narrow_[i] = static_cast<Narrow>(value);
    if (state_ == State::wide) values_[i] = value;
  }
  // Capacity for `n` values, taken once the column holds an array (now or later).
  void reserve(size_t n) {
    reserved_ = n;
    if (state_ == State::narrow) narrow_.reserve(n);
    if (state_ == State::wide) values_.reserve(n);
  }
  void clear() {
    values_ = {};
    narrow_ = {};
    state_ = State::uniform;
    size_ = 0;
    reserved_ = 0;
  }
  // Reorders the values: new value i = old value order[i] (order is a permutation of size()).
  void permute(const std::vector<uint32_t>& order) {
    if (state_ == State::narrow) reorder(narrow_, order);
    if (state_ == State::wide) reorder(values_, order);
  }
  // Whether the column holds one value per row (an array) rather than the one shared value.
  bool materialized() const { return state_ != State::uniform; }
  // Whether it holds them in 32 bits (64-bit integer columns whose values all fit).
  bool narrowed() const { return state_ == State::narrow; }

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
  enum class State : uint8_t { uniform, narrow, wide };

  static bool same(const T& a, const T& b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }
  static bool fits(const T& value) {
    if constexpr (kNarrowable)
      return value >= std::numeric_limits<Narrow>::min() &&
             value <= std::numeric_limits<Narrow>::max();
    return false;
  }
  template <class V>
  static void reorder(std::vector<V>& values, const std::vector<uint32_t>& order) {
    std::vector<V> sorted(values.size());
    for (size_t i = 0; i < order.size(); ++i) sorted[i] = values[order[i]];
    values.swap(sorted);
  }
  // From one shared value to an array, where `next` is the first value that differs: 32-bit when
  // both fit.
  void materialize(T next) {
    const size_t capacity = std::max(reserved_, size_ + 1);
    if (fits(uniform_) && fits(next)) {
      narrow_.reserve(capacity);
      narrow_.assign(size_, static_cast<Narrow>(uniform_));
      state_ = State::narrow;
    } else {
      values_.reserve(capacity);
      values_.assign(size_, uniform_);
      state_ = State::wide;
    }
  }
  void widen() {
    if constexpr (kNarrowable) {  // only a narrowable column is ever narrow
      values_.reserve(std::max(reserved_, narrow_.size() + 1));
      values_.assign(narrow_.begin(), narrow_.end());
      narrow_ = {};
      state_ = State::wide;
    }
  }

  T uniform_{};
  size_t size_ = 0;
  size_t reserved_ = 0;
  State state_ = State::uniform;
  std::vector<Narrow> narrow_;
  std::vector<T> values_;
};

}  // namespace fleetscope::analyzer
