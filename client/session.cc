// The non-blocking order-entry session; see session.h.
#include "client/session.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "codec/datagram.h"
#include "codec/kind_table.h"

namespace orderwire::client {
namespace {

// Datagrams per send round and receive slots (without UDP_GRO).
constexpr std::size_t kBatch = 64;
// With UDP_GRO: fewer, larger receive slots (each up to 64 KiB).
constexpr std::size_t kGroSlots = 16;
// One slot of the frame ring: the largest command frame, rounded up.
constexpr std::size_t kFrameSlotBytes = 64;
static_assert(codec::kMaxCommandFrameSize <= kFrameSlotBytes);
constexpr std::int64_t kBusyBackoffMinNs = 1'000'000;
constexpr std::int64_t kBusyBackoffMaxNs = 50'000'000;

// What the primary report of a command must say.
absl::Status CheckPrimary(const codec::Command& command,
                          const codec::FrameView& report) {
  const auto mismatch = [&](std::string_view what) {
    return absl::DataLossError(
        absl::StrFormat("report %d (%s) does not answer command %d (%s): %s",
                        report.sequence(), codec::Name(report.kind()),
                        command.sequence, codec::Name(command.kind), what));
  };
  using codec::Kind;
  switch (report.kind()) {
    case Kind::kRejected: {
      const auto r = codec::View<codec::Rejected>::FromFrame(report)->ToModel();
      if (r.command_kind != command.kind) return mismatch("command_kind");
      return absl::OkStatus();
    }
    case Kind::kAccepted: {
      const auto a = codec::View<codec::Accepted>::FromFrame(report)->ToModel();
      if (command.kind != Kind::kNewLimit && command.kind != Kind::kNewMarket) {
        return mismatch("Accepted answers only new orders");
      }
      if (a.client_order_id != command.client_order_id.value() ||
          a.account_id != command.account_id.value()) {
        return mismatch("account or client_order_id");
      }
      return absl::OkStatus();
    }
    case Kind::kReplaced: {
      const auto r = codec::View<codec::Replaced>::FromFrame(report)->ToModel();
      if (command.kind != Kind::kReplace ||
          r.order_id != command.order_id.value()) {
        return mismatch("Replaced answers the Replace of that order");
      }
      return absl::OkStatus();
    }
    case Kind::kCancelled: {
      const auto c =
          codec::View<codec::Cancelled>::FromFrame(report)->ToModel();
      if (command.kind == Kind::kCancelByOrder &&
          c.order_id != command.order_id.value()) {
        return mismatch("order_id");
      }
      if (command.kind == Kind::kCancelByClient &&
          c.client_order_id != command.client_order_id.value()) {
        return mismatch("client_order_id");
      }
      if (command.kind != Kind::kCancelByOrder &&
          command.kind != Kind::kCancelByClient) {
        return mismatch("a requested cancel answers only a cancel");
      }
      return absl::OkStatus();
    }
    case Kind::kMassCancelDone: {
      const auto d =
          codec::View<codec::MassCancelDone>::FromFrame(report)->ToModel();
      if (command.kind != Kind::kMassCancel ||
          d.account_id != command.account_id.value() ||
          d.request_id != command.client_order_id.value()) {
        return mismatch("MassCancelDone answers the MassCancel of its request");
      }
      return absl::OkStatus();
    }
    case Kind::kOrderStatus: {
      const auto o =
          codec::View<codec::OrderStatus>::FromFrame(report)->ToModel();
      const bool same_order =
          command.order_id.value() != 0
              ? o.order_id == command.order_id.value()
              : o.client_order_id == command.client_order_id.value();
      if (command.kind != Kind::kOrderStatusRequest ||
          o.account_id != command.account_id.value() || !same_order) {
        return mismatch("OrderStatus answers the request for that order");
      }
      return absl::OkStatus();
    }
    case Kind::kSessionClosed: {
      const auto d =
          codec::View<codec::SessionClosed>::FromFrame(report)->ToModel();
      if (command.kind != Kind::kGoodbye ||
          d.account_id != command.account_id.value() ||
          d.request_id != command.client_order_id.value()) {
        return mismatch("SessionClosed answers the Goodbye of its request");
      }
      return absl::OkStatus();
    }
    default:
      return mismatch("not a primary report");
  }
}

bool IsPrimary(const codec::FrameView& report) {
  switch (report.kind()) {
    case codec::Kind::kAccepted:
    case codec::Kind::kRejected:
    case codec::Kind::kReplaced:
    case codec::Kind::kMassCancelDone:  // a MassCancel's last report
    case codec::Kind::kOrderStatus:
      return true;
    case codec::Kind::kSessionClosed:  // a Goodbye's last report (any reason
                                       // but a lapse's, which answers no
                                       // command)
      return codec::View<codec::SessionClosed>::FromFrame(report)
                 ->Get<&codec::SessionClosed::reason>() !=
             codec::SessionCloseReason::kLapsed;
    case codec::Kind::kCancelled:  // reasons 7 and 8: not a primary
      return codec::View<codec::Cancelled>::FromFrame(report)
                 ->Get<&codec::Cancelled::reason>() ==
             codec::CancelReason::kRequested;
    default:
      return false;
  }
}

}  // namespace

// Everything Open allocates: the frame ring (bytes, size, decoded command
// and first send time per slot), the socket and the datagram batches.
struct Session::Storage {
  Storage(net::UdpSocket s, std::size_t slots, bool gro)
      : socket(std::move(s)),
        frames(slots * kFrameSlotBytes),
        frame_sizes(slots),
        commands(slots),
        first_send_ns(slots),
        tx(kBatch),
        rx(gro ? kGroSlots : kBatch, gro ? net::DatagramBatch::Coalesced::kYes
                                         : net::DatagramBatch::Coalesced::kNo),
        rx_slots(gro ? kGroSlots : kBatch),
        received(gro ? kGroSlots * net::DatagramBatch::kMaxCoalescedBytes /
                           codec::kDatagramHeaderSize
                     : kBatch) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      send_order[i] = static_cast<std::uint32_t>(i);
    }
  }

  [[nodiscard]] std::span<std::byte> frame_slot(std::size_t slot) {
    return std::span<std::byte>(frames).subspan(slot * kFrameSlotBytes,
                                                kFrameSlotBytes);
  }

  net::UdpSocket socket;
  std::vector<std::byte> frames;
  std::vector<std::uint8_t> frame_sizes;
  std::vector<codec::Command> commands;
  std::vector<std::int64_t> first_send_ns;
  net::DatagramBatch tx;
  net::DatagramBatch rx;
  std::size_t rx_slots;
  std::vector<std::span<const std::byte>> received;
  std::array<std::uint32_t, kBatch> send_order{};
};

std::string ExplainSilence(const net::Endpoint& target,
                           std::uint32_t session_id, bool keyed) {
  std::string out = absl::StrFormat(
      "no answer from %s for session %u. The service drops, without "
      "answering, what it refuses; likely causes:\n"
      "  - the service is not running, or listens on another address or "
      "port (--target)\n"
      "  - session %u is not in the service's configuration "
      "(UnknownSession)\n"
      "  - the service already has max_sessions sessions "
      "(TooManySessions), or max_sessions_per_source of them from this "
      "address (TooManyFromSource)\n"
      "  - this address is not allowed for the session (AddressNotAllowed), "
      "or the session is pinned to another client's address and port "
      "(PinnedElsewhere; an unkeyed session is pinned until the service "
      "restarts, or until it gives its place back after "
      "session_slot_idle_seconds idle)\n",
      target.ToString(), session_id, session_id);
  if (keyed) {
    out +=
        "  - the key is wrong (BadMac), or the session has no key on the "
        "service (UnexpectedMac)\n";
  } else {
    out +=
        "  - the session is keyed on the service and this client has no "
        "key (MissingMac: give --key-file)\n";
  }
  out +=
      "  The service's counters ('dropped refused', --stats-json) and "
      "'serve --log-refusals' name the cause.";
  return out;
}

Session::Session(SessionOptions options)
    : options_(std::move(options)),
      window_(options_.window),
      send_window_(window_),
      ring_slots_(window_ + 1),
      timeout_ns_(static_cast<std::int64_t>(options_.retransmit_timeout_ms) *
                  1'000'000),
      explain_ns_(static_cast<std::int64_t>(options_.explain_after_ms) *
                  1'000'000),
      failover_ns_(static_cast<std::int64_t>(options_.failover_timeout_ms) *
                   1'000'000),
      expected_report_(options_.first_report_sequence),
      busy_backoff_ns_(kBusyBackoffMinNs),
      last_progress_ns_(base::MonotonicNs()),
      last_ack_ns_(last_progress_ns_),
      last_heard_ns_(last_progress_ns_),
      heartbeat_ns_(static_cast<std::int64_t>(options_.heartbeat_interval_ms) *
                    1'000'000),
      last_sent_ns_(last_progress_ns_),
      target_since_ns_(last_progress_ns_),
      waiting_since_ns_(last_progress_ns_) {}

Session::~Session() = default;

absl::StatusOr<std::unique_ptr<Session>> Session::Open(SessionOptions options) {
  if (options.window == 0 || options.window > kMaxWindow) {
    return absl::InvalidArgumentError(
        absl::StrFormat("session %d: window %d, must be 1 to %d",
                        options.session_id, options.window, kMaxWindow));
  }
  if (options.first_sequence == 0 || options.first_report_sequence == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "session %d: first_sequence %d and first_report_sequence %d must be "
        "1 or more (sequences start at 1)",
        options.session_id, options.first_sequence,
        options.first_report_sequence));
  }
  if (options.retransmit_timeout_ms <= 0 || options.explain_after_ms <= 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "session %d: retransmit_timeout_ms %d and explain_after_ms %d must "
        "be positive",
        options.session_id, options.retransmit_timeout_ms,
        options.explain_after_ms));
  }
  if (options.heartbeat_interval_ms < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "session %d: heartbeat_interval_ms %d must be 0 (none) or positive",
        options.session_id, options.heartbeat_interval_ms));
  }
  if (options.failover_timeout_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("session %d: failover_timeout_ms %d must be positive",
                        options.session_id, options.failover_timeout_ms));
  }
  if (options.target.family() != AF_INET &&
      options.target.family() != AF_INET6) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "session %d: the target has no IPv4 or IPv6 address (parse it with "
        "net::Endpoint::Parse)",
        options.session_id));
  }
  // One socket sends to every target: they share its address family.
  for (std::size_t i = 0; i < options.failover_targets.size(); ++i) {
    const net::Endpoint& other = options.failover_targets[i];
    if (other.family() != options.target.family()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "session %d: failover target %d (%s) is not of the first target's "
          "address family (%s): one socket sends to all of them",
          options.session_id, i + 2,
          other.family() == AF_INET || other.family() == AF_INET6
              ? other.ToString()
              : std::string("no address"),
          options.target.ToString()));
    }
  }
  net::Endpoint local;
  local.length = options.target.length;
  local.storage.ss_family = static_cast<sa_family_t>(options.target.family());
  absl::StatusOr<net::UdpSocket> socket = net::UdpSocket::Bind(local);
  if (!socket.ok()) return socket.status();
  socket->set_calls_for_testing(options.socket_calls_for_testing);

  // The transport: segmented sends and UDP_GRO receives, or neither.
  bool segmented = false;
  std::uint64_t gso_fallbacks = 0;
  if (options.send != net::SendPath::kSendmmsg) {
    std::string why;
    segmented = socket->SupportsSegmentation(&why);
    if (!segmented && options.send == net::SendPath::kSegmented) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "--send gso: this kernel does not take UDP_SEGMENT (%s)", why));
    }
    if (!segmented) ++gso_fallbacks;
  }
  const bool gro = segmented && socket->EnableGro();

  auto session = std::unique_ptr<Session>(new Session(std::move(options)));
  session->storage_ = std::make_unique<Storage>(
      std::move(*socket), static_cast<std::size_t>(session->ring_slots_), gro);
  for (std::size_t i = 0; i < kBatch; ++i) {
    session->storage_->tx.set_peer(i, session->options_.target);
  }
  session->segmented_ = segmented;
  session->gro_ = gro;
  session->counters_.gso_fallbacks = gso_fallbacks;
  session->window_full_ = absl::ResourceExhaustedError(absl::StrFormat(
      "session %d: the window of %d unacknowledged commands is full; Poll "
      "until reports acknowledge some, then submit again",
      session->options_.session_id, session->window_));
  return session;
}

int Session::fd() const { return storage_->socket.fd(); }

std::uint64_t Session::next_sequence() const {
  return options_.first_sequence + submitted_;
}

std::string Session::ExplainSilence() const {
  return client::ExplainSilence(current_target(), options_.session_id,
                                options_.mac.has_value());
}

absl::Status Session::Fail(absl::Status status) {
  failed_ = std::move(status);
  return failed_;
}

absl::StatusOr<std::uint64_t> Session::Submit(const codec::Command& command) {
  if (!failed_.ok()) return failed_;
  if (window_full()) return window_full_;
  const std::size_t slot = Slot(submitted_);
  codec::Command& queued = storage_->commands[slot];
  queued = command;
  queued.sequence = next_sequence();
  const codec::Result<std::size_t> size =
      codec::EncodeCommand(queued, storage_->frame_slot(slot));
  if (!size.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "session %d, sequence %d: kind %d is not a command (%s)",
        options_.session_id, queued.sequence, static_cast<int>(command.kind),
        codec::Describe(size.error())));
  }
  return Queue(*size);
}

absl::StatusOr<std::uint64_t> Session::SubmitFrame(
    std::span<const std::byte> frame) {
  if (!failed_.ok()) return failed_;
  if (window_full()) return window_full_;
  const std::size_t slot = Slot(submitted_);
  codec::Command& queued = storage_->commands[slot];
  const codec::Result<std::size_t> size = codec::DecodeCommand(frame, queued);
  if (!size.ok() || *size != frame.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "session %d, sequence %d: %d bytes are not one whole command frame "
        "(%s)",
        options_.session_id, next_sequence(), frame.size(),
        size.ok() ? absl::StrFormat("a %s frame is %d bytes",
                                    codec::Name(queued.kind), *size)
                  : std::string(codec::Describe(size.error()))));
  }
  queued.sequence = next_sequence();
  const std::span<std::byte> bytes = storage_->frame_slot(slot);
  std::memcpy(bytes.data(), frame.data(), frame.size());
  codec::StoreLE(bytes.data() + codec::kSequenceOffset, queued.sequence);
  return Queue(*size);
}

absl::StatusOr<std::uint64_t> Session::Queue(std::size_t frame_size) {
  storage_->frame_sizes[Slot(submitted_)] =
      static_cast<std::uint8_t>(frame_size);
  const std::uint64_t sequence = next_sequence();
  ++submitted_;
  ++counters_.submitted;
  return sequence;
}

absl::StatusOr<PollResult> Session::Poll(std::int64_t now_ns) {
  if (!failed_.ok()) return failed_;
  if (in_poll_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "session %d: Poll called from the report callback (the callback "
        "may Submit, not Poll)",
        options_.session_id));
  }
  PollResult result;
  const bool waiting =
      acked_ < submitted_ || report_hole_ || heartbeat_unanswered_;
  if (waiting && !was_waiting_) waiting_since_ns_ = now_ns;
  was_waiting_ = waiting;
  // Failover: nothing heard from the current target for
  // failover_timeout_ms since the session switched to it and since it
  // began waiting.
  if (waiting && target_count() > 1 &&
      now_ns -
              std::max({last_heard_ns_, target_since_ns_, waiting_since_ns_}) >=
          failover_ns_) {
    FailOver(now_ns);
  }
  // Silence: nothing heard for explain_after_ms while waiting.
  if (waiting && !refusals_.silent && now_ns - last_heard_ns_ >= explain_ns_) {
    refusals_.silent = true;
    ++counters_.silences;
  }
  // Retransmit from the oldest unacknowledged command on timeout. When a
  // report is missing, from the last acknowledged one: the missing report
  // may be one of its later reports (its primary came, the datagram after
  // it was lost), and the service resends a session's reports from the
  // first report of the oldest duplicate command it sees.
  if ((acked_ < next_to_send_ || report_hole_) &&
      now_ns - last_progress_ns_ > timeout_ns_ &&
      now_ns - last_gap_ns_ > timeout_ns_) {
    GoBack();
    last_gap_ns_ = now_ns;
  }
  Flush(now_ns, result);
  if (!failed_.ok()) return failed_;
  in_poll_ = true;
  const absl::Status received = Receive(now_ns, result);
  in_poll_ = false;
  if (!received.ok()) return Fail(received);
  result.more_to_send =
      tx_sent_ < tx_built_ ||
      (now_ns >= refusals_.busy_until_ns && next_to_send_ < send_end());
  return result;
}

void Session::GoBack() {
  next_to_send_ = report_hole_ && acked_ > 0 ? acked_ - 1 : acked_;
  send_window_ = std::min<std::uint64_t>(window_, kRecoveryStart);
}

void Session::FailOver(std::int64_t now_ns) {
  current_target_ = (current_target_ + 1) % target_count();
  target_since_ns_ = now_ns;
  ++counters_.failovers;
  Storage& s = *storage_;
  for (std::size_t i = 0; i < kBatch; ++i) s.tx.set_peer(i, current_target());
  // Datagrams built for the old target and not sent: go-back-N below sends
  // their frames again.
  tx_built_ = 0;
  tx_sent_ = 0;
  // Go back as a retransmission timeout does (the new primary resends from
  // the first report of the oldest duplicate it sees).
  GoBack();
  // What the old target said of itself does not hold for the new one; an
  // idle session greets the new one with a Heartbeat at once.
  refusals_.busy_until_ns = 0;
  last_sent_ns_ = now_ns - heartbeat_ns_;
  busy_backoff_ns_ = kBusyBackoffMinNs;
  last_gap_handled_ = 0;
  last_gap_ns_ = now_ns;
}

void Session::Flush(std::int64_t now_ns, PollResult& result) {
  // Datagrams a full socket buffer left from an earlier round go first, and
  // nothing new is built until they are gone.
  SendBuilt(result);
  if (tx_sent_ < tx_built_ || !failed_.ok()) return;
  if (now_ns < refusals_.busy_until_ns) return;  // backing off
  Storage& s = *storage_;
  const bool keyed = options_.mac.has_value();
  std::size_t datagrams = 0;
  const std::uint64_t end = send_end();
  while (next_to_send_ < end && datagrams < kBatch) {
    codec::DatagramBuilder builder(s.tx.buffer(datagrams), options_.session_id,
                                   keyed);
    while (next_to_send_ < end) {
      const std::size_t slot = Slot(next_to_send_);
      const std::span<const std::byte> frame =
          s.frame_slot(slot).first(s.frame_sizes[slot]);
      if (!builder.Fits(frame.size())) break;
      (void)builder.AppendFrame(frame);
      if (next_to_send_ >= high_water_) {
        s.first_send_ns[slot] = now_ns;
        ++high_water_;
        ++counters_.sent;
      } else {
        ++counters_.retransmitted;
      }
      ++next_to_send_;
    }
    if (keyed) {
      s.tx.set_length(datagrams,
                      auth::SealDatagram(*options_.mac, builder).size());
    } else {
      s.tx.set_length(datagrams, builder.size());
    }
    ++datagrams;
  }
  if (datagrams == 0 && heartbeat_ns_ > 0 &&
      now_ns - last_sent_ns_ >= heartbeat_ns_) {
    BuildHeartbeat();
    datagrams = 1;
  }
  if (datagrams > 0) last_sent_ns_ = now_ns;
  tx_sent_ = 0;
  tx_built_ = datagrams;
  SendBuilt(result);
}

void Session::BuildHeartbeat() {
  Storage& s = *storage_;
  codec::DatagramBuilder builder(s.tx.buffer(0), options_.session_id,
                                 options_.mac.has_value());
  (void)builder.Append(0, codec::Heartbeat{.nonce = ++heartbeat_nonce_});
  s.tx.set_length(0, options_.mac.has_value()
                         ? auth::SealDatagram(*options_.mac, builder).size()
                         : builder.size());
  ++counters_.heartbeats_sent;
  heartbeat_unanswered_ = true;
}

void Session::SendBuilt(PollResult& result) {
  Storage& s = *storage_;
  while (tx_sent_ < tx_built_) {
    std::size_t messages = 0;
    const int n =
        segmented_ ? s.socket.SendSegmented(
                         s.tx,
                         std::span<const std::uint32_t>(s.send_order)
                             .subspan(tx_sent_, tx_built_ - tx_sent_),
                         &messages)
                   : s.socket.SendRange(s.tx, tx_sent_, tx_built_ - tx_sent_);
    counters_.segmented_sends += messages;
    if (segmented_ && (n == -EIO || n == -EINVAL)) {
      segmented_ = false;  // the path cannot segment: plain from now on
      ++counters_.gso_fallbacks;
      continue;
    }
    if (n == -EINTR) continue;
    // The socket buffer is full: the rest waits for the next round (Poll
    // does not wait for room).
    if (n == -EAGAIN || n == -ENOBUFS || n == 0) return;
    // Several targets: a target the kernel cannot reach is a silent one
    // (the datagrams are lost, the failover timeout moves on), not the
    // end of the session.
    if (target_count() > 1 &&
        (n == -ENETUNREACH || n == -EHOSTUNREACH || n == -EHOSTDOWN ||
         n == -ENETDOWN || n == -ECONNREFUSED)) {
      counters_.unreachable_sends += tx_built_ - tx_sent_;
      tx_sent_ = tx_built_;
      return;
    }
    if (n < 0) {
      (void)Fail(absl::UnavailableError(
          absl::StrFormat("sending to %s: %s", current_target().ToString(),
                          std::strerror(-n))));
      return;
    }
    tx_sent_ += static_cast<std::size_t>(n);
    counters_.datagrams_sent += static_cast<std::uint64_t>(n);
    result.datagrams_sent += static_cast<std::size_t>(n);
  }
}

// Receive's steps, always inlined into it (the per-datagram path: the
// same code as one function, split for reading).

// A SequenceGap: go back to the expected sequence, once per gap value and
// round trip.
[[gnu::always_inline]] inline void Session::OnSequenceGap(
    const codec::FrameView& report, std::int64_t now_ns) {
  ++counters_.sequence_gaps;
  const std::uint64_t expected =
      codec::View<codec::SequenceGap>::FromFrame(report)
          ->Get<&codec::SequenceGap::expected_sequence>();
  refusals_.last_gap_expected = expected;
  const std::uint64_t index = expected - options_.first_sequence;
  // Go back once per gap value and round trip.
  if (index < next_to_send_ && index >= acked_ &&
      (expected != last_gap_handled_ || now_ns - last_gap_ns_ > timeout_ns_)) {
    next_to_send_ = index;
    last_gap_handled_ = expected;
    last_gap_ns_ = now_ns;
  }
}

// A ReportsGone: the reports below resend_from that this session lacks
// will never come; the commands below resend_command were applied but
// their results are unknown. Continue from there.
[[gnu::always_inline]] inline void Session::OnReportsGone(
    const codec::FrameView& report) {
  const auto gone = *codec::View<codec::ReportsGone>::FromFrame(report);
  const std::uint64_t from = gone.Get<&codec::ReportsGone::resend_from>();
  const std::uint64_t command = gone.Get<&codec::ReportsGone::resend_command>();
  if (from <= expected_report_) return;  // nothing new
  ++counters_.reports_gone;
  counters_.reports_lost += from - expected_report_;
  refusals_.reports_gone_from = from;
  refusals_.unconfirmed_below = command;
  expected_report_ = from;
  report_hole_ = false;
  const std::uint64_t up_to =
      command <= options_.first_sequence
          ? 0
          : std::min<std::uint64_t>(command - options_.first_sequence,
                                    high_water_);
  if (up_to > acked_) {
    counters_.unconfirmed += up_to - acked_;
    acked_ = up_to;
    if (next_to_send_ < acked_) next_to_send_ = acked_;
  }
  last_progress_ns_ = base::MonotonicNs();
  last_ack_ns_ = last_progress_ns_;
}

// A HeartbeatAck: the service is alive (the datagram said so). A
// next_report above the one expected is a report this session lacks: the
// retransmission timeout then goes back to the last acknowledged command,
// whose duplicate makes the service send the reports again (with nothing
// acknowledged yet there is nothing to go back to).
[[gnu::always_inline]] inline void Session::OnHeartbeatAck(
    const codec::FrameView& report) {
  ++counters_.heartbeat_acks;
  const std::uint64_t next = codec::View<codec::HeartbeatAck>::FromFrame(report)
                                 ->Get<&codec::HeartbeatAck::next_report>();
  if (next > expected_report_ && acked_ > 0 && !report_hole_) {
    report_hole_ = true;
    ++counters_.heartbeat_report_holes;
  }
}

// A Busy: back off once per Busy burst (a window of datagrams gets one
// Busy each 2 ms), then go back to the expected sequence.
[[gnu::always_inline]] inline void Session::OnBusy(
    const codec::FrameView& report, std::int64_t now_ns) {
  ++counters_.busy;
  const auto busy = codec::View<codec::Busy>::FromFrame(report);
  const std::uint64_t expected = busy->Get<&codec::Busy::expected_sequence>();
  refusals_.busy_cause = busy->Get<&codec::Busy::cause>();
  // The service is alive: this is progress, not a silence.
  last_progress_ns_ = now_ns;
  // Back off once per Busy burst (a window of datagrams gets one
  // Busy each 2 ms), then go back to the expected sequence.
  if (now_ns >= refusals_.busy_until_ns) {
    refusals_.busy_until_ns = now_ns + busy_backoff_ns_;
    busy_backoff_ns_ = std::min(2 * busy_backoff_ns_, kBusyBackoffMaxNs);
  }
  const std::uint64_t index = expected - options_.first_sequence;
  if (index < next_to_send_ && index >= acked_) next_to_send_ = index;
}

// One datagram received: a report datagram of this session (with a valid
// MAC when keyed, none when not), each frame handled in order; anything
// else counted and dropped.
[[gnu::always_inline]] inline absl::Status Session::HandleDatagram(
    std::span<const std::byte> bytes, std::int64_t now_ns, PollResult& result) {
  const auto datagram =
      codec::DatagramView::Parse(bytes, codec::FrameFilter::kReports);
  if (!datagram.ok() || datagram->session_id() != options_.session_id) {
    ++counters_.bad_datagrams;
    return absl::OkStatus();
  }
  // A keyed session's reports must carry a valid MAC; an unkeyed
  // session's must not carry one.
  if (options_.mac.has_value() ? !auth::VerifyDatagram(*options_.mac, *datagram)
                               : datagram->authenticated()) {
    ++counters_.bad_mac_datagrams;
    return absl::OkStatus();
  }
  last_heard_ns_ = now_ns;
  refusals_.silent = false;
  heartbeat_unanswered_ = false;
  for (const codec::FrameView report : *datagram) {
    switch (report.kind()) {
      case codec::Kind::kSequenceGap:
        OnSequenceGap(report, now_ns);
        break;
      case codec::Kind::kHeartbeatAck:
        OnHeartbeatAck(report);
        break;
      case codec::Kind::kReportsGone:
        OnReportsGone(report);
        break;
      case codec::Kind::kBusy:
        OnBusy(report, now_ns);
        break;
      default:
        if (absl::Status taken = TakeReport(report, result); !taken.ok()) {
          return taken;
        }
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status Session::Receive(std::int64_t now_ns, PollResult& result) {
  Storage& s = *storage_;
  const int received = s.socket.Receive(s.rx, s.rx_slots);
  if (received < 0 && received != -EAGAIN && received != -EINTR) {
    return absl::UnavailableError(
        absl::StrFormat("receiving: %s", std::strerror(-received)));
  }
  if (received <= 0) return absl::OkStatus();
  std::size_t datagram_count = 0;
  const bool several_targets = target_count() > 1;
  for (int slot = 0; slot < received; ++slot) {
    const auto k = static_cast<std::size_t>(slot);
    if (s.rx.segment_size(k) != 0) ++counters_.coalesced_receives;
    const std::size_t before = datagram_count;
    datagram_count = s.rx.SplitDatagrams(k, s.received, datagram_count);
    // With several targets only the current one feeds the session: an old
    // primary that wakes up after the switch is not heard.
    if (several_targets && !(s.rx.peer(k) == current_target())) {
      const std::size_t dropped = datagram_count - before;
      counters_.datagrams_received += dropped;
      counters_.other_target_datagrams += dropped;
      result.datagrams_received += dropped;
      datagram_count = before;
    }
  }
  for (std::size_t d = 0; d < datagram_count; ++d) {
    ++counters_.datagrams_received;
    ++result.datagrams_received;
    if (absl::Status handled = HandleDatagram(s.received[d], now_ns, result);
        !handled.ok()) {
      return handled;
    }
  }
  return absl::OkStatus();
}

absl::Status Session::TakeReport(const codec::FrameView& report,
                                 PollResult& result) {
  if (report.sequence() < expected_report_) {
    ++counters_.duplicate_reports;
    return absl::OkStatus();
  }
  if (report.sequence() > expected_report_) {
    ++counters_.out_of_order_reports;
    report_hole_ = true;
    return absl::OkStatus();
  }
  // A primary is checked against its command first: a report that ends
  // the session is neither taken nor counted.
  if (IsPrimary(report)) {
    if (acked_ >= high_water_) {
      return absl::DataLossError(absl::StrFormat(
          "report %d (%s) answers a command that was never sent",
          report.sequence(), codec::Name(report.kind())));
    }
    const std::size_t slot = Slot(acked_);
    if (absl::Status s = CheckPrimary(storage_->commands[slot], report);
        !s.ok()) {
      return s;
    }
    const std::int64_t t = base::MonotonicNs();
    latency_ns_.Record(
        static_cast<std::uint64_t>(t - storage_->first_send_ns[slot]));
    ++acked_;
    ++counters_.acknowledged;
    if (send_window_ < window_) ++send_window_;  // slow start
    busy_backoff_ns_ = kBusyBackoffMinNs;
    if (next_to_send_ < acked_) next_to_send_ = acked_;
    last_progress_ns_ = t;
    last_ack_ns_ = t;
  }
  ++expected_report_;
  report_hole_ = false;
  ++counters_.reports;
  counters_.report_bytes += report.size();
  switch (report.kind()) {
    case codec::Kind::kAccepted:
      ++counters_.accepted;
      break;
    case codec::Kind::kRejected:
      ++counters_.rejected;
      break;
    case codec::Kind::kReplaced:
      ++counters_.replaced;
      break;
    case codec::Kind::kCancelled:
      ++counters_.cancelled;
      break;
    case codec::Kind::kFilled:
      ++counters_.fills;
      break;
    case codec::Kind::kSessionClosed:
      ++counters_.sessions_closed;
      break;
    default:
      break;
  }
  ++result.reports;
  if (options_.on_report) options_.on_report(report);
  return absl::OkStatus();
}

}  // namespace orderwire::client
