// Byte helpers shared by the test suites: the Bytes alias, hex in and out, the
// bytes of a string, frames of any model encoded with codec::EncodeFrame (and
// the Accepted report of a NewLimit), and datagrams built with
// codec::DatagramBuilder.
#ifndef ORDERWIRE_TESTS_SUPPORT_BYTES_H_
#define ORDERWIRE_TESTS_SUPPORT_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codec/frame.h"
#include "codec/messages.h"
#include "gtest/gtest.h"

namespace orderwire::test_support {

using Bytes = std::vector<std::byte>;

// Lower-case hex digits, two per byte.
std::string Hex(std::span<const std::byte> bytes);

// Bytes from hex digits (either case). Aborts on malformed input: test data
// is fixed.
Bytes FromHex(std::string_view hex);

// The bytes of a string, as a view (no copy).
inline std::span<const std::byte> AsBytes(std::string_view text) {
  return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

// `model` encoded as a frame with `sequence` (codec::EncodeFrame), exactly
// kFrameSize<Model> bytes. A failed encode fails the test.
template <typename Model>
Bytes Frame(std::uint64_t sequence, const Model& model) {
  Bytes out(codec::kFrameSize<Model>);
  const codec::Result<std::size_t> written =
      codec::EncodeFrame(sequence, model, out);
  EXPECT_TRUE(written.ok() && *written == out.size())
      << "EncodeFrame of a " << codec::MessageTraits<Model>::kName;
  return out;
}

// The Accepted report of `limit` under `order_id`, as report `sequence`:
// what the service answers a NewLimit that rests.
Bytes AcceptedFor(std::uint64_t sequence, std::uint64_t order_id,
                  const codec::NewLimit& limit);

// A datagram of `session` holding `frames`, built with codec::DatagramBuilder.
// A frame the builder refuses fails the test.
Bytes Datagram(std::uint32_t session, const std::vector<Bytes>& frames);

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_BYTES_H_
