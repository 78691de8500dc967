#include "replication/journal_publisher.h"

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
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
// Nats-Expected-Last-Msg-Id refused: the same kind of refusal (an
// expectation about the stream's end), decided the same way.
constexpr int kWrongLastMsgId = 10070;  // JSStreamWrongLastMsgIDErr
constexpr std::int64_t kAckPollMs = 20;
// JetStream's "code" for a request it cannot serve now (e.g. 10008,
// "JetStream system temporarily unavailable"): retried like no-responders.
constexpr int kTemporarilyUnavailable = 503;
// Backoff before a republish: 50, 100, 200, 200, ... ms.
constexpr std::chrono::milliseconds kFirstBackoff{50};
constexpr std::chrono::milliseconds kMaxBackoff{200};
// A message whose current attempt has had no reply for this long is
// republished (the request reached a server that died before answering):
// ack_timeout / 10, within these bounds.
constexpr std::chrono::milliseconds kMinSilence{200};
constexpr std::chrono::milliseconds kMaxSilence{1000};

// A copy of `original` (subject, payload, every header) that is answered on
// `reply`: the republished message is byte for byte the first one, only the
// reply subject tells its attempt.
natsStatus CopyWithReply(natsMsg* original, const std::string& reply,
                         MessageHandle& out) {
  natsMsg* raw = nullptr;
  natsStatus s = natsMsg_Create(&raw, natsMsg_GetSubject(original),
                                reply.c_str(), natsMsg_GetData(original),
                                natsMsg_GetDataLength(original));
  MessageHandle copy(raw);
  const char** keys = nullptr;
  int key_count = 0;
  if (s == NATS_OK) s = natsMsgHeader_Keys(original, &keys, &key_count);
  for (int k = 0; s == NATS_OK && k < key_count; ++k) {
    const char** values = nullptr;
    int value_count = 0;
    s = natsMsgHeader_Values(original, keys[k], &values, &value_count);
    for (int v = 0; s == NATS_OK && v < value_count; ++v) {
      s = natsMsgHeader_Add(copy.get(), keys[k], values[v]);
    }
    std::free(static_cast<void*>(values));
  }
  std::free(static_cast<void*>(keys));
  if (s == NATS_NOT_FOUND) s = NATS_OK;  // a message without headers
  if (s == NATS_OK) out = std::move(copy);
  return s;
}

// A JetStream publish acknowledgement: {"stream":S,"seq":N[,"duplicate":true]}
// or {"error":{"code":C,"err_code":E,"description":D}}.
struct ParsedAck {
  bool ok = false;
  std::uint64_t sequence = 0;
  bool duplicate = false;
  int error_code = 0;  // err_code: the JetStream error
  int http_code = 0;   // code: 503 for "temporarily unavailable"
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
    std::int64_t http_code = 0;
    std::string_view description;
    if (error.at_key("err_code").get(code) != simdjson::SUCCESS) code = 0;
    if (error.at_key("code").get(http_code) != simdjson::SUCCESS) {
      http_code = 0;
    }
    ack.http_code = static_cast<int>(http_code);
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
  // Acknowledgements arrive on <inbox>.<message> (first attempt) or
  // <inbox>.<message>.<attempt> (republished).
  std::string inbox;
  std::chrono::milliseconds silence{kMinSilence};  // see kMinSilence
  internal::ConnectionHandle conn;
  internal::JetStreamHandle js;  // reads a stored message (VerifyRefusal)
  internal::SubscriptionHandle sub;

  struct Slot {
    std::uint64_t message = 0;
    std::uint64_t first_index = 0;
    std::string expected_last_msg_id;  // empty: the header was not sent
    std::string msg_id;
    Clock::time_point sent;       // first attempt: ack_timeout runs from here
    Clock::time_point last_sent;  // current attempt
    std::uint32_t attempt = 0;    // 0: the first send
    // The message as first built, kept until acknowledged to republish it.
    MessageHandle wire;
    // The current attempt's outcome is known (or an earlier attempt's
    // success: a stored message stays stored).
    bool done = false;
    bool wrong_last = false;  // refused with 10071: VerifyRefusal decides
    std::string refusal;      // its description
    std::uint64_t sequence = 0;
    bool duplicate = false;
    absl::Status error;
    PublisherFailure error_kind = PublisherFailure::kNone;
  };

  mutable std::mutex mu;
  std::condition_variable cv;
  // Serializes every send (first sends and republishes) so that the stream
  // receives them in message order. Taken before mu.
  std::mutex send_mu;
  std::vector<Slot> ring;  // message N lives in ring[N % window]
  std::uint64_t base = 0;
  std::uint64_t published = 0;
  std::uint64_t acknowledged = 0;
  std::uint64_t reported = 0;  // acknowledgements handed to on_ack
  std::uint64_t last_sequence = 0;
  std::uint32_t max_in_flight = 0;
  std::uint64_t refused = 0;
  std::string last_msg_id;        // the Nats-Msg-Id of message `published`
  std::uint64_t republished = 0;  // messages sent again
  std::uint64_t republish_rounds = 0;
  // A republish from the first unacknowledged message is due at
  // republish_at (after the backoff), because of republish_cause.
  bool republish_due = false;
  Clock::time_point republish_at;
  std::string republish_cause;
  std::string last_republish_cause;           // for the ack timeout's message
  std::uint32_t rounds_without_progress = 0;  // the backoff's exponent
  // Set when an acknowledgement ends a stall of that many republish
  // rounds; AckLoop logs it and clears it.
  std::uint32_t stall_ended_after = 0;
  std::uint64_t verify_message = 0;  // a 10071 to look into; 0: none
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

  void Event(const std::string& line) const {
    if (options.on_event) {
      options.on_event(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  void AckLoop();
  void HandleReply(natsMsg* msg);
  // Moves `acknowledged` over every completed slot in order; returns the
  // acknowledgements to report. Caller holds mu.
  void AdvanceLocked(std::vector<PublishAck>& out);
  // Asks for a republish from the first unacknowledged message after the
  // backoff (unless one is already due). Caller holds mu.
  void ScheduleRepublishLocked(std::string cause);
  // Sends every unacknowledged message that was sent and has no success yet
  // again, in order, as a new attempt. Caller holds neither lock.
  void Republish();
  // Message `message` (the first unacknowledged) was refused with 10071:
  // reads the stream at the sequence it was meant to get, unlocked. Caller
  // holds neither lock.
  void VerifyRefusal(std::uint64_t message);
  // The first send of `message`, in order with republishes.
  natsStatus SendFirst(std::uint64_t message, MessageHandle wire);
};

void JournalPublisher::State::ScheduleRepublishLocked(std::string cause) {
  if (republish_due || !failure.ok()) return;
  republish_due = true;
  const auto backoff = std::min<std::chrono::milliseconds>(
      kMaxBackoff,
      kFirstBackoff * (1U << std::min(rounds_without_progress, 4U)));
  republish_at = Clock::now() + backoff;
  republish_cause = std::move(cause);
}

natsStatus JournalPublisher::State::SendFirst(std::uint64_t message,
                                              MessageHandle wire) {
  std::lock_guard send_lock(send_mu);
  natsStatus s = natsConnection_PublishMsg(conn.get(), wire.get());
  // Refused while the connection reconnects (its buffer full): kept, and
  // republished like a message that had no reply.
  const bool retry_later = s != NATS_OK && !natsConnection_IsClosed(conn.get());
  if (retry_later) s = NATS_OK;
  std::lock_guard lock(mu);
  Slot& slot = SlotOf(message);
  if (s == NATS_OK && slot.message == message && message > acknowledged) {
    slot.wire = std::move(wire);
    slot.last_sent = retry_later ? Clock::now() - silence : Clock::now();
  }
  return s;
}

void JournalPublisher::State::Republish() {
  std::lock_guard send_lock(send_mu);
  std::vector<MessageHandle> copies;
  std::string cause;
  std::uint64_t from = 0;
  std::uint32_t stall_round = 0;
  natsStatus s = NATS_OK;
  {
    std::lock_guard lock(mu);
    republish_due = false;
    if (!failure.ok()) return;
    cause = std::move(republish_cause);
    republish_cause.clear();
    last_republish_cause = cause;
    const auto now = Clock::now();
    for (std::uint64_t m = acknowledged + 1; m <= published; ++m) {
      Slot& slot = SlotOf(m);
      // Not sent yet: Publish sends it after this round (send_mu).
      if (slot.wire == nullptr) break;
      // Stored already (its success came before an earlier one's).
      if (slot.done && slot.error.ok() && !slot.wrong_last) continue;
      ++slot.attempt;
      slot.done = false;
      slot.wrong_last = false;
      slot.error = absl::OkStatus();
      slot.last_sent = now;
      MessageHandle copy;
      s = CopyWithReply(slot.wire.get(),
                        absl::StrCat(inbox, ".", m, ".", slot.attempt), copy);
      if (s != NATS_OK) break;
      if (from == 0) from = m;
      copies.push_back(std::move(copy));
    }
    republished += copies.size();
    ++republish_rounds;
    stall_round = ++rounds_without_progress;
  }
  for (const MessageHandle& copy : copies) {
    if (s != NATS_OK) break;
    s = natsConnection_PublishMsg(conn.get(), copy.get());
  }
  if (s != NATS_OK && !natsConnection_IsClosed(conn.get())) {
    // Reconnecting (its buffer full): the silence timer sends them again.
    return;
  }
  if (s != NATS_OK) {
    std::lock_guard lock(mu);
    FailLocked(PublisherFailure::kConnectionClosed,
               NatsError(s, absl::StrCat("journal publisher for ", stream,
                                         ": republish from message ", from)));
    return;
  }
  // A re-election of several seconds is dozens of rounds: the log says
  // rounds 1, 2, 4, 8, ... of a stall, and when it ends (AdvanceLocked).
  if (!copies.empty() && (stall_round & (stall_round - 1)) == 0) {
    Event(absl::StrCat("journal publisher for ", stream, ": republished ",
                       copies.size(), " message(s) from message ", from,
                       " (round ", stall_round,
                       " without an acknowledgement; same Msg-Id and "
                       "expectations; ",
                       cause, ")"));
  }
}

void JournalPublisher::State::VerifyRefusal(std::uint64_t message) {
  std::string msg_id;
  std::uint32_t attempt = 0;
  std::string refusal;
  {
    std::lock_guard lock(mu);
    Slot& slot = SlotOf(message);
    if (!failure.ok() || slot.message != message || !slot.wrong_last) return;
    msg_id = slot.msg_id;
    attempt = slot.attempt;
    refusal = slot.refusal;
  }
  const std::uint64_t wanted = base + message;
  natsMsg* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetMsg(&raw, js.get(), stream.c_str(), wanted, nullptr, &jerr);
  MessageHandle stored(raw);
  const char* stored_id = nullptr;
  if (s == NATS_OK &&
      natsMsgHeader_Get(stored.get(), "Nats-Msg-Id", &stored_id) != NATS_OK) {
    stored_id = nullptr;
  }
  std::lock_guard lock(mu);
  Slot& slot = SlotOf(message);
  if (!failure.ok() || slot.message != message || !slot.wrong_last ||
      slot.attempt != attempt) {
    return;
  }
  const std::string what =
      absl::StrCat("journal publisher for ", stream, ": message ", message,
                   " (journal index ", slot.first_index, ", Msg-Id ", msg_id,
                   ", Nats-Expected-Last-Sequence ", wanted - 1, ")");
  if (s == NATS_OK) {
    if (stored_id != nullptr && msg_id == stored_id) {
      // Ours: stored by an earlier attempt, its dedupe entry not (yet)
      // known to the server that refused the later one.
      slot.wrong_last = false;
      slot.sequence = wanted;
      slot.duplicate = true;
      return;
    }
    slot.wrong_last = false;
    slot.error_kind = PublisherFailure::kFenced;
    slot.error = absl::FailedPreconditionError(absl::StrCat(
        what, ": fenced: ", refusal, ", and stream sequence ", wanted,
        " holds Msg-Id ", stored_id != nullptr ? stored_id : "(none)",
        ": another writer has appended to the stream since this one's "
        "view; this publisher is stale and stopped (fail-stop)"));
    return;
  }
  // Nothing at `wanted` (the stream ends at wanted - 1: the expectation was
  // right) or the stream cannot be read now: not a fence, send it again.
  ScheduleRepublishLocked(absl::StrCat(
      "message ", message, " refused with ", refusal, " but stream sequence ",
      wanted, " is ",
      s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr
          ? std::string("empty")
          : absl::StrCat("unreadable now (", natsStatus_GetText(s), ")")));
}

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
    } else if (s == NATS_NO_RESPONDERS) {
      // libnats drops the 503 reply itself: which message it answered is
      // unknown. The stream has no leader (a re-election): none of the
      // unacknowledged messages after it can be stored either.
      ScheduleRepublishLocked(
          "a publish was answered 503 no responders: the stream has no "
          "leader now");
    } else if (s != NATS_TIMEOUT) {
      FailLocked(PublisherFailure::kConnectionClosed,
                 NatsError(s, absl::StrCat("journal publisher for ", stream,
                                           ": reading acknowledgements")));
    }
    AdvanceLocked(acks);
    // The oldest unacknowledged message decides the timeout.
    const auto now = Clock::now();
    if (failure.ok() && acknowledged < published) {
      const Slot& oldest = SlotOf(acknowledged + 1);
      const auto waited = now - oldest.sent;
      if (!oldest.done && waited > options.ack_timeout) {
        FailLocked(
            PublisherFailure::kAckTimeout,
            absl::DeadlineExceededError(absl::StrCat(
                "journal publisher for ", stream, ": message ", oldest.message,
                " (journal index ", oldest.first_index,
                ", expected after stream sequence ", base + oldest.message - 1,
                ") not acknowledged within ", options.ack_timeout.count(),
                " ms (", oldest.attempt + 1, " attempt(s)",
                last_republish_cause.empty()
                    ? ""
                    : absl::StrCat("; last republished because ",
                                   last_republish_cause),
                "); it may or may not be in the stream. Publisher "
                "stopped (fail-stop)")));
      } else if (!oldest.done && oldest.wire != nullptr &&
                 now - oldest.last_sent > silence) {
        ScheduleRepublishLocked(absl::StrCat("message ", oldest.message,
                                             " had no reply within ",
                                             silence.count(), " ms"));
      }
    }
    const bool failed = !failure.ok();
    const bool republish = !failed && republish_due && now >= republish_at;
    const std::uint64_t verify = failed ? 0 : verify_message;
    verify_message = 0;
    const std::uint32_t stall_ended = std::exchange(stall_ended_after, 0);
    const std::uint64_t acknowledged_now = acknowledged;
    lock.unlock();
    if (stall_ended != 0) {
      Event(absl::StrCat("journal publisher for ", stream,
                         ": acknowledged again (up to message ",
                         acknowledged_now, ") after ", stall_ended,
                         " republish round(s)"));
    }
    if (!acks.empty()) {
      if (options.on_ack) {
        for (const auto& ack : acks) options.on_ack(ack);
      }
      std::lock_guard relock(mu);
      reported += acks.size();
      cv.notify_all();
    }
    if (verify != 0) VerifyRefusal(verify);
    if (republish) Republish();
    if (failed && s != NATS_OK && s != NATS_TIMEOUT &&
        s != NATS_NO_RESPONDERS) {
      break;
    }
  }
}

void JournalPublisher::State::HandleReply(natsMsg* msg) {
  const char* reply_subject = natsMsg_GetSubject(msg);
  absl::string_view token(reply_subject);
  if (token.size() <= inbox.size() + 1) return;
  token.remove_prefix(inbox.size() + 1);
  absl::string_view attempt_token;
  if (const auto dot = token.find('.'); dot != absl::string_view::npos) {
    attempt_token = token.substr(dot + 1);
    token = token.substr(0, dot);
  }
  std::uint64_t message = 0;
  std::uint32_t attempt = 0;
  if (!absl::SimpleAtoi(token, &message) || message == 0 ||
      message <= acknowledged || message > published ||
      (!attempt_token.empty() && !absl::SimpleAtoi(attempt_token, &attempt))) {
    return;  // not ours, or a late reply to a message already settled
  }
  Slot& slot = SlotOf(message);
  if (slot.message != message) return;
  // A success already recorded stays (a stored message stays stored).
  if (slot.done && slot.error.ok() && !slot.wrong_last) return;
  const bool current = attempt == slot.attempt;
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
    if (current) {
      ScheduleRepublishLocked(absl::StrCat(
          "message ", message,
          " was answered 503 no responders: the stream has no leader now"));
    }
    return;
  }
  auto parsed = ParseAck(parser, natsMsg_GetData(msg),
                         static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
  if (!parsed.ok()) {
    if (!current) return;
    slot.done = true;
    slot.error_kind = PublisherFailure::kRejected;
    slot.error = absl::DataLossError(
        absl::StrCat(what, ": ", parsed.status().message()));
    return;
  }
  if (parsed->ok) {
    // From any attempt: the message is stored at this sequence. A duplicate
    // with sequence 0 is one the server is still storing: its own reply
    // (or the next attempt's) will tell.
    if (parsed->duplicate && parsed->sequence == 0) return;
    slot.done = true;
    slot.wrong_last = false;
    slot.error = absl::OkStatus();
    slot.sequence = parsed->sequence;
    slot.duplicate = parsed->duplicate;
    return;
  }
  // Every refusal is counted as it comes (progress().refused), stale or
  // not; only the current attempt's is acted on.
  ++refused;
  // A refusal answers one attempt only; an older attempt's is stale.
  if (!current || slot.done) return;
  if (parsed->error_code == kWrongLastSequence ||
      parsed->error_code == kWrongLastMsgId) {
    // A fence, or the gap left by an earlier message that was not stored
    // (a re-election): AdvanceLocked/VerifyRefusal decide once it is the
    // first unacknowledged message.
    slot.done = true;
    slot.wrong_last = true;
    slot.refusal = absl::StrCat("JetStream error ", parsed->error_code, " (",
                                parsed->description, ")");
    return;
  }
  if (parsed->http_code == kTemporarilyUnavailable) {
    ScheduleRepublishLocked(
        absl::StrCat("message ", message, " refused for now: JetStream error ",
                     parsed->error_code, " (", parsed->description, ")"));
    return;
  }
  slot.done = true;
  slot.error_kind = PublisherFailure::kRejected;
  slot.error = absl::FailedPreconditionError(absl::StrCat(
      what, ": refused by JetStream, error ", parsed->error_code, " (",
      parsed->description, "). Publisher stopped (fail-stop)"));
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
    if (slot.wrong_last) {
      if (!republish_due) verify_message = slot.message;
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
    if (rounds_without_progress != 0) {
      stall_ended_after = rounds_without_progress;
      rounds_without_progress = 0;
    }
    out.push_back(PublishAck{
        .message = slot.message,
        .first_index = slot.first_index,
        .stream_sequence = slot.sequence,
        .duplicate = slot.duplicate,
        .latency = std::chrono::duration_cast<std::chrono::nanoseconds>(
            now - slot.sent)});
    slot.wire.reset();
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
  state->silence = std::clamp<std::chrono::milliseconds>(
      options.ack_timeout / 10, kMinSilence, kMaxSilence);
  auto conn = internal::Connect(options.servers, options.ack_timeout,
                                /*send_asap=*/true);
  if (!conn.ok()) return conn.status();
  state->conn = *std::move(conn);
  auto js = internal::JetStream(state->conn.get(), state->silence);
  if (!js.ok()) return js.status();
  state->js = *std::move(js);

  natsInbox* inbox = nullptr;
  natsStatus s = natsInbox_Create(&inbox);
  if (s != NATS_OK) return NatsError(s, "create a NATS inbox");
  state->inbox = inbox;
  natsInbox_Destroy(inbox);
  natsSubscription* raw_sub = nullptr;
  s = natsConnection_SubscribeSync(&raw_sub, state->conn.get(),
                                   absl::StrCat(state->inbox, ".>").c_str());
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
    slot.msg_id = msg_id;
    slot.sent = Clock::now();
    slot.last_sent = slot.sent;
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
  if (s == NATS_OK) s = st.SendFirst(message, std::move(msg));
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
                           .refused = state_->refused,
                           .republished = state_->republished,
                           .republish_rounds = state_->republish_rounds};
}

std::uint64_t JournalPublisher::base_sequence() const { return state_->base; }

}  // namespace orderwire::replication
