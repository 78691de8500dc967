// Fuzz target: client::Session on what the network hands it.
//
// A session (client/session.h) takes report datagrams from a socket anyone
// can send to, so everything it decides from them is fuzzed here: the
// report-sequence order, duplicates and holes, the primary check against
// the command it answers, SequenceGap, Busy and ReportsGone, and bytes that
// are no datagram at all.
//
// Each input is a script of steps (FuzzedDataProvider): submit a command,
// send the session a datagram of raw bytes, send it a well-formed report
// datagram built from the input (mostly near the expected report sequence
// and answering the oldest command, so the deep paths are reached), or Poll
// after some milliseconds. The "service" is a loopback UDP socket of the
// harness; loopback delivery is synchronous, so a datagram sent is there at
// the next Poll.
//
// Invariants, checked after every step:
//  * Poll never crashes; an error is DataLoss or Unavailable and ends the
//    session: every later Poll and Submit returns an error too.
//  * Reports reach the callback in strictly increasing report sequence,
//    each once, from first_report_sequence on, one after another except
//    where a ReportsGone said the ones between are gone.
//  * counters().reports equals the callbacks made and the sum of
//    PollResult::reports; answered() <= submitted; unanswered() <= window.
#include <fuzzer/FuzzedDataProvider.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/clock.h"
#include "client/session.h"
#include "codec/datagram.h"
#include "codec/messages.h"
#include "fuzz/fuzz_check.h"
#include "net/udp.h"

namespace orderwire {
namespace {

constexpr std::uint32_t kSessionId = 7;
constexpr std::uint32_t kWindow = 8;
constexpr std::uint64_t kAccount = 42;

// The harness's "service": a non-blocking loopback socket, made once.
struct Service {
  int fd = -1;
  net::Endpoint endpoint;

  Service() {
    fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    FUZZ_CHECK(fd >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    FUZZ_CHECK(
        ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    FUZZ_CHECK(
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    auto parsed = net::Endpoint::Parse("127.0.0.1:" +
                                       std::to_string(ntohs(address.sin_port)));
    FUZZ_CHECK(parsed.ok());
    endpoint = *parsed;
  }

  // Throws away what the session sent.
  void Drain() const {
    std::array<std::byte, 65536> buffer{};
    while (::recv(fd, buffer.data(), buffer.size(), 0) > 0) {
    }
  }
};

const Service& TheService() {
  static const Service* const service = new Service();
  return *service;
}

// The commands the harness submitted, in order: what a primary must echo.
struct Submitted {
  codec::Kind kind;
  std::uint64_t client_order_id;
  std::uint64_t order_id;
};

class Harness {
 public:
  explicit Harness(FuzzedDataProvider& input) : input_(input) {}

  void Run() {
    first_report_ = input_.ConsumeIntegralInRange<std::uint64_t>(1, 4);
    first_sequence_ = input_.ConsumeIntegralInRange<std::uint64_t>(1, 4);
    expected_report_ = first_report_;
    client::SessionOptions options;
    options.target = TheService().endpoint;
    options.session_id = kSessionId;
    options.window = kWindow;
    options.retransmit_timeout_ms = 5;
    options.explain_after_ms = 20;
    options.first_sequence = first_sequence_;
    options.first_report_sequence = first_report_;
    options.send = net::SendPath::kSendmmsg;
    options.on_report = [this](const codec::FrameView& report) {
      OnReport(report);
    };
    auto opened = client::Session::Open(std::move(options));
    FUZZ_CHECK(opened.ok());
    session_ = std::move(*opened);
    now_ns_ = base::MonotonicNs();

    // The first send binds the session's socket: learn its port.
    SubmitOrder();
    Poll();
    sockaddr_in address{};
    socklen_t length = sizeof address;
    FUZZ_CHECK(::getsockname(session_->fd(),
                             reinterpret_cast<sockaddr*>(&address),
                             &length) == 0);
    session_address_ = address;
    session_address_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    for (int step = 0; step < 64 && input_.remaining_bytes() > 0; ++step) {
      switch (input_.ConsumeIntegralInRange<int>(0, 7)) {
        case 0:
          SubmitOrder();
          break;
        case 1:
          SubmitCancel();
          break;
        case 6:
          SubmitMassCancel();
          break;
        case 7:
          SubmitGoodbye();
          break;
        case 2:
          SendRaw();
          break;
        case 3:
        case 4:
          SendReports();
          break;
        default:
          now_ns_ +=
              input_.ConsumeIntegralInRange<std::int64_t>(0, 30) * 1'000'000;
          Poll();
          break;
      }
      CheckCounters();
    }
    Poll();
    CheckCounters();
    TheService().Drain();
  }

 private:
  void SubmitOrder() {
    codec::NewLimit order{};
    order.account_id = kAccount;
    order.client_order_id = ++next_client_order_id_;
    order.instrument_id = 1;
    order.side = input_.ConsumeBool() ? codec::Side::kBuy : codec::Side::kSell;
    order.time_in_force = codec::TimeInForce::kGoodTillCancel;
    order.price = input_.ConsumeIntegralInRange<std::int64_t>(1, 1000);
    order.quantity = input_.ConsumeIntegralInRange<std::uint64_t>(1, 100);
    Record(session_->Submit(order),
           {codec::Kind::kNewLimit, order.client_order_id, 0});
  }

  void SubmitCancel() {
    codec::CancelByOrder cancel{};
    cancel.account_id = kAccount;
    cancel.order_id = input_.ConsumeIntegralInRange<std::uint64_t>(1, 16);
    Record(session_->Submit(cancel),
           {codec::Kind::kCancelByOrder, 0, cancel.order_id});
  }

  // Its request id is kept as the Submitted's client_order_id.
  void SubmitMassCancel() {
    codec::MassCancel cancel{};
    cancel.account_id = kAccount;
    cancel.request_id = input_.ConsumeIntegral<std::uint8_t>();
    cancel.side = codec::MassCancelSide::kBoth;
    cancel.scope = codec::MassCancelScope::kAccount;
    Record(session_->Submit(cancel),
           {codec::Kind::kMassCancel, cancel.request_id, 0});
  }

  // Its request id is kept as the Submitted's client_order_id.
  void SubmitGoodbye() {
    codec::Goodbye goodbye{};
    goodbye.account_id = kAccount;
    goodbye.request_id = input_.ConsumeIntegral<std::uint8_t>();
    Record(session_->Submit(goodbye),
           {codec::Kind::kGoodbye, goodbye.request_id, 0});
  }

  void Record(const absl::StatusOr<std::uint64_t>& sequence,
              const Submitted& command) {
    if (failed_) {
      FUZZ_CHECK(!sequence.ok());
      return;
    }
    if (!sequence.ok()) {
      FUZZ_CHECK(absl::IsResourceExhausted(sequence.status()));
      FUZZ_CHECK(session_->window_full());
      return;
    }
    FUZZ_CHECK(*sequence == first_sequence_ + submitted_.size());
    submitted_.push_back(command);
  }

  void SendRaw() {
    const std::string bytes = input_.ConsumeRandomLengthString(1472);
    SendToSession(bytes.data(), bytes.size());
  }

  // One report datagram of 1 to 4 frames, built from the input, mostly
  // plausible: sequences near the next expected report, primaries that
  // echo the oldest unanswered command.
  void SendReports() {
    std::array<std::byte, codec::kMaxDatagramSize> buffer{};
    const std::uint32_t session_id =
        input_.ConsumeIntegralInRange<int>(0, 15) == 0 ? kSessionId + 1
                                                       : kSessionId;
    codec::DatagramBuilder builder(buffer, session_id, false);
    const int frames = input_.ConsumeIntegralInRange<int>(1, 4);
    std::uint64_t sequence =
        expected_report_ + input_.ConsumeIntegralInRange<std::uint64_t>(0, 3);
    sequence = sequence > 1 ? sequence - 1 : sequence;
    for (int i = 0; i < frames; ++i) {
      const Submitted oldest = Oldest();
      const bool echo = input_.ConsumeIntegralInRange<int>(0, 7) != 0;
      const std::uint64_t any = input_.ConsumeIntegral<std::uint8_t>();
      const int kind = input_.ConsumeIntegralInRange<int>(0, 10);
      const codec::CodecError error =
          kind < 5
              ? AppendOrderReport(builder, kind, sequence++, oldest, echo, any)
          : kind == 8
              ? AppendMassCancelDone(builder, sequence++, oldest, echo, any)
          : kind == 10
              ? AppendSessionClosed(builder, sequence++, oldest, echo, any)
              : AppendSessionReport(builder, kind);
      FUZZ_CHECK(error == codec::CodecError::kOk);
    }
    const auto bytes = builder.bytes();
    SendToSession(bytes.data(), bytes.size());
  }

  // A report of an order (`kind` 0 to 4) at `sequence`, answering
  // `oldest` when `echo`, else naming `any`.
  codec::CodecError AppendOrderReport(codec::DatagramBuilder& builder, int kind,
                                      std::uint64_t sequence,
                                      const Submitted& oldest, bool echo,
                                      std::uint64_t any) {
    switch (kind) {
      case 0: {
        codec::Accepted a{};
        a.order_id = ++next_order_id_;
        a.account_id = echo ? kAccount : any;
        a.client_order_id = echo ? oldest.client_order_id : any;
        a.instrument_id = 1;
        a.side = codec::Side::kBuy;
        a.time_in_force = codec::TimeInForce::kGoodTillCancel;
        a.price = 1;
        a.quantity = 1;
        return builder.Append(sequence, a);
      }
      case 1: {
        codec::Rejected r{};
        r.account_id = kAccount;
        r.client_order_id = oldest.client_order_id;
        r.command_kind = echo ? oldest.kind : codec::Kind::kReplace;
        r.reason = codec::RejectReason::kUnknownOrder;
        return builder.Append(sequence, r);
      }
      case 2: {
        codec::Cancelled c{};
        c.order_id = echo ? oldest.order_id : any;
        c.account_id = kAccount;
        c.client_order_id = oldest.client_order_id;
        c.instrument_id = 1;
        c.cancelled_quantity = 1;
        static constexpr codec::CancelReason kReasons[] = {
            codec::CancelReason::kRequested, codec::CancelReason::kSelfTrade,
            codec::CancelReason::kMassCancel,
            codec::CancelReason::kCancelOnDisconnect};
        c.reason = kReasons[input_.ConsumeIntegralInRange<int>(0, 3)];
        return builder.Append(sequence, c);
      }
      case 3: {
        codec::Filled f{};
        f.order_id = any;
        f.account_id = kAccount;
        f.client_order_id = oldest.client_order_id;
        f.match_id = any;
        f.instrument_id = 1;
        f.side = codec::Side::kSell;
        f.liquidity = codec::Liquidity::kMaker;
        f.price = 1;
        f.quantity = 1;
        return builder.Append(sequence, f);
      }
      default: {
        codec::Replaced r{};
        r.order_id = echo ? oldest.order_id : any;
        r.account_id = kAccount;
        r.client_order_id = any;
        r.price = 1;
        r.quantity = 1;
        r.priority_kept = codec::PriorityKept::kNo;
        return builder.Append(sequence, r);
      }
    }
  }

  // A MassCancelDone at `sequence`, answering `oldest` when `echo` (its
  // request id), else naming `any`.
  codec::CodecError AppendMassCancelDone(codec::DatagramBuilder& builder,
                                         std::uint64_t sequence,
                                         const Submitted& oldest, bool echo,
                                         std::uint64_t any) {
    codec::MassCancelDone d{};
    d.account_id = kAccount;
    d.request_id = echo ? oldest.client_order_id : any;
    d.side = codec::MassCancelSide::kBoth;
    d.scope = codec::MassCancelScope::kAccount;
    d.cancelled_orders = static_cast<std::uint32_t>(any);
    return builder.Append(sequence, d);
  }

  // A SessionClosed at `sequence`: a Goodbye's answering `oldest` when
  // `echo` (its request id), else a lapse's or one naming `any`.
  codec::CodecError AppendSessionClosed(codec::DatagramBuilder& builder,
                                        std::uint64_t sequence,
                                        const Submitted& oldest, bool echo,
                                        std::uint64_t any) {
    codec::SessionClosed d{};
    d.account_id = echo ? kAccount : 0;
    d.request_id = echo ? oldest.client_order_id : any;
    d.reason = echo || any % 2 == 0 ? codec::SessionCloseReason::kGoodbye
                                    : codec::SessionCloseReason::kLapsed;
    d.cancelled_orders = static_cast<std::uint32_t>(any);
    return builder.Append(sequence, d);
  }

  // A session report (`kind` 5 to 7, 9): SequenceGap, Busy, ReportsGone,
  // HeartbeatAck (its next_report near the next expected).
  codec::CodecError AppendSessionReport(codec::DatagramBuilder& builder,
                                        int kind) {
    switch (kind) {
      case 9: {
        codec::HeartbeatAck ack{};
        ack.nonce = input_.ConsumeIntegral<std::uint8_t>();
        ack.expected_sequence =
            first_sequence_ +
            input_.ConsumeIntegralInRange<std::uint64_t>(0, 12);
        ack.next_report = expected_report_ +
                          input_.ConsumeIntegralInRange<std::uint64_t>(0, 3);
        return builder.Append(0, ack);
      }
      case 5: {
        codec::SequenceGap gap{};
        gap.expected_sequence =
            first_sequence_ +
            input_.ConsumeIntegralInRange<std::uint64_t>(0, 12);
        return builder.Append(0, gap);
      }
      case 6: {
        codec::Busy busy{};
        busy.expected_sequence =
            input_.ConsumeIntegralInRange<std::uint64_t>(0, 12);
        busy.cause = codec::BusyCause::kJournalFull;
        return builder.Append(0, busy);
      }
      default: {
        codec::ReportsGone gone{};
        gone.resend_command =
            input_.ConsumeIntegralInRange<std::uint64_t>(0, 16);
        gone.resend_from = expected_report_ +
                           input_.ConsumeIntegralInRange<std::uint64_t>(0, 4);
        return builder.Append(0, gone);
      }
    }
  }

  [[nodiscard]] Submitted Oldest() const {
    const std::uint64_t answered = session_->answered();
    if (answered < submitted_.size()) return submitted_[answered];
    return {codec::Kind::kNewLimit, 0, 0};
  }

  void SendToSession(const void* data, std::size_t size) {
    // A full socket buffer drops it, as the network would.
    (void)::sendto(TheService().fd, data, size, 0,
                   reinterpret_cast<const sockaddr*>(&session_address_),
                   sizeof session_address_);
  }

  void Poll() {
    const absl::StatusOr<client::PollResult> result = session_->Poll(now_ns_);
    TheService().Drain();
    if (failed_) {
      FUZZ_CHECK(!result.ok());
      return;
    }
    if (!result.ok()) {
      FUZZ_CHECK(absl::IsDataLoss(result.status()) ||
                 absl::IsUnavailable(result.status()));
      failed_ = true;
      return;
    }
    polled_reports_ += result->reports;
  }

  void OnReport(const codec::FrameView& report) {
    FUZZ_CHECK(!report.is_command());
    const std::uint64_t sequence = report.sequence();
    const std::uint64_t gone = session_->counters().reports_gone;
    if (delivered_ == 0) {
      FUZZ_CHECK(sequence == first_report_ || gone > gone_at_last_);
      FUZZ_CHECK(sequence >= first_report_);
    } else {
      FUZZ_CHECK(sequence > last_delivered_);
      FUZZ_CHECK(sequence == last_delivered_ + 1 || gone > gone_at_last_);
    }
    last_delivered_ = sequence;
    gone_at_last_ = gone;
    expected_report_ = sequence + 1;
    ++delivered_;
  }

  void CheckCounters() const {
    const client::SessionCounters& counters = session_->counters();
    FUZZ_CHECK(counters.reports == delivered_);
    // A failing Poll may have delivered reports before it failed.
    FUZZ_CHECK(failed_ ? polled_reports_ <= delivered_
                       : polled_reports_ == delivered_);
    FUZZ_CHECK(session_->answered() <= submitted_.size());
    FUZZ_CHECK(session_->unanswered() <= kWindow);
    FUZZ_CHECK(counters.submitted == submitted_.size());
    FUZZ_CHECK(counters.acknowledged + counters.unconfirmed ==
               session_->answered());
    FUZZ_CHECK(session_->next_sequence() ==
               first_sequence_ + submitted_.size());
  }

  FuzzedDataProvider& input_;
  std::unique_ptr<client::Session> session_;
  sockaddr_in session_address_{};
  std::int64_t now_ns_ = 0;
  std::uint64_t first_report_ = 1;
  std::uint64_t first_sequence_ = 1;
  std::uint64_t expected_report_ = 1;
  std::uint64_t next_client_order_id_ = 0;
  std::uint64_t next_order_id_ = 0;
  std::vector<Submitted> submitted_;
  std::uint64_t delivered_ = 0;
  std::uint64_t last_delivered_ = 0;
  std::uint64_t gone_at_last_ = 0;
  std::uint64_t polled_reports_ = 0;
  bool failed_ = false;
};

}  // namespace
}  // namespace orderwire

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  FuzzedDataProvider input(data, size);
  orderwire::Harness harness(input);
  harness.Run();
  return 0;
}
