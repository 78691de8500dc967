// The service's configuration: the engine's limits plus who may trade.
// Cold path.
//
// `orderwire serve --config FILE` reads one file of `key = value` lines (the
// syntax of the engine configuration, engine/config.h: `#` comments, blank
// lines ignored, an error names the line and the key). Keys:
//
//   # The engine's limits: every key of engine/config.h.
//   max_instrument  = 1024
//   max_live_orders = 1048576
//
//   # Sessions.
//   max_sessions      = 1024     # unlisted sessions the service will hold
//                                # (listed sessions always fit)
//   max_report_history_bytes = 67108864
//                                # all sessions' report histories together
//   session_idle_seconds = 60    # a session not heard from for this long
//                                # releases its report history
//   allowed_addresses = 127.0.0.1, ::1, 10.1.0.0/16
//                                # sources a session may use unless it has
//                                # its own list; "any" allows every source
//   open_sessions     = false    # may sessions not listed below connect?
//   open_accounts     = any      # accounts such a session may trade for
//
//   # One block per known session: the accounts it may trade for, and
//   # optionally the source addresses it may use.
//   session.7.accounts  = 7, 8, 100-199
//   session.7.addresses = 127.0.0.1
//   session.9.accounts  = any
//   session.9.key_file  = /etc/orderwire/session-9.key
//
// A session with a key_file is keyed (docs/PROTOCOL.md "Authenticated
// datagrams"): the file holds its 32-byte key as 64 hexadecimal digits
// (auth::LoadKeyFile; a relative path is taken from the configuration
// file's directory). Its datagrams must carry a valid MAC, its reports carry
// one, and it may move to a new source endpoint by proving the key. A key
// file that its group or others can read is accepted with a warning
// (ServiceConfig::warnings).
//
// A key given twice is an error, as in the engine configuration.
// Account lists are comma-separated ids and inclusive ranges `a-b`, or
// `any`. Address lists are IPv4/IPv6 addresses or CIDR blocks, or `any`.
//
// With no file (the default), or for keys a file leaves out:
// max_sessions 1024; max_report_history_bytes 64 MiB; session_idle_seconds
// 60; allowed_addresses 127.0.0.0/8 and ::1 (loopback only);
// open_sessions true when the file lists no session, false when it does;
// open_accounts any. So the default configuration lets any session trade for
// any account, but only from this machine: safe for a loopback demo, and a
// deployment lists its sessions.
//
// A session is pinned to the first source address (and port) it is seen
// from; datagrams for it from anywhere else are dropped and counted (a keyed
// session moves with a datagram that has a valid MAC and a new command).
#ifndef ORDERWIRE_SERVICE_SERVICE_CONFIG_H_
#define ORDERWIRE_SERVICE_SERVICE_CONFIG_H_

#include <netinet/in.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "auth/mac.h"
#include "engine/config.h"
#include "net/udp.h"

namespace orderwire::service {

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
};

struct ServiceConfig {
  engine::EngineConfig engine;
  std::uint32_t max_sessions = 1024;  // unlisted; listed ones always fit
  std::uint64_t max_report_history_bytes = std::uint64_t{64} << 20;
  double session_idle_seconds = 60;
  bool open_sessions = true;
  SessionPolicy open_policy;  // for sessions not listed
  absl::flat_hash_map<std::uint32_t, SessionPolicy> sessions;
  // What an operator should know but that does not stop the service (a key
  // file readable by others).
  std::vector<std::string> warnings;

  // The policy of session `id`, or null if it may not connect.
  [[nodiscard]] const SessionPolicy* PolicyFor(std::uint32_t id) const;
};

// Parses a configuration file's text; relative key_file paths are taken
// from `base_dir` (the current directory when empty). Errors:
// InvalidArgument "line N: ..." (a key file that cannot be read or holds no
// valid key is such an error, naming the key file too).
[[nodiscard]] absl::StatusOr<ServiceConfig> ParseServiceConfig(
    std::string_view text, std::string_view base_dir = "");

// Reads and parses `path`; errors name the file.
[[nodiscard]] absl::StatusOr<ServiceConfig> LoadServiceConfig(
    const std::string& path);

// A readable summary (for the start-up banner).
[[nodiscard]] std::string DescribeServiceConfig(const ServiceConfig& config);

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_SERVICE_CONFIG_H_
