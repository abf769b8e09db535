#include "core/base/huge_page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "core/base/error.h"

namespace h2o {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  // Whole huge pages, aligned to one: mmap only promises 4 KiB alignment, so
  // map one huge page more and keep the aligned part.
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  mapped_ = rounded + kHugePage;
  void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error("cannot allocate " + std::to_string(bytes >> 20) + " MiB for weights: " + std::strerror(errno));
  const uintptr_t base = uintptr_t(p), aligned = (base + kHugePage - 1) / kHugePage * kHugePage;
  // Give back the unaligned head and the tail past the rounded size.
  if (aligned > base) munmap(p, aligned - base);
  const uintptr_t end = base + mapped_, used_end = aligned + rounded;
  if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
  data_ = reinterpret_cast<uint8_t*>(aligned);
  mapped_ = rounded;
#ifdef MADV_HUGEPAGE
  madvise(data_, mapped_, MADV_HUGEPAGE);  // a hint: errors ignored
#endif
}

HugePageBuffer::~HugePageBuffer() {
  if (data_) munmap(data_, mapped_);
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

}  // namespace h2o
