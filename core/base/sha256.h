#pragma once
#include <string>

namespace h2o {
// Hex SHA-256 of a file's contents (OpenSSL). Throws Error naming the file.
std::string sha256_file(const std::string& path);
}  // namespace h2o
