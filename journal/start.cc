// The journal's start record; see start.h.
#include "journal/start.h"

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

void EncodeJournalStart(JournalStart start, std::byte* dst) noexcept {
  start.magic = kJournalStartMagic;
  start.version = kJournalStartVersion;
  start.size = static_cast<std::uint16_t>(kJournalStartSize);
  start.crc = 0;
  StoreStruct<kJournalStartLayout>(start, dst);
  codec::StoreLE(dst + kJournalStartCrcOffset,
                 Crc32c({dst, kJournalStartCrcOffset}));
}

absl::StatusOr<JournalStart> DecodeJournalStart(
    std::span<const std::byte> bytes, std::string_view path) {
  auto damaged = [&](const std::string& what) {
    return absl::DataLossError(absl::StrFormat(
        "journal start record %s is damaged: %s. It is replaced by a rename, "
        "so no crash leaves it so; without it the journal's first index (and "
        "so which segments were pruned on purpose) is unknown",
        path, what));
  };
  if (bytes.size() < 12) {
    return damaged(absl::StrFormat("it is %d bytes, not %d", bytes.size(),
                                   kJournalStartSize));
  }
  const auto magic = codec::LoadLE<std::uint64_t>(bytes.data());
  if (magic != kJournalStartMagic) {
    return damaged(absl::StrFormat(
        "bad magic 0x%016x (a start record begins with \"OWJSTART\")", magic));
  }
  const auto version = codec::LoadLE<std::uint16_t>(bytes.data() + 8);
  if (version != kJournalStartVersion) {
    return absl::UnimplementedError(absl::StrFormat(
        "journal start record %s: unsupported version %d (this build reads "
        "version %d)",
        path, version, kJournalStartVersion));
  }
  if (bytes.size() != kJournalStartSize) {
    return damaged(absl::StrFormat("it is %d bytes, not %d", bytes.size(),
                                   kJournalStartSize));
  }
  const JournalStart s =
      LoadStruct<kJournalStartLayout, JournalStart>(bytes.data());
  const std::uint32_t crc = Crc32c(bytes.first(kJournalStartCrcOffset));
  if (crc != s.crc) {
    return damaged(absl::StrFormat(
        "checksum mismatch (stored 0x%08x, computed 0x%08x)", s.crc, crc));
  }
  if (s.size != kJournalStartSize || s.flags != 0 || s.reserved != 0 ||
      s.first_index == 0) {
    return damaged(absl::StrFormat(
        "size field %d, flags 0x%x, reserved 0x%x or first index %d invalid",
        s.size, s.flags, s.reserved, s.first_index));
  }
  return s;
}

absl::StatusOr<std::optional<JournalStart>> ReadJournalStart(
    const std::string& directory) {
  const std::string path =
      absl::StrFormat("%s/%s", directory, kJournalStartFileName);
  absl::StatusOr<std::optional<std::vector<std::byte>>> bytes =
      internal::ReadSmallFile(path, kJournalStartSize);
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return std::optional<JournalStart>();
  absl::StatusOr<JournalStart> decoded = DecodeJournalStart(**bytes, path);
  if (!decoded.ok()) return decoded.status();
  return std::optional<JournalStart>(*decoded);
}

absl::Status WriteJournalStart(const std::string& directory, int dir_fd,
                               const JournalStart& start) {
  std::byte bytes[kJournalStartSize];
  EncodeJournalStart(start, bytes);
  return internal::PublishSmallFile(directory, dir_fd,
                                    kJournalStartTempFileName,
                                    kJournalStartFileName, bytes);
}

absl::StatusOr<std::uint64_t> FirstAvailableIndex(
    const std::string& directory) {
  absl::StatusOr<std::optional<JournalStart>> start =
      ReadJournalStart(directory);
  if (!start.ok()) return start.status();
  return start->has_value() ? (*start)->first_index : 1;
}

std::string GroupedDigits(std::uint64_t value) {
  std::string digits = absl::StrFormat("%d", value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string PrunedIndexMessage(std::uint64_t index, std::uint64_t first_index) {
  return absl::StrFormat("index %s was pruned; the journal starts at %s",
                         GroupedDigits(index), GroupedDigits(first_index));
}

absl::Status CheckIndexAvailable(const std::string& directory,
                                 std::uint64_t index) {
  absl::StatusOr<std::uint64_t> first = FirstAvailableIndex(directory);
  if (!first.ok()) return first.status();
  if (index != 0 && index < *first) {
    return absl::OutOfRangeError(absl::StrFormat(
        "journal %s: %s", directory, PrunedIndexMessage(index, *first)));
  }
  return absl::OkStatus();
}

}  // namespace orderwire::journal
