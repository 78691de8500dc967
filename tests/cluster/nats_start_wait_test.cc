// NatsStartWait (cluster/internal/nats_start_wait.h): how a replicated
// primary's start waits for NATS, with steps that fail as told (no NATS).
#include "cluster/internal/nats_start_wait.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::cluster::internal {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

struct Waiting {
  explicit Waiting(milliseconds timeout,
                   const std::atomic<bool>* cancel = nullptr)
      : wait(timeout, cancel,
             [this](const std::string& line) { lines.push_back(line); }) {}
  std::vector<std::string> lines;
  NatsStartWait wait;
};

// A step that fails `failures` times with `error`, then succeeds.
struct FailingStep {
  absl::Status error;
  int failures = 0;
  int tries = 0;
  absl::Status operator()() {
    return ++tries <= failures ? error : absl::OkStatus();
  }
};

TEST(NatsStartWait, ADefiniteErrorIsReturnedAfterOneTry) {
  Waiting w(milliseconds(30000));
  FailingStep step{absl::FailedPreconditionError("held by primary-b"), 5};
  const absl::Status s = w.wait.Run("acquiring the lease", std::ref(step));
  EXPECT_EQ(s, absl::FailedPreconditionError("held by primary-b"));
  EXPECT_EQ(step.tries, 1);
  EXPECT_TRUE(w.lines.empty());
}

TEST(NatsStartWait, ATransientErrorIsTriedAgainUntilTheStepSucceeds) {
  Waiting w(milliseconds(30000));
  FailingStep step{absl::DeadlineExceededError("read lease bucket: Timeout"),
                   2};
  EXPECT_TRUE(w.wait.Run("acquiring the lease", std::ref(step)).ok());
  EXPECT_EQ(step.tries, 3);
  ASSERT_EQ(w.lines.size(), 2u);
  EXPECT_THAT(w.lines[0],
              HasSubstr("waiting for NATS: acquiring the lease: read lease "
                        "bucket: Timeout (trying again for up to 30.0 s)"));
  EXPECT_THAT(w.lines[1], HasSubstr("NATS answered after "));
  EXPECT_THAT(w.lines[1], HasSubstr("acquiring the lease (3 tries)"));
}

TEST(NatsStartWait, NoAnswerWithinTheTimeoutFailsNamingTheStep) {
  Waiting w(milliseconds(300));
  FailingStep step{absl::UnavailableError("connect to NATS: No Server"), 1000};
  const auto began = std::chrono::steady_clock::now();
  const absl::Status s = w.wait.Run("opening the lease bucket", std::ref(step));
  EXPECT_GE(std::chrono::steady_clock::now() - began, milliseconds(300));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(),
              HasSubstr("NATS did not answer within the start timeout (0.3 "
                        "s): opening the lease bucket: connect to NATS: No "
                        "Server"));
  // 100 and 200 ms waits, then the deadline: at most 4 tries.
  EXPECT_GE(step.tries, 3);
  EXPECT_LE(step.tries, 4);
  EXPECT_EQ(w.lines.size(), 1u);
}

// The timeout is one budget for the whole start, from its first
// transient error: a later step does not get a new one.
TEST(NatsStartWait, TheTimeoutIsOneBudgetForAllSteps) {
  Waiting w(milliseconds(400));
  FailingStep first{absl::UnavailableError("no responders"), 2};
  EXPECT_TRUE(w.wait.Run("opening the lease bucket", std::ref(first)).ok());
  FailingStep second{absl::UnavailableError("no responders"), 1000};
  const absl::Status s =
      w.wait.Run("opening the journal stream", std::ref(second));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  // The first step waited 100 + 200 ms of the 400: about 100 ms were left.
  EXPECT_LE(second.tries, 2);
}

TEST(NatsStartWait, AZeroTimeoutReturnsATransientErrorAsItIs) {
  Waiting w(milliseconds(0));
  FailingStep step{absl::DeadlineExceededError("Timeout"), 1};
  EXPECT_EQ(w.wait.Run("opening the lease bucket", std::ref(step)),
            absl::DeadlineExceededError("Timeout"));
  EXPECT_EQ(step.tries, 1);
  EXPECT_TRUE(w.lines.empty());
}

TEST(NatsStartWait, CancelEndsTheWait) {
  std::atomic<bool> cancel{false};
  Waiting w(milliseconds(30000), &cancel);
  int tries = 0;
  const absl::Status s = w.wait.Run("opening the lease bucket", [&] {
    ++tries;
    cancel.store(true);
    return absl::DeadlineExceededError("Timeout");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(s.message(),
              HasSubstr("stopped while waiting for NATS: opening the lease "
                        "bucket"));
  EXPECT_EQ(tries, 1);
}

}  // namespace
}  // namespace orderwire::cluster::internal
