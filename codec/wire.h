// Little-endian loads and stores at any byte address.
//
// Every multi-byte integer of the orderwire protocol is little-endian and no
// buffer is assumed to be aligned. These helpers are the only way the codec
// touches wire bytes: a `std::memcpy` to or from a local, which the compiler
// turns into a single (unaligned) load or store, byte-swapped only on a
// big-endian host. Never read wire bytes through a cast pointer.
#ifndef ORDERWIRE_CODEC_WIRE_H_
#define ORDERWIRE_CODEC_WIRE_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace orderwire::codec {

namespace internal {

template <typename T>
[[nodiscard]] constexpr T ByteSwap(T value) noexcept {
  static_assert(std::is_unsigned_v<T>);
  if constexpr (sizeof(T) == 1) {
    return value;
  } else if constexpr (sizeof(T) == 2) {
    return static_cast<T>(__builtin_bswap16(value));
  } else if constexpr (sizeof(T) == 4) {
    return static_cast<T>(__builtin_bswap32(value));
  } else {
    static_assert(sizeof(T) == 8);
    return static_cast<T>(__builtin_bswap64(value));
  }
}

// The unsigned integer of the same width as T (an integer or an enum).
template <typename T>
using WireUnsigned = std::make_unsigned_t<typename std::conditional_t<
    std::is_enum_v<T>, std::underlying_type<T>, std::type_identity<T>>::type>;

}  // namespace internal

// True for the types a wire field may have: integers and enums of 1, 2, 4 or
// 8 bytes (bool excluded: the protocol has no boolean encoding).
template <typename T>
inline constexpr bool kIsWireScalar =
    (std::is_integral_v<T> || std::is_enum_v<T>)&&!std::is_same_v<T, bool> &&
    (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);

// Reads a little-endian T from `src`. `src` needs no alignment. Hot path.
template <typename T>
[[nodiscard]] inline T LoadLE(const std::byte* src) noexcept {
  static_assert(kIsWireScalar<T>);
  using U = internal::WireUnsigned<T>;
  U raw;
  std::memcpy(&raw, src, sizeof(U));
  if constexpr (std::endian::native == std::endian::big) {
    raw = internal::ByteSwap(raw);
  }
  return static_cast<T>(raw);
}

// Writes `value` little-endian at `dst`. `dst` needs no alignment. Hot path.
template <typename T>
inline void StoreLE(std::byte* dst, T value) noexcept {
  static_assert(kIsWireScalar<T>);
  using U = internal::WireUnsigned<T>;
  U raw = static_cast<U>(value);
  if constexpr (std::endian::native == std::endian::big) {
    raw = internal::ByteSwap(raw);
  }
  std::memcpy(dst, &raw, sizeof(U));
}

}  // namespace orderwire::codec

#endif  // ORDERWIRE_CODEC_WIRE_H_
