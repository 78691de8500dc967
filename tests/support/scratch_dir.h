// ScratchDir: a fresh directory for one test, under $TMPDIR (or /tmp), removed
// with its contents when the ScratchDir goes out of scope (kept when the
// environment sets ORDERWIRE_KEEP_SCRATCH=1, to read a failed run's files).
#ifndef ORDERWIRE_TESTS_SUPPORT_SCRATCH_DIR_H_
#define ORDERWIRE_TESTS_SUPPORT_SCRATCH_DIR_H_

#include <string>
#include <string_view>

namespace orderwire::test_support {

class ScratchDir {
 public:
  // Creates $TMPDIR/<prefix>-XXXXXX (mkdtemp). path() is empty if that fails.
  explicit ScratchDir(std::string_view prefix = "ow-test");
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  [[nodiscard]] const std::string& path() const { return path_; }
  // A path inside the directory (not created).
  [[nodiscard]] std::string Sub(std::string_view name) const;

 private:
  std::string path_;
};

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_SCRATCH_DIR_H_
