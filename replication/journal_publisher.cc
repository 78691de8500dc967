#include "replication/journal_publisher.h"

#include <nats/nats.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "replication/group_message.h"
#include "replication/internal/nats_handles.h"
#include "simdjson.h"

namespace orderwire::replication {
namespace {

using Clock = std::chrono::steady_clock;
using internal::MessageHandle;
using internal::NatsError;

constexpr std::uint32_t kMaxWindow = 4096;
constexpr int kWrongLastSequence = 10071;  // JSStreamWrongLastSequenceErr
constexpr int kWrongLastMsgId = 10070;     // JSStreamWrongLastMsgIDErr
constexpr std::int64_t kAckPollMs = 20;

// A JetStream publish acknowledgement: {"stream":S,"seq":N[,"duplicate":true]}
// or {"error":{"code":C,"err_code":E,"description":D}}.
struct ParsedAck {
  bool ok = false;
  std::uint64_t sequence = 0;
  bool duplicate = false;
  int error_code = 0;
  std::string description;
};

// `parser` is reused from one acknowledgement to the next (it keeps its
// buffers).
absl::StatusOr<ParsedAck> ParseAck(simdjson::dom::parser& parser,
                                   const char* data, std::size_t size) {
  simdjson::dom::element doc;
  if (parser.parse(data, size).get(doc) != simdjson::SUCCESS) {
    return absl::DataLossError(absl::StrCat(
        "JetStream acknowledgement is not JSON: '",
        absl::string_view(data, std::min<std::size_t>(size, 200)), "'"));
  }
  ParsedAck ack;
  simdjson::dom::element error;
  if (doc.at_key("error").get(error) == simdjson::SUCCESS) {
    std::int64_t code = 0;
    std::string_view description;
    if (error.at_key("err_code").get(code) != simdjson::SUCCESS) code = 0;
    if (error.at_key("description").get(description) != simdjson::SUCCESS) {
      description = "(no description)";
    }
    ack.error_code = static_cast<int>(code);
    ack.description = std::string(description);
    return ack;
  }
  if (doc.at_key("seq").get(ack.sequence) != simdjson::SUCCESS) {
    return absl::DataLossError(absl::StrCat(
        "JetStream acknowledgement without seq: '",
        absl::string_view(data, std::min<std::size_t>(size, 200)), "'"));
  }
  bool duplicate = false;
  if (doc.at_key("duplicate").get(duplicate) == simdjson::SUCCESS) {
    ack.duplicate = duplicate;
  }
  ack.ok = true;
  return ack;
}

}  // namespace

struct JournalPublisher::State {
  PublisherOptions options;
  std::string subject;
  std::string stream;
  std::string inbox;  // acknowledgements arrive on <inbox>.<message>
  internal::ConnectionHandle conn;
  internal::SubscriptionHandle sub;

  struct Slot {
    std::uint64_t message = 0;
    std::uint64_t first_index = 0;
    std::string expected_last_msg_id;  // empty: the header was not sent
    Clock::time_point sent;
    bool done = false;
    std::uint64_t sequence = 0;
    bool duplicate = false;
    absl::Status error;
    PublisherFailure error_kind = PublisherFailure::kNone;
  };

  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<Slot> ring;  // message N lives in ring[N % window]
  std::uint64_t base = 0;
  std::uint64_t published = 0;
  std::uint64_t acknowledged = 0;
  std::uint64_t reported = 0;  // acknowledgements handed to on_ack
  std::uint64_t last_sequence = 0;
  std::uint32_t max_in_flight = 0;
  std::uint64_t refused = 0;
  std::string last_msg_id;  // the Nats-Msg-Id of message `published`
  absl::Status failure;
  PublisherFailure failure_kind = PublisherFailure::kNone;
  std::atomic<bool> stop{false};
  std::thread ack_thread;
  simdjson::dom::parser parser;  // the acknowledgement thread's

  Slot& SlotOf(std::uint64_t message) { return ring[message % ring.size()]; }

  // Records the first failure; wakes Publish/Flush. Caller holds mu.
  void FailLocked(PublisherFailure kind, absl::Status status) {
    if (!failure.ok()) return;
    failure = std::move(status);
    failure_kind = kind;
    cv.notify_all();
  }

  void AckLoop();
  void HandleReply(natsMsg* msg);
  // Moves `acknowledged` over every completed slot in order; returns the
  // acknowledgements to report. Caller holds mu.
  void AdvanceLocked(std::vector<PublishAck>& out);
};

void JournalPublisher::State::AckLoop() {
  std::vector<PublishAck> acks;
  while (!stop.load(std::memory_order_acquire)) {
    natsMsg* raw = nullptr;
    const natsStatus s = natsSubscription_NextMsg(&raw, sub.get(), kAckPollMs);
    MessageHandle msg(raw);
    acks.clear();
    std::unique_lock lock(mu);
    if (s == NATS_OK) {
      HandleReply(msg.get());
    } else if (s != NATS_TIMEOUT) {
      FailLocked(PublisherFailure::kConnectionClosed,
                 NatsError(s, absl::StrCat("journal publisher for ", stream,
                                           ": reading acknowledgements")));
    }
    AdvanceLocked(acks);
    // The oldest unacknowledged message decides the timeout.
    if (failure.ok() && acknowledged < published) {
      const Slot& oldest = SlotOf(acknowledged + 1);
      const auto waited = Clock::now() - oldest.sent;
      if (!oldest.done && waited > options.ack_timeout) {
        FailLocked(
            PublisherFailure::kAckTimeout,
            absl::DeadlineExceededError(absl::StrCat(
                "journal publisher for ", stream, ": message ", oldest.message,
                " (journal index ", oldest.first_index,
                ", expected after stream sequence ", base + oldest.message - 1,
                ") not acknowledged within ", options.ack_timeout.count(),
                " ms; it may or may not be in the stream. Publisher "
                "stopped (fail-stop)")));
      }
    }
    const bool failed = !failure.ok();
    lock.unlock();
    if (!acks.empty()) {
      if (options.on_ack) {
        for (const auto& ack : acks) options.on_ack(ack);
      }
      std::lock_guard relock(mu);
      reported += acks.size();
      cv.notify_all();
    }
    if (failed && s != NATS_OK && s != NATS_TIMEOUT) break;
  }
}

void JournalPublisher::State::HandleReply(natsMsg* msg) {
  const char* reply_subject = natsMsg_GetSubject(msg);
  absl::string_view token(reply_subject);
  if (token.size() <= inbox.size() + 1) return;
  token.remove_prefix(inbox.size() + 1);
  std::uint64_t message = 0;
  if (!absl::SimpleAtoi(token, &message) || message == 0 ||
      message <= acknowledged || message > published) {
    return;  // not ours, or a late reply to a message already settled
  }
  Slot& slot = SlotOf(message);
  if (slot.message != message || slot.done) return;
  slot.done = true;
  const std::string what =
      absl::StrCat("journal publisher for ", stream, ": message ", message,
                   " (journal index ", slot.first_index,
                   ", Nats-Expected-Last-Sequence ", base + message - 1,
                   slot.expected_last_msg_id.empty()
                       ? std::string()
                       : absl::StrCat(", Nats-Expected-Last-Msg-Id ",
                                      slot.expected_last_msg_id),
                   ")");
  if (natsMsg_IsNoResponders(msg)) {
    slot.error_kind = PublisherFailure::kRejected;
    slot.error = absl::UnavailableError(
        absl::StrCat(what, ": no JetStream stream answers on ", subject,
                     " (503 no responders). Publisher stopped (fail-stop)"));
    return;
  }
  auto parsed = ParseAck(parser, natsMsg_GetData(msg),
                         static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
  if (!parsed.ok()) {
    slot.error_kind = PublisherFailure::kRejected;
    slot.error = absl::DataLossError(
        absl::StrCat(what, ": ", parsed.status().message()));
    return;
  }
  if (!parsed->ok) {
    ++refused;
    if (parsed->error_code == kWrongLastSequence) {
      slot.error_kind = PublisherFailure::kFenced;
      slot.error = absl::FailedPreconditionError(absl::StrCat(
          what, ": fenced: JetStream error 10071 (", parsed->description,
          "): another writer has appended to the stream since this one's "
          "view; this publisher is stale and stopped (fail-stop)"));
    } else if (parsed->error_code == kWrongLastMsgId) {
      // The sequence matched (JetStream checks it first) but the message
      // there is not this publisher's previous one: another writer's
      // message took the position this pipelined message expected its
      // predecessor at.
      slot.error_kind = PublisherFailure::kFenced;
      slot.error = absl::FailedPreconditionError(absl::StrCat(
          what, ": fenced: JetStream error 10070 (", parsed->description,
          "): the stream's last message is another writer's, not this "
          "publisher's previous message; this publisher is stale and "
          "stopped (fail-stop)",
          absl::EndsWith(parsed->description, ": ")
              ? " (the server names no last Msg-Id: nats-server 2.9 forgets "
                "it on a restart more than the duplicate window after the "
                "last message)"
              : ""));
    } else {
      slot.error_kind = PublisherFailure::kRejected;
      slot.error = absl::FailedPreconditionError(absl::StrCat(
          what, ": refused by JetStream, error ", parsed->error_code, " (",
          parsed->description, "). Publisher stopped (fail-stop)"));
    }
    return;
  }
  slot.sequence = parsed->sequence;
  slot.duplicate = parsed->duplicate;
}

void JournalPublisher::State::AdvanceLocked(std::vector<PublishAck>& out) {
  const auto now = Clock::now();
  while (failure.ok() && acknowledged < published) {
    Slot& slot = SlotOf(acknowledged + 1);
    if (!slot.done) break;
    if (!slot.error.ok()) {
      FailLocked(slot.error_kind, slot.error);
      break;
    }
    const std::uint64_t expected = base + slot.message;
    if (slot.sequence != expected) {
      FailLocked(
          PublisherFailure::kUnexpectedSequence,
          absl::DataLossError(absl::StrCat(
              "journal publisher for ", stream, ": message ", slot.message,
              " (journal index ", slot.first_index,
              ") acknowledged with stream sequence ", slot.sequence,
              ", expected ", expected, slot.duplicate ? " (duplicate)" : "",
              ": the stream does not hold this writer's groups in order. "
              "Publisher stopped (fail-stop)")));
      break;
    }
    ++acknowledged;
    last_sequence = slot.sequence;
    out.push_back(PublishAck{
        .message = slot.message,
        .first_index = slot.first_index,
        .stream_sequence = slot.sequence,
        .duplicate = slot.duplicate,
        .latency = std::chrono::duration_cast<std::chrono::nanoseconds>(
            now - slot.sent)});
    cv.notify_all();
  }
}

JournalPublisher::JournalPublisher(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

JournalPublisher::~JournalPublisher() {
  state_->stop.store(true, std::memory_order_release);
  if (state_->ack_thread.joinable()) state_->ack_thread.join();
  if (state_->sub != nullptr) natsSubscription_Unsubscribe(state_->sub.get());
  state_->sub.reset();
  if (state_->conn != nullptr) natsConnection_Close(state_->conn.get());
  state_->conn.reset();
}

absl::StatusOr<std::unique_ptr<JournalPublisher>> JournalPublisher::Open(
    PublisherOptions options) {
  if (options.window == 0 || options.window > kMaxWindow) {
    return absl::InvalidArgumentError(
        absl::StrCat("journal publisher window ", options.window,
                     ": expected 1 to ", kMaxWindow));
  }
  if (options.ack_timeout.count() <= 0) {
    return absl::InvalidArgumentError(
        "journal publisher ack_timeout must be positive");
  }
  auto stream_state =
      EnsureJournalStream(options.servers, options.stream, options.ack_timeout);
  if (!stream_state.ok()) return stream_state.status();

  auto state = std::make_unique<State>();
  state->subject = JournalSubject(options.stream.engine_name);
  state->stream = JournalStreamName(options.stream.engine_name);
  state->base =
      options.expected_last_sequence.value_or(stream_state->last_sequence);
  state->ring.resize(options.window);
  auto conn = internal::Connect(options.servers, options.ack_timeout,
                                /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  state->conn = *std::move(conn);

  natsInbox* inbox = nullptr;
  natsStatus s = natsInbox_Create(&inbox);
  if (s != NATS_OK) return NatsError(s, "create a NATS inbox");
  state->inbox = inbox;
  natsInbox_Destroy(inbox);
  natsSubscription* raw_sub = nullptr;
  s = natsConnection_SubscribeSync(&raw_sub, state->conn.get(),
                                   absl::StrCat(state->inbox, ".*").c_str());
  state->sub.reset(raw_sub);
  if (s == NATS_OK) {
    // The acknowledgements of a full window must never be dropped as a slow
    // consumer: no limit on the pending count/bytes of this subscription.
    s = natsSubscription_SetPendingLimits(state->sub.get(), -1, -1);
  }
  // The server must know the subscription before the first reply comes.
  if (s == NATS_OK) {
    s = natsConnection_FlushTimeout(state->conn.get(),
                                    options.ack_timeout.count());
  }
  if (s != NATS_OK) {
    return NatsError(s, "subscribe to the journal publisher's inbox");
  }
  state->options = std::move(options);
  State* raw_state = state.get();
  state->ack_thread = std::thread([raw_state] { raw_state->AckLoop(); });
  return std::unique_ptr<JournalPublisher>(
      new JournalPublisher(std::move(state)));
}

absl::StatusOr<std::uint64_t> JournalPublisher::Publish(
    std::uint64_t first_index, std::span<const std::byte> group) {
  return PublishWithId(first_index, group,
                       absl::StrCat(state_->options.epoch, "-", first_index));
}

absl::StatusOr<std::uint64_t> JournalPublisher::PublishEpochMarker(
    std::uint64_t next_index) {
  const std::vector<std::byte> marker =
      EncodeEpochMarker(state_->options.epoch, next_index);
  return PublishWithId(next_index, marker,
                       absl::StrCat(state_->options.epoch, "-marker"));
}

absl::StatusOr<std::uint64_t> JournalPublisher::PublishWithId(
    std::uint64_t first_index, std::span<const std::byte> group,
    const std::string& msg_id) {
  State& st = *state_;
  std::uint64_t message = 0;
  std::string expected_last_msg_id;
  {
    std::unique_lock lock(st.mu);
    const bool room = st.cv.wait_for(lock, st.options.ack_timeout, [&] {
      return !st.failure.ok() ||
             st.published - st.acknowledged < st.options.window;
    });
    if (!st.failure.ok()) return st.failure;
    if (!room) {
      return absl::DeadlineExceededError(
          absl::StrCat("journal publisher for ", st.stream, ": window of ",
                       st.options.window, " messages still full after ",
                       st.options.ack_timeout.count(), " ms"));
    }
    message = ++st.published;
    State::Slot& slot = st.SlotOf(message);
    slot = State::Slot{};
    slot.message = message;
    slot.first_index = first_index;
    // The predecessor not yet acknowledged: its sequence (the expected last
    // one) is only this publisher's guess, which another writer's message
    // could take; its Msg-Id pins it to this publisher's message.
    if (message > 1 && st.acknowledged < message - 1) {
      slot.expected_last_msg_id = st.last_msg_id;
    }
    st.last_msg_id = msg_id;
    expected_last_msg_id = slot.expected_last_msg_id;
    slot.sent = Clock::now();
    st.max_in_flight =
        std::max(st.max_in_flight,
                 static_cast<std::uint32_t>(st.published - st.acknowledged));
  }
  const std::string reply = absl::StrCat(st.inbox, ".", message);
  const std::string expected_last = absl::StrCat(st.base + message - 1);
  natsMsg* raw = nullptr;
  natsStatus s = natsMsg_Create(&raw, st.subject.c_str(), reply.c_str(),
                                reinterpret_cast<const char*>(group.data()),
                                static_cast<int>(group.size()));
  MessageHandle msg(raw);
  if (s == NATS_OK)
    s = natsMsgHeader_Set(msg.get(), "Nats-Msg-Id", msg_id.c_str());
  if (s == NATS_OK) {
    s = natsMsgHeader_Set(msg.get(), "Nats-Expected-Last-Sequence",
                          expected_last.c_str());
  }
  if (s == NATS_OK && !expected_last_msg_id.empty()) {
    s = natsMsgHeader_Set(msg.get(), "Nats-Expected-Last-Msg-Id",
                          expected_last_msg_id.c_str());
  }
  if (s == NATS_OK) {
    s = natsMsgHeader_Set(msg.get(), "Nats-Expected-Stream", st.stream.c_str());
  }
  if (s == NATS_OK) s = natsConnection_PublishMsg(st.conn.get(), msg.get());
  if (s != NATS_OK) {
    std::lock_guard lock(st.mu);
    st.FailLocked(PublisherFailure::kConnectionClosed,
                  NatsError(s, absl::StrCat("journal publisher for ", st.stream,
                                            ": publish message ", message)));
    return st.failure;
  }
  return message;
}

absl::Status JournalPublisher::Flush(std::chrono::milliseconds timeout) {
  State& st = *state_;
  std::unique_lock lock(st.mu);
  const bool done = st.cv.wait_for(lock, timeout, [&] {
    return !st.failure.ok() || st.reported == st.published;
  });
  if (!st.failure.ok()) return st.failure;
  if (!done) {
    return absl::DeadlineExceededError(absl::StrCat(
        "journal publisher for ", st.stream, ": ",
        st.published - st.acknowledged, " messages not acknowledged after ",
        timeout.count(), " ms"));
  }
  return absl::OkStatus();
}

absl::Status JournalPublisher::failure() const {
  std::lock_guard lock(state_->mu);
  return state_->failure;
}

PublisherFailure JournalPublisher::failure_kind() const {
  std::lock_guard lock(state_->mu);
  return state_->failure_kind;
}

PublisherProgress JournalPublisher::progress() const {
  std::lock_guard lock(state_->mu);
  return PublisherProgress{.published = state_->published,
                           .acknowledged = state_->acknowledged,
                           .last_stream_sequence = state_->last_sequence,
                           .max_in_flight = state_->max_in_flight,
                           .refused = state_->refused};
}

std::uint64_t JournalPublisher::base_sequence() const { return state_->base; }

}  // namespace orderwire::replication
