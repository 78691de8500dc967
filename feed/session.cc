// The feed's session id; see session.h.
#include "feed/session.h"

#include <sodium.h>

#include <array>

#include "codec/wire.h"

namespace orderwire::feed {

std::uint64_t FeedSession(std::uint64_t journal_id,
                          std::uint64_t start_index) noexcept {
  if (start_index == 0) return journal_id;
  // sodium_init picks the implementations for this CPU; idempotent and
  // thread-safe, its result needs no check for hashing.
  static const int initialised = sodium_init();
  (void)initialised;
  std::array<std::byte, 16> input{};
  codec::StoreLE(input.data(), journal_id);
  codec::StoreLE(input.data() + 8, start_index);
  std::array<unsigned char, 8> hash{};
  (void)crypto_generichash(hash.data(), hash.size(),
                           reinterpret_cast<const unsigned char*>(input.data()),
                           input.size(), nullptr, 0);
  return codec::LoadLE<std::uint64_t>(
      reinterpret_cast<const std::byte*>(hash.data()));
}

}  // namespace orderwire::feed
