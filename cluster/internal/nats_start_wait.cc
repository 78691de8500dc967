// Waiting for NATS at a replicated primary's start; see nats_start_wait.h.
#include "cluster/internal/nats_start_wait.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "replication/nats_error.h"

namespace orderwire::cluster::internal {
namespace {

// A wait looks at the cancel flag at least this often.
constexpr std::chrono::milliseconds kCancelPoll{20};

double Seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

NatsStartWait::NatsStartWait(std::chrono::milliseconds timeout,
                             const std::atomic<bool>* cancel,
                             std::function<void(const std::string&)> log)
    : timeout_(timeout), cancel_(cancel), log_(std::move(log)) {}

bool NatsStartWait::SleepUntil(Clock::time_point until) const {
  for (;;) {
    if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
      return false;
    }
    const Clock::time_point now = Clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(until - now, kCancelPoll));
  }
}

absl::Status NatsStartWait::Run(std::string_view what,
                                const std::function<absl::Status()>& step) {
  const Clock::time_point began = Clock::now();
  for (int failures = 0;;) {
    absl::Status status = step();
    if (status.ok()) {
      if (failures > 0) {
        log_(absl::StrFormat("NATS answered after %.1f s: %s (%d tries)",
                             Seconds(Clock::now() - began), what,
                             failures + 1));
      }
      return status;
    }
    if (!replication::IsTransientNatsError(status) || timeout_.count() <= 0) {
      return status;
    }
    ++failures;
    const Clock::time_point now = Clock::now();
    if (!deadline_.has_value()) deadline_ = now + timeout_;
    if (now >= *deadline_) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "NATS did not answer within the start timeout (%g s): %s: %s (%d "
          "%s)",
          Seconds(timeout_), what, status.message(), failures,
          failures == 1 ? "try" : "tries"));
    }
    if (failures == 1) {
      log_(absl::StrFormat(
          "waiting for NATS: %s: %s (trying again for up to %.1f s)", what,
          status.message(), Seconds(*deadline_ - now)));
    }
    const Clock::time_point next =
        std::min(*deadline_, now + replication::TransientRetryWait(failures));
    if (!SleepUntil(next)) {
      return absl::CancelledError(
          absl::StrFormat("stopped while waiting for NATS: %s (last error: %s)",
                          what, status.message()));
    }
  }
}

}  // namespace orderwire::cluster::internal
