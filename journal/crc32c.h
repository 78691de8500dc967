// CRC32C (Castagnoli), computed with the SSE4.2 `crc32` instruction.
//
// The journal protects every group of records and every segment header with
// a CRC32C (docs/JOURNAL.md says why this checksum). The polynomial is
// 0x1EDC6F41 (reflected 0x82F63B78), the register starts at 0xFFFFFFFF and
// the result is inverted: the CRC-32C of iSCSI, ext4 and SCTP, so
// Crc32c("123456789") == 0xE3069283.
//
// Long buffers are split into three lanes computed side by side (the
// instruction has a latency of three cycles and a throughput of one), then
// joined with a precomputed "shift by N zero bytes" operator; short buffers
// take one lane. Both give the same value as the bit-by-bit definition,
// which Crc32cPortable() implements for tests.
#ifndef ORDERWIRE_JOURNAL_CRC32C_H_
#define ORDERWIRE_JOURNAL_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace orderwire::journal {

// The CRC32C of `bytes`. Hot path (group seal and replay verify): no
// allocation; hardware CRC32 instructions, 8 bytes at a time (figures:
// BM_Crc32c in docs/BENCHMARKS.md, Journal).
// Requires SSE4.2 (the build targets it; see journal/CMakeLists.txt).
[[nodiscard]] std::uint32_t Crc32c(std::span<const std::byte> bytes) noexcept;

// Continues a CRC32C: Crc32cExtend(Crc32c(a), b) == Crc32c(a ++ b).
[[nodiscard]] std::uint32_t Crc32cExtend(
    std::uint32_t crc, std::span<const std::byte> bytes) noexcept;

// The same function computed one bit at a time, without SSE4.2. For tests.
[[nodiscard]] std::uint32_t Crc32cPortable(
    std::span<const std::byte> bytes) noexcept;

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_CRC32C_H_
