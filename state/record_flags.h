// What the bits of a journal record's `flags` mean (docs/PROTOCOL.md
// "Journal record flags"). The journal stores the u32 verbatim and gives it
// no meaning; the Sequencer sets it when it journals a command and the
// StateMachine is the one place that reads it.
#ifndef ORDERWIRE_STATE_RECORD_FLAGS_H_
#define ORDERWIRE_STATE_RECORD_FLAGS_H_

#include <cstdint>

namespace orderwire::state {

// The session's policy did not allow the command's account when the command
// arrived: it is answered with Rejected (Unauthorized) and has no other
// effect.
inline constexpr std::uint32_t kRecordUnauthorized = 1u << 0;

// The first record journaled after a start that accepted a loss
// (journal::RecoveryReport::loss_accepted): the market-data feed begins a
// new session at it, sequence 1 again (docs/MARKETDATA.md "Sequence numbers
// and sessions"). The command applies as any other.
inline constexpr std::uint32_t kRecordNewFeedSession = 1u << 1;

// Version 2. The record is a lapse the service journaled (its session was
// silent past its liveness timeout), not a command: a Goodbye frame with
// sequence 0, account 0 and request 0 (docs/CONTROLS.md "Goodbye, liveness
// and cancel-on-disconnect"). It closes the session without moving its
// command sequence.
inline constexpr std::uint32_t kRecordLapse = 1u << 2;

// Version 2. The session had cancel-on-disconnect when the record was
// journaled: a Goodbye or a lapse so flagged cancels the session's live
// orders. The Sequencer sets it on every record of such a session.
inline constexpr std::uint32_t kRecordCancelOnDisconnect = 1u << 3;

// Every bit with a meaning. A record with any other bit set was not written
// by this version of the service: the StateMachine refuses it.
inline constexpr std::uint32_t kKnownRecordFlags =
    kRecordUnauthorized | kRecordNewFeedSession | kRecordLapse |
    kRecordCancelOnDisconnect;

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_RECORD_FLAGS_H_
