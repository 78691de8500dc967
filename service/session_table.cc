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

Admission SessionTable::Admit(std::uint32_t id, const Endpoint& source,
                              bool create, Session** out) {
  *out = nullptr;
  Session* session = Find(id);
  if (session == nullptr) {
    const SessionPolicy* policy = config_.PolicyFor(id);
    if (policy == nullptr) return Admission::kUnknownSession;
    if (!policy->addresses.Contains(source)) {
      return Admission::kAddressNotAllowed;
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
  }
  if (session->pinned) {
    if (!(session->peer == source)) return Admission::kPinnedElsewhere;
  } else {
    if (!session->policy->addresses.Contains(source)) {
      return Admission::kAddressNotAllowed;
    }
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
