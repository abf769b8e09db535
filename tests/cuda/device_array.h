#pragma once
// Test helper: a typed device array filled from and read back to host
// vectors, through the same device.h the backend uses.
#include <vector>

#include "kernels/device.h"
#include "kernels/device_buffer.h"

namespace h2o::test {

class TestStream {
 public:
  TestStream() : s_(gpu::create_stream()) {}
  ~TestStream() { gpu::destroy_stream(s_); }
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  gpu::Stream get() const { return s_; }
  void sync() const { gpu::synchronize(s_); }

 private:
  gpu::Stream s_;
};

template <class T>
class DeviceArray {
 public:
  DeviceArray(const std::vector<T>& host, gpu::Stream s) : buf_(host.size() * sizeof(T)), n_(host.size()), s_(s) {
    gpu::copy_to_device(buf_.get(), host.data(), host.size() * sizeof(T), s);
    gpu::synchronize(s);
  }
  DeviceArray(size_t n, gpu::Stream s) : buf_(n * sizeof(T)), n_(n), s_(s) {}
  T* get() const { return buf_.as<T>(); }
  std::vector<T> read() const {
    std::vector<T> out(n_);
    gpu::copy_to_host(out.data(), buf_.get(), n_ * sizeof(T), s_);
    gpu::synchronize(s_);
    return out;
  }

 private:
  gpu::DeviceBuffer buf_;
  size_t n_;
  gpu::Stream s_;
};

}  // namespace h2o::test
