// Which NATS failures are transient (replication/nats_error.h): the kinds
// NatsError gives each libnats status and JetStream error, as every caller
// that tries a NATS step again reads them.
#include "replication/nats_error.h"

#include <nats/nats.h>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "replication/internal/nats_handles.h"

namespace orderwire::replication {
namespace {

using internal::NatsError;

TEST(NatsErrorKinds, WhatGoesAwayByItselfIsTransient) {
  EXPECT_TRUE(IsTransientNatsError(NatsError(NATS_TIMEOUT, "step")));
  EXPECT_TRUE(IsTransientNatsError(NatsError(NATS_NO_RESPONDERS, "step")));
  EXPECT_TRUE(IsTransientNatsError(NatsError(NATS_NO_SERVER, "step")));
  EXPECT_TRUE(IsTransientNatsError(NatsError(NATS_CONNECTION_CLOSED, "step")));
  // JetStream answering 503 while its leaders are elected (seen reading a
  // stream's last message right after its paused leader came back).
  const absl::Status busy = NatsError(NATS_ERR, "read", JSClusterNotAvailErr);
  EXPECT_TRUE(absl::IsUnavailable(busy)) << busy;
  EXPECT_NE(busy.message().find("JetStream error 10008"), std::string::npos);
  // The same from a call that gives no code (opening a KV bucket while the
  // meta leader is elected, seen in CI): only libnats's last error says it.
  const absl::Status bucket = internal::NatsErrorWithDetail(
      NATS_ERR, "open bucket b", 0,
      "Error: (jsm.c:1033): JetStream system temporarily unavailable");
  EXPECT_TRUE(absl::IsUnavailable(bucket)) << bucket;
  EXPECT_FALSE(IsTransientNatsError(internal::NatsErrorWithDetail(
      NATS_ERR, "open bucket b", 0, "Error: stream name already in use")));
}

TEST(NatsErrorKinds, DefiniteAnswersAreNot) {
  EXPECT_FALSE(IsTransientNatsError(absl::OkStatus()));
  EXPECT_FALSE(IsTransientNatsError(
      NatsError(NATS_ERR, "publish", JSStreamWrongLastSequenceErr)));
  EXPECT_FALSE(IsTransientNatsError(
      NatsError(NATS_NOT_FOUND, "read", JSNoMessageFoundErr)));
  EXPECT_FALSE(IsTransientNatsError(NatsError(NATS_INVALID_ARG, "open")));
}

TEST(NatsErrorKinds, RetryWaitsDoubleUpToASecond) {
  EXPECT_EQ(TransientRetryWait(1), kFirstTransientRetryWait);
  EXPECT_EQ(TransientRetryWait(2).count(), 200);
  EXPECT_EQ(TransientRetryWait(5), kMaxTransientRetryWait);
  EXPECT_EQ(TransientRetryWait(50), kMaxTransientRetryWait);
}

}  // namespace
}  // namespace orderwire::replication
