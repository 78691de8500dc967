// PrimaryReplication: the service's start hook for `serve --durability
// replicated` (service/replication_gate.h, docs/REPLICATION.md,
// docs/SERVICE.md "Durability"): everything the primary does with NATS
// before it serves, and the gate and the leadership check it serves with.
//
// Start (called by Service::Start once the journal is recovered, replayed
// and durable), each NATS step run through internal::NatsStartWait (a
// transient NATS error is tried again for up to
// ReplicationOptions::start_timeout, a definite refusal fails at once, the
// cancel flag ends the wait):
//   1. with ReplicationOptions::lease: the lease (replication/lease.h),
//      acquired (its epoch becomes the journal messages' epoch; a lease
//      another member holds is refused, FailedPrecondition), or the one
//      handed over in held_lease taken as it is (a standby that took over,
//      cluster_member.h; refused if no longer held);
//   2. the ReplicationLink (replication_link.h) opened on the engine's
//      journal stream (labelled with the local journal_id if new; refused,
//      FailedPrecondition, if it carries another journal), and every local
//      record the stream lacks published and acknowledged: nothing is
//      served before (those records were never answered); a node behind
//      the stream is refused;
//   3. with the lease: its last renewal recent enough that the first pass
//      may answer.
// Any error is returned prefixed "--durability replicated: "; a lease
// handed over then goes back to its giver (held_lease), still renewed, so
// that it may start the service again.
//
// The gate is the ReplicationLink; the leadership check (with the lease)
// asks LeaseMember::StillLeader (one atomic load and a clock read) and
// stops the renewal when the service's Run() returns.
#ifndef ORDERWIRE_CLUSTER_PRIMARY_REPLICATION_H_
#define ORDERWIRE_CLUSTER_PRIMARY_REPLICATION_H_

#include <atomic>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "cluster/replication_options.h"
#include "service/replication_gate.h"

namespace orderwire::cluster {

class PrimaryReplication final : public service::ReplicationStarter {
 public:
  // `cancel_start` (may be null; must outlive Start): set from another
  // thread or a signal handler, it ends Start's wait for NATS with
  // Cancelled.
  explicit PrimaryReplication(ReplicationOptions options,
                              const std::atomic<bool>* cancel_start = nullptr)
      : options_(std::move(options)), cancel_start_(cancel_start) {}

  // See above. Errors: a refusal (a lease held by another member, a stream
  // with other settings, a node behind the stream, a fence, a permission
  // error, ...) at once; DeadlineExceeded naming the step when NATS did not
  // answer within ReplicationOptions::start_timeout; Cancelled when
  // cancel_start was set while waiting.
  [[nodiscard]] absl::StatusOr<service::StartedReplication> Start(
      const service::ReplicationStartContext& context) const override;

  [[nodiscard]] const ReplicationOptions& options() const { return options_; }

 private:
  ReplicationOptions options_;
  const std::atomic<bool>* cancel_start_;
};

// The start hook for ServiceOptions::replication.
[[nodiscard]] inline std::shared_ptr<const service::ReplicationStarter>
ReplicatedDurability(ReplicationOptions options,
                     const std::atomic<bool>* cancel_start = nullptr) {
  return std::make_shared<const PrimaryReplication>(std::move(options),
                                                    cancel_start);
}

}  // namespace orderwire::cluster

#endif  // ORDERWIRE_CLUSTER_PRIMARY_REPLICATION_H_
