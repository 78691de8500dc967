// Segment and group header encoding, segment file names; see format.h.
#include "journal/format.h"

#include <charconv>
#include <cstring>
#include <limits>
#include <span>

#include "absl/strings/str_format.h"
#include "journal/crc32c.h"

namespace orderwire::journal {

void EncodeSegmentHeader(SegmentHeader header, std::byte* dst) noexcept {
  header.crc = 0;
  StoreStruct<kSegmentHeaderLayout>(header, dst);
  const std::uint32_t crc =
      Crc32c(std::span<const std::byte>(dst, kSegmentHeaderCrcOffset));
  codec::StoreLE(dst + kSegmentHeaderCrcOffset, crc);
}

void EncodeSegmentHeader(SegmentHeader header,
                         std::span<const std::byte> metadata,
                         std::byte* dst) noexcept {
  header.metadata_size = static_cast<std::uint32_t>(metadata.size());
  header.metadata_crc = metadata.empty() ? 0 : Crc32c(metadata);
  if (!metadata.empty()) {
    std::memcpy(dst + kSegmentMetadataOffset, metadata.data(), metadata.size());
  }
  EncodeSegmentHeader(header, dst);
}

GroupHeader DecodeGroupHeader(const GroupFormat& format,
                              const std::byte* src) noexcept {
  if (format.magic != kCompactGroupMagic) {
    return LoadStruct<kGroupHeaderLayout, GroupHeader>(src);
  }
  const auto compact =
      LoadStruct<kCompactGroupHeaderLayout, CompactGroupHeader>(src);
  GroupHeader header{.magic = compact.magic,
                     .records_bytes = compact.records_bytes,
                     .first_index = compact.first_index,
                     .stable_index = 0,
                     .record_count = compact.record_count,
                     .flags = 0};
  if (compact.stable_lag > compact.first_index) {
    header.stable_index = compact.first_index;  // no such index: refused
  } else if (compact.stable_lag != 0) {
    header.stable_index = compact.first_index - compact.stable_lag;
  }
  return header;
}

void EncodeGroupHeader(const GroupFormat& format, const GroupHeader& header,
                       std::byte* dst) noexcept {
  if (format.magic != kCompactGroupMagic) {
    GroupHeader wide = header;
    wide.magic = format.magic;
    StoreStruct<kGroupHeaderLayout>(wide, dst);
    return;
  }
  const std::uint64_t lag = header.first_index - header.stable_index;
  StoreStruct<kCompactGroupHeaderLayout>(
      CompactGroupHeader{
          .magic = format.magic,
          .records_bytes = header.records_bytes,
          .first_index = header.first_index,
          .record_count = header.record_count,
          .stable_lag = lag <= std::numeric_limits<std::uint32_t>::max()
                            ? static_cast<std::uint32_t>(lag)
                            : 0u},
      dst);
}

std::string SegmentFileName(std::uint64_t first_index) {
  return absl::StrFormat("%020d.owj", first_index);
}

std::optional<std::uint64_t> ParseSegmentFileName(std::string_view name) {
  constexpr std::size_t kDigits = 20;  // SegmentFileName's "%020d"
  constexpr std::string_view kSuffix = ".owj";
  if (name.size() != kDigits + kSuffix.size()) return std::nullopt;
  if (name.substr(kDigits) != kSuffix) return std::nullopt;
  std::uint64_t value = 0;
  const char* begin = name.data();
  const char* end = name.data() + kDigits;
  for (const char* p = begin; p != end; ++p) {
    if (*p < '0' || *p > '9') return std::nullopt;
  }
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace orderwire::journal
