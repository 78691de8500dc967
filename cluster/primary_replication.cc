// The primary's start hook on NATS; see primary_replication.h.
#include "cluster/primary_replication.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cluster/internal/nats_start_wait.h"
#include "cluster/replication_link.h"
#include "replication/journal_stream.h"
#include "replication/lease.h"

namespace orderwire::cluster {
namespace {

// The leadership lease this primary holds while it serves, and its renewal
// (stopped when the service's Run() returns; destroyed before the member
// it renews).
class LeaseLeadership final : public service::LeadershipCheck {
 public:
  LeaseLeadership(std::unique_ptr<replication::LeaseMember> member,
                  std::unique_ptr<replication::LeaseRenewer> renewer,
                  std::uint64_t epoch)
      : member_(std::move(member)),
        renewer_(std::move(renewer)),
        epoch_(epoch) {}

  [[nodiscard]] bool StillLeader() noexcept override {
    return member_->StillLeader(replication::LeaseClock::now());
  }
  [[nodiscard]] std::uint64_t epoch() const override { return epoch_; }
  [[nodiscard]] std::string LossReason() const override {
    return renewer_ != nullptr && renewer_->lost()
               ? "another member holds it now"
               : absl::StrFormat(
                     "not renewed before its deadline (%d renewals failed)",
                     renewer_ != nullptr ? renewer_->failed() : 0);
  }
  void StopRenewal() override {
    if (renewer_ != nullptr) renewer_->Stop();
  }

 private:
  std::unique_ptr<replication::LeaseMember> member_;
  std::unique_ptr<replication::LeaseRenewer> renewer_;
  std::uint64_t epoch_;
};

// What the start has so far: the lease and its renewal (with
// ReplicationOptions::lease), the link, the banner's lines. Destroyed in
// reverse: the link, the renewal, the lease.
struct Connection {
  std::unique_ptr<replication::LeaseMember> lease;
  std::unique_ptr<replication::LeaseRenewer> renewer;
  std::unique_ptr<ReplicationLink> link;
  std::string report;
};

// ReplicationOptions::held_lease: takes the held lease and its renewer over.
absl::Status TakeHeldLease(ReplicationOptions& replication, Connection& c) {
  HeldLease& held = *replication.held_lease;
  if (held.member == nullptr || held.renewer == nullptr ||
      !held.member->StillLeader(replication::LeaseClock::now())) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the lease %s of engine %s handed over is not held any more (not "
        "renewed before its deadline, or taken by another member)",
        replication::LeaseBucketName(replication.engine_name),
        replication.engine_name));
  }
  c.lease = std::move(held.member);
  c.renewer = std::move(held.renewer);
  replication.epoch = c.lease->epoch();
  if (replication.member_name.empty()) {
    replication.member_name = c.lease->spec().holder;
    std::replace(replication.member_name.begin(), replication.member_name.end(),
                 ':', '-');
  }
  absl::StrAppendFormat(&c.report,
                        "\n  lease %s held by %s (taken over): epoch %d, %d "
                        "ms, renewed every %d ms",
                        replication::LeaseBucketName(replication.engine_name),
                        c.lease->spec().holder, c.lease->epoch(),
                        c.lease->spec().duration.count(),
                        c.lease->spec().renew_interval.count());
  return absl::OkStatus();
}

// With the lease: acquires it before serving.
absl::Status AcquireLease(ReplicationOptions& replication,
                          internal::NatsStartWait& wait, Connection& c) {
  const LeaseOptions& o = *replication.lease;
  if (replication.held_lease != nullptr) return TakeHeldLease(replication, c);
  replication::LeaseSpec spec;
  spec.servers = replication.servers;
  spec.engine_name = replication.engine_name;
  spec.replicas = replication.replicas;
  spec.holder = o.holder;
  spec.duration = o.duration;
  spec.safety_margin = o.safety_margin;
  spec.renew_interval = o.renew_interval;
  spec.request_timeout = o.request_timeout;
  if (spec.holder.empty()) {
    std::array<char, 256> host{};
    if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
    spec.holder = absl::StrFormat("%s:%d", host.data(), ::getpid());
  }
  const std::string bucket =
      replication::LeaseBucketName(replication.engine_name);
  std::unique_ptr<replication::LeaseMember> member;
  if (absl::Status s =
          wait.Run(absl::StrFormat("opening the lease bucket %s", bucket),
                   [&]() -> absl::Status {
                     auto opened = replication::LeaseMember::Open(spec);
                     if (!opened.ok()) return opened.status();
                     member = *std::move(opened);
                     return absl::OkStatus();
                   });
      !s.ok()) {
    return s;
  }
  // Tried again on the same member: it remembers an acquisition whose
  // answer was lost (and adopts it when it finds it in the key).
  replication::AcquireResult acquired;
  if (absl::Status s =
          wait.Run(absl::StrFormat("acquiring the lease %s", bucket),
                   [&]() -> absl::Status {
                     absl::StatusOr<replication::AcquireResult> step =
                         member->Acquire(o.acquire_wait);
                     if (!step.ok()) return step.status();
                     acquired = *std::move(step);
                     return absl::OkStatus();
                   });
      !s.ok()) {
    return s;
  }
  if (acquired.outcome != replication::AcquireOutcome::kAcquired) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the lease %s of engine %s is held by %s (epoch %d, %s): another "
        "primary serves this engine; run this node as a standby",
        bucket, replication.engine_name, acquired.holder, acquired.epoch,
        replication::AcquireOutcomeName(acquired.outcome)));
  }
  replication.epoch = acquired.epoch;
  if (replication.member_name.empty()) {
    replication.member_name = spec.holder;
    std::replace(replication.member_name.begin(), replication.member_name.end(),
                 ':', '-');
  }
  c.lease = std::move(member);
  c.renewer = std::make_unique<replication::LeaseRenewer>(*c.lease);
  absl::StrAppendFormat(&c.report,
                        "\n  lease %s held by %s: epoch %d, %d ms, renewed "
                        "every %d ms",
                        bucket, spec.holder, acquired.epoch, o.duration.count(),
                        o.renew_interval.count());
  return absl::OkStatus();
}

// The NATS steps of the start (primary_replication.h, 1-3), each waited
// for through `wait`.
absl::Status Connect(ReplicationOptions& replication,
                     const service::ReplicationStartContext& context,
                     internal::NatsStartWait& wait, Connection& c) {
  if (replication.lease.has_value()) {
    if (absl::Status s = AcquireLease(replication, wait, c); !s.ok()) return s;
  }
  // Lost (another member's renewal won): definite. Only looked at with a
  // lease, whose renewer runs while the start waits.
  const auto lease_lost = [&c]() -> absl::Status {
    if (c.renewer == nullptr || !c.renewer->lost()) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrFormat(
        "lost the lease (epoch %d) while starting: another member holds it "
        "now",
        c.lease->epoch()));
  };
  const std::uint64_t last = context.last_index;
  const std::string stream =
      replication::JournalStreamName(replication.engine_name);
  // The replayed records that the stream lacks were never answered (they
  // were never acknowledged); a retransmission would be answered from the
  // state they built. So nothing is served before they are acknowledged.
  // A link that failed is opened again: it reads the stream's end anew and
  // publishes only what is still missing (a message that did land is a
  // duplicate by its Msg-Id).
  if (absl::Status s = wait.Run(
          absl::StrFormat("opening the journal stream %s and publishing the "
                          "local records it lacks (up to index %d)",
                          stream, last),
          [&]() -> absl::Status {
            c.link.reset();
            if (absl::Status lost = lease_lost(); !lost.ok()) return lost;
            absl::StatusOr<std::unique_ptr<ReplicationLink>> link =
                ReplicationLink::Open(replication, context.journal_directory,
                                      last, context.journal_id);
            if (!link.ok()) return link.status();
            c.link = *std::move(link);
            // The link's own code: a fence stays FailedPrecondition, a
            // timeout DeadlineExceeded.
            absl::Status replicated =
                c.link->WaitReplicated(last, replication.ack_timeout);
            if (replicated.ok()) return replicated;
            return absl::Status(
                replicated.code(),
                absl::StrFormat("publishing the local journal's records the "
                                "stream lacks (up to index %d): %s",
                                last, replicated.message()));
          });
      !s.ok()) {
    return s;
  }
  if (c.lease == nullptr) return absl::OkStatus();
  // A wait longer than D - margin lets the lease lapse (StillLeader false,
  // which would stop the first pass at once) until the renewer's next
  // success: waited for as NATS is.
  return wait.Run(
      absl::StrFormat("renewing the lease %s",
                      replication::LeaseBucketName(replication.engine_name)),
      [&]() -> absl::Status {
        if (absl::Status lost = lease_lost(); !lost.ok()) return lost;
        if (c.lease->StillLeader(replication::LeaseClock::now())) {
          return absl::OkStatus();
        }
        return absl::UnavailableError(
            "the lease's last renewal is older than its duration less the "
            "safety margin");
      });
}

}  // namespace

absl::StatusOr<service::StartedReplication> PrimaryReplication::Start(
    const service::ReplicationStartContext& context) const {
  // The lease's epoch and the member name are set while starting.
  ReplicationOptions replication = options_;
  internal::NatsStartWait wait(replication.start_timeout, cancel_start_,
                               context.log);
  Connection c;
  if (absl::Status s = Connect(replication, context, wait, c); !s.ok()) {
    c.link.reset();
    // A lease handed over goes back to its giver, still renewed: it may
    // start the service again (ClusterMember, on a transient NATS error).
    if (replication.held_lease != nullptr && c.lease != nullptr) {
      replication.held_lease->member = std::move(c.lease);
      replication.held_lease->renewer = std::move(c.renewer);
    }
    return absl::Status(
        s.code(), absl::StrFormat("--durability replicated: %s", s.message()));
  }
  service::StartedReplication started;
  started.report = std::move(c.report);
  if (c.lease != nullptr) {
    started.leadership = std::make_unique<LeaseLeadership>(
        std::move(c.lease), std::move(c.renewer), replication.epoch);
  }
  started.gate = std::move(c.link);
  return started;
}

}  // namespace orderwire::cluster
