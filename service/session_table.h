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
// Memory. A session is held here only while it has a place (a slot): from
// its first datagram that is to be journaled (docs/PROTOCOL.md "A session
// begins with frame 1"), or, for a session the journal already holds
// (JournaledSessions: after a restart, or after it gave its place back),
// from its first datagram after that. Ids that only ever send gaps,
// duplicates or garbage leave nothing here. The table holds at most
// `max_sessions` unlisted sessions, at most `max_sessions_per_source` of
// them for one source address, plus every listed one (a listed session is
// never refused for either number). Release() gives an unlisted session's
// slot back (the service does it for idle ones); a later session takes it.
// The storage is reserved at construction (address space only: a page is
// touched when a slot is first used), so pointers to sessions stay valid
// and admitting a datagram never allocates (the indexes are sized so that
// the tombstones of released ids are cleaned in place); one Session is
// sizeof(Session) (about 200 bytes) plus about 40 bytes of index.
//
// A session is pinned to the source endpoint of the datagram that gave it
// its slot; a datagram for it from any other endpoint is refused.
//
// Keyed sessions (docs/PROTOCOL.md "Authenticated datagrams"): every
// datagram must carry a MAC that verifies under the session's key, checked
// before the datagram can create, pin or move a session. A keyed session
// pinned elsewhere moves to the datagram's source when the MAC verifies and
// the datagram carries the command the session expects next (so a replayed
// old datagram moves nothing).
#ifndef ORDERWIRE_SERVICE_SESSION_TABLE_H_
#define ORDERWIRE_SERVICE_SESSION_TABLE_H_

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "codec/datagram.h"
#include "config/service_config.h"
#include "net/udp.h"

namespace orderwire::service {

using net::Endpoint;

struct Session {
  std::uint32_t id = 0;
  std::uint32_t index = 0;  // its slot, 0..size()-1 (reused after Release)
  bool held = false;        // false: a free slot
  // Counted against its source address (an unlisted session).
  bool counted_for_source = false;
  const config::SessionPolicy* policy = nullptr;
  Endpoint peer;        // where reports go
  bool pinned = false;  // peer is known (always, for a held session)
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
  kTooManyFromSource,  // max_sessions_per_source unlisted sessions held for
                       // the source address
};
inline constexpr std::size_t kAdmissionCount = 9;

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
    case Admission::kTooManyFromSource:
      return "max_sessions_per_source unlisted sessions are already held for "
             "this source address";
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
    case Admission::kTooManyFromSource:
      return "TooManyFromSource";
  }
  return "Invalid";
}

// What the journal holds of sessions the table does not (the service
// answers from its StateMachine, which the journal built): a session that
// comes back after a restart, or after it gave its place back, continues
// at the journal's next sequence.
class JournaledSessions {
 public:
  // The next inbound sequence of session `id` in the journal, or 0 if the
  // journal holds no record of it. Called once per datagram of a session
  // the table does not hold: O(1), no allocation. It must hold nothing the
  // journal does not (a session with records journaled but not yet applied
  // is held, never released).
  [[nodiscard]] virtual std::uint64_t NextExpected(std::uint32_t id) const = 0;

 protected:
  ~JournaledSessions() = default;
};

class SessionTable {
 public:
  // Reserves room for config.max_sessions unlisted sessions plus the
  // listed ones. `config` (and `journaled`, if not null: null means the
  // journal holds no session) must outlive the table.
  explicit SessionTable(const config::ServiceConfig& config,
                        const JournaledSessions* journaled = nullptr);

  // Finds the session of `datagram` (from `source`), checks the policy and
  // the MAC of a keyed session, and pins it (or moves a keyed session). A
  // session not in the table gets a slot (if the numbers allow: else
  // kTooManySessions or kTooManyFromSource) when the journal holds it (it
  // continues at the journal's next sequence) or when `create` (the
  // datagram opens it); otherwise kOk with `*out` null says it would be
  // admitted, and nothing is kept. On kOk with a session, `*out` is it. Hot
  // path: one hash lookup (two more, and one JournaledSessions call, for a
  // session not held), one MAC for a keyed session, no allocation.
  Admission Admit(const codec::DatagramView& datagram, const Endpoint& source,
                  bool create, Session** out);
  // Times a keyed session moved to a new endpoint.
  [[nodiscard]] std::uint64_t moves() const { return moves_; }

  // Gives the slot of unlisted session `session` back: the table forgets
  // it (its pin, its next sequence; a later datagram of it is admitted as
  // JournaledSessions says). Precondition: held, nothing of it journaled
  // but not yet applied, no datagram of it being built (Session::tx_slot).
  // False, and nothing done, for a listed session. Cold; no allocation.
  bool Release(Session& session);

  // Whether session `id` is listed in the configuration.
  [[nodiscard]] bool Listed(std::uint32_t id) const {
    return config_.sessions.contains(id);
  }
  // The session `id`, or null.
  [[nodiscard]] Session* Find(std::uint32_t id);
  // Slot `index` (held or free: Session::held).
  [[nodiscard]] Session& at(std::uint32_t index) { return sessions_[index]; }
  // Slots used so far, held or free (indexes 0..size()-1).
  [[nodiscard]] std::size_t size() const { return sessions_.size(); }
  // Sessions held now.
  [[nodiscard]] std::size_t held() const {
    return sessions_.size() - free_.size();
  }
  // Sessions held that are not listed in the configuration (those the cap
  // bounds).
  [[nodiscard]] std::size_t unlisted() const { return unlisted_; }
  // Unlisted sessions held for the address of `source`.
  [[nodiscard]] std::uint32_t HeldFor(const Endpoint& source) const;
  // Most sessions the table can hold: max_sessions + listed sessions.
  [[nodiscard]] std::size_t capacity() const { return capacity_; }

 private:
  // A source address as 16 bytes (IPv4 as ::ffff:a.b.c.d).
  using SourceKey = std::array<std::uint8_t, 16>;
  static SourceKey KeyOf(const Endpoint& source);

  // kOk when a new session `id` from `source` fits the numbers.
  [[nodiscard]] Admission Room(bool listed, const Endpoint& source) const;
  // A new held session in a free slot, pinned to `source` and counted.
  // Precondition: Room() said kOk.
  Session* Create(std::uint32_t id, const config::SessionPolicy* policy,
                  const Endpoint& source);

  const config::ServiceConfig& config_;
  const JournaledSessions* journaled_;
  std::size_t capacity_;
  std::vector<Session> sessions_;    // reserved to capacity_, never moves
  std::vector<std::uint32_t> free_;  // released slots (reserved)
  std::size_t unlisted_ = 0;
  std::uint64_t moves_ = 0;
  absl::flat_hash_map<std::uint32_t, std::uint32_t> by_id_;
  absl::flat_hash_map<SourceKey, std::uint32_t> by_source_;  // held, > 0
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_SESSION_TABLE_H_
