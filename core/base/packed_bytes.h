#pragma once
// Compact binary writing and checked reading: whole numbers as LEB128 varints
// (signed ones zigzagged), floats and plain arrays as their bytes. What a
// recording's step payloads (core/recording/step_payload.h) and the analyzer's
// checkpoints (core/analysis/analyzer.h) are made of.
//
// The reader trusts nothing it reads: every count is checked against the bytes
// left before anything is allocated, so a corrupt or crafted input is one
// Error ("<what>: ends early", ...), never a crash or a huge allocation.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/base/error.h"

namespace h2o {

// Writes through a raw pointer into a buffer grown by doubling: a step's
// payload is thousands of one- and two-byte numbers, and appending each to a
// std::string checks and updates its size every time.
class PackedWriter {
 public:
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > buffer_.size()) buffer_.resize(n);
  }
  void varint(uint64_t v) {
    uint8_t* out = room(10);
    while (v >= 0x80) {
      *out++ = uint8_t(v) | 0x80;
      v >>= 7;
    }
    *out++ = uint8_t(v);
    size_ = size_t(out - reinterpret_cast<uint8_t*>(buffer_.data()));
  }
  void signed_varint(int64_t v) { varint((uint64_t(v) << 1) ^ uint64_t(v >> 63)); }
  void f32(float v) { std::memcpy(append(4), &v, 4); }
  void f64(double v) { std::memcpy(append(8), &v, 8); }
  void byte(uint8_t v) { *append(1) = char(v); }
  void text(std::string_view s) {
    varint(s.size());
    std::memcpy(append(s.size()), s.data(), s.size());
  }
  // A vector of plain values as its count and its bytes.
  template <class T>
  void array(const T* data, size_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    varint(n);
    if (n) std::memcpy(append(n * sizeof(T)), data, n * sizeof(T));
  }
  template <class T>
  void array(const std::vector<T>& v) {
    array(v.data(), v.size());
  }
  // Room for `n` bytes at the end, to be written through the pointer.
  char* append(size_t n) {
    char* at = reinterpret_cast<char*>(room(n));
    size_ += n;
    return at;
  }
  // Ascending (or any) positions as differences from the one before.
  template <class Int>
  void positions(const std::vector<Int>& list) {
    varint(list.size());
    int64_t before = 0;
    for (Int p : list) {
      signed_varint(int64_t(p) - before);
      before = int64_t(p);
    }
  }
  std::string_view bytes() const { return std::string_view(buffer_.data(), size_); }

 private:
  uint8_t* room(size_t n) {
    if (size_ + n > buffer_.size()) buffer_.resize(std::max(buffer_.size() * 2, size_ + n));
    return reinterpret_cast<uint8_t*>(buffer_.data()) + size_;
  }
  std::string buffer_;
  size_t size_ = 0;
};

// Reads what a PackedWriter wrote; `what` begins every error ("payload", "checkpoint").
class PackedReader {
 public:
  PackedReader(std::string_view bytes, const char* what) : in_(bytes), what_(what) {}
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = byte();
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a number runs past 64 bits");
  }
  int64_t signed_varint() {
    const uint64_t u = varint();
    return int64_t(u >> 1) ^ -int64_t(u & 1);
  }
  // A count of items each taking at least `min_bytes`: never more than the
  // bytes left can hold, nor than `most` (what the input's own shape allows;
  // `over_most` says what is wrong when it is more).
  size_t count(size_t min_bytes = 1, size_t most = SIZE_MAX, const char* over_most = nullptr) {
    const uint64_t n = varint();
    if (n > left() / std::max<size_t>(min_bytes, 1)) fail("a count of " + std::to_string(n) + " runs past its end");
    if (n > most)
      fail(over_most ? over_most : "a count of " + std::to_string(n) + " where at most " + std::to_string(most) + " fit");
    return size_t(n);
  }
  // A signed whole number within [lo, hi].
  int64_t within(int64_t lo, int64_t hi, const char* name) {
    const int64_t v = signed_varint();
    if (v < lo || v > hi) fail(std::string(name) + " out of range");
    return v;
  }
  int whole(const char* name) { return int(within(INT32_MIN, INT32_MAX, name)); }
  uint8_t byte() {
    if (at_ >= in_.size()) fail("ends early");
    return uint8_t(in_[at_++]);
  }
  float f32() {
    float v;
    std::memcpy(&v, take(4).data(), 4);
    return v;
  }
  double f64() {
    double v;
    std::memcpy(&v, take(8).data(), 8);
    return v;
  }
  std::string text() { return std::string(take(count())); }
  template <class T>
  std::vector<T> array() {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> out(count(sizeof(T)));
    if (!out.empty()) std::memcpy(out.data(), take(out.size() * sizeof(T)).data(), out.size() * sizeof(T));
    return out;
  }
  std::string_view take(size_t n) {
    if (n > left()) fail("ends early");
    const std::string_view s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::vector<int32_t> positions(size_t most = SIZE_MAX) {
    std::vector<int32_t> out(count(1, most));
    int64_t p = 0;
    for (int32_t& x : out) {
      // Checked before the sum, which a crafted delta near 2^63 would overflow.
      p += within(-(int64_t(1) << 33), int64_t(1) << 33, "a position");
      if (p < INT32_MIN || p > INT32_MAX) fail("a position out of range");
      x = int32_t(p);
    }
    return out;
  }
  void skip_positions(size_t most = SIZE_MAX) {
    for (size_t n = count(1, most); n > 0; --n) signed_varint();
  }
  size_t left() const { return in_.size() - at_; }
  [[noreturn]] void fail(const std::string& why) const { throw Error(std::string(what_) + ": " + why); }

 private:
  std::string_view in_;
  const char* what_;
  size_t at_ = 0;
};

}  // namespace h2o
