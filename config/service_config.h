// The service's configuration file: the engine's limits plus who may trade.
// Cold path. Component config/ (orderwire::config, docs/ARCHITECTURE.md):
// uses engine/, auth/, net/, codec/ and base/; toml++ is linked here only.
//
// `orderwire serve --config FILE` (and `match`, `replay`, `snapshot`) read one
// TOML file (toml.io, v1.0; parsed with toml++), in three tables, every key
// optional:
//
//   [engine]                        # the engine's limits (engine/config.h)
//   min_instrument  = 1             # first instrument id that exists
//   max_instrument  = 1024          # last instrument id that exists
//   min_price       = 1             # lowest valid price, in ticks
//   max_price       = 1000000000    # highest valid price, in ticks
//   min_quantity    = 1             # smallest valid quantity, in lots
//   max_quantity    = 1000000000    # largest valid quantity, in lots
//   max_live_orders = 1048576       # capacity; BookFull beyond it
//
//   [service]
//   max_sessions = 1024             # unlisted sessions the service will hold
//                                   # (listed sessions always fit)
//   max_sessions_per_source = 256   # of those, held for one source address
//   max_report_history_bytes = 67108864
//                                   # all sessions' report histories together
//   session_idle_seconds = 60       # a session not heard from for this long
//                                   # releases its report history (60, 0.5)
//   session_slot_idle_seconds = 600 # an unlisted session not heard from for
//                                   # this long gives its place back
//   allowed_addresses = ["127.0.0.1", "::1", "10.1.0.0/16"]
//                                   # sources a session may use unless it has
//                                   # its own list; "any" allows every source
//   open_sessions = false           # may sessions not listed below connect?
//   open_accounts = "any"           # accounts such a session may trade for
//
//   # One table per known session: the accounts it may trade for, and
//   # optionally the source addresses it may use and its key.
//   [sessions.7]
//   accounts  = [7, 8, "100-199"]
//   addresses = ["127.0.0.1"]
//   [sessions.9]
//   accounts  = "any"
//   key_file  = "/etc/orderwire/session-9.key"
//
// Accounts are "any" or an array of account ids (integers) and inclusive
// ranges ("100-199"; a string also holds an id above 2^63-1). Addresses are
// "any" or an array of IPv4/IPv6 addresses and CIDR blocks. A session id is
// a decimal integer 0..4294967295 without leading zeros; `accounts` is
// required in every session table.
//
// Strict: a syntax error, a key given twice, an unknown table or key, a value
// of the wrong type or out of range is an error, and every error names the
// file, line and column: "config PATH:LINE:COL: what: why". A file in the old
// `key = value` form (before TOML) is recognised and the error says how to
// convert it (`orderwire config convert OLD > NEW.toml`; cli/
// legacy_config.h): keys of the old form outside any table always; a text
// that is not TOML at all when ConfigSource::is_legacy recognises it.
//
// A session with a key_file is keyed (docs/PROTOCOL.md "Authenticated
// datagrams"): the file holds its 32-byte key as 64 hexadecimal digits
// (auth::LoadKeyFile; a relative path is taken from the configuration
// file's directory). Its datagrams must carry a valid MAC, its reports carry
// one, and it may move to a new source endpoint by proving the key. A key
// file that its group or others can read is accepted with a warning
// (ServiceConfig::warnings).
//
// With no file (the default), or for keys a file leaves out: the engine's
// defaults (engine/config.h); max_sessions 1024; max_sessions_per_source
// 256; max_report_history_bytes 64 MiB; session_idle_seconds 60;
// session_slot_idle_seconds 600; allowed_addresses 127.0.0.0/8 and ::1
// (loopback only); open_sessions true when the file lists no session, false
// when it does; open_accounts any. So the default configuration lets any
// session trade for any account, but only from this machine: safe for a
// loopback demo, and a deployment lists its sessions.
//
// A session is pinned to the first source address (and port) it is seen
// from; datagrams for it from anywhere else are dropped and counted (a keyed
// session moves with a datagram that has a valid MAC and a new command). An
// unlisted session that gives its place back (session_slot_idle_seconds) is
// pinned again by the first source it is seen from after that.
//
// The admission settings (max_sessions_per_source, session_slot_idle_seconds,
// the addresses) decide only which datagrams are journaled, never how a
// journaled record applies: they are not pinned in the journal.
//
// Not this file: the configuration a journal pins in its segment headers
// (state/pinned_config.h) is a journal format of its own, key = value text
// that stays as it is so that journals written before still open.
#ifndef ORDERWIRE_CONFIG_SERVICE_CONFIG_H_
#define ORDERWIRE_CONFIG_SERVICE_CONFIG_H_

#include <netinet/in.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "auth/mac.h"
#include "engine/config.h"
#include "net/udp.h"

namespace orderwire::config {

using net::Endpoint;

// A set of account ids: `any`, or a sorted list of inclusive ranges.
class AccountSet {
 public:
  static AccountSet Any() {
    AccountSet set;
    set.any_ = true;
    return set;
  }
  // Parses "any" or "7, 8, 100-199". Errors name the bad item.
  static absl::StatusOr<AccountSet> Parse(std::string_view text);

  [[nodiscard]] bool Contains(std::uint64_t account) const;
  [[nodiscard]] bool any() const { return any_; }
  [[nodiscard]] std::string ToString() const;

 private:
  bool any_ = false;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;
};

// A set of source addresses: `any`, or a list of CIDR blocks.
class AddressSet {
 public:
  static AddressSet Any() {
    AddressSet set;
    set.any_ = true;
    return set;
  }
  static AddressSet Loopback();
  // Parses "any" or "127.0.0.1, ::1, 10.1.0.0/16".
  static absl::StatusOr<AddressSet> Parse(std::string_view text);

  // Whether the address of `endpoint` (the port is ignored) is in the set.
  [[nodiscard]] bool Contains(const Endpoint& endpoint) const;
  [[nodiscard]] std::string ToString() const;

 private:
  struct Block {
    int family;              // AF_INET or AF_INET6
    std::uint8_t bytes[16];  // network order
    int prefix_bits;
  };
  bool any_ = false;
  std::vector<Block> blocks_;
};

struct SessionPolicy {
  AccountSet accounts = AccountSet::Any();
  AddressSet addresses = AddressSet::Loopback();
  // The session's MAC, keyed from key_file; none for an unkeyed session.
  std::optional<auth::Mac> mac;
  std::string key_file;
  // docs/CONTROLS.md "Goodbye, liveness and cancel-on-disconnect": the
  // session lapses after this many seconds unheard (0: never); a Goodbye or
  // a lapse cancels its live orders.
  std::uint32_t liveness_seconds = 0;
  bool cancel_on_disconnect = false;
};

// The largest liveness_seconds (a day).
inline constexpr std::uint32_t kMaxLivenessSeconds = 86'400;

struct ServiceConfig {
  engine::EngineConfig engine;
  std::uint32_t max_sessions = 1024;  // unlisted; listed ones always fit
  // Unlisted sessions held for one source address (IPv4, or IPv6 address
  // by address): a flood of new ids from one place takes at most this many
  // of max_sessions.
  std::uint32_t max_sessions_per_source = 256;
  std::uint64_t max_report_history_bytes = std::uint64_t{64} << 20;
  double session_idle_seconds = 60;
  // An unlisted session not heard from for this long gives its place back
  // (docs/PROTOCOL.md "Idle unlisted sessions give their slot back").
  double session_slot_idle_seconds = 600;
  bool open_sessions = true;
  SessionPolicy open_policy;  // for sessions not listed
  absl::flat_hash_map<std::uint32_t, SessionPolicy> sessions;
  // What an operator should know but that does not stop the service (a key
  // file readable by others).
  std::vector<std::string> warnings;

  // The policy of session `id`, or null if it may not connect.
  [[nodiscard]] const SessionPolicy* PolicyFor(std::uint32_t id) const;
};

// Where a configuration's text comes from, and what to do with its key
// files.
struct ConfigSource {
  // Named in every error ("config PATH:LINE:COL: ...").
  std::string path = "(text)";
  // Relative key_file paths are taken from here (the current directory when
  // empty).
  std::string base_dir;
  // Whether key files are read (serve, replay); false records the path only
  // (match, which uses the engine's limits, and the converter's check).
  bool load_key_files = true;
  // Recognises a file in the old `key = value` form (before TOML): a text
  // that is not TOML and that this accepts gets the conversion hint ("not
  // TOML (...): this is an old 'key = value' configuration file; ...
  // 'orderwire config convert PATH > NEW.toml' ..."). The command line
  // gives the old reader (cli/legacy_config.h, next to `config convert`,
  // the only other user of that form); null: such a text is only "not
  // valid TOML".
  std::function<bool(std::string_view text)> is_legacy;
};

// Parses a TOML configuration (format above). Errors: InvalidArgument
// "config PATH:LINE:COL: ..." for every syntax, schema and value error (a
// key file that cannot be read or holds no valid key is such an error,
// naming the key file too); an old key = value file gets the conversion
// hint (see ConfigSource::is_legacy). Cost: O(text size) plus reading the
// key files.
[[nodiscard]] absl::StatusOr<ServiceConfig> ParseServiceConfig(
    std::string_view text, const ConfigSource& source = {});

// Reads and parses `path` (key files relative to its directory; is_legacy
// as ConfigSource's). Errors as ParseServiceConfig's, or NotFound "config
// PATH: cannot open: ...".
[[nodiscard]] absl::StatusOr<ServiceConfig> LoadServiceConfig(
    const std::string& path, bool load_key_files = true,
    std::function<bool(std::string_view text)> is_legacy = nullptr);

// The directory of a configuration file's path, for ConfigSource::base_dir.
[[nodiscard]] std::string ConfigDirectory(const std::string& path);

// A readable summary (for the start-up banner).
[[nodiscard]] std::string DescribeServiceConfig(const ServiceConfig& config);

// Every setting of `config` in a fixed order, one per line (sessions by id;
// key files by path): equal texts, equal configurations. For the old-form
// converter's check (cli/legacy_config.h) and the tests.
[[nodiscard]] std::string ComparableText(const ServiceConfig& config);

}  // namespace orderwire::config

#endif  // ORDERWIRE_CONFIG_SERVICE_CONFIG_H_
