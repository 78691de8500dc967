// Datagram authentication; see mac.h.
#include "auth/mac.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>

#include "absl/strings/str_format.h"

namespace orderwire::auth {
namespace {

const unsigned char* U8(const std::byte* p) {
  return reinterpret_cast<const unsigned char*>(p);
}

// libsodium must be initialised once before use (it picks its
// implementations for this CPU); sodium_init is idempotent and thread-safe.
void InitSodium() {
  static const int initialised = sodium_init();
  (void)initialised;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' ||
                        s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

Mac::Mac(const Key& key) noexcept {
  InitSodium();
  crypto_generichash_init(&keyed_, U8(key.bytes.data()), key.bytes.size(),
                          kTagSize);
}

Tag Mac::Compute(std::span<const std::byte> bytes) const noexcept {
  crypto_generichash_state state = keyed_;
  crypto_generichash_update(&state, U8(bytes.data()), bytes.size());
  Tag tag;
  crypto_generichash_final(&state, reinterpret_cast<unsigned char*>(tag.data()),
                           tag.size());
  sodium_memzero(&state, sizeof(state));
  return tag;
}

bool Mac::Verify(std::span<const std::byte> bytes,
                 std::span<const std::byte> tag) const noexcept {
  if (tag.size() != kTagSize) return false;
  const Tag expected = Compute(bytes);
  return sodium_memcmp(expected.data(), tag.data(), kTagSize) == 0;
}

bool VerifyDatagram(const Mac& mac,
                    const codec::DatagramView& datagram) noexcept {
  return datagram.authenticated() &&
         mac.Verify(datagram.authenticated_bytes(), datagram.mac());
}

std::span<const std::byte> SealDatagram(
    const Mac& mac, codec::DatagramBuilder& builder) noexcept {
  const Tag tag = mac.Compute(builder.bytes());
  return builder.Seal(std::span<const std::byte, kTagSize>(tag));
}

absl::StatusOr<Key> ParseKeyHex(std::string_view text) {
  text = Trim(text);
  if (text.size() != 2 * kKeySize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a key is %d hexadecimal digits (%d bytes); this one has %d "
        "characters",
        2 * kKeySize, kKeySize, text.size()));
  }
  Key key;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (HexValue(text[i]) < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "character %d of the key is not a hexadecimal digit", i + 1));
    }
  }
  for (std::size_t i = 0; i < kKeySize; ++i) {
    key.bytes[i] = static_cast<std::byte>(HexValue(text[2 * i]) * 16 +
                                          HexValue(text[2 * i + 1]));
  }
  return key;
}

absl::StatusOr<Key> LoadKeyFile(const std::string& path, std::string* warning) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(absl::StrFormat("cannot open key file %s: %s",
                                               path, std::strerror(errno)));
  }
  std::string line;
  std::optional<Key> key;
  int line_number = 0;
  int key_line = 0;
  while (std::getline(file, line)) {
    ++line_number;
    const std::string_view text = Trim(line);
    if (text.empty() || text.front() == '#') continue;
    if (key.has_value()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: a second key (the first is on line %d): a key file holds "
          "one key",
          path, line_number, key_line));
    }
    absl::StatusOr<Key> parsed = ParseKeyHex(text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: %s", path, line_number, parsed.status().message()));
    }
    key = *parsed;
    key_line = line_number;
    sodium_memzero(line.data(), line.size());
  }
  if (!key.has_value()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: no key (expected one line of %d hexadecimal digits)", path,
        2 * kKeySize));
  }
  struct stat st {};
  if (warning != nullptr && ::stat(path.c_str(), &st) == 0 &&
      (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    *warning = absl::StrFormat(
        "key file %s can be read by its group or by others (mode %04o); "
        "chmod 600 it",
        path, st.st_mode & 07777);
  }
  return *key;
}

std::string KeyToHex(const Key& key) {
  std::string out;
  for (std::byte b : key.bytes) {
    absl::StrAppendFormat(&out, "%02x", static_cast<unsigned>(b));
  }
  return out;
}

}  // namespace orderwire::auth
