// Sessions of the UDP service; see session_table.h.
#include "service/session_table.h"

namespace orderwire::service {

SessionTable::SessionTable(const ServiceConfig& config)
    : config_(config),
      capacity_(std::size_t{config.max_sessions} + config.sessions.size()) {
  sessions_.reserve(capacity_);
  by_id_.reserve(capacity_);
}

Session* SessionTable::Create(std::uint32_t id, const SessionPolicy* policy) {
  const bool listed = config_.sessions.contains(id);
  if (!listed && unlisted_ >= config_.max_sessions) return nullptr;
  // Only a journal written under another configuration can hold more
  // sessions than this (Recover refuses it).
  if (sessions_.size() == capacity_) return nullptr;
  const auto index = static_cast<std::uint32_t>(sessions_.size());
  Session& session = sessions_.emplace_back();
  session.id = id;
  session.index = index;
  session.policy = policy;
  by_id_.emplace(id, index);
  if (!listed) ++unlisted_;
  return &session;
}

namespace {

// What the MAC of `datagram` says under `policy`: kOk for an unkeyed session
// without the flag or a keyed one with a valid MAC.
Admission CheckMac(const SessionPolicy& policy,
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
    const SessionPolicy* policy = config_.PolicyFor(id);
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
    if (!create) {
      const bool fits =
          config_.sessions.contains(id) || unlisted_ < config_.max_sessions;
      return fits ? Admission::kOk : Admission::kTooManySessions;
    }
    session = Create(id, policy);
    if (session == nullptr) return Admission::kTooManySessions;
  } else if (session->policy == nullptr) {
    // Recovered from the journal, but the configuration no longer lets it
    // connect.
    return Admission::kUnknownSession;
  } else {
    const bool keyed = session->policy->mac.has_value();
    const bool elsewhere = session->pinned && !(session->peer == source);
    if (elsewhere && !keyed) return Admission::kPinnedElsewhere;
    if ((elsewhere || !session->pinned) &&
        !session->policy->addresses.Contains(source)) {
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
  }
  if (!session->pinned) {
    session->peer = source;
    session->pinned = true;
  }
  *out = session;
  return Admission::kOk;
}

Session* SessionTable::Recover(std::uint32_t id) {
  if (Session* session = Find(id); session != nullptr) return session;
  return Create(id, config_.PolicyFor(id));
}

Session* SessionTable::Find(std::uint32_t id) {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &sessions_[it->second];
}

}  // namespace orderwire::service
