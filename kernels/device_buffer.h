#pragma once
// Owning handles for device memory and page-locked host memory (device.h).
#include <cstddef>
#include <utility>

#include "kernels/device.h"

namespace H2O_GPU_NS {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : ptr_(bytes ? alloc(bytes) : nullptr), bytes_(bytes) {}
  ~DeviceBuffer() { release(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  // Grows to at least `bytes` (contents not kept); true if it reallocated.
  bool reserve(size_t bytes) {
    if (bytes <= bytes_) return false;
    *this = DeviceBuffer();  // free first: the device may not hold both
    *this = DeviceBuffer(bytes);
    return true;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() { release_pinned(ptr_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    release_pinned(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
    ptr_ = alloc_pinned(bytes);
    bytes_ = bytes;
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace H2O_GPU_NS
