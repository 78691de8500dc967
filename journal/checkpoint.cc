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
  absl::StatusOr<std::optional<std::vector<std::byte>>> bytes =
      internal::ReadSmallFile(path, kCheckpointSize);
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return std::optional<Checkpoint>();
  absl::StatusOr<Checkpoint> decoded = DecodeCheckpoint(**bytes, path);
  if (!decoded.ok()) return decoded.status();
  return std::optional<Checkpoint>(*decoded);
}

absl::Status WriteCheckpoint(const std::string& directory, int dir_fd,
                             const Checkpoint& checkpoint) {
  std::byte bytes[kCheckpointSize];
  EncodeCheckpoint(checkpoint, bytes);
  return internal::PublishSmallFile(directory, dir_fd, kCheckpointTempFileName,
                                    kCheckpointFileName, bytes);
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
