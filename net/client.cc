// The order-entry client; see client.h.
#include "net/client.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/frame.h"

namespace orderwire::net {
namespace {

std::int64_t NowNs() { return base::MonotonicNs(); }

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
    default:
      return mismatch("not a primary report");
  }
}

bool IsPrimary(const codec::FrameView& report) {
  switch (report.kind()) {
    case codec::Kind::kAccepted:
    case codec::Kind::kRejected:
    case codec::Kind::kReplaced:
      return true;
    case codec::Kind::kCancelled:
      return codec::View<codec::Cancelled>::FromFrame(report)
                 ->Get<&codec::Cancelled::reason>() ==
             codec::CancelReason::kRequested;
    default:
      return false;
  }
}

void DrawProgress(std::uint64_t done, std::uint64_t total, double seconds) {
  const int width = 40;
  const double fraction =
      total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(fraction * width);
  std::fprintf(stderr, "\r[%.*s%*s] %5.1f%% %llu/%llu %.0f cmd/s ", filled,
               "########################################", width - filled, "",
               100.0 * fraction, static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total),
               seconds > 0 ? static_cast<double>(done) / seconds : 0.0);
}

}  // namespace

std::string ExplainSilence(const ClientOptions& options) {
  std::string out = absl::StrFormat(
      "no answer from %s for session %u. The service drops, without "
      "answering, what it refuses; likely causes:\n"
      "  - the service is not running, or listens on another address or "
      "port (--target)\n"
      "  - session %u is not in the service's configuration "
      "(UnknownSession)\n"
      "  - the service already has max_sessions sessions "
      "(TooManySessions)\n"
      "  - this address is not allowed for the session (AddressNotAllowed), "
      "or the session is pinned to another client's address and port "
      "(PinnedElsewhere; an unkeyed session is pinned until the service "
      "restarts)\n",
      options.target.ToString(), options.session_id, options.session_id);
  if (options.mac.has_value()) {
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

std::uint64_t Fnv1a(std::uint64_t hash, std::span<const std::byte> bytes) {
  for (std::byte b : bytes) {
    hash ^= static_cast<std::uint64_t>(b);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

absl::StatusOr<ClientResult> RunClient(const ClientOptions& options,
                                       std::span<const std::byte> frames,
                                       const std::atomic<bool>& stop) {
  // Index the frames and decode them once (for the primary checks).
  std::vector<std::uint32_t> offsets;
  std::vector<codec::Command> commands;
  for (std::size_t pos = 0; pos < frames.size();) {
    codec::Command command;
    const auto size = codec::DecodeCommand(frames.subspan(pos), command);
    if (!size.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input byte offset %d: %s", pos, codec::Describe(size.error())));
    }
    const std::uint64_t want = options.first_sequence + commands.size();
    if (command.sequence != want) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input byte offset %d: sequence %d, expected %d (one session: "
          "%d, %d, ...)",
          pos, command.sequence, want, options.first_sequence,
          options.first_sequence + 1));
    }
    offsets.push_back(static_cast<std::uint32_t>(pos));
    commands.push_back(command);
    pos += *size;
  }
  offsets.push_back(static_cast<std::uint32_t>(frames.size()));
  const std::size_t total = commands.size();

  Endpoint local;
  local.length = options.target.length;
  local.storage.ss_family = static_cast<sa_family_t>(options.target.family());
  absl::StatusOr<UdpSocket> socket = UdpSocket::Bind(local);
  if (!socket.ok()) return socket.status();
  socket->set_calls_for_testing(options.socket_calls_for_testing);

  ClientResult result;
  result.commands = total;
  result.report_hash = kFnvOffset;
  std::vector<std::int64_t> first_send_ns(total, 0);
  constexpr std::size_t kBatch = 64;
  DatagramBatch tx(kBatch);
  for (std::size_t i = 0; i < kBatch; ++i) tx.set_peer(i, options.target);
  // The transport: segmented sends and UDP_GRO receives, or neither.
  bool segmented = false;
  if (options.send != SendPath::kSendmmsg) {
    std::string why;
    segmented = socket->SupportsSegmentation(&why);
    if (!segmented && options.send == SendPath::kSegmented) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "--send gso: this kernel does not take UDP_SEGMENT (%s)", why));
    }
    if (!segmented) ++result.gso_fallbacks;
  }
  result.segmented = segmented;
  result.gro = segmented && socket->EnableGro();
  // Fewer, larger receive slots with UDP_GRO (each up to 64 KiB); the
  // datagrams in them, split, go to `received_datagrams`.
  const std::size_t rx_slots = result.gro ? 16 : kBatch;
  DatagramBatch rx(rx_slots, result.gro ? DatagramBatch::Coalesced::kYes
                                        : DatagramBatch::Coalesced::kNo);
  std::vector<std::span<const std::byte>> received_datagrams(
      result.gro ? rx_slots * DatagramBatch::kMaxCoalescedBytes /
                       codec::kDatagramHeaderSize
                 : kBatch);
  std::array<std::uint32_t, kBatch> send_order{};
  for (std::size_t i = 0; i < kBatch; ++i) {
    send_order[i] = static_cast<std::uint32_t>(i);
  }

  std::size_t next_to_send = 0;  // index of the next command to transmit
  std::size_t high_water = 0;    // commands transmitted at least once
  std::size_t acked = 0;
  std::uint64_t expected_report = 1;
  // A report newer than the expected one arrived (and was dropped): one is
  // missing, until the expected one comes.
  bool report_hole = false;
  std::uint64_t last_gap_handled = 0;
  std::int64_t last_gap_ns = 0;
  // Busy: nothing is sent before busy_until_ns; the back-off doubles while
  // Busy repeats.
  constexpr std::int64_t kBusyBackoffMinNs = 1'000'000;
  constexpr std::int64_t kBusyBackoffMaxNs = 50'000'000;
  std::int64_t busy_backoff_ns = kBusyBackoffMinNs;
  std::int64_t busy_until_ns = 0;
  const std::int64_t start_ns = NowNs();
  std::int64_t last_progress_ns = start_ns;
  std::int64_t last_ack_ns = start_ns;
  std::int64_t last_draw_ns = 0;
  // The time of the last datagram received (a silence is measured from it).
  std::int64_t last_heard_ns = start_ns;
  bool silence_explained = false;
  const std::int64_t explain_ns =
      static_cast<std::int64_t>(options.explain_after_ms) * 1'000'000;
  const std::int64_t timeout_ns =
      static_cast<std::int64_t>(options.retransmit_timeout_ms) * 1'000'000;

  while (!stop.load(std::memory_order_relaxed)) {
    const std::int64_t now = NowNs();
    // Done: every command acknowledged, no report known to be missing, and
    // quiet for a while.
    if (acked == total && !report_hole &&
        now - last_ack_ns >=
            static_cast<std::int64_t>(options.quiet_ms) * 1'000'000) {
      break;
    }
    if (now - last_progress_ns >
        static_cast<std::int64_t>(options.give_up_ms) * 1'000'000) {
      if (now - last_heard_ns >= explain_ns) {
        return absl::DeadlineExceededError(
            absl::StrFormat("%d of %d commands acknowledged, then %s", acked,
                            total, ExplainSilence(options)));
      }
      return absl::DeadlineExceededError(absl::StrFormat(
          "no progress from %s for %d ms (%d of %d commands acknowledged)",
          options.target.ToString(), options.give_up_ms, acked, total));
    }
    if (options.diagnostics != nullptr && !silence_explained &&
        (acked < total || report_hole) && now - last_heard_ns >= explain_ns) {
      std::fprintf(options.diagnostics, "orderwire submit: %s\n",
                   ExplainSilence(options).c_str());
      std::fflush(options.diagnostics);
      silence_explained = true;
      ++result.silences_explained;
    }
    // Retransmit from the oldest unacknowledged command on timeout. When a
    // report is missing, from the last acknowledged one: the missing report
    // may be one of its later reports (its primary came, the datagram after
    // it was lost), and the service resends a session's reports from the
    // first report of the oldest duplicate command it sees.
    if ((acked < next_to_send || report_hole) &&
        now - last_progress_ns > timeout_ns && now - last_gap_ns > timeout_ns) {
      next_to_send = report_hole && acked > 0 ? acked - 1 : acked;
      last_gap_ns = now;
    }

    // Send: as much of the window as the rate allows, packed in datagrams.
    // First transmissions are paced by --rate; retransmissions are not.
    const std::size_t limit = std::min(total, acked + options.window);
    std::size_t paced = total;
    if (options.rate > 0) {
      paced = static_cast<std::size_t>(
          static_cast<double>(now - start_ns) * 1e-9 * options.rate + 1);
    }
    const auto may_send = [&](std::size_t i) {
      return i < limit && (i < high_water || i < paced);
    };
    std::size_t datagrams = 0;
    const bool backing_off = now < busy_until_ns;
    while (!backing_off && may_send(next_to_send) && datagrams < kBatch) {
      codec::DatagramBuilder builder(tx.buffer(datagrams), options.session_id,
                                     options.mac.has_value());
      while (may_send(next_to_send)) {
        const std::span<const std::byte> frame =
            frames.subspan(offsets[next_to_send],
                           offsets[next_to_send + 1] - offsets[next_to_send]);
        if (!builder.Fits(frame.size())) break;
        (void)builder.AppendFrame(frame);
        if (next_to_send >= high_water) {
          first_send_ns[next_to_send] = now;
          ++high_water;
          ++result.sent;
        } else {
          ++result.retransmitted;
        }
        ++next_to_send;
      }
      if (options.mac.has_value()) {
        tx.set_length(datagrams,
                      auth::SealDatagram(*options.mac, builder).size());
      } else {
        tx.set_length(datagrams, builder.size());
      }
      ++datagrams;
    }
    for (std::size_t sent = 0; sent < datagrams;) {
      std::size_t messages = 0;
      const int n = segmented ? socket->SendSegmented(
                                    tx,
                                    std::span<const std::uint32_t>(send_order)
                                        .subspan(sent, datagrams - sent),
                                    &messages)
                              : socket->SendRange(tx, sent, datagrams - sent);
      result.segmented_sends += messages;
      if (segmented && (n == -EIO || n == -EINVAL)) {
        segmented = false;  // the path cannot segment: plain from now on
        result.segmented = false;
        ++result.gso_fallbacks;
        continue;
      }
      if (n < 0 && n != -EAGAIN && n != -ENOBUFS && n != -EINTR) {
        return absl::UnavailableError(absl::StrFormat(
            "sending to %s: %s", options.target.ToString(), std::strerror(-n)));
      }
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        result.datagrams_sent += static_cast<std::uint64_t>(n);
      }
    }

    // Receive and take reports in order.
    const int received = socket->Receive(rx, rx_slots);
    if (received < 0 && received != -EAGAIN && received != -EINTR) {
      return absl::UnavailableError(
          absl::StrFormat("receiving: %s", std::strerror(-received)));
    }
    if (received <= 0) {
      if (backing_off || !may_send(next_to_send)) socket->WaitReadable(1);
      continue;
    }
    std::size_t datagram_count = 0;
    for (int slot = 0; slot < received; ++slot) {
      const auto k = static_cast<std::size_t>(slot);
      if (rx.segment_size(k) != 0) ++result.coalesced_receives;
      datagram_count = rx.SplitDatagrams(k, received_datagrams, datagram_count);
    }
    for (std::size_t d = 0; d < datagram_count; ++d) {
      ++result.datagrams_received;
      const auto datagram = codec::DatagramView::Parse(
          received_datagrams[d], codec::FrameFilter::kReports);
      if (!datagram.ok() || datagram->session_id() != options.session_id) {
        ++result.bad_datagrams;
        continue;
      }
      // A keyed session's reports must carry a valid MAC; an unkeyed
      // session's must not carry one.
      if (options.mac.has_value()
              ? !auth::VerifyDatagram(*options.mac, *datagram)
              : datagram->authenticated()) {
        ++result.bad_mac_datagrams;
        continue;
      }
      last_heard_ns = now;
      silence_explained = false;
      for (const codec::FrameView report : *datagram) {
        if (report.kind() == codec::Kind::kSequenceGap) {
          ++result.sequence_gaps;
          const std::uint64_t expected =
              codec::View<codec::SequenceGap>::FromFrame(report)
                  ->Get<&codec::SequenceGap::expected_sequence>();
          const std::uint64_t index = expected - options.first_sequence;
          // Go back once per gap value and round trip.
          if (index < next_to_send && index >= acked &&
              (expected != last_gap_handled ||
               now - last_gap_ns > timeout_ns)) {
            next_to_send = index;
            last_gap_handled = expected;
            last_gap_ns = now;
          }
          continue;
        }
        if (report.kind() == codec::Kind::kReportsGone) {
          // docs/PROTOCOL.md "Reports gone": the reports below resend_from
          // that this client lacks will never come; the commands below
          // resend_command were applied but their results are unknown
          // (unconfirmed: the user must reconcile them). Continue from
          // there instead of waiting for them.
          const auto gone = *codec::View<codec::ReportsGone>::FromFrame(report);
          const std::uint64_t from =
              gone.Get<&codec::ReportsGone::resend_from>();
          const std::uint64_t command =
              gone.Get<&codec::ReportsGone::resend_command>();
          if (from <= expected_report) continue;  // nothing new
          ++result.reports_gone;
          result.reports_lost += from - expected_report;
          expected_report = from;
          report_hole = false;
          const std::size_t up_to =
              command <= options.first_sequence
                  ? 0
                  : static_cast<std::size_t>(std::min<std::uint64_t>(
                        command - options.first_sequence, high_water));
          if (up_to > acked) {
            result.unconfirmed += up_to - acked;
            acked = up_to;
            if (next_to_send < acked) next_to_send = acked;
          }
          last_progress_ns = NowNs();
          last_ack_ns = last_progress_ns;
          continue;
        }
        if (report.kind() == codec::Kind::kBusy) {
          ++result.busy;
          const auto busy = codec::View<codec::Busy>::FromFrame(report);
          const std::uint64_t expected =
              busy->Get<&codec::Busy::expected_sequence>();
          result.busy_cause =
              static_cast<std::uint8_t>(busy->Get<&codec::Busy::cause>());
          // The service is alive: this is not a silence to give up on.
          last_progress_ns = now;
          // Back off once per Busy burst (a window of datagrams gets one
          // Busy each 2 ms), then go back to the expected sequence.
          if (now >= busy_until_ns) {
            busy_until_ns = now + busy_backoff_ns;
            busy_backoff_ns = std::min(2 * busy_backoff_ns, kBusyBackoffMaxNs);
          }
          const std::uint64_t index = expected - options.first_sequence;
          if (index < next_to_send && index >= acked) next_to_send = index;
          continue;
        }
        if (report.sequence() < expected_report) {
          ++result.duplicate_reports;
          continue;
        }
        if (report.sequence() > expected_report) {
          ++result.out_of_order_reports;
          report_hole = true;
          continue;
        }
        ++expected_report;
        report_hole = false;
        ++result.reports;
        result.report_bytes += report.size();
        result.report_hash = Fnv1a(result.report_hash, report.bytes());
        if (options.reports_out != nullptr &&
            std::fwrite(report.bytes().data(), 1, report.size(),
                        options.reports_out) != report.size()) {
          return absl::UnavailableError(
              absl::StrFormat("writing reports: %s", std::strerror(errno)));
        }
        switch (report.kind()) {
          case codec::Kind::kAccepted:
            ++result.accepted;
            break;
          case codec::Kind::kRejected:
            ++result.rejected;
            break;
          case codec::Kind::kReplaced:
            ++result.replaced;
            break;
          case codec::Kind::kCancelled:
            ++result.cancelled;
            break;
          case codec::Kind::kFilled:
            ++result.fills;
            break;
          default:
            break;
        }
        if (!IsPrimary(report)) continue;
        if (acked >= high_water) {
          return absl::DataLossError(absl::StrFormat(
              "report %d (%s) answers a command that was never sent",
              report.sequence(), codec::Name(report.kind())));
        }
        if (absl::Status s = CheckPrimary(commands[acked], report); !s.ok()) {
          return s;
        }
        const std::int64_t t = NowNs();
        result.latency_ns.Record(
            static_cast<std::uint64_t>(t - first_send_ns[acked]));
        ++acked;
        ++result.acknowledged;
        busy_backoff_ns = kBusyBackoffMinNs;
        if (next_to_send < acked) next_to_send = acked;
        last_progress_ns = t;
        last_ack_ns = t;
      }
    }
    if (options.progress && now - last_draw_ns > 100'000'000) {
      DrawProgress(acked, total, static_cast<double>(now - start_ns) * 1e-9);
      last_draw_ns = now;
    }
  }
  if (options.progress) {
    DrawProgress(acked, total, static_cast<double>(NowNs() - start_ns) * 1e-9);
    std::fputc('\n', stderr);
  }
  result.seconds = static_cast<double>(last_ack_ns - start_ns) * 1e-9;
  return result;
}

}  // namespace orderwire::net
