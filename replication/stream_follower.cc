#include "replication/stream_follower.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "replication/internal/nats_handles.h"
#include "replication/journal_stream.h"

namespace orderwire::replication {

using internal::MessageHandle;
using internal::MetaDataHandle;
using internal::NatsError;

struct StreamFollower::Handles {
  internal::ConnectionHandle conn;
  internal::JetStreamHandle js;
  internal::SubscriptionHandle sub;
};

StreamFollower::StreamFollower(std::unique_ptr<Handles> handles,
                               std::string stream, std::uint64_t start)
    : handles_(std::move(handles)),
      stream_(std::move(stream)),
      next_sequence_(start) {}

StreamFollower::~StreamFollower() {
  if (handles_->sub != nullptr) {
    natsSubscription_Unsubscribe(handles_->sub.get());
  }
  handles_->sub.reset();
  handles_->js.reset();
  if (handles_->conn != nullptr) natsConnection_Close(handles_->conn.get());
  handles_->conn.reset();
}

namespace {

// One consumer-create request waits at most this long. libnats starts an
// ordered consumer's missed-heartbeat timer (twice the 5 s heartbeat) before
// it sends the create; a create still unanswered when it fires makes libnats
// 3.4 re-create the consumer on a thread of its own, and that thread
// dereferences a null thread handle (natsThread_Detach) when its resubscribe
// fails on a connection being closed: a crash at teardown. Under 10 s the
// timer never fires before the create returns.
constexpr std::chrono::milliseconds kCreateAttempt{8000};
// A create is not sent again with less than this left of the timeout.
constexpr std::chrono::milliseconds kShortestAttempt{100};

// The ordered consumer on `subject` from `start`, its create sent again
// while unanswered (JetStream may drop an API request while its leaders
// change) until `timeout` has passed.
absl::StatusOr<internal::SubscriptionHandle> SubscribeOrdered(
    jsCtx* js, const std::string& stream, const std::string& subject,
    std::uint64_t start, std::chrono::milliseconds timeout) {
  jsSubOptions so;
  natsStatus s = jsSubOptions_Init(&so);
  if (s != NATS_OK) return NatsError(s, "journal follower options");
  so.Stream = stream.c_str();
  so.Ordered = true;
  so.Config.DeliverPolicy = js_DeliverByStartSequence;
  so.Config.OptStartSeq = start;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    jsOptions jo;
    s = jsOptions_Init(&jo);
    if (s != NATS_OK) return NatsError(s, "journal follower options");
    jo.Wait = std::clamp(left, kShortestAttempt, kCreateAttempt).count();
    natsSubscription* raw = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    s = js_SubscribeSync(&raw, js, subject.c_str(), &jo, &so, &jerr);
    internal::SubscriptionHandle sub(raw);
    if (s == NATS_OK) return sub;
    if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
      return absl::NotFoundError(absl::StrCat(
          "journal follower: JetStream stream ", stream, " does not exist"));
    }
    if (s != NATS_TIMEOUT ||
        std::chrono::steady_clock::now() + kShortestAttempt > deadline) {
      return NatsError(s, absl::StrCat("journal follower: consume ", stream),
                       static_cast<int>(jerr));
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<StreamFollower>> StreamFollower::Open(
    const StreamFollowerOptions& options) {
  if (absl::Status valid = ValidateEngineName(options.engine_name);
      !valid.ok()) {
    return valid;
  }
  if (options.start_sequence == 0) {
    return absl::InvalidArgumentError(
        "journal follower: start sequence 0 (stream sequences start at 1)");
  }
  const std::string stream = JournalStreamName(options.engine_name);
  const std::string subject = JournalSubject(options.engine_name);
  auto handles = std::make_unique<Handles>();
  auto conn = internal::Connect(options.servers, options.timeout,
                                /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  handles->conn = *std::move(conn);
  auto js = internal::JetStream(handles->conn.get(), options.timeout);
  if (!js.ok()) return js.status();
  handles->js = *std::move(js);

  auto sub = SubscribeOrdered(handles->js.get(), stream, subject,
                              options.start_sequence, options.timeout);
  if (!sub.ok()) return sub.status();
  handles->sub = *std::move(sub);
  // Every message of the stream may wait here; never drop one as a slow
  // consumer.
  const natsStatus s =
      natsSubscription_SetPendingLimits(handles->sub.get(), -1, -1);
  if (s != NATS_OK) return NatsError(s, "journal follower pending limits");
  return std::unique_ptr<StreamFollower>(
      new StreamFollower(std::move(handles), stream, options.start_sequence));
}

absl::StatusOr<FollowedMessage> StreamFollower::Next(
    std::chrono::milliseconds timeout) {
  if (!failure_.ok()) return failure_;
  natsMsg* raw = nullptr;
  natsStatus s =
      natsSubscription_NextMsg(&raw, handles_->sub.get(), timeout.count());
  MessageHandle msg(raw);
  if (s == NATS_TIMEOUT) {
    return absl::DeadlineExceededError(
        absl::StrCat("journal follower: no message of ", stream_, " (sequence ",
                     next_sequence_, ") within ", timeout.count(), " ms"));
  }
  if (s != NATS_OK) {
    failure_ = NatsError(s, absl::StrCat("journal follower: read ", stream_));
    return failure_;
  }
  jsMsgMetaData* raw_meta = nullptr;
  s = natsMsg_GetMetaData(&raw_meta, msg.get());
  MetaDataHandle meta(raw_meta);
  if (s != NATS_OK) {
    failure_ = NatsError(
        s,
        absl::StrCat("journal follower: metadata of a message of ", stream_));
    return failure_;
  }
  const std::uint64_t sequence = meta->Sequence.Stream;
  if (sequence != next_sequence_) {
    failure_ = absl::DataLossError(absl::StrCat(
        "journal follower: stream ", stream_, " delivered sequence ", sequence,
        " where ", next_sequence_, " was due: ",
        sequence > next_sequence_
            ? absl::StrCat("sequences ", next_sequence_, " to ", sequence - 1,
                           " are missing (a hole in the replicated journal)")
            : std::string("a sequence delivered twice or out of order"),
        "; follower stopped"));
    return failure_;
  }
  FollowedMessage out;
  out.stream_sequence = sequence;
  out.pending = meta->NumPending;
  const char* msg_id = nullptr;
  if (natsMsgHeader_Get(msg.get(), "Nats-Msg-Id", &msg_id) == NATS_OK &&
      msg_id != nullptr) {
    out.msg_id = msg_id;
  }
  const int length = natsMsg_GetDataLength(msg.get());
  out.bytes.resize(static_cast<std::size_t>(length));
  if (length > 0) {
    std::memcpy(out.bytes.data(), natsMsg_GetData(msg.get()),
                static_cast<std::size_t>(length));
  }
  ++next_sequence_;
  return out;
}

}  // namespace orderwire::replication
