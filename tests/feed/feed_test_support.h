// Helpers shared by the feed tests: hex out, GoogleTest printers, a
// field-by-field model comparison driven by the layouts, and a raw packet
// writer that types the header's little-endian bytes by hand (independent of
// the encoders under test).
#ifndef ORDERWIRE_TESTS_FEED_FEED_TEST_SUPPORT_H_
#define ORDERWIRE_TESTS_FEED_FEED_TEST_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "codec/error.h"
#include "feed/messages.h"
#include "feed/types.h"
#include "gtest/gtest.h"

namespace orderwire::feed {

inline void PrintTo(CheckCause v, std::ostream* os) {
  *os << Name(v) << " (" << static_cast<int>(v) << ")";
}
inline void PrintTo(PacketType v, std::ostream* os) {
  *os << Name(v) << " (" << static_cast<int>(v) << ")";
}
inline void PrintTo(MessageKind v, std::ostream* os) {
  *os << "0x" << std::hex << static_cast<int>(v) << std::dec;
}

}  // namespace orderwire::feed

namespace orderwire::codec {
inline void PrintTo(CodecError e, std::ostream* os) { *os << Name(e); }
}  // namespace orderwire::codec

namespace orderwire::feed::test {

// Lower-case hex digits, two per byte.
inline std::string Hex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const std::byte b : bytes) {
    const auto v = std::to_integer<unsigned>(b);
    out += kDigits[v >> 4];
    out += kDigits[v & 0xF];
  }
  return out;
}

// The first `n` bytes, in a buffer of exactly that size.
inline std::vector<std::byte> Prefix(const std::vector<std::byte>& bytes,
                                     std::size_t n) {
  return {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)};
}

// Every field of `actual` equals `expected`'s, named on failure.
template <typename Model>
void ExpectSameFields(const Model& actual, const Model& expected) {
  MessageTraits<Model>::kLayout.ForEach([&](const auto& field, std::size_t) {
    using T = typename std::remove_cvref_t<decltype(field)>::ValueType;
    EXPECT_EQ(static_cast<std::uint64_t>(
                  static_cast<std::make_unsigned_t<T>>(actual.*field.member)),
              static_cast<std::uint64_t>(
                  static_cast<std::make_unsigned_t<T>>(expected.*field.member)))
        << MessageTraits<Model>::kName << "." << field.name;
  });
}

// Little-endian bytes written by hand, for packets the encoders would not
// make (bad magic, wrong counts, ...).
class RawPacket {
 public:
  RawPacket& U8(std::uint64_t v) { return Put(v, 1); }
  RawPacket& U16(std::uint64_t v) { return Put(v, 2); }
  RawPacket& U32(std::uint64_t v) { return Put(v, 4); }
  RawPacket& U64(std::uint64_t v) { return Put(v, 8); }
  // The 24-byte header: "OM", version, type, session, sequence, count, token.
  RawPacket& Header(std::uint8_t type, std::uint64_t session,
                    std::uint64_t sequence, std::uint16_t count,
                    std::uint16_t token, std::uint8_t version = 1,
                    std::uint16_t magic = 0x4D4F) {
    return U16(magic)
        .U8(version)
        .U8(type)
        .U64(session)
        .U64(sequence)
        .U16(count)
        .U16(token);
  }
  // A block of `length` holding a message of `kind`, timestamp 1, the rest
  // of its bytes zero (`length` >= 9).
  RawPacket& Block(std::uint8_t kind, std::uint16_t length) {
    U16(length).U8(kind).U64(1);
    for (std::size_t i = 9; i < length; ++i) U8(0);
    return *this;
  }
  RawPacket& Zeros(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) U8(0);
    return *this;
  }
  [[nodiscard]] const std::vector<std::byte>& bytes() const { return bytes_; }

 private:
  RawPacket& Put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
      bytes_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xFF));
    }
    return *this;
  }

  std::vector<std::byte> bytes_;
};

}  // namespace orderwire::feed::test

#endif  // ORDERWIRE_TESTS_FEED_FEED_TEST_SUPPORT_H_
