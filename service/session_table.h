// The Sequencer's table of sessions: who a datagram is from, whether it may
// be heard, where its reports go, and the next inbound sequence to journal.
//
// docs/PROTOCOL.md "Sessions and sequence numbers": inbound frames of a
// session carry sequences 1, 2, 3, ...; the service journals a frame only
// when its sequence is the next one expected, skips (and counts) a lower one
// as a duplicate, and answers a higher one with SequenceGap, at most once per
// session per round trip. What the journal decides (the sequence applied,
// report sequences, report history) is the StateMachine's, not this table's:
// this table holds what the transport needs before a record exists.
//
// Memory. A session exists only once a frame of it is to be journaled
// (docs/PROTOCOL.md "A session begins with frame 1"): ids that only ever
// send gaps, duplicates or garbage leave nothing here. The table holds at
// most `max_sessions` unlisted sessions plus every listed one (a listed
// session is never refused for the cap, before or after a restart). Its
// storage is reserved at construction (address space only: a page is
// touched when a session is created), so pointers to sessions stay valid
// and admitting a datagram never allocates; one Session is sizeof(Session)
// (about 200 bytes) plus about 10 bytes of index.
//
// A session is pinned to the first source endpoint that uses it (after a
// restart: the first one that uses it again); a datagram for it from any
// other endpoint is refused.
//
// Keyed sessions (docs/PROTOCOL.md "Authenticated datagrams"): every
// datagram must carry a MAC that verifies under the session's key, checked
// before the datagram can create, pin or move a session. A keyed session
// pinned elsewhere moves to the datagram's source when the MAC verifies and
// the datagram carries the command the session expects next (so a replayed
// old datagram moves nothing).
#ifndef ORDERWIRE_SERVICE_SESSION_TABLE_H_
#define ORDERWIRE_SERVICE_SESSION_TABLE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codec/datagram.h"
#include "net/udp.h"
#include "service/service_config.h"

namespace orderwire::service {

struct Session {
  std::uint32_t id = 0;
  std::uint32_t index = 0;  // dense, 0..size()-1
  const SessionPolicy* policy = nullptr;
  Endpoint peer;        // where reports go
  bool pinned = false;  // peer is known
  // The next inbound sequence to journal (ahead of the StateMachine's
  // applied sequence by the commands journaled but not yet durable).
  std::uint64_t next_expected = 1;
  // The StateMachine's index of this session (its engine owner tag), once
  // the session has a record applied; -1 before.
  std::int32_t state = -1;
  // The expected sequence a SequenceGap was last sent for (0: none), and
  // when, so that one gap is sent per round trip.
  std::uint64_t gap_sent_for = 0;
  std::int64_t gap_sent_ns = 0;
  // When a datagram of it was last admitted (monotonic; 0: not since the
  // service started), for releasing an idle session's report history.
  std::int64_t last_heard_ns = 0;
  // The service's outgoing state: the datagram being filled in the send
  // batch (-1: none), the last of its datagrams in the batch (-1: none;
  // the next one is chained to it for a segmented send), and the last
  // resend (its first report, and when).
  std::int32_t tx_slot = -1;
  std::int32_t tx_last_slot = -1;
  std::uint64_t resent_from = 0;
  std::int64_t resent_ns = 0;
  // The expected sequence the last Busy was sent for, and when (one per
  // round trip, as for SequenceGap).
  std::uint64_t busy_sent_for = 0;
  std::int64_t busy_sent_ns = 0;
};

// Why a datagram was not admitted.
enum class Admission : std::uint8_t {
  kOk,
  kUnknownSession,     // not listed, and open_sessions is false
  kTooManySessions,    // max_sessions unlisted sessions reached
  kAddressNotAllowed,  // source not in the session's allowed addresses
  kPinnedElsewhere,    // session already pinned to another source
  kMissingMac,         // keyed session, datagram without the flag
  kBadMac,             // keyed session, MAC does not verify
  kUnexpectedMac,      // the flag on a session that has no key
};
inline constexpr std::size_t kAdmissionCount = 8;

// What a refusal most likely means, for a person reading a log line.
[[nodiscard]] constexpr std::string_view Explain(Admission a) {
  switch (a) {
    case Admission::kOk:
      return "admitted";
    case Admission::kUnknownSession:
      return "the session is not in the configuration";
    case Admission::kTooManySessions:
      return "max_sessions sessions are already in use";
    case Admission::kAddressNotAllowed:
      return "the source address is not in the session's allowed addresses";
    case Admission::kPinnedElsewhere:
      return "the session is pinned to another source endpoint";
    case Admission::kMissingMac:
      return "the session is keyed and the datagram has no MAC (client "
             "without --key-file?)";
    case Admission::kBadMac:
      return "the MAC does not verify: wrong key, or the datagram was altered";
    case Admission::kUnexpectedMac:
      return "the datagram has a MAC but the session has no key configured";
  }
  return "invalid";
}

[[nodiscard]] constexpr std::string_view Name(Admission a) {
  switch (a) {
    case Admission::kOk:
      return "Ok";
    case Admission::kUnknownSession:
      return "UnknownSession";
    case Admission::kTooManySessions:
      return "TooManySessions";
    case Admission::kAddressNotAllowed:
      return "AddressNotAllowed";
    case Admission::kPinnedElsewhere:
      return "PinnedElsewhere";
    case Admission::kMissingMac:
      return "MissingMac";
    case Admission::kBadMac:
      return "BadMac";
    case Admission::kUnexpectedMac:
      return "UnexpectedMac";
  }
  return "Invalid";
}

class SessionTable {
 public:
  // Reserves room for config.max_sessions unlisted sessions plus the
  // listed ones. `config` must outlive the table.
  explicit SessionTable(const ServiceConfig& config);

  // Finds the session of `datagram` (from `source`), checks the policy and
  // the MAC of a keyed session, and pins it (or moves a keyed session). A
  // session not in the table is created only when `create` (the datagram
  // opens it); otherwise kOk with `*out` null says it would be admitted,
  // and nothing is kept. On kOk with a session, `*out` is it. Hot path: one
  // hash lookup, one MAC for a keyed session, no allocation.
  Admission Admit(const codec::DatagramView& datagram, const Endpoint& source,
                  bool create, Session** out);
  // Times a keyed session moved to a new endpoint.
  [[nodiscard]] std::uint64_t moves() const { return moves_; }

  // The session `id` as recovered from the journal (created if new, not
  // pinned), or null if the table is full. Cold path (recovery).
  Session* Recover(std::uint32_t id);

  // The session `id`, or null.
  [[nodiscard]] Session* Find(std::uint32_t id);
  [[nodiscard]] Session& at(std::uint32_t index) { return sessions_[index]; }
  [[nodiscard]] std::size_t size() const { return sessions_.size(); }
  // Sessions that are not listed in the configuration (those the cap
  // bounds).
  [[nodiscard]] std::size_t unlisted() const { return unlisted_; }
  // Most sessions the table can hold: max_sessions + listed sessions.
  [[nodiscard]] std::size_t capacity() const { return capacity_; }

 private:
  Session* Create(std::uint32_t id, const SessionPolicy* policy);

  const ServiceConfig& config_;
  std::size_t capacity_;
  std::vector<Session> sessions_;  // reserved to capacity_, never moves
  std::size_t unlisted_ = 0;
  std::uint64_t moves_ = 0;
  absl::flat_hash_map<std::uint32_t, std::uint32_t> by_id_;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_SESSION_TABLE_H_
