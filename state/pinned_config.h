// The configuration a journal pins: every setting that changes how
// StateMachine::Apply turns a journal record into reports, recorded in the
// metadata area of each segment's header block (docs/JOURNAL.md "Segment
// metadata", docs/SERVICE.md "The configuration is part of the journal").
// Cold path.
//
// What is pinned, and why only that: the engine's limits (instrument range,
// price band, quantity range, capacity: they decide Accepted or Rejected,
// BookFull) and max_sessions (a record of a session past it is refused).
// Not pinned: session policies (who may trade for which account, from
// where) are decided when a datagram is received and journaled as a record
// flag (kRecordUnauthorized), so a replay never consults them; the report
// and command history sizes decide only what can be sent again, never a
// report's bytes; durability, listen address and segment size change no
// report at all.
//
// The form in the journal is canonical text, versioned by its first line,
// every key present, in this order, nothing else (so equal configurations
// are equal bytes, and `orderwire journal inspect` shows it as it is):
//
//   orderwire pinned configuration 1
//   min_instrument = 1
//   max_instrument = 1024
//   min_price = 1
//   max_price = 1000000000
//   min_quantity = 1
//   max_quantity = 1000000000
//   max_live_orders = 1048576
//   max_sessions = 1024
//
// A segment whose header block has no metadata (journals written before
// the configuration was pinned, and `orderwire journal write`) pins
// nothing: its records are applied with the configuration the caller gives
// (serve: its --config; replay: --config or the defaults).
#ifndef ORDERWIRE_STATE_PINNED_CONFIG_H_
#define ORDERWIRE_STATE_PINNED_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/service_config.h"
#include "engine/config.h"
#include "journal/reader.h"

namespace orderwire::state {

class StateMachine;

struct PinnedConfig {
  engine::EngineConfig engine{};
  std::uint32_t max_sessions = 1024;
};

[[nodiscard]] bool operator==(const PinnedConfig& a, const PinnedConfig& b);

// The part of a service configuration that is pinned.
[[nodiscard]] PinnedConfig PinnedConfigOf(const config::ServiceConfig& config);
// The part of a state machine's configuration that is pinned.
[[nodiscard]] PinnedConfig PinnedConfigOf(const StateMachine& machine);

// The canonical text above.
[[nodiscard]] std::string EncodePinnedConfig(const PinnedConfig& config);

// Parses the canonical text. Errors: Unimplemented for another version of
// the form; DataLoss when the text is not the canonical form of a valid
// configuration (a key missing, repeated, unknown or out of order, a value
// out of range), naming the line or the key.
[[nodiscard]] absl::StatusOr<PinnedConfig> DecodePinnedConfig(
    std::string_view text);

// One "key: from -> to" entry per key whose value differs, in canonical
// order (empty if the configurations are equal).
[[nodiscard]] std::vector<std::string> PinnedConfigDifferences(
    const PinnedConfig& from, const PinnedConfig& to);
// The same, joined with "; ".
[[nodiscard]] std::string DescribeDifferences(const PinnedConfig& from,
                                              const PinnedConfig& to);

// The configuration a journal segment pins, or `unpinned` when its header
// block holds no metadata. Error: DataLoss (or Unimplemented) naming the
// segment file when its metadata is not a pinned configuration this build
// reads; nothing is half-loaded.
[[nodiscard]] absl::StatusOr<PinnedConfig> SegmentConfig(
    const journal::SegmentInfo& segment, const PinnedConfig& unpinned);

// Follows the segments of a journal while its records are applied: call it
// after each JournalReader::Next() that yields a record and before the
// record is applied. When the reader has entered a segment since the last
// call, `machine` is reconfigured to the configuration that segment pins
// (or `unpinned`), if it differs, so the change takes effect before the
// segment's first record, as it did live. `seen` is the caller's count of
// segments followed (start at 0). Each change made is appended to `log`
// ("from index N (segment S): key: a -> b; ..."), when given. Errors:
// SegmentConfig's, and StateMachine::Reconfigure's (a change the state
// cannot take), naming the segment. Cost: one comparison per record.
inline absl::Status FollowSegments(const journal::JournalReader& reader,
                                   std::size_t& seen,
                                   const PinnedConfig& unpinned,
                                   StateMachine& machine,
                                   std::vector<std::string>* log = nullptr);

// FollowSegments' cold part.
absl::Status FollowNewSegments(const journal::JournalReader& reader,
                               std::size_t& seen, const PinnedConfig& unpinned,
                               StateMachine& machine,
                               std::vector<std::string>* log);

inline absl::Status FollowSegments(const journal::JournalReader& reader,
                                   std::size_t& seen,
                                   const PinnedConfig& unpinned,
                                   StateMachine& machine,
                                   std::vector<std::string>* log) {
  if (reader.segments().size() == seen) [[likely]] {
    return absl::OkStatus();
  }
  return FollowNewSegments(reader, seen, unpinned, machine, log);
}

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_PINNED_CONFIG_H_
