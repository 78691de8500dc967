// The service's configuration; see service_config.h.
#include "config/service_config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "config/config_text.h"
#include "toml++/toml.h"

namespace orderwire::config {
using text::ParseU64;
using text::SplitList;
using text::Trim;

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

namespace {

// toml++'s name for a node's type, as an error says it.
std::string_view TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// Builds every error of one file: "config PATH:LINE:COL: what".
class ErrorAt {
 public:
  explicit ErrorAt(std::string_view path) : path_(path) {}

  [[nodiscard]] std::string Where(const toml::source_region& where) const {
    return absl::StrFormat("config %s:%d:%d", path_, where.begin.line,
                           where.begin.column);
  }
  [[nodiscard]] absl::Status operator()(const toml::source_region& where,
                                        std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s", Where(where), what));
  }
  [[nodiscard]] std::string_view path() const { return path_; }

 private:
  std::string_view path_;
};

// True when the line `where` begins at starts a table header (`[...]`),
// false for a key (`session.7.accounts = ...`, the old files' form).
bool IsTableHeaderLine(std::string_view text,
                       const toml::source_region& where) {
  std::size_t line = 1;
  std::size_t at = 0;
  while (line < where.begin.line && at < text.size()) {
    const std::size_t newline = text.find('\n', at);
    if (newline == std::string_view::npos) return false;
    at = newline + 1;
    ++line;
  }
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  return at < text.size() && text[at] == '[';
}

// The keys of the old key = value files that have a place in a table now:
// found outside any table, they mark an old file.
bool IsOldTopLevelKey(std::string_view key) {
  static constexpr std::string_view kOldServiceKeys[] = {
      "max_sessions",
      "max_report_history_bytes",
      "session_idle_seconds",
      "open_sessions",
      "open_accounts",
      "allowed_addresses",
      "session"};
  return engine::FindConfigKey(key) != nullptr ||
         std::find(std::begin(kOldServiceKeys), std::end(kOldServiceKeys),
                   key) != std::end(kOldServiceKeys);
}

std::string ConvertHint(std::string_view path) {
  return absl::StrFormat(
      "this is an old 'key = value' configuration file; configuration files "
      "are TOML now ([engine], [service] and [sessions.N] tables, "
      "docs/SERVICE.md \"Configuration\"): 'orderwire config convert %s > "
      "NEW.toml' prints the TOML equivalent",
      path);
}

// An integer in [min, max] at `node`; `name` is its dotted key.
absl::StatusOr<std::int64_t> IntegerIn(const ErrorAt& error,
                                       const toml::node& node,
                                       std::string_view name, std::int64_t min,
                                       std::int64_t max) {
  const toml::value<std::int64_t>* value = node.as_integer();
  if (value == nullptr) {
    return error(node.source(),
                 absl::StrFormat("%s: expected an integer, got %s", name,
                                 TypeName(node)));
  }
  if (value->get() < min || value->get() > max) {
    return error(node.source(),
                 absl::StrFormat("%s: %d is out of range (%d..%d)", name,
                                 value->get(), min, max));
  }
  return value->get();
}

// A number of seconds above 0, at most 1e9 (an integer or a float).
absl::StatusOr<double> SecondsIn(const ErrorAt& error, const toml::node& node,
                                 std::string_view name) {
  const std::optional<double> seconds = node.value<double>();
  if (!node.is_number() || !seconds.has_value()) {
    return error(node.source(),
                 absl::StrFormat("%s: expected a number of seconds, got %s",
                                 name, TypeName(node)));
  }
  if (!(*seconds > 0) || *seconds > 1e9) {
    return error(node.source(),
                 absl::StrFormat("%s: %g is out of range (above 0, at "
                                 "most 1e9 seconds; e.g. 60, 0.5)",
                                 name, *seconds));
  }
  return *seconds;
}

absl::Status UnknownKey(const ErrorAt& error, const toml::key& key,
                        std::string_view table, std::string_view known) {
  return error(key.source(),
               absl::StrFormat("unknown key '%s' in [%s] (known keys: %s)",
                               key.str(), table, known));
}

absl::Status ReadEngine(const ErrorAt& error, const toml::table& table,
                        engine::EngineConfig& config) {
  for (auto&& [key, node] : table) {
    const engine::ConfigKey* const spec = engine::FindConfigKey(key.str());
    if (spec == nullptr) {
      return UnknownKey(error, key, "engine", engine::ConfigKeyNames());
    }
    absl::StatusOr<std::int64_t> value =
        IntegerIn(error, node, absl::StrFormat("engine.%s", key.str()),
                  spec->min, spec->max);
    if (!value.ok()) return value.status();
    spec->set(config, *value);
  }
  if (absl::Status s = engine::ValidateConfig(config); !s.ok()) {
    return error(table.source(), absl::StrFormat("[engine]: %s", s.message()));
  }
  return absl::OkStatus();
}

// "any", or an array of account ids and "a-b" ranges.
absl::StatusOr<AccountSet> ReadAccounts(const ErrorAt& error,
                                        const toml::node& node,
                                        std::string_view name) {
  if (const auto* text = node.as_string(); text != nullptr) {
    if (text->get() == "any") return AccountSet::Any();
    return error(node.source(),
                 absl::StrFormat("%s: the only string allowed is \"any\"; "
                                 "list accounts as an array, e.g. "
                                 "[7, 8, \"100-199\"]",
                                 name));
  }
  const toml::array* items = node.as_array();
  if (items == nullptr) {
    return error(node.source(),
                 absl::StrFormat("%s: expected \"any\" or an array of account "
                                 "ids and \"a-b\" ranges, got %s",
                                 name, TypeName(node)));
  }
  if (items->empty()) return AccountSet{};
  std::string joined;
  for (const toml::node& item : *items) {
    std::string text;
    if (const auto* id = item.as_integer(); id != nullptr) {
      if (id->get() < 0) {
        return error(
            item.source(),
            absl::StrFormat("%s: account id %d is negative", name, id->get()));
      }
      text = absl::StrFormat("%d", id->get());
    } else if (const auto* range = item.as_string(); range != nullptr) {
      text = range->get();
      if (text.find(',') != std::string::npos || text == "any") {
        return error(item.source(),
                     absl::StrFormat("%s: '%s' is not one account id or range "
                                     "a-b (one per array item)",
                                     name, text));
      }
      if (absl::StatusOr<AccountSet> one = AccountSet::Parse(text); !one.ok()) {
        return error(item.source(),
                     absl::StrFormat("%s: %s", name, one.status().message()));
      }
    } else {
      return error(item.source(),
                   absl::StrFormat("%s: an item must be an account id or an "
                                   "\"a-b\" range, got %s",
                                   name, TypeName(item)));
    }
    if (!joined.empty()) joined += ", ";
    joined += text;
  }
  return AccountSet::Parse(joined);
}

// "any", or an array of addresses and CIDR blocks.
absl::StatusOr<AddressSet> ReadAddresses(const ErrorAt& error,
                                         const toml::node& node,
                                         std::string_view name) {
  if (const auto* text = node.as_string(); text != nullptr) {
    if (text->get() == "any") return AddressSet::Any();
    return error(node.source(),
                 absl::StrFormat("%s: the only string allowed is \"any\"; "
                                 "list addresses as an array, e.g. "
                                 "[\"127.0.0.1\", \"10.1.0.0/16\"]",
                                 name));
  }
  const toml::array* items = node.as_array();
  if (items == nullptr) {
    return error(node.source(),
                 absl::StrFormat("%s: expected \"any\" or an array of "
                                 "addresses and CIDR blocks, got %s",
                                 name, TypeName(node)));
  }
  if (items->empty()) return AddressSet{};
  std::string joined;
  for (const toml::node& item : *items) {
    const auto* address = item.as_string();
    if (address == nullptr) {
      return error(item.source(),
                   absl::StrFormat("%s: an item must be a string (an address "
                                   "or CIDR block), got %s",
                                   name, TypeName(item)));
    }
    const std::string& text = address->get();
    if (text.find(',') != std::string::npos || text == "any") {
      return error(item.source(),
                   absl::StrFormat("%s: '%s' is not one address or CIDR block "
                                   "(one per array item)",
                                   name, text));
    }
    if (absl::StatusOr<AddressSet> one = AddressSet::Parse(text); !one.ok()) {
      return error(item.source(),
                   absl::StrFormat("%s: %s", name, one.status().message()));
    }
    if (!joined.empty()) joined += ", ";
    joined += text;
  }
  return AddressSet::Parse(joined);
}

struct ServiceTable {
  std::optional<bool> open_sessions;
  std::optional<AddressSet> allowed_addresses;
};

// What a [sessions.N] table may leave to [service]'s defaults.
struct SessionDefaults {
  std::optional<AddressSet> addresses;
  std::optional<std::uint32_t> liveness_seconds;
  std::optional<bool> cancel_on_disconnect;
};

absl::StatusOr<bool> Boolean(const ErrorAt& error, const toml::node& node,
                             const std::string& dotted) {
  const auto* flag = node.as_boolean();
  if (flag == nullptr) {
    return error(node.source(),
                 absl::StrFormat("%s: expected true or false, got %s", dotted,
                                 TypeName(node)));
  }
  return flag->get();
}

absl::StatusOr<std::uint32_t> LivenessSeconds(const ErrorAt& error,
                                              const toml::node& node,
                                              const std::string& dotted) {
  absl::StatusOr<std::int64_t> n =
      IntegerIn(error, node, dotted, 0, kMaxLivenessSeconds);
  if (!n.ok()) return n.status();
  return static_cast<std::uint32_t>(*n);
}

absl::Status ReadService(const ErrorAt& error, const toml::table& table,
                         ServiceConfig& config, ServiceTable& read) {
  for (auto&& [key, node] : table) {
    const std::string_view name = key.str();
    const std::string dotted = absl::StrFormat("service.%s", name);
    if (name == "max_sessions") {
      absl::StatusOr<std::int64_t> n =
          IntegerIn(error, node, dotted, 1, 1'000'000);
      if (!n.ok()) return n.status();
      config.max_sessions = static_cast<std::uint32_t>(*n);
    } else if (name == "max_report_history_bytes") {
      absl::StatusOr<std::int64_t> n =
          IntegerIn(error, node, dotted, 0, std::int64_t{1} << 40);
      if (!n.ok()) return n.status();
      config.max_report_history_bytes = static_cast<std::uint64_t>(*n);
    } else if (name == "max_sessions_per_source") {
      absl::StatusOr<std::int64_t> n =
          IntegerIn(error, node, dotted, 1, 1'000'000);
      if (!n.ok()) return n.status();
      config.max_sessions_per_source = static_cast<std::uint32_t>(*n);
    } else if (name == "session_idle_seconds") {
      absl::StatusOr<double> seconds = SecondsIn(error, node, dotted);
      if (!seconds.ok()) return seconds.status();
      config.session_idle_seconds = *seconds;
    } else if (name == "session_slot_idle_seconds") {
      absl::StatusOr<double> seconds = SecondsIn(error, node, dotted);
      if (!seconds.ok()) return seconds.status();
      config.session_slot_idle_seconds = *seconds;
    } else if (name == "open_sessions") {
      absl::StatusOr<bool> flag = Boolean(error, node, dotted);
      if (!flag.ok()) return flag.status();
      read.open_sessions = *flag;
    } else if (name == "liveness_seconds") {
      absl::StatusOr<std::uint32_t> seconds =
          LivenessSeconds(error, node, dotted);
      if (!seconds.ok()) return seconds.status();
      config.open_policy.liveness_seconds = *seconds;
    } else if (name == "cancel_on_disconnect") {
      absl::StatusOr<bool> flag = Boolean(error, node, dotted);
      if (!flag.ok()) return flag.status();
      config.open_policy.cancel_on_disconnect = *flag;
    } else if (name == "open_accounts") {
      absl::StatusOr<AccountSet> set = ReadAccounts(error, node, dotted);
      if (!set.ok()) return set.status();
      config.open_policy.accounts = *set;
    } else if (name == "allowed_addresses") {
      absl::StatusOr<AddressSet> set = ReadAddresses(error, node, dotted);
      if (!set.ok()) return set.status();
      read.allowed_addresses = *set;
    } else {
      return UnknownKey(error, key, "service",
                        "max_sessions, max_sessions_per_source, "
                        "max_report_history_bytes, session_idle_seconds, "
                        "session_slot_idle_seconds, open_sessions, "
                        "open_accounts, allowed_addresses, "
                        "liveness_seconds, cancel_on_disconnect");
    }
  }
  return absl::OkStatus();
}

// A session id: decimal, 0..4294967295, no sign, no leading zero.
std::optional<std::uint32_t> SessionId(std::string_view text) {
  if (text.empty() || text.size() > 10 || (text.size() > 1 && text[0] == '0'))
    return std::nullopt;
  std::uint64_t id = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (id > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  return static_cast<std::uint32_t>(id);
}

absl::Status ReadSession(const ErrorAt& error, const ConfigSource& source,
                         std::uint32_t id, const toml::table& table,
                         ServiceConfig& config, SessionDefaults& own) {
  SessionPolicy& policy = config.sessions[id];
  bool has_accounts = false;
  for (auto&& [key, node] : table) {
    const std::string_view name = key.str();
    const std::string dotted = absl::StrFormat("sessions.%d.%s", id, name);
    if (name == "accounts") {
      absl::StatusOr<AccountSet> set = ReadAccounts(error, node, dotted);
      if (!set.ok()) return set.status();
      policy.accounts = *set;
      has_accounts = true;
    } else if (name == "addresses") {
      absl::StatusOr<AddressSet> set = ReadAddresses(error, node, dotted);
      if (!set.ok()) return set.status();
      own.addresses = *set;
    } else if (name == "liveness_seconds") {
      absl::StatusOr<std::uint32_t> seconds =
          LivenessSeconds(error, node, dotted);
      if (!seconds.ok()) return seconds.status();
      own.liveness_seconds = *seconds;
    } else if (name == "cancel_on_disconnect") {
      absl::StatusOr<bool> flag = Boolean(error, node, dotted);
      if (!flag.ok()) return flag.status();
      own.cancel_on_disconnect = *flag;
    } else if (name == "key_file") {
      const auto* text = node.as_string();
      if (text == nullptr || text->get().empty()) {
        return error(
            node.source(),
            absl::StrFormat(
                "%s: expected the path of a key file (a "
                "non-empty string), got %s",
                dotted, text == nullptr ? TypeName(node) : "an empty string"));
      }
      std::string path = text->get();
      if (path.front() != '/' && !source.base_dir.empty()) {
        path = absl::StrFormat("%s/%s", source.base_dir, path);
      }
      policy.key_file = path;
      if (!source.load_key_files) continue;
      std::string warning;
      absl::StatusOr<auth::Key> session_key = auth::LoadKeyFile(path, &warning);
      if (!session_key.ok()) {
        return error(
            node.source(),
            absl::StrFormat("%s: %s", dotted, session_key.status().message()));
      }
      if (!warning.empty()) {
        config.warnings.push_back(absl::StrFormat(
            "%s: %s: %s", error.Where(node.source()), dotted, warning));
      }
      policy.mac.emplace(*session_key);
    } else {
      return UnknownKey(error, key, absl::StrFormat("sessions.%d", id),
                        "accounts, addresses, key_file, "
                        "liveness_seconds, cancel_on_disconnect");
    }
  }
  if (!has_accounts) {
    return error(table.source(),
                 absl::StrFormat("[sessions.%d] has no 'accounts' (every "
                                 "listed session needs one; \"any\" for all)",
                                 id));
  }
  return absl::OkStatus();
}

absl::Status ReadSessions(
    const ErrorAt& error, const ConfigSource& source, const toml::table& table,
    ServiceConfig& config,
    absl::flat_hash_map<std::uint32_t, SessionDefaults>& own) {
  for (auto&& [key, node] : table) {
    const std::optional<std::uint32_t> id = SessionId(key.str());
    if (!id.has_value()) {
      return error(key.source(),
                   absl::StrFormat("[sessions.%s]: '%s' is not a session id "
                                   "(a decimal integer 0..4294967295 without "
                                   "leading zeros)",
                                   key.str(), key.str()));
    }
    const toml::table* session = node.as_table();
    if (session == nullptr) {
      return error(node.source(),
                   absl::StrFormat("sessions.%d: expected a table "
                                   "([sessions.%d] with accounts = ...), got "
                                   "%s",
                                   *id, *id, TypeName(node)));
    }
    if (absl::Status s =
            ReadSession(error, source, *id, *session, config, own[*id]);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// A liveness timeout under 3 s lapses a live client that heartbeats after
// a second without sending (client::Session's default): said, not refused
// (a client may heartbeat faster).
void WarnOfShortLiveness(ServiceConfig& config) {
  const auto warn = [&](const std::string& who, std::uint32_t seconds) {
    if (seconds == 0 || seconds >= 3) return;
    config.warnings.push_back(absl::StrFormat(
        "%s liveness_seconds %d is under 3: a client heartbeating every "
        "second (client::Session's default) may lapse while alive",
        who, seconds));
  };
  if (config.open_sessions) {
    warn("[service]", config.open_policy.liveness_seconds);
  }
  for (const auto& [id, policy] : config.sessions) {
    warn(absl::StrFormat("[sessions.%d]", id), policy.liveness_seconds);
  }
}

}  // namespace

absl::StatusOr<ServiceConfig> ParseServiceConfig(std::string_view text,
                                                 const ConfigSource& source) {
  const ErrorAt error(source.path);
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(source.path));
  } catch (const toml::parse_error& parse_error) {
    // An old key = value file fails here on its first list or dotted key;
    // one the old reader accepts gets the way to convert it.
    if (source.is_legacy && source.is_legacy(text)) {
      return error(
          parse_error.source(),
          absl::StrFormat("not TOML (%s): %s", parse_error.description(),
                          ConvertHint(source.path)));
    }
    return error(
        parse_error.source(),
        absl::StrFormat("not valid TOML: %s", parse_error.description()));
  }
  // Keys of the old form outside any table mark an old file, whatever else
  // is wrong with it (`session.7.accounts = 7` is TOML: a table `session`).
  for (auto&& [key, node] : root) {
    if (key.str() == "session" && IsTableHeaderLine(text, key.source())) {
      // `[session.7]`: a TOML table with a typo, not an old file.
      return error(key.source(),
                   "unknown table [session...]: did you mean [sessions.N] "
                   "(a session's table is [sessions.N])?");
    }
    if (IsOldTopLevelKey(key.str())) {
      return error(key.source(),
                   absl::StrFormat("'%s' outside any table: %s", key.str(),
                                   ConvertHint(source.path)));
    }
  }
  ServiceConfig config;
  ServiceTable service;
  absl::flat_hash_map<std::uint32_t, SessionDefaults> own;
  for (auto&& [key, node] : root) {
    const std::string_view name = key.str();
    const toml::table* table = node.as_table();
    if (name != "engine" && name != "service" && name != "sessions") {
      return error(key.source(),
                   absl::StrFormat("unknown %s '%s' (the tables are [engine], "
                                   "[service] and [sessions.N])",
                                   table != nullptr ? "table" : "key", name));
    }
    if (table == nullptr) {
      return error(node.source(),
                   absl::StrFormat("'%s' must be a table ([%s]), got %s", name,
                                   name, TypeName(node)));
    }
    absl::Status status;
    if (name == "engine") {
      status = ReadEngine(error, *table, config.engine);
    } else if (name == "service") {
      status = ReadService(error, *table, config, service);
    } else {
      status = ReadSessions(error, source, *table, config, own);
    }
    if (!status.ok()) return status;
  }
  if (service.allowed_addresses.has_value()) {
    config.open_policy.addresses = *service.allowed_addresses;
  }
  for (auto& [id, policy] : config.sessions) {
    const SessionDefaults& set = own[id];
    const SessionPolicy& defaults = config.open_policy;
    policy.addresses = set.addresses.value_or(defaults.addresses);
    policy.liveness_seconds =
        set.liveness_seconds.value_or(defaults.liveness_seconds);
    policy.cancel_on_disconnect =
        set.cancel_on_disconnect.value_or(defaults.cancel_on_disconnect);
  }
  config.open_sessions =
      service.open_sessions.value_or(config.sessions.empty());
  WarnOfShortLiveness(config);
  return config;
}

std::string ConfigDirectory(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

absl::StatusOr<ServiceConfig> LoadServiceConfig(
    const std::string& path, bool load_key_files,
    std::function<bool(std::string_view text)> is_legacy) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrFormat("config %s: cannot open: %s",
                                               path, std::strerror(errno)));
  }
  // Every byte or an error: a read that fails (a directory: EISDIR) is not
  // an empty file, which would load as the defaults.
  std::string text;
  char chunk[4096];
  while (true) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return absl::DataLossError(absl::StrFormat("config %s: cannot read: %s",
                                                 path, std::strerror(error)));
    }
    if (n == 0) break;
    text.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return ParseServiceConfig(text, {.path = path,
                                   .base_dir = ConfigDirectory(path),
                                   .load_key_files = load_key_files,
                                   .is_legacy = std::move(is_legacy)});
}

std::string DescribeServiceConfig(const ServiceConfig& config) {
  std::string out = absl::StrFormat(
      "instruments %d-%d, prices %d-%d, quantities %d-%d, %d live orders; "
      "max %d unlisted sessions (%d per source address, each giving its "
      "place back after %g s idle), report histories %d bytes in all, "
      "released after %g s idle",
      config.engine.min_instrument, config.engine.max_instrument,
      config.engine.min_price, config.engine.max_price,
      config.engine.min_quantity, config.engine.max_quantity,
      config.engine.max_live_orders, config.max_sessions,
      config.max_sessions_per_source, config.session_slot_idle_seconds,
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
  std::size_t lapsing = 0;
  for (const auto& [id, policy] : config.sessions) {
    if (policy.mac.has_value()) ++keyed;
    if (policy.liveness_seconds > 0) ++lapsing;
  }
  absl::StrAppendFormat(&out, "; %d listed session(s), %d keyed",
                        config.sessions.size(), keyed);
  if (config.open_policy.liveness_seconds > 0) {
    absl::StrAppendFormat(&out, "; unlisted sessions lapse after %d s silent%s",
                          config.open_policy.liveness_seconds,
                          config.open_policy.cancel_on_disconnect
                              ? ", cancelling their orders"
                              : "");
  }
  if (lapsing > 0) {
    absl::StrAppendFormat(
        &out, "; %d listed session(s) with a liveness timeout", lapsing);
  }
  return out;
}

std::string ComparableText(const ServiceConfig& config) {
  std::string out = engine::FormatKeyValueConfig(config.engine);
  absl::StrAppendFormat(
      &out,
      "max_sessions = %d\nmax_report_history_bytes = %d\n"
      "session_idle_seconds = %.17g\nopen_sessions = %s\n"
      "open_accounts = %s\nallowed_addresses = %s\n"
      "liveness_seconds = %d\ncancel_on_disconnect = %s\n",
      config.max_sessions, config.max_report_history_bytes,
      config.session_idle_seconds, config.open_sessions ? "true" : "false",
      config.open_policy.accounts.ToString(),
      config.open_policy.addresses.ToString(),
      config.open_policy.liveness_seconds,
      config.open_policy.cancel_on_disconnect ? "true" : "false");
  std::vector<std::uint32_t> ids;
  for (const auto& [id, policy] : config.sessions) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const std::uint32_t id : ids) {
    const SessionPolicy& policy = config.sessions.at(id);
    absl::StrAppendFormat(
        &out,
        "session %d: accounts %s; addresses %s; key_file '%s'; keyed %s; "
        "liveness %d s; cancel on disconnect %s\n",
        id, policy.accounts.ToString(), policy.addresses.ToString(),
        policy.key_file, policy.mac.has_value() ? "yes" : "no",
        policy.liveness_seconds, policy.cancel_on_disconnect ? "yes" : "no");
  }
  return out;
}

}  // namespace orderwire::config
