#include "core/base/text_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"

namespace h2o {

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a folder, not a text file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open the text file: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(path, "read error");
  return text.str();
}

}  // namespace h2o
