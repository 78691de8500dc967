// Sessions of the UDP service; see session_table.h.
#include "service/session_table.h"

#include <netinet/in.h>

#include <cstring>

namespace orderwire::service {

SessionTable::SessionTable(const config::ServiceConfig& config,
                           const JournaledSessions* journaled)
    : config_(config),
      journaled_(journaled),
      capacity_(std::size_t{config.max_sessions} + config.sessions.size()) {
  sessions_.reserve(capacity_);
  free_.reserve(capacity_);
  // Twice what they ever hold: an id released and another inserted leave
  // tombstones, which absl cleans in place (no allocation) while the map is
  // at most 25/32 full, and rehashes into a new allocation beyond.
  by_id_.reserve(2 * capacity_);
  by_source_.reserve(2 * std::size_t{config.max_sessions});
}

SessionTable::SourceKey SessionTable::KeyOf(const Endpoint& source) {
  SourceKey key{};
  if (source.family() == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&source.storage);
    key[10] = 0xFF;
    key[11] = 0xFF;
    std::memcpy(key.data() + 12, &v4->sin_addr, 4);
  } else if (source.family() == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&source.storage);
    std::memcpy(key.data(), &v6->sin6_addr, 16);
  }
  return key;
}

std::uint32_t SessionTable::HeldFor(const Endpoint& source) const {
  const auto it = by_source_.find(KeyOf(source));
  return it == by_source_.end() ? 0 : it->second;
}

Admission SessionTable::Room(bool listed, const Endpoint& source) const {
  if (listed) return Admission::kOk;
  // The cap first: when every place is taken, that is what to raise.
  if (unlisted_ >= config_.max_sessions) return Admission::kTooManySessions;
  if (HeldFor(source) >= config_.max_sessions_per_source) {
    return Admission::kTooManyFromSource;
  }
  return Admission::kOk;
}

Session* SessionTable::Create(std::uint32_t id,
                              const config::SessionPolicy* policy,
                              const Endpoint& source) {
  // Room() bounds the unlisted sessions and listed ones are few: only a
  // configuration whose listed sessions outnumber their reservation could
  // get here (none does).
  if (free_.empty() && sessions_.size() == capacity_) return nullptr;
  std::uint32_t index = 0;
  if (free_.empty()) {
    index = static_cast<std::uint32_t>(sessions_.size());
    sessions_.emplace_back();
  } else {
    index = free_.back();
    free_.pop_back();
  }
  Session& session = sessions_[index];
  session = Session{};
  session.id = id;
  session.index = index;
  session.held = true;
  session.policy = policy;
  session.peer = source;
  session.pinned = true;
  by_id_.emplace(id, index);
  if (!Listed(id)) {
    ++unlisted_;
    ++by_source_[KeyOf(source)];
    session.counted_for_source = true;
  }
  return &session;
}

bool SessionTable::Release(Session& session) {
  if (!session.held || Listed(session.id)) return false;
  by_id_.erase(session.id);
  if (session.counted_for_source) {
    const auto it = by_source_.find(KeyOf(session.peer));
    if (it != by_source_.end() && --it->second == 0) by_source_.erase(it);
  }
  --unlisted_;
  const std::uint32_t index = session.index;
  session = Session{};
  session.index = index;
  free_.push_back(index);
  return true;
}

namespace {

// What the MAC of `datagram` says under `policy`: kOk for an unkeyed session
// without the flag or a keyed one with a valid MAC.
Admission CheckMac(const config::SessionPolicy& policy,
                   const codec::DatagramView& datagram) {
  if (!policy.mac.has_value()) {
    return datagram.authenticated() ? Admission::kUnexpectedMac
                                    : Admission::kOk;
  }
  if (!datagram.authenticated()) return Admission::kMissingMac;
  return auth::VerifyDatagram(*policy.mac, datagram) ? Admission::kOk
                                                     : Admission::kBadMac;
}

// Whether `datagram` holds the command `next_expected` after any
// duplicates: it brings something new, which a replayed datagram cannot.
bool CarriesNextCommand(const codec::DatagramView& datagram,
                        std::uint64_t next_expected) {
  for (const codec::FrameView frame : datagram) {
    // A Heartbeat's sequence means nothing (docs/CONTROLS.md).
    if (frame.kind() == codec::Kind::kHeartbeat) continue;
    if (frame.sequence() < next_expected) continue;
    return frame.sequence() == next_expected;
  }
  return false;
}

}  // namespace

Admission SessionTable::Admit(const codec::DatagramView& datagram,
                              const Endpoint& source, bool create,
                              Session** out) {
  *out = nullptr;
  const std::uint32_t id = datagram.session_id();
  Session* session = Find(id);
  if (session == nullptr) {
    const config::SessionPolicy* policy = config_.PolicyFor(id);
    if (policy == nullptr) return Admission::kUnknownSession;
    if (!policy->addresses.Contains(source)) {
      return Admission::kAddressNotAllowed;
    }
    // Before the session takes a slot: a datagram that cannot prove the key
    // creates nothing.
    if (const Admission mac = CheckMac(*policy, datagram);
        mac != Admission::kOk) {
      return mac;
    }
    if (const Admission room = Room(Listed(id), source);
        room != Admission::kOk) {
      return room;
    }
    // A session the journal holds continues where it left off (after a
    // restart, or after it gave its slot back); a new one begins with
    // frame 1.
    const std::uint64_t journaled =
        journaled_ != nullptr ? journaled_->NextExpected(id) : 0;
    if (journaled == 0 && !create) return Admission::kOk;
    session = Create(id, policy, source);
    if (session == nullptr) return Admission::kTooManySessions;
    if (journaled != 0) session->next_expected = journaled;
    *out = session;
    return Admission::kOk;
  }
  const bool keyed = session->policy->mac.has_value();
  const bool elsewhere = !(session->peer == source);
  if (elsewhere && !keyed) return Admission::kPinnedElsewhere;
  if (elsewhere && !session->policy->addresses.Contains(source)) {
    return Admission::kAddressNotAllowed;
  }
  if (const Admission mac = CheckMac(*session->policy, datagram);
      mac != Admission::kOk) {
    return mac;
  }
  if (elsewhere) {
    // A keyed session moves only with a new command: a valid MAC on a
    // copy of an old datagram, replayed from anywhere, moves nothing.
    if (!CarriesNextCommand(datagram, session->next_expected)) {
      return Admission::kPinnedElsewhere;
    }
    session->peer = source;
    ++moves_;
  }
  *out = session;
  return Admission::kOk;
}

Session* SessionTable::Find(std::uint32_t id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &sessions_[it->second];
}

}  // namespace orderwire::service
