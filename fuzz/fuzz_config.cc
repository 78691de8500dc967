// Fuzz target: the configuration files of `orderwire serve --config` (and
// match, replay, snapshot) on arbitrary text: the TOML reader, the reader of
// the old key = value files with its converter, and the engine's key = value
// form that journals pin.
//
// config::ParseServiceConfig, legacy::ParseLegacyServiceConfig,
// legacy::ConvertLegacyConfig, engine::ParseKeyValueConfig, AccountSet::Parse
// and AddressSet::Parse must never crash or trip a sanitizer, and reject only
// with InvalidArgument and a message. What they accept must mean what it
// says:
// - TOML: every rejection names the place, "config (fuzz):LINE:COL: ...";
//   ValidateConfig accepts the engine part; the configuration written back
//   as TOML (every key explicit) parses to the same configuration; PolicyFor
//   gives each listed session its own policy and any other one the open
//   policy (or none).
// - old files: what the old reader accepts converts (or is refused as text
//   TOML cannot hold, never an internal error) to TOML that loads to the
//   same configuration; the TOML reader refuses such a file with the
//   conversion hint unless it has no key at all.
// - engine key = value form: ValidateConfig accepts the result;
//   FormatKeyValueConfig writes it back as text that parses to the same
//   values and formats identically.
// - account and address sets: ToString reads back to the same set;
//   Contains agrees with a plain reading of the set's ranges and CIDR
//   blocks (an IPv4 address written ::ffff:a.b.c.d counts as IPv4) at and
//   around every range end and block address, in both forms of an IPv4
//   address; every address a set lists is in it; a set never accepts a NUL
//   byte (inet_pton would stop reading there).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "cli/legacy_config.h"
#include "config/service_config.h"
#include "engine/config.h"
#include "fuzz/fuzz_check.h"
#include "net/udp.h"

namespace orderwire::config {

namespace legacy = cli::legacy;
namespace {

using engine::EngineConfig;

bool SameEngine(const EngineConfig& a, const EngineConfig& b) {
  return a.min_instrument == b.min_instrument &&
         a.max_instrument == b.max_instrument && a.min_price == b.min_price &&
         a.max_price == b.max_price && a.min_quantity == b.min_quantity &&
         a.max_quantity == b.max_quantity &&
         a.max_live_orders == b.max_live_orders;
}

void CheckRejection(const absl::Status& status) {
  FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  FUZZ_CHECK(!status.message().empty());
}

// The items of a set's ToString(): "a, b, c".
std::vector<std::string> Items(const std::string& text) {
  std::vector<std::string> items;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = text.find(", ", from);
    items.push_back(text.substr(from, comma - from));
    if (comma == std::string::npos) break;
    from = comma + 2;
  }
  return items;
}

std::uint64_t ToU64(const std::string& text) {
  std::uint64_t value = 0;
  for (const char c : text) {
    FUZZ_CHECK(c >= '0' && c <= '9');
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

void CheckAccounts(const AccountSet& set) {
  const std::string text = set.ToString();
  const absl::StatusOr<AccountSet> again = AccountSet::Parse(text);
  FUZZ_CHECK(text == "(none)" || (again.ok() && again->ToString() == text));
  FUZZ_CHECK(set.any() == (text == "any"));
  if (set.any()) {
    FUZZ_CHECK(set.Contains(0) &&
               set.Contains(std::numeric_limits<std::uint64_t>::max()));
    return;
  }
  if (text == "(none)") {  // an empty TOML array
    FUZZ_CHECK(!set.Contains(0) &&
               !set.Contains(std::numeric_limits<std::uint64_t>::max()));
    return;
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const std::string& item : Items(text)) {
    const std::size_t dash = item.find('-');
    const std::uint64_t low = ToU64(item.substr(0, dash));
    const std::uint64_t high =
        dash == std::string::npos ? low : ToU64(item.substr(dash + 1));
    FUZZ_CHECK(low <= high);
    ranges.emplace_back(low, high);
  }
  const auto plain = [&](std::uint64_t account) {
    return std::any_of(ranges.begin(), ranges.end(), [&](const auto& r) {
      return r.first <= account && account <= r.second;
    });
  };
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  for (const auto& [low, high] : ranges) {
    for (const std::uint64_t probe :
         {low, high, low == 0 ? low : low - 1, high == kMax ? high : high + 1,
          low + (high - low) / 2}) {
      FUZZ_CHECK(set.Contains(probe) == plain(probe));
    }
  }
}

// An address and its family, as a block of AddressSet holds it.
struct Address {
  int family = AF_INET;
  std::array<std::uint8_t, 16> bytes{};
};

Endpoint ToEndpoint(const Address& address) {
  Endpoint endpoint;
  if (address.family == AF_INET) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(7400);
    std::memcpy(&in.sin_addr, address.bytes.data(), 4);
    std::memcpy(&endpoint.storage, &in, sizeof(in));
    endpoint.length = sizeof(in);
  } else {
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(7400);
    std::memcpy(&in6.sin6_addr, address.bytes.data(), 16);
    std::memcpy(&endpoint.storage, &in6, sizeof(in6));
    endpoint.length = sizeof(in6);
  }
  return endpoint;
}

// The same address in the other form: a.b.c.d <-> ::ffff:a.b.c.d.
std::optional<Address> OtherForm(const Address& address) {
  static constexpr std::array<std::uint8_t, 12> kMappedPrefix = {
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  Address other;
  if (address.family == AF_INET) {
    other.family = AF_INET6;
    std::copy(kMappedPrefix.begin(), kMappedPrefix.end(), other.bytes.begin());
    std::copy_n(address.bytes.begin(), 4, other.bytes.begin() + 12);
    return other;
  }
  if (!std::equal(kMappedPrefix.begin(), kMappedPrefix.end(),
                  address.bytes.begin())) {
    return std::nullopt;
  }
  other.family = AF_INET;
  std::copy_n(address.bytes.begin() + 12, 4, other.bytes.begin());
  return other;
}

void CheckAddresses(const AddressSet& set) {
  const std::string text = set.ToString();
  if (text == "(none)") {  // an empty TOML array
    FUZZ_CHECK(!set.Contains(*Endpoint::Parse("127.0.0.1:1")) &&
               !set.Contains(*Endpoint::Parse("[::1]:1")));
    return;
  }
  const absl::StatusOr<AddressSet> again = AddressSet::Parse(text);
  FUZZ_CHECK(again.ok() && again->ToString() == text);
  if (text == "any") return;
  struct Block {
    Address address;
    int bits;
  };
  std::vector<Block> blocks;
  for (const std::string& item : Items(text)) {
    const std::size_t slash = item.find('/');
    FUZZ_CHECK(slash != std::string::npos);
    Block block{};
    const std::string host = item.substr(0, slash);
    block.bits = static_cast<int>(ToU64(item.substr(slash + 1)));
    if (inet_pton(AF_INET, host.c_str(), block.address.bytes.data()) == 1) {
      block.address.family = AF_INET;
      FUZZ_CHECK(block.bits <= 32);
    } else {
      FUZZ_CHECK(
          inet_pton(AF_INET6, host.c_str(), block.address.bytes.data()) == 1);
      block.address.family = AF_INET6;
      FUZZ_CHECK(block.bits <= 128);
    }
    blocks.push_back(block);
  }
  // An address is in a block of its family when its first `bits` bits are
  // the block's; an IPv4 address written ::ffff:a.b.c.d counts as IPv4.
  const auto in_block = [](const Block& block, const Address& address) {
    if (address.family != block.address.family) return false;
    for (int bit = 0; bit < block.bits; ++bit) {
      const auto byte = static_cast<std::size_t>(bit / 8);
      const int mask = 0x80 >> (bit % 8);
      if ((address.bytes[byte] & mask) != (block.address.bytes[byte] & mask)) {
        return false;
      }
    }
    return true;
  };
  const auto plain = [&](const Address& address) {
    const std::optional<Address> other = OtherForm(address);
    const Address& key =
        address.family == AF_INET6 && other.has_value() ? *other : address;
    return std::any_of(blocks.begin(), blocks.end(),
                       [&](const Block& b) { return in_block(b, key); });
  };
  for (const Block& block : blocks) {
    const int width = block.address.family == AF_INET ? 32 : 128;
    std::vector<Address> probes = {block.address};
    for (const int bit : {block.bits - 1, block.bits, width - 1}) {
      if (bit < 0 || bit >= width) continue;
      Address flipped = block.address;
      flipped.bytes[static_cast<std::size_t>(bit / 8)] ^=
          static_cast<std::uint8_t>(0x80 >> (bit % 8));
      probes.push_back(flipped);
    }
    // A block contains its own address (but an IPv6 block shorter than
    // /96 only holds the IPv6 addresses it covers, not the IPv4 ones).
    if (block.address.family == AF_INET || block.bits >= 96 ||
        !OtherForm(block.address).has_value()) {
      FUZZ_CHECK(set.Contains(ToEndpoint(block.address)));
    }
    for (const Address& probe : probes) {
      FUZZ_CHECK(set.Contains(ToEndpoint(probe)) == plain(probe));
      if (const std::optional<Address> other = OtherForm(probe)) {
        FUZZ_CHECK(set.Contains(ToEndpoint(*other)) == plain(*other));
      }
    }
  }
}

// A TOML basic string.
std::string TomlString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7F) {
      out += absl::StrFormat("\\u%04X", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A set's ToString() as a TOML value: "any", or an array of strings.
std::string SetToToml(const std::string& text) {
  if (text == "any") return "\"any\"";
  if (text == "(none)") return "[]";
  std::string out = "[";
  for (const std::string& item : Items(text)) {
    if (out.size() > 1) out += ", ";
    out += TomlString(item);
  }
  return out + "]";
}

// The configuration as TOML with every key explicit.
std::string FormatServiceConfig(const ServiceConfig& config) {
  const EngineConfig& e = config.engine;
  std::string seconds = absl::StrFormat("%.17g", config.session_idle_seconds);
  if (seconds.find_first_of(".e") == std::string::npos) seconds += ".0";
  std::string text = absl::StrFormat(
      "[engine]\nmin_instrument = %d\nmax_instrument = %d\nmin_price = %d\n"
      "max_price = %d\nmin_quantity = %d\nmax_quantity = %d\n"
      "max_live_orders = %d\n"
      "[service]\nmax_sessions = %d\nmax_report_history_bytes = %d\n"
      "session_idle_seconds = %s\nopen_sessions = %s\nopen_accounts = %s\n"
      "allowed_addresses = %s\nliveness_seconds = %d\n"
      "cancel_on_disconnect = %s\n",
      e.min_instrument, e.max_instrument, e.min_price, e.max_price,
      e.min_quantity, e.max_quantity, e.max_live_orders, config.max_sessions,
      config.max_report_history_bytes, seconds,
      config.open_sessions ? "true" : "false",
      SetToToml(config.open_policy.accounts.ToString()),
      SetToToml(config.open_policy.addresses.ToString()),
      config.open_policy.liveness_seconds,
      config.open_policy.cancel_on_disconnect ? "true" : "false");
  std::vector<std::uint32_t> ids;
  for (const auto& [id, policy] : config.sessions) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const std::uint32_t id : ids) {
    const SessionPolicy& policy = config.sessions.at(id);
    absl::StrAppendFormat(
        &text,
        "[sessions.%d]\naccounts = %s\naddresses = %s\nliveness_seconds = "
        "%d\ncancel_on_disconnect = %s\n",
        id, SetToToml(policy.accounts.ToString()),
        SetToToml(policy.addresses.ToString()), policy.liveness_seconds,
        policy.cancel_on_disconnect ? "true" : "false");
    if (!policy.key_file.empty()) {
      absl::StrAppendFormat(&text, "key_file = %s\n",
                            TomlString(policy.key_file));
    }
  }
  return text;
}

ConfigSource FuzzSource() {
  ConfigSource source;
  source.path = "(fuzz)";
  source.load_key_files = false;  // no file system in the fuzz target
  // As the command line reads a file: an old one is recognised.
  source.is_legacy = legacy::IsLegacyServiceConfig;
  return source;
}

// "config (fuzz):LINE:COL: what", LINE and COL at least 1.
void CheckPlace(const absl::Status& status) {
  CheckRejection(status);
  std::string_view message(status.message().data(), status.message().size());
  constexpr std::string_view kPrefix = "config (fuzz):";
  FUZZ_CHECK(message.starts_with(kPrefix));
  message.remove_prefix(kPrefix.size());
  for (int field = 0; field < 2; ++field) {
    std::size_t digits = 0;
    while (digits < message.size() && message[digits] >= '0' &&
           message[digits] <= '9') {
      ++digits;
    }
    FUZZ_CHECK(digits > 0 && digits < message.size() &&
               message[digits] == ':' && message.substr(0, digits) != "0");
    message.remove_prefix(digits + 1);
  }
  FUZZ_CHECK(message.starts_with(" ") && message.size() > 1);
}

void CheckServiceConfig(const ServiceConfig& config) {
  FUZZ_CHECK(engine::ValidateConfig(config.engine).ok());
  FUZZ_CHECK(config.max_sessions >= 1 && config.max_sessions <= 1'000'000);
  FUZZ_CHECK(config.session_idle_seconds > 0 &&
             config.session_idle_seconds <= 1e9);
  CheckAccounts(config.open_policy.accounts);
  CheckAddresses(config.open_policy.addresses);
  std::uint32_t unlisted = 0;
  for (const auto& [id, policy] : config.sessions) {
    FUZZ_CHECK(config.PolicyFor(id) == &policy);
    FUZZ_CHECK(!policy.mac.has_value());  // key files are not read here
    CheckAccounts(policy.accounts);
    CheckAddresses(policy.addresses);
  }
  while (config.sessions.contains(unlisted)) ++unlisted;
  FUZZ_CHECK(config.PolicyFor(unlisted) ==
             (config.open_sessions ? &config.open_policy : nullptr));
  FUZZ_CHECK(!DescribeServiceConfig(config).empty());

  const std::string text = FormatServiceConfig(config);
  const absl::StatusOr<ServiceConfig> again =
      ParseServiceConfig(text, FuzzSource());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(ComparableText(*again) == ComparableText(config));
  FUZZ_CHECK(FormatServiceConfig(*again) == text);
}

void CheckText(std::string_view text) {
  // The TOML configuration file.
  const absl::StatusOr<ServiceConfig> service =
      ParseServiceConfig(text, FuzzSource());
  if (service.ok()) {
    CheckServiceConfig(*service);
  } else {
    CheckPlace(service.status());
  }

  // An old key = value file: converted faithfully, and recognised.
  const absl::StatusOr<ServiceConfig> old =
      legacy::ParseLegacyServiceConfig(text);
  if (old.ok()) {
    const absl::StatusOr<std::string> converted =
        legacy::ConvertLegacyConfig(text);
    if (converted.ok()) {
      const absl::StatusOr<ServiceConfig> loaded =
          ParseServiceConfig(*converted, FuzzSource());
      FUZZ_CHECK(loaded.ok());
      FUZZ_CHECK(ComparableText(*loaded) == ComparableText(*old));
    } else {
      CheckRejection(converted.status());  // not UTF-8; never Internal
    }
    if (service.ok()) {
      // Valid TOML and an old file: only one without any key.
      const ServiceConfig defaults;
      FUZZ_CHECK(ComparableText(*old) == ComparableText(defaults));
    } else {
      FUZZ_CHECK(std::string(service.status().message())
                     .find("orderwire config convert") != std::string::npos);
    }
  } else {
    CheckRejection(old.status());
    FUZZ_CHECK(!legacy::ConvertLegacyConfig(text).ok());
  }

  // The engine's key = value form (what a journal pins).
  const absl::StatusOr<EngineConfig> engine = engine::ParseKeyValueConfig(text);
  if (engine.ok()) {
    FUZZ_CHECK(engine::ValidateConfig(*engine).ok());
    const std::string formatted = engine::FormatKeyValueConfig(*engine);
    const absl::StatusOr<EngineConfig> again =
        engine::ParseKeyValueConfig(formatted);
    FUZZ_CHECK(again.ok() && SameEngine(*again, *engine));
    FUZZ_CHECK(engine::FormatKeyValueConfig(*again) == formatted);
  } else {
    CheckRejection(engine.status());
  }

  // The set parsers on the whole text.
  const absl::StatusOr<AccountSet> accounts = AccountSet::Parse(text);
  if (accounts.ok()) {
    CheckAccounts(*accounts);
  } else {
    CheckRejection(accounts.status());
  }
  const absl::StatusOr<AddressSet> addresses = AddressSet::Parse(text);
  if (addresses.ok()) {
    FUZZ_CHECK(text.find('\0') == std::string_view::npos);
    CheckAddresses(*addresses);
  } else {
    CheckRejection(addresses.status());
  }
}

}  // namespace
}  // namespace orderwire::config

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  orderwire::config::CheckText(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
