// NatsStartWait: how a replicated primary's start (Service::Start with
// the start hook of primary_replication.h) waits for NATS. Each NATS step of
// the start (opening the lease bucket, acquiring the lease, opening the journal
// stream and publishing the local records it lacks, the lease's renewal) runs
// through Run(): a step that fails on a transient NATS error
// (replication::IsTransientNatsError: no answer in time, no server, no
// responders, the connection lost) is tried again after
// replication::TransientRetryWait (100 ms doubling to 1 s), until it
// succeeds, fails with a definite answer (returned at once, as it is), or
// the start's timeout has passed since the first transient error of the
// start (one budget for all steps). A try under way when the timeout passes
// ends by its own request timeout. Private to cluster/.
//
// Logged (one line each): when a step begins to wait, "waiting for NATS:
// <step>: <error> (trying again for up to S s)"; when it succeeds after
// waiting, "NATS answered after S s: <step> (N tries)".
//
// Threads: one (the start's). Cold path.
#ifndef ORDERWIRE_CLUSTER_INTERNAL_NATS_START_WAIT_H_
#define ORDERWIRE_CLUSTER_INTERNAL_NATS_START_WAIT_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace orderwire::cluster::internal {

class NatsStartWait {
 public:
  using Clock = std::chrono::steady_clock;

  // `timeout`: how long the start may wait for NATS in all, counted from
  // its first transient error; 0: not at all (a transient error is
  // returned as it is). `cancel` (may be null): when it becomes true, a
  // wait ends with Cancelled. `log` receives the lines above.
  NatsStartWait(std::chrono::milliseconds timeout,
                const std::atomic<bool>* cancel,
                std::function<void(const std::string&)> log);

  // Runs `step` until it returns OK (OK) or a definite error (that error),
  // or the timeout passes (DeadlineExceeded: "NATS did not answer within
  // the start timeout (S s): <what>: <last error> (N tries)"), or `cancel`
  // is set while waiting (Cancelled). `what` names the step in the log and
  // the error ("opening the lease bucket orderwire_main_lease").
  absl::Status Run(std::string_view what,
                   const std::function<absl::Status()>& step);

 private:
  // Sleeps until `until` (in slices, looking at `cancel`); false: cancelled.
  [[nodiscard]] bool SleepUntil(Clock::time_point until) const;

  std::chrono::milliseconds timeout_;
  const std::atomic<bool>* cancel_;
  std::function<void(const std::string&)> log_;
  // Set at the start's first transient error.
  std::optional<Clock::time_point> deadline_;
};

}  // namespace orderwire::cluster::internal

#endif  // ORDERWIRE_CLUSTER_INTERNAL_NATS_START_WAIT_H_
