// What the primary's loop needs of replication, and no more: the service
// knows nothing of NATS. cluster/ implements these interfaces on replication/
// (cluster/primary_replication.h: `serve --durability replicated`, with or
// without the leadership lease); the service holds what its start hook gives
// it and asks it once per batch of answers.
//
//   ReplicationStarter  the start hook (ServiceOptions::replication): called
//                       once by Service::Start, after the journal was
//                       recovered, replayed and made durable; it does every
//                       step the replicated start needs (the lease, the
//                       stream, publishing the local records the stream
//                       lacks and waiting for their acknowledgement, with
//                       its own waits and retries) and returns a
//                       ReplicationGate and, with a lease, a LeadershipCheck.
//   ReplicationGate     the replicated index: the service answers a record
//                       only when its index is <= min(local durable index,
//                       replicated_index()) (docs/ARCHITECTURE.md, "One
//                       datagram, from receive to report").
//   LeadershipCheck     whether this primary may still answer (the lease).
//
// Cost on the loop: replicated_index() and failed() are one acquire load
// each (not virtual: the gate's implementation stores into the base's
// atomics); NoteDurable and StillLeader are one virtual call each per pass
// of the loop that found the durable index, never per command or datagram.
// Everything else is cold (start, waits, stats, shutdown).
#ifndef ORDERWIRE_SERVICE_REPLICATION_GATE_H_
#define ORDERWIRE_SERVICE_REPLICATION_GATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "service/latency_buckets.h"

namespace orderwire::service {

// What a gate counts (ServiceStats::replication_*); read with stats() from
// the service's thread.
struct ReplicationStats {
  std::uint64_t published_messages = 0;
  std::uint64_t published_records = 0;
  std::uint64_t published_bytes = 0;  // message bytes, headers included
  std::uint64_t acknowledged_messages = 0;
  std::uint64_t replicated_index = 0;
  std::uint64_t failures = 0;  // 0 or 1: a gate stops at the first
  // Messages published again while the stream re-elected its leader
  // (JournalPublisher: no responders, no reply, a 10071 behind a gap).
  std::uint64_t republished_messages = 0;
  std::uint64_t member_reports = 0;          // lines put in the members
  std::uint64_t member_report_failures = 0;  // bucket, and puts that failed
  // Publish to acknowledgement, per message.
  LatencyBuckets publish_latency;
  // What the start found: the stream's last sequence and last replicated
  // index.
  std::uint64_t start_stream_sequence = 0;
  std::uint64_t start_replicated_index = 0;
};

// The replicated index and the gate's failure. Failure is fail-stop: once
// failed() the replicated index never moves again; the service answers
// nothing more and Run() returns failure(). Threads: the service's thread
// calls everything; the implementation's own threads set the index and the
// failure through the protected setters.
class ReplicationGate {
 public:
  ReplicationGate() = default;
  ReplicationGate(const ReplicationGate&) = delete;
  ReplicationGate& operator=(const ReplicationGate&) = delete;
  virtual ~ReplicationGate() = default;

  // The last journal index the replica acknowledged (in order). Hot path.
  [[nodiscard]] std::uint64_t replicated_index() const noexcept {
    return replicated_.load(std::memory_order_acquire);
  }
  // Whether the gate has failed (then failure() says why). Hot path.
  [[nodiscard]] bool failed() const noexcept {
    return failed_.load(std::memory_order_acquire);
  }
  [[nodiscard]] virtual absl::Status failure() const = 0;
  // The local durable index moved to `durable` (called once per pass of the
  // loop; cheap when it did not move).
  virtual void NoteDurable(std::uint64_t durable) noexcept = 0;
  // Readable after an acknowledgement or a failure: the service polls it
  // beside its socket while it waits for the replica, and drains it with
  // DrainWake().
  [[nodiscard]] virtual int wake_fd() const noexcept = 0;
  virtual void DrainWake() noexcept = 0;
  // Blocks until replicated_index() >= index, the gate fails, or `timeout`
  // passes. Cold (start-up and shutdown).
  virtual absl::Status WaitReplicated(std::uint64_t index,
                                      std::chrono::milliseconds timeout) = 0;
  // How long a clean stop waits for the last records' acknowledgement.
  [[nodiscard]] virtual std::chrono::milliseconds ack_timeout() const = 0;
  [[nodiscard]] virtual ReplicationStats stats() const = 0;
  // One line for the start-up banner.
  [[nodiscard]] virtual const std::string& description() const = 0;

 protected:
  void set_replicated_index(std::uint64_t index,
                            std::memory_order order) noexcept {
    replicated_.store(index, order);
  }
  void set_failed() noexcept { failed_.store(true, std::memory_order_release); }

 private:
  std::atomic<std::uint64_t> replicated_{0};
  std::atomic<bool> failed_{false};
};

// Whether this primary may still answer: with the leadership lease, whether
// it still holds it. Threads: the service's.
class LeadershipCheck {
 public:
  LeadershipCheck() = default;
  LeadershipCheck(const LeadershipCheck&) = delete;
  LeadershipCheck& operator=(const LeadershipCheck&) = delete;
  virtual ~LeadershipCheck() = default;

  // Before each batch of answers (once per pass). False: nothing more may
  // be answered, ever (the service stops; Run() says why).
  [[nodiscard]] virtual bool StillLeader() noexcept = 0;
  // The epoch this primary serves under.
  [[nodiscard]] virtual std::uint64_t epoch() const = 0;
  // Why StillLeader() said no, for the error Run() returns ("another member
  // holds it now", ...).
  [[nodiscard]] virtual std::string LossReason() const = 0;
  // Run() has returned: stop renewing, so that a standby takes over.
  virtual void StopRenewal() = 0;
};

// What Service::Start gives the start hook.
struct ReplicationStartContext {
  // The local journal, opened, recovered and replayed; every record up to
  // last_index is durable.
  std::string journal_directory;
  std::uint64_t last_index = 0;
  // Its journal_id (journal/format.h: the segments'), which the replicated
  // journal must be of.
  std::uint64_t journal_id = 0;
  // Writes a line for the operator (ServiceOptions::on_event, or stderr).
  std::function<void(const std::string&)> log;
};

// What the start hook gives back.
struct StartedReplication {
  std::unique_ptr<ReplicationGate> gate;  // never null
  // With the leadership lease (else null: always leader).
  std::unique_ptr<LeadershipCheck> leadership;
  // Lines for the start-up banner before the gate's description ("\n  ..."
  // each), e.g. the lease held.
  std::string report;
};

// The start hook of the replicated mode (ServiceOptions::replication).
class ReplicationStarter {
 public:
  ReplicationStarter() = default;
  ReplicationStarter(const ReplicationStarter&) = delete;
  ReplicationStarter& operator=(const ReplicationStarter&) = delete;
  virtual ~ReplicationStarter() = default;

  // Called once per Service::Start, on its thread. By the time it returns,
  // every local record up to context.last_index is replicated (nothing is
  // served before). Errors are Service::Start's (see service.h).
  [[nodiscard]] virtual absl::StatusOr<StartedReplication> Start(
      const ReplicationStartContext& context) const = 0;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_REPLICATION_GATE_H_
