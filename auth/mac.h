// Datagram authentication (docs/PROTOCOL.md "Authenticated datagrams"): the
// per-session secret key, and the MAC that signs and checks a datagram.
//
// The MAC is keyed BLAKE2b (RFC 7693) with a 32-byte key and a 16-byte
// output, from libsodium (crypto_generichash). It covers a datagram's
// authenticated bytes: the header as sent (Authenticated flag set) and the
// frames; the 16-byte tag is the datagram's trailer. Why BLAKE2b and what it
// costs: docs/BENCHMARKS.md "Datagram MAC".
//
// Mac keys a BLAKE2b state once (the key block is compressed at
// construction) and copies it for each datagram, so Compute and Verify are
// hot-path safe: no allocation, no exception, O(bytes). Verify compares in
// constant time (sodium_memcmp). The codec knows where the trailer is; this
// library is the only one that knows what is in it.
#ifndef ORDERWIRE_AUTH_MAC_H_
#define ORDERWIRE_AUTH_MAC_H_

#include <sodium.h>

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "codec/datagram.h"

namespace orderwire::auth {

inline constexpr std::size_t kKeySize = 32;
inline constexpr std::size_t kTagSize = codec::kMacSize;
static_assert(kTagSize == 16);

// A session's secret key. Wiped when destroyed.
struct Key {
  std::array<std::byte, kKeySize> bytes{};

  Key() = default;
  Key(const Key&) = default;
  Key& operator=(const Key&) = default;
  ~Key() { sodium_memzero(bytes.data(), bytes.size()); }
};

using Tag = std::array<std::byte, kTagSize>;

// The keyed MAC of one session. Copyable (a copy holds the same key).
class Mac {
 public:
  // Prepares the keyed state. Cost: one BLAKE2b block.
  explicit Mac(const Key& key) noexcept;
  Mac(const Mac&) = default;
  Mac& operator=(const Mac&) = default;
  ~Mac() { sodium_memzero(&keyed_, sizeof(keyed_)); }

  // The tag of `bytes`. Hot path: no allocation; one keyed BLAKE2b pass
  // over `bytes` (figures: docs/BENCHMARKS.md "Datagram MAC").
  [[nodiscard]] Tag Compute(std::span<const std::byte> bytes) const noexcept;

  // Whether `tag` (which must be kTagSize bytes; any other size is false)
  // is the tag of `bytes`. Constant time in the tag's contents.
  [[nodiscard]] bool Verify(std::span<const std::byte> bytes,
                            std::span<const std::byte> tag) const noexcept;

 private:
  crypto_generichash_state keyed_;
};

// Whether `datagram` carries the Authenticated flag and a trailer that is
// the MAC of its authenticated bytes under `mac`. Hot path.
[[nodiscard]] bool VerifyDatagram(const Mac& mac,
                                  const codec::DatagramView& datagram) noexcept;

// Computes the MAC of an authenticated builder's datagram and writes it as
// the trailer; returns the whole datagram. Precondition:
// builder.authenticated(). Hot path.
std::span<const std::byte> SealDatagram(
    const Mac& mac, codec::DatagramBuilder& builder) noexcept;

// Parses a key written as 64 hexadecimal digits (upper or lower case;
// surrounding blanks and one trailing newline allowed). Errors:
// InvalidArgument saying what is wrong (length, a non-hex character and its
// position).
[[nodiscard]] absl::StatusOr<Key> ParseKeyHex(std::string_view text);

// Reads a key file: one line of 64 hexadecimal digits; `#` comment lines
// and blank lines are ignored. Errors name the file and the line:
// NotFound (cannot open), InvalidArgument (no key, two keys, a bad key).
// If the file can be read by its group or by others, `*warning` (when not
// null) receives a sentence saying so; the key is still returned. Cold
// path.
[[nodiscard]] absl::StatusOr<Key> LoadKeyFile(const std::string& path,
                                              std::string* warning = nullptr);

// The key as 64 lower-case hexadecimal digits (for tests and tools).
[[nodiscard]] std::string KeyToHex(const Key& key);

}  // namespace orderwire::auth

#endif  // ORDERWIRE_AUTH_MAC_H_
