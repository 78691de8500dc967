// The options of a primary in the `replicated` durability mode
// (docs/REPLICATION.md, docs/SERVICE.md "Durability"), as `orderwire serve
// --durability replicated` and a standby that takes over set them: the
// engine's journal stream on NATS JetStream, the replication link's tuning,
// and the leadership lease. The service gets them through its start hook
// (primary_replication.h), never directly.
#ifndef ORDERWIRE_CLUSTER_REPLICATION_OPTIONS_H_
#define ORDERWIRE_CLUSTER_REPLICATION_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "replication/lease.h"

namespace orderwire::cluster {

// A lease acquired before the service starts, and its running renewal.
struct HeldLease {
  std::unique_ptr<replication::LeaseMember> member;
  std::unique_ptr<replication::LeaseRenewer> renewer;
};

// The leadership lease (replication/lease.h) the primary holds while it
// serves in the replicated mode: acquired before it serves (its epoch becomes
// the journal messages' epoch), renewed by a LeaseRenewer thread, and checked
// (LeaseMember::StillLeader, one atomic load and a clock read) before each
// batch of answers.
struct LeaseOptions {
  // This member's name in the lease ([A-Za-z0-9_.:-], 1-64, unique per
  // member); empty: "<hostname>:<pid>".
  std::string holder;
  std::chrono::milliseconds duration{3000};  // D
  std::chrono::milliseconds safety_margin{500};
  std::chrono::milliseconds renew_interval{250};
  std::chrono::milliseconds request_timeout{1000};
  // How long Start() waits for a lease another member holds (its expiry
  // takes up to D after its holder stopped renewing).
  std::chrono::milliseconds acquire_wait{0};
};

// ReplicationOptions::start_timeout's default: several NATS re-elections
// (docs/REPLICATION.md "When NATS loses a leader": 4-9 s measured).
inline constexpr std::chrono::milliseconds kDefaultStartTimeout{30000};

struct ReplicationOptions {
  std::string servers;  // nats://HOST:PORT[,nats://HOST:PORT...]
  std::string engine_name = "main";
  int replicas = 1;  // of the journal stream: 1 or 3
  // Messages published and not yet acknowledged, at most (1 to 4096).
  std::uint32_t window = 32;
  // A message not acknowledged within this long fails the link.
  std::chrono::milliseconds ack_timeout{5000};
  // Connecting, reading the stream's last message.
  std::chrono::milliseconds connect_timeout{10000};
  // Service::Start (PrimaryReplication): how long the start waits for NATS
  // in all, counted from its first transient NATS error
  // (replication/nats_error.h: no answer in time, no server reachable, no
  // responders, the connection lost), while it tries each NATS step again
  // (cluster/internal/nats_start_wait.h); 0: not at all. A definite refusal
  // fails at once. `serve --nats-start-timeout-s`.
  std::chrono::milliseconds start_timeout = kDefaultStartTimeout;
  // At most this many bytes per message (NATS max_payload is 1 MiB); a
  // single record is always sent.
  std::size_t max_message_bytes = std::size_t{256} * 1024;
  // The primary's epoch (the first part of every Nats-Msg-Id); with `lease`
  // the lease's epoch replaces it.
  std::uint64_t epoch = 1;
  // Set: hold the leadership lease while serving (see LeaseOptions).
  std::optional<LeaseOptions> lease;
  // With `lease`: a lease this member holds already, its renewer running (a
  // standby that took over, cluster/cluster_member.h). Service::Start takes
  // both over instead of acquiring (the renewal never pauses between the
  // acquisition and the first answer); `lease` then only describes it. A
  // lease that is no longer held (StillLeader false) is refused.
  std::shared_ptr<HeldLease> held_lease;
  // Not empty: this member's line in the engine's members bucket
  // (replication/cluster_status.h, `orderwire cluster status`), put every
  // member_report_interval from a thread of the link's own: role
  // "primary", the epoch, the replicated index as its applied index (the
  // service applies up to min(durable, replicated), and the link publishes
  // only durable records) and the stream sequence acknowledged. A put that
  // fails is counted, never fatal. With the lease, the service sets it to
  // the holder's name (':' written as '-': NATS keys cannot hold ':').
  std::string member_name;
  std::chrono::milliseconds member_report_interval{500};
};

}  // namespace orderwire::cluster

#endif  // ORDERWIRE_CLUSTER_REPLICATION_OPTIONS_H_
