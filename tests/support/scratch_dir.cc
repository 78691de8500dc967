#include "tests/support/scratch_dir.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace orderwire::test_support {

ScratchDir::ScratchDir(std::string_view prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" +
      std::string(prefix) + "-XXXXXX";
  if (::mkdtemp(pattern.data()) != nullptr) path_ = std::move(pattern);
}

ScratchDir::~ScratchDir() {
  // ORDERWIRE_KEEP_SCRATCH=1 keeps it, for reading a failed run's files.
  const char* keep = std::getenv("ORDERWIRE_KEEP_SCRATCH");
  if (keep != nullptr && *keep != '\0' && *keep != '0') return;
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::Sub(std::string_view name) const {
  return path_ + "/" + std::string(name);
}

}  // namespace orderwire::test_support
