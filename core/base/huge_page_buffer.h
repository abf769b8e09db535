#pragma once
// Anonymous memory for large read-mostly data (weights a CPU kernel streams
// every token), asked to be backed by 2 MiB pages where the kernel allows it
// (transparent huge pages in "madvise" or "always" mode). Streaming a
// hundred MiB through 4 KiB pages costs a TLB miss and page walk every 4 KiB;
// with 2 MiB pages those all but vanish. A hint: where huge pages are not to
// be had the memory is ordinary pages, and nothing else changes.
#include <cstddef>
#include <cstdint>

namespace h2o {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // Zeroed memory of `bytes` bytes; throws Error if it cannot be had.
  explicit HugePageBuffer(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;
};

}  // namespace h2o
