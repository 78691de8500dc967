// SmallFilesystem: a small file system of its own, mounted for one test, so
// that the test can fill the disk (ENOSPC) without touching the machine's.
// Either tmpfs with a size limit, or ext4 in a file mounted through a loop
// device (what a real disk does: O_DIRECT, block allocation). Mounting needs
// the privilege to mount: where it is missing, Mount() says why and the test
// skips (GTEST_SKIP with that message). Unmounted and removed by the
// destructor, whatever the test did.
#ifndef ORDERWIRE_TESTS_SUPPORT_SMALL_FILESYSTEM_H_
#define ORDERWIRE_TESTS_SUPPORT_SMALL_FILESYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "tests/support/scratch_dir.h"

namespace orderwire::test_support {

class SmallFilesystem {
 public:
  enum class Type { kTmpfs, kLoopExt4 };

  // Mounts a `bytes`-byte file system of `type` on a fresh directory.
  // Returns null and sets `why` (what failed and the errno or the command's
  // output) when it cannot.
  static std::unique_ptr<SmallFilesystem> Mount(Type type, std::uint64_t bytes,
                                                std::string* why);
  SmallFilesystem(const SmallFilesystem&) = delete;
  SmallFilesystem& operator=(const SmallFilesystem&) = delete;
  ~SmallFilesystem();

  // The mount point.
  [[nodiscard]] const std::string& path() const { return mount_point_; }
  // Free bytes (statvfs f_bavail).
  [[nodiscard]] std::uint64_t FreeBytes() const;
  // Fills the file system with a ballast file: until a write fails with
  // ENOSPC (leave 0), or until no more than `leave` bytes are free.
  void Fill(std::uint64_t leave = 0);
  // Removes the ballast: the space Fill() took is free again.
  void Free();
  // Gives back `bytes` of the ballast (all of it if it holds less): about
  // that much more is free.
  void FreeSome(std::uint64_t bytes);

 private:
  SmallFilesystem() = default;
  ScratchDir scratch_{"ow-smallfs"};
  std::string mount_point_;
  std::string image_;  // kLoopExt4: the file holding the file system
  bool mounted_ = false;
};

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_SMALL_FILESYSTEM_H_
