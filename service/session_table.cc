// Sessions of the UDP service; see session.h.
#include "service/session_table.h"

namespace orderwire::service {

SessionTable::SessionTable(const ServiceConfig& config)
    : config_(config), sessions_(config.max_sessions) {
  by_id_.reserve(config.max_sessions);
}

Session* SessionTable::Create(std::uint32_t id, const SessionPolicy* policy) {
  if (size_ == sessions_.size()) return nullptr;
  Session& session = sessions_[size_];
  session = Session{};
  session.id = id;
  session.index = static_cast<std::uint32_t>(size_);
  session.policy = policy;
  by_id_.emplace(id, static_cast<std::uint32_t>(size_));
  ++size_;
  return &session;
}

Admission SessionTable::Admit(std::uint32_t id, const Endpoint& source,
                              Session** out) {
  Session* session = Find(id);
  if (session == nullptr) {
    const SessionPolicy* policy = config_.PolicyFor(id);
    if (policy == nullptr) return Admission::kUnknownSession;
    if (!policy->addresses.Contains(source)) {
      return Admission::kAddressNotAllowed;
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
