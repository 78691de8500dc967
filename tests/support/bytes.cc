#include "tests/support/bytes.h"

#include <array>
#include <cstdlib>

#include "codec/datagram.h"
#include "codec/error.h"

namespace orderwire::test_support {

std::string Hex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    out += kDigits[static_cast<unsigned>(b) >> 4];
    out += kDigits[static_cast<unsigned>(b) & 15];
  }
  return out;
}

Bytes FromHex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    std::abort();
  };
  if (hex.size() % 2 != 0) std::abort();
  Bytes out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>(nibble(hex[2 * i]) * 16 +
                                    nibble(hex[2 * i + 1]));
  }
  return out;
}

Bytes AcceptedFor(std::uint64_t sequence, std::uint64_t order_id,
                  const codec::NewLimit& limit) {
  return Frame(sequence,
               codec::Accepted{.order_id = order_id,
                               .account_id = limit.account_id,
                               .client_order_id = limit.client_order_id,
                               .instrument_id = limit.instrument_id,
                               .side = limit.side,
                               .time_in_force = limit.time_in_force,
                               .price = limit.price,
                               .quantity = limit.quantity});
}

Bytes Datagram(std::uint32_t session, const std::vector<Bytes>& frames) {
  std::array<std::byte, codec::kMaxDatagramSize> buffer{};
  codec::DatagramBuilder builder(buffer, session);
  for (const Bytes& frame : frames) {
    EXPECT_EQ(builder.AppendFrame(frame), codec::CodecError::kOk);
  }
  return Bytes(builder.bytes().begin(), builder.bytes().end());
}

}  // namespace orderwire::test_support
