// Where a follower of an engine's journal stream resumes: the stream
// sequence of the message that holds a given journal index, found without
// reading the stream from its start.
//
// The stream's messages (group_message.h) carry increasing journal indexes:
// each records message's first_index is the previous one's last index + 1,
// and an epoch marker's first_index is the index the next record will have.
// So first_index never decreases along the stream, and a binary search over
// stream sequences with JetStream's get-by-sequence (js_GetMsg: one request
// to the stream leader per probe, the message's bytes parsed and verified
// by ParseGroupMessage) finds the last message that starts before
// next_index in at most log2(messages) + 1 probes. Following starts there
// if that message holds next_index (or is a marker: the follower checks
// it), else at the message after it, which starts at next_index or later:
// the marker of a new epoch at next_index is then followed too. A standby
// whose journal ends at index L asks for next_index = L + 1; it checks
// every message from there on anyway (a gap, or overlapping records that
// differ, are refused when applied).
//
// Errors: NotFound (no stream), DataLoss naming the sequence for a message
// that cannot be read (deleted) or does not verify, the NATS errors of
// connecting and reading. Cold: once per start.
#ifndef ORDERWIRE_REPLICATION_STREAM_POSITION_H_
#define ORDERWIRE_REPLICATION_STREAM_POSITION_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace orderwire::replication {

struct StreamPosition {
  // The sequence to follow from (see above); the stream's first sequence
  // when no message starts before next_index; last_sequence + 1 for an
  // empty stream or one whose every record lies before next_index.
  std::uint64_t sequence = 1;
  // When `sequence` is after a records message the search read (all its
  // records before next_index): that message's epoch, the one a follower
  // starting at `sequence` is in. 0 otherwise (the first message followed
  // tells).
  std::uint64_t epoch = 0;
  // The stream's first and last sequence when searched.
  std::uint64_t first_sequence = 0;
  std::uint64_t last_sequence = 0;
  // Messages read by the search.
  std::uint32_t probes = 0;
};

// Finds where to follow the stream of `engine_name` from to receive journal
// index `next_index` (>= 1) first. `servers`: comma-separated nats:// URLs;
// `timeout` bounds each request.
absl::StatusOr<StreamPosition> FindStreamPosition(
    const std::string& servers, std::string_view engine_name,
    std::uint64_t next_index,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_STREAM_POSITION_H_
