// Fuzz target: the journal stream's messages (replication/group_message.h),
// the bytes a standby takes from NATS.
//
// The first input byte picks a mode: odd, the checksum field of the rest is
// recomputed before parsing, so that the fuzzer reaches the structural
// checks behind it (a random input almost never carries a valid CRC32C);
// even, the rest is parsed as it is. ParseGroupMessage must never read past
// the input, and a message it accepts must be canonical: built again from
// its parsed fields (GroupMessageBuilder, EncodeEpochMarker) it gives back
// exactly its bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "codec/wire.h"
#include "fuzz/fuzz_check.h"
#include "journal/crc32c.h"
#include "replication/group_message.h"

namespace orderwire::replication {
namespace {

constexpr std::size_t kCrcAt = 32;

void Reseal(std::vector<std::byte>& bytes) {
  if (bytes.size() < kGroupMessageHeaderSize) return;
  std::vector<std::byte> header(bytes.begin(),
                                bytes.begin() + kGroupMessageHeaderSize);
  std::memset(header.data() + kCrcAt, 0, 8);
  std::uint32_t crc = journal::Crc32c(header);
  crc = journal::Crc32cExtend(
      crc, std::span(bytes).subspan(kGroupMessageHeaderSize));
  codec::StoreLE(bytes.data() + kCrcAt, crc);
}

void Check(std::span<const std::byte> bytes) {
  auto message = ParseGroupMessage(bytes);
  if (!message.ok()) return;
  if (message->kind == GroupMessageKind::kEpochMarker) {
    const std::vector<std::byte> again =
        EncodeEpochMarker(message->epoch, message->first_index);
    FUZZ_CHECK(again.size() == bytes.size() &&
               std::memcmp(again.data(), bytes.data(), bytes.size()) == 0);
    return;
  }
  GroupMessageBuilder builder;
  builder.Start(message->epoch);
  std::uint32_t records = 0;
  message->ForEachRecord([&](const journal::Record& record) {
    FUZZ_CHECK(record.index == message->first_index + records);
    FUZZ_CHECK(builder.Add(record).ok());
    ++records;
  });
  FUZZ_CHECK(records == message->record_count);
  const std::span<const std::byte> again = builder.Finish();
  FUZZ_CHECK(again.size() == bytes.size() &&
             std::memcmp(again.data(), bytes.data(), bytes.size()) == 0);
}

}  // namespace
}  // namespace orderwire::replication

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size == 0) return 0;
  const bool reseal = (data[0] & 1) != 0;
  // A heap block of exactly the message's size, so that AddressSanitizer
  // sees any read past it.
  std::vector<std::byte> bytes(size - 1);
  if (size > 1) std::memcpy(bytes.data(), data + 1, size - 1);
  if (reseal) orderwire::replication::Reseal(bytes);
  orderwire::replication::Check(bytes);
  return 0;
}
