#include "tests/support/small_filesystem.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace orderwire::test_support {
namespace {

// Runs `command` (sh -c), its output appended to `output`; true on status 0.
bool Run(const std::string& command, std::string* output) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    *output += "popen failed: " + std::string(std::strerror(errno));
    return false;
  }
  char buffer[512];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output->append(buffer, n);
  }
  return ::pclose(pipe) == 0;
}

}  // namespace

std::unique_ptr<SmallFilesystem> SmallFilesystem::Mount(Type type,
                                                        std::uint64_t bytes,
                                                        std::string* why) {
  std::unique_ptr<SmallFilesystem> fs(new SmallFilesystem());
  if (fs->scratch_.path().empty()) {
    *why = "cannot create a scratch directory";
    return nullptr;
  }
  fs->mount_point_ = fs->scratch_.Sub("mnt");
  if (::mkdir(fs->mount_point_.c_str(), 0755) != 0) {
    *why = "mkdir " + fs->mount_point_ + ": " + std::strerror(errno);
    return nullptr;
  }
  if (type == Type::kTmpfs) {
    const std::string data = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", fs->mount_point_.c_str(), "tmpfs", 0, data.c_str()) !=
        0) {
      *why = "mount -t tmpfs on " + fs->mount_point_ + ": " +
             std::strerror(errno) + " (mounting is not permitted here)";
      return nullptr;
    }
    fs->mounted_ = true;
    return fs;
  }
  fs->image_ = fs->scratch_.Sub("fs.img");
  std::string output;
  if (!Run("truncate -s " + std::to_string(bytes) + " " + fs->image_ +
               " && mkfs.ext4 -q -F -m 0 " + fs->image_,
           &output)) {
    *why = "mkfs.ext4 " + fs->image_ + " failed: " + output;
    return nullptr;
  }
  if (!Run("mount -o loop " + fs->image_ + " " + fs->mount_point_, &output)) {
    *why = "mount -o loop " + fs->image_ +
           " failed (loop mounts are not "
           "permitted here): " +
           output;
    return nullptr;
  }
  fs->mounted_ = true;
  return fs;
}

SmallFilesystem::~SmallFilesystem() {
  if (!mounted_) return;
  if (::umount2(mount_point_.c_str(), 0) != 0) {
    // Busy (a process of the test still holds a file): detach it lazily, so
    // that the scratch directory can go.
    ::umount2(mount_point_.c_str(), MNT_DETACH);
  }
}

std::uint64_t SmallFilesystem::FreeBytes() const {
  struct statvfs st {};
  if (::statvfs(mount_point_.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

void SmallFilesystem::Fill(std::uint64_t leave) {
  const std::string ballast = mount_point_ + "/ballast";
  const int fd = ::open(ballast.c_str(), O_CREAT | O_WRONLY | O_APPEND, 0644);
  if (fd < 0) return;
  // Until the write fails (root may write into blocks an unprivileged
  // writer may not, so free space alone does not say "full").
  std::vector<char> chunk(4096, 'x');
  while (leave == 0 || FreeBytes() > leave) {
    if (::write(fd, chunk.data(), chunk.size()) <= 0) break;
  }
  ::fsync(fd);
  ::close(fd);
}

void SmallFilesystem::FreeSome(std::uint64_t bytes) {
  const std::string ballast = mount_point_ + "/ballast";
  struct stat st {};
  if (::stat(ballast.c_str(), &st) != 0) return;
  const auto size = static_cast<std::uint64_t>(st.st_size);
  (void)::truncate(ballast.c_str(),
                   static_cast<off_t>(size > bytes ? size - bytes : 0));
  ::sync();
}

void SmallFilesystem::Free() {
  const std::string ballast = mount_point_ + "/ballast";
  ::unlink(ballast.c_str());
  ::sync();
}

}  // namespace orderwire::test_support
