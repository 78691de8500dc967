// Which NATS errors go away by themselves: the one classification every
// caller that tries a NATS step again uses (the standby following and taking
// over, a replicated primary's start, `orderwire cluster status`), and the
// wait between two tries.
//
// replication/ turns each libnats failure into an absl::Status of a kind
// that says whether a later try may succeed (internal::NatsError): a
// timeout is DeadlineExceeded; no server reachable, no responders (a stream
// or bucket without a leader), JetStream's "temporarily unavailable" (error
// 10008, while a leader is elected) and a connection lost, closed or
// reconnecting are Unavailable. Everything else is a definite answer that
// trying again does not change: a refusal (a fence, a lease held by another
// member), a stream or bucket with other settings, a permission or
// authorization error, a bad argument, a message that does not parse.
#ifndef ORDERWIRE_REPLICATION_NATS_ERROR_H_
#define ORDERWIRE_REPLICATION_NATS_ERROR_H_

#include <chrono>

#include "absl/status/status.h"

namespace orderwire::replication {

// True when `status` is a NATS failure a later try may not have
// (DeadlineExceeded or Unavailable, see above); false for OK and for every
// definite answer.
[[nodiscard]] bool IsTransientNatsError(const absl::Status& status);

// Between two tries of a step that failed on a transient NATS error: 100 ms
// after the first failure, doubling after each one, at most 1 s.
inline constexpr std::chrono::milliseconds kFirstTransientRetryWait{100};
inline constexpr std::chrono::milliseconds kMaxTransientRetryWait{1000};
// The wait after the `failures`-th failure in a row (1 for the first).
[[nodiscard]] std::chrono::milliseconds TransientRetryWait(int failures);

}  // namespace orderwire::replication

#endif  // ORDERWIRE_REPLICATION_NATS_ERROR_H_
