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

// Every bit with a meaning. A record with any other bit set was not written
// by this version of the service: the StateMachine refuses it.
inline constexpr std::uint32_t kKnownRecordFlags =
    kRecordUnauthorized | kRecordNewFeedSession;

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_RECORD_FLAGS_H_
