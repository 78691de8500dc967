// The journal's checkpoint file; see checkpoint.h.
#include "journal/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/unique_fd.h"
#include "journal/crc32c.h"
#include "journal/internal/writer_support.h"

namespace orderwire::journal {

using internal::ErrnoStatus;
using internal::PwriteAll;

void EncodeCheckpoint(Checkpoint checkpoint, std::byte* dst) noexcept {
  checkpoint.magic = kCheckpointMagic;
  checkpoint.version = kCheckpointVersion;
  checkpoint.size = static_cast<std::uint16_t>(kCheckpointSize);
  checkpoint.crc = 0;
  StoreStruct<kCheckpointLayout>(checkpoint, dst);
  codec::StoreLE(dst + kCheckpointCrcOffset,
                 Crc32c({dst, kCheckpointCrcOffset}));
}

absl::StatusOr<Checkpoint> DecodeCheckpoint(std::span<const std::byte> bytes,
                                            std::string_view path) {
  auto damaged = [&](const std::string& what) {
    return absl::DataLossError(absl::StrFormat(
        "checkpoint %s is damaged: %s. The writer replaces it atomically, so "
        "no crash leaves it so; --accept-loss proceeds without it (and "
        "writes a new one)",
        path, what));
  };
  if (bytes.size() < 12) {
    return damaged(absl::StrFormat("it is %d bytes, not %d", bytes.size(),
                                   kCheckpointSize));
  }
  const auto magic = codec::LoadLE<std::uint64_t>(bytes.data());
  if (magic != kCheckpointMagic) {
    return damaged(absl::StrFormat(
        "bad magic 0x%016x (a checkpoint starts with \"OWCHKPNT\")", magic));
  }
  const auto version = codec::LoadLE<std::uint16_t>(bytes.data() + 8);
  if (version != kCheckpointVersion) {
    return absl::UnimplementedError(absl::StrFormat(
        "checkpoint %s: unsupported checkpoint version %d (this build reads "
        "version %d)",
        path, version, kCheckpointVersion));
  }
  if (bytes.size() != kCheckpointSize) {
    return damaged(absl::StrFormat("it is %d bytes, not %d", bytes.size(),
                                   kCheckpointSize));
  }
  const Checkpoint c = LoadStruct<kCheckpointLayout, Checkpoint>(bytes.data());
  const std::uint32_t crc = Crc32c(bytes.first(kCheckpointCrcOffset));
  if (crc != c.crc) {
    return damaged(absl::StrFormat(
        "checksum mismatch (stored 0x%08x, computed 0x%08x)", c.crc, crc));
  }
  if (c.size != kCheckpointSize || c.flags != 0) {
    return damaged(absl::StrFormat("size field %d or flags 0x%x unknown",
                                   c.size, c.flags));
  }
  const bool empty = c.durable_index == 0;
  if (empty ? (c.group_first_index != 0 || c.group_offset != 0 ||
               c.group_crc != 0)
            : (c.group_first_index == 0 ||
               c.group_first_index > c.durable_index ||
               c.segment_first_index == 0 ||
               c.segment_first_index > c.group_first_index ||
               c.group_offset < kFirstGroupOffset ||
               c.group_offset % kGroupAlign != 0)) {
    return damaged("its group fields are inconsistent");
  }
  return c;
}

absl::StatusOr<std::optional<Checkpoint>> ReadCheckpoint(
    const std::string& directory) {
  const std::string path =
      absl::StrFormat("%s/%s", directory, kCheckpointFileName);
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::optional<Checkpoint>();
    return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  }
  // One byte more than a checkpoint, to see a file that is too long.
  std::vector<std::byte> bytes(kCheckpointSize + 1);
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd.get(), bytes.data() + got, bytes.size() - got,
                              static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrFormat("read %s", path));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  absl::StatusOr<Checkpoint> c =
      DecodeCheckpoint(std::span<const std::byte>(bytes).first(got), path);
  if (!c.ok()) return c.status();
  return std::optional<Checkpoint>(*c);
}

absl::Status WriteCheckpoint(const std::string& directory, int dir_fd,
                             const Checkpoint& checkpoint) {
  const std::string tmp =
      absl::StrFormat("%s/%s", directory, kCheckpointTempFileName);
  const std::string path =
      absl::StrFormat("%s/%s", directory, kCheckpointFileName);
  std::byte bytes[kCheckpointSize];
  EncodeCheckpoint(checkpoint, bytes);
  base::UniqueFd fd(
      ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", tmp));
  if (const int err = PwriteAll(fd.get(), bytes, kCheckpointSize, 0);
      err != 0) {
    return ErrnoStatus(err, absl::StrFormat("write %s", tmp));
  }
  if (::fdatasync(fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fdatasync %s", tmp));
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("rename %s to %s", tmp, path));
  }
  if (::fsync(dir_fd) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", directory));
  }
  return absl::OkStatus();
}

std::string DescribeCheckpoint(const Checkpoint& c) {
  if (c.durable_index == 0) {
    return absl::StrFormat(
        "durable up to index 0 (an empty journal), "
        "written at %d ns",
        c.written_ns);
  }
  return absl::StrFormat(
      "durable up to index %d (group %d..%d at offset %d of segment %s, "
      "checksum 0x%08x), written at %d ns",
      c.durable_index, c.group_first_index, c.durable_index, c.group_offset,
      SegmentFileName(c.segment_first_index), c.group_crc, c.written_ns);
}

}  // namespace orderwire::journal
