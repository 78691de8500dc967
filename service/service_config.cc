// The service's configuration; see service_config.h.
#include "service/service_config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace orderwire::service {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> SplitList(std::string_view text) {
  std::vector<std::string_view> items;
  while (true) {
    const std::size_t comma = text.find(',');
    items.push_back(Trim(text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

bool ParseU64(std::string_view text, std::uint64_t& out) {
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

absl::StatusOr<AccountSet> AccountSet::Parse(std::string_view text) {
  text = Trim(text);
  if (text == "any") return Any();
  AccountSet set;
  for (std::string_view item : SplitList(text)) {
    std::uint64_t low = 0;
    std::uint64_t high = 0;
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      if (!ParseU64(item, low)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "'%s' is not an account id (or a range a-b, or 'any')", item));
      }
      high = low;
    } else if (!ParseU64(Trim(item.substr(0, dash)), low) ||
               !ParseU64(Trim(item.substr(dash + 1)), high) || low > high) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "'%s' is not an account range a-b with a <= b", item));
    }
    set.ranges_.emplace_back(low, high);
  }
  std::sort(set.ranges_.begin(), set.ranges_.end());
  return set;
}

bool AccountSet::Contains(std::uint64_t account) const {
  if (any_) return true;
  // Ranges are few; the list is sorted by start.
  for (const auto& [low, high] : ranges_) {
    if (account < low) return false;
    if (account <= high) return true;
  }
  return false;
}

std::string AccountSet::ToString() const {
  if (any_) return "any";
  std::string out;
  for (const auto& [low, high] : ranges_) {
    if (!out.empty()) out += ", ";
    out += low == high ? absl::StrFormat("%d", low)
                       : absl::StrFormat("%d-%d", low, high);
  }
  return out.empty() ? "(none)" : out;
}

AddressSet AddressSet::Loopback() { return *Parse("127.0.0.0/8, ::1"); }

absl::StatusOr<AddressSet> AddressSet::Parse(std::string_view text) {
  text = Trim(text);
  if (text == "any") return Any();
  AddressSet set;
  for (std::string_view item : SplitList(text)) {
    Block block{};
    std::string address(item);
    int max_bits = 0;
    const std::size_t slash = item.find('/');
    if (slash != std::string_view::npos)
      address = std::string(item.substr(0, slash));
    // inet_pton reads a C string: it would ignore what follows a NUL byte.
    const bool no_nul = address.find('\0') == std::string::npos;
    if (no_nul && inet_pton(AF_INET, address.c_str(), block.bytes) == 1) {
      block.family = AF_INET;
      max_bits = 32;
    } else if (no_nul &&
               inet_pton(AF_INET6, address.c_str(), block.bytes) == 1) {
      block.family = AF_INET6;
      max_bits = 128;
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "'%s' is not an IPv4 or IPv6 address (or CIDR block, or 'any')",
          item));
    }
    block.prefix_bits = max_bits;
    if (slash != std::string_view::npos) {
      std::uint64_t bits = 0;
      if (!ParseU64(item.substr(slash + 1), bits) ||
          bits > static_cast<std::uint64_t>(max_bits)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "'%s': prefix length must be 0..%d", item, max_bits));
      }
      block.prefix_bits = static_cast<int>(bits);
    }
    // An IPv4 block written in IPv6 (::ffff:a.b.c.d, prefix >= 96) is kept
    // as the IPv4 block: Contains() compares every IPv4 source, mapped or
    // not, with the IPv4 blocks only, so as IPv6 it would never match.
    static constexpr std::uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0,    0,
                                                   0, 0, 0, 0, 0xFF, 0xFF};
    if (block.family == AF_INET6 && block.prefix_bits >= 96 &&
        std::memcmp(block.bytes, kV4Mapped, sizeof(kV4Mapped)) == 0) {
      std::memmove(block.bytes, block.bytes + 12, 4);
      std::memset(block.bytes + 4, 0, 12);
      block.family = AF_INET;
      block.prefix_bits -= 96;
    }
    set.blocks_.push_back(block);
  }
  return set;
}

bool AddressSet::Contains(const Endpoint& endpoint) const {
  if (any_) return true;
  const std::uint8_t* bytes = nullptr;
  std::uint8_t mapped[4];
  int family = endpoint.family();
  if (family == AF_INET) {
    bytes = reinterpret_cast<const std::uint8_t*>(
        &reinterpret_cast<const sockaddr_in*>(&endpoint.storage)->sin_addr);
  } else if (family == AF_INET6) {
    const auto* a6 =
        &reinterpret_cast<const sockaddr_in6*>(&endpoint.storage)->sin6_addr;
    bytes = reinterpret_cast<const std::uint8_t*>(a6);
    if (IN6_IS_ADDR_V4MAPPED(a6)) {  // ::ffff:a.b.c.d matches IPv4 blocks
      std::memcpy(mapped, bytes + 12, 4);
      bytes = mapped;
      family = AF_INET;
    }
  } else {
    return false;
  }
  for (const Block& block : blocks_) {
    if (block.family != family) continue;
    int bits = block.prefix_bits;
    bool match = true;
    for (int i = 0; bits > 0 && match; ++i, bits -= 8) {
      const auto mask =
          static_cast<std::uint8_t>(bits >= 8 ? 0xFF : 0xFF << (8 - bits));
      match = (bytes[i] & mask) == (block.bytes[i] & mask);
    }
    if (match) return true;
  }
  return false;
}

std::string AddressSet::ToString() const {
  if (any_) return "any";
  std::string out;
  for (const Block& block : blocks_) {
    char text[INET6_ADDRSTRLEN] = "";
    inet_ntop(block.family, block.bytes, text, sizeof(text));
    if (!out.empty()) out += ", ";
    out += absl::StrFormat("%s/%d", text, block.prefix_bits);
  }
  return out.empty() ? "(none)" : out;
}

const SessionPolicy* ServiceConfig::PolicyFor(std::uint32_t id) const {
  if (auto it = sessions.find(id); it != sessions.end()) return &it->second;
  return open_sessions ? &open_policy : nullptr;
}

absl::StatusOr<ServiceConfig> ParseServiceConfig(std::string_view text,
                                                 std::string_view base_dir) {
  ServiceConfig config;
  // Engine keys are handed to engine::ParseConfig; service lines are blanked
  // there so that its line numbers stay those of the file.
  std::string engine_text;
  std::optional<bool> open_sessions;
  std::optional<AddressSet> allowed;
  absl::flat_hash_map<std::uint32_t, std::optional<AddressSet>> addresses;
  absl::flat_hash_map<std::uint32_t, bool> has_accounts;
  absl::flat_hash_set<std::string> seen_keys;
  int line_number = 0;
  while (!text.empty() || line_number == 0) {
    ++line_number;
    const std::size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view()
                                         : text.substr(end + 1);
    std::string_view line = raw.substr(0, raw.find('#'));
    const std::size_t eq = line.find('=');
    const std::string_view key = Trim(line.substr(0, eq));
    const std::string_view value =
        eq == std::string_view::npos ? "" : Trim(line.substr(eq + 1));
    const bool service_key =
        key == "max_sessions" || key == "max_report_history_bytes" ||
        key == "session_idle_seconds" || key == "open_sessions" ||
        key == "open_accounts" || key == "allowed_addresses" ||
        key.substr(0, 8) == "session.";
    if (!service_key || eq == std::string_view::npos) {
      engine_text.append(raw);
      engine_text.push_back('\n');
      if (end == std::string_view::npos) break;
      continue;
    }
    engine_text.push_back('\n');
    const auto fail = [&](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrFormat("line %d: %s: %s", line_number, key, why));
    };
    if (!seen_keys.insert(std::string(key)).second) {
      return fail("given twice");
    }
    if (key == "max_sessions") {
      std::uint64_t n = 0;
      if (!ParseU64(value, n) || n < 1 || n > 1'000'000) {
        return fail("must be an integer from 1 to 1000000");
      }
      config.max_sessions = static_cast<std::uint32_t>(n);
    } else if (key == "max_report_history_bytes") {
      std::uint64_t n = 0;
      if (!ParseU64(value, n) || n > (std::uint64_t{1} << 40)) {
        return fail("must be an integer from 0 to 1099511627776 (1 TiB)");
      }
      config.max_report_history_bytes = n;
    } else if (key == "session_idle_seconds") {
      double seconds = 0;
      if (!absl::SimpleAtod(absl::string_view(value.data(), value.size()),
                            &seconds) ||
          !(seconds > 0) || seconds > 1e9) {
        return fail("must be a number of seconds above 0 (e.g. 60, 0.5)");
      }
      config.session_idle_seconds = seconds;
    } else if (key == "open_sessions") {
      if (value != "true" && value != "false") {
        return fail("must be true or false");
      }
      open_sessions = value == "true";
    } else if (key == "open_accounts") {
      absl::StatusOr<AccountSet> set = AccountSet::Parse(value);
      if (!set.ok()) return fail(std::string(set.status().message()));
      config.open_policy.accounts = *set;
    } else if (key == "allowed_addresses") {
      absl::StatusOr<AddressSet> set = AddressSet::Parse(value);
      if (!set.ok()) return fail(std::string(set.status().message()));
      allowed = *set;
    } else {
      // session.ID.accounts / session.ID.addresses
      const std::string_view rest = key.substr(8);
      const std::size_t dot = rest.find('.');
      std::uint64_t id = 0;
      if (dot == std::string_view::npos || !ParseU64(rest.substr(0, dot), id) ||
          id > UINT32_MAX) {
        return fail(
            "expected session.<id>.accounts, session.<id>.addresses or "
            "session.<id>.key_file with a u32 session id");
      }
      const std::string_view what = rest.substr(dot + 1);
      const auto sid = static_cast<std::uint32_t>(id);
      SessionPolicy& policy = config.sessions[sid];
      if (what == "accounts") {
        absl::StatusOr<AccountSet> set = AccountSet::Parse(value);
        if (!set.ok()) return fail(std::string(set.status().message()));
        policy.accounts = *set;
        has_accounts[sid] = true;
      } else if (what == "addresses") {
        absl::StatusOr<AddressSet> set = AddressSet::Parse(value);
        if (!set.ok()) return fail(std::string(set.status().message()));
        addresses[sid] = *set;
      } else if (what == "key_file") {
        if (value.empty()) return fail("needs a path");
        std::string path(value);
        if (path.front() != '/' && !base_dir.empty()) {
          path = absl::StrFormat("%s/%s", base_dir, value);
        }
        std::string warning;
        absl::StatusOr<auth::Key> session_key =
            auth::LoadKeyFile(path, &warning);
        if (!session_key.ok()) {
          return fail(std::string(session_key.status().message()));
        }
        if (!warning.empty()) {
          config.warnings.push_back(
              absl::StrFormat("line %d: %s: %s", line_number, key, warning));
        }
        policy.mac.emplace(*session_key);
        policy.key_file = path;
      } else {
        return fail("unknown session key (accounts, addresses, key_file)");
      }
    }
    if (end == std::string_view::npos) break;
  }
  absl::StatusOr<engine::EngineConfig> engine_config =
      engine::ParseConfig(engine_text);
  if (!engine_config.ok()) return engine_config.status();
  config.engine = *engine_config;
  if (allowed.has_value()) config.open_policy.addresses = *allowed;
  for (auto& [id, policy] : config.sessions) {
    if (!has_accounts.contains(id)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "session %d has addresses or a key file but no session.%d.accounts "
          "line",
          id, id));
    }
    auto it = addresses.find(id);
    policy.addresses = it != addresses.end() && it->second.has_value()
                           ? *it->second
                           : config.open_policy.addresses;
  }
  config.open_sessions = open_sessions.value_or(config.sessions.empty());
  return config;
}

absl::StatusOr<ServiceConfig> LoadServiceConfig(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(absl::StrFormat(
        "cannot open configuration file %s: %s", path, std::strerror(errno)));
  }
  std::stringstream text;
  text << file.rdbuf();
  const std::size_t slash = path.rfind('/');
  const std::string base_dir =
      slash == std::string::npos ? "" : path.substr(0, slash);
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(
      text.str(), base_dir.empty() && slash == 0 ? "/" : base_dir);
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s", path, config.status().message()));
  }
  return config;
}

std::string DescribeServiceConfig(const ServiceConfig& config) {
  std::string out = absl::StrFormat(
      "instruments %d-%d, prices %d-%d, quantities %d-%d, %d live orders; "
      "max %d unlisted sessions, report histories %d bytes in all, released "
      "after %g s idle",
      config.engine.min_instrument, config.engine.max_instrument,
      config.engine.min_price, config.engine.max_price,
      config.engine.min_quantity, config.engine.max_quantity,
      config.engine.max_live_orders, config.max_sessions,
      config.max_report_history_bytes, config.session_idle_seconds);
  if (config.open_sessions) {
    absl::StrAppendFormat(&out,
                          "; any session may connect from %s and trade for "
                          "accounts %s",
                          config.open_policy.addresses.ToString(),
                          config.open_policy.accounts.ToString());
  } else {
    out += "; only listed sessions may connect";
  }
  std::size_t keyed = 0;
  for (const auto& [id, policy] : config.sessions) {
    if (policy.mac.has_value()) ++keyed;
  }
  absl::StrAppendFormat(&out, "; %d listed session(s), %d keyed",
                        config.sessions.size(), keyed);
  return out;
}

}  // namespace orderwire::service
