// CRC32C; see crc32c.h.
#include "journal/crc32c.h"

#include <nmmintrin.h>

#include <array>
#include <cstring>

namespace orderwire::journal {
namespace {

constexpr std::uint32_t kPolyReflected = 0x82F63B78u;

// Lane lengths of the three-lane loop (multiples of 8 bytes).
constexpr std::size_t kLongLane = 8192;
constexpr std::size_t kShortLane = 256;

// One byte through the register, bit by bit (the definition).
constexpr std::uint32_t ByteBitwise(std::uint32_t crc, std::uint8_t byte) {
  crc ^= byte;
  for (int bit = 0; bit < 8; ++bit) {
    crc = (crc & 1u) != 0 ? (crc >> 1) ^ kPolyReflected : crc >> 1;
  }
  return crc;
}

constexpr std::array<std::uint32_t, 256> kByteTable = [] {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    table[i] = ByteBitwise(0, static_cast<std::uint8_t>(i));
  }
  return table;
}();

// The raw register update (no pre- or post-inversion), table driven: the
// fallback for a CPU without SSE4.2.
std::uint32_t UpdateTable(std::uint32_t crc, const std::byte* p,
                          std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    crc = (crc >> 8) ^
          kByteTable[(crc ^ static_cast<std::uint8_t>(p[i])) & 0xFFu];
  }
  return crc;
}

__attribute__((target("sse4.2"))) std::uint32_t UpdateOneLane(
    std::uint32_t crc, const std::byte* p, std::size_t n) noexcept {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    c = _mm_crc32_u64(c, word);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, static_cast<std::uint8_t>(*p));
    ++p;
    --n;
  }
  return c32;
}

// The linear operator "feed `lane` zero bytes through the register", as four
// byte-indexed tables: Shift(s) = t[0][s & 0xff] ^ t[1][(s >> 8) & 0xff] ^ ...
struct ShiftOperator {
  std::array<std::array<std::uint32_t, 256>, 4> table;

  [[nodiscard]] std::uint32_t Apply(std::uint32_t s) const noexcept {
    return table[0][s & 0xFFu] ^ table[1][(s >> 8) & 0xFFu] ^
           table[2][(s >> 16) & 0xFFu] ^ table[3][s >> 24];
  }
};

__attribute__((target("sse4.2"))) ShiftOperator MakeShift(std::size_t lane) {
  // The operator is linear over GF(2): build it from the 32 unit vectors.
  static constexpr std::array<std::byte, kLongLane> kZeros{};
  std::array<std::uint32_t, 32> unit{};
  for (std::size_t bit = 0; bit < 32; ++bit) {
    unit[bit] = UpdateOneLane(std::uint32_t{1} << bit, kZeros.data(), lane);
  }
  ShiftOperator op{};
  for (std::size_t k = 0; k < 4; ++k) {
    for (std::size_t b = 0; b < 256; ++b) {
      std::uint32_t value = 0;
      for (std::size_t bit = 0; bit < 8; ++bit) {
        if ((b >> bit) & 1u) value ^= unit[8 * k + bit];
      }
      op.table[k][b] = value;
    }
  }
  return op;
}

template <std::size_t kLane>
__attribute__((target("sse4.2"))) std::uint32_t ThreeLanes(
    std::uint32_t crc, const std::byte* p,
    const ShiftOperator& shift) noexcept {
  std::uint64_t a = crc;
  std::uint64_t b = 0;
  std::uint64_t c = 0;
  for (std::size_t i = 0; i < kLane; i += 8) {
    std::uint64_t wa;
    std::uint64_t wb;
    std::uint64_t wc;
    std::memcpy(&wa, p + i, 8);
    std::memcpy(&wb, p + kLane + i, 8);
    std::memcpy(&wc, p + 2 * kLane + i, 8);
    a = _mm_crc32_u64(a, wa);
    b = _mm_crc32_u64(b, wb);
    c = _mm_crc32_u64(c, wc);
  }
  const std::uint32_t ab = shift.Apply(static_cast<std::uint32_t>(a)) ^
                           static_cast<std::uint32_t>(b);
  return shift.Apply(ab) ^ static_cast<std::uint32_t>(c);
}

std::uint32_t UpdateHardware(std::uint32_t crc, const std::byte* p,
                             std::size_t n) noexcept {
  static const ShiftOperator kLongShift = MakeShift(kLongLane);
  static const ShiftOperator kShortShift = MakeShift(kShortLane);
  while (n >= 3 * kLongLane) {
    crc = ThreeLanes<kLongLane>(crc, p, kLongShift);
    p += 3 * kLongLane;
    n -= 3 * kLongLane;
  }
  while (n >= 3 * kShortLane) {
    crc = ThreeLanes<kShortLane>(crc, p, kShortShift);
    p += 3 * kShortLane;
    n -= 3 * kShortLane;
  }
  return UpdateOneLane(crc, p, n);
}

bool HaveSse42() noexcept {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return have;
}

std::uint32_t Update(std::uint32_t crc, const std::byte* p,
                     std::size_t n) noexcept {
  return HaveSse42() ? UpdateHardware(crc, p, n) : UpdateTable(crc, p, n);
}

}  // namespace

std::uint32_t Crc32c(std::span<const std::byte> bytes) noexcept {
  return ~Update(0xFFFFFFFFu, bytes.data(), bytes.size());
}

std::uint32_t Crc32cExtend(std::uint32_t crc,
                           std::span<const std::byte> bytes) noexcept {
  return ~Update(~crc, bytes.data(), bytes.size());
}

std::uint32_t Crc32cPortable(std::span<const std::byte> bytes) noexcept {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::byte b : bytes)
    crc = ByteBitwise(crc, static_cast<std::uint8_t>(b));
  return ~crc;
}

}  // namespace orderwire::journal
