// Background threads that never take the process's stop signals.
//
// `orderwire serve` installs its SIGINT and SIGTERM handlers without
// SA_RESTART, so that a stop signal interrupts the service thread's blocking
// wait (io_uring, recvmmsg) and the loop sees the stop flag at once. The
// kernel delivers a process-directed signal to any thread that does not
// block it: if a helper thread (retention, the metrics endpoint) took it, the
// flag would be set but the service thread would sleep on until its next
// timeout. So every helper thread starts with SIGINT and SIGTERM blocked: a
// new thread inherits its creator's signal mask, so the creator blocks them
// for the instant of creation and restores its own mask right after.
//
//   std::thread worker = base::StartWithStopSignalsBlocked([this] { Loop(); });
#ifndef ORDERWIRE_BASE_BACKGROUND_THREAD_H_
#define ORDERWIRE_BASE_BACKGROUND_THREAD_H_

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace orderwire::base {

// The signals that stop the service: SIGINT and SIGTERM.
[[nodiscard]] inline sigset_t StopSignals() noexcept {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Starts `body` on a new thread whose signal mask blocks StopSignals(); the
// calling thread's mask is unchanged afterwards (also if creation throws).
// Cold.
template <typename Body>
[[nodiscard]] std::thread StartWithStopSignalsBlocked(Body&& body) {
  struct RestoreMask {
    sigset_t previous;
    ~RestoreMask() { ::pthread_sigmask(SIG_SETMASK, &previous, nullptr); }
  };
  const sigset_t stop = StopSignals();
  RestoreMask restore{};
  ::pthread_sigmask(SIG_BLOCK, &stop, &restore.previous);
  return std::thread(std::forward<Body>(body));
}

// Whether the calling thread blocks both stop signals (for tests and
// checks).
[[nodiscard]] inline bool StopSignalsBlockedHere() noexcept {
  sigset_t current;
  if (::pthread_sigmask(SIG_BLOCK, nullptr, &current) != 0) return false;
  return sigismember(&current, SIGINT) == 1 &&
         sigismember(&current, SIGTERM) == 1;
}

}  // namespace orderwire::base

#endif  // ORDERWIRE_BASE_BACKGROUND_THREAD_H_
