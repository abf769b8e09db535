#pragma once
// Read-only memory mapping of a whole file, with bounds-checked access so a
// loader can never read past the end of a truncated file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace h2o {

class MappedFile {
 public:
  // Throws Error("<path>: ...") if the file cannot be opened or mapped.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  size_t size() const { return size_; }
  const uint8_t* data() const { return data_; }
  // Pointer to [offset, offset+len) or Error("<path>: <what> ... past end of file").
  const uint8_t* at(uint64_t offset, uint64_t len, const char* what) const;

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Asks the kernel to reclaim the pages wholly inside [p, p + n) that it can
// drop without losing data: a file's mapped pages leave the process's
// resident memory and fault back in from the file if read again; anonymous
// memory stays (there is no swap to put it in). A hint: never fails.
void reclaim_pages(const void* p, size_t n);

// Sequential little-endian reader over a mapped file (GGUF, safetensors headers).
class ByteReader {
 public:
  ByteReader(const MappedFile& file, uint64_t offset = 0) : file_(file), pos_(offset) {}
  uint64_t pos() const { return pos_; }
  void seek(uint64_t pos) { pos_ = pos; }
  template <typename T>
  T read(const char* what) {
    T v;
    const uint8_t* p = file_.at(pos_, sizeof(T), what);
    __builtin_memcpy(&v, p, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  const uint8_t* bytes(uint64_t len, const char* what) {
    const uint8_t* p = file_.at(pos_, len, what);
    pos_ += len;
    return p;
  }

 private:
  const MappedFile& file_;
  uint64_t pos_;
};

}  // namespace h2o
