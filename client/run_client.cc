// The batch client over client::Session; see run_client.h.
#include "client/run_client.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "codec/command.h"

namespace orderwire::client {
namespace {

std::int64_t NowNs() { return base::MonotonicNs(); }

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

// The session's counters, as RunClient reports them.
void CopyCounters(const Session& session, ClientResult& result) {
  const SessionCounters& c = session.counters();
  result.sent = c.sent;
  result.retransmitted = c.retransmitted;
  result.acknowledged = c.acknowledged;
  result.accepted = c.accepted;
  result.rejected = c.rejected;
  result.replaced = c.replaced;
  result.cancelled = c.cancelled;
  result.fills = c.fills;
  result.reports = c.reports;
  result.report_bytes = c.report_bytes;
  result.duplicate_reports = c.duplicate_reports;
  result.out_of_order_reports = c.out_of_order_reports;
  result.sequence_gaps = c.sequence_gaps;
  result.busy = c.busy;
  const std::optional<codec::BusyCause> cause = session.refusals().busy_cause;
  result.busy_cause = cause.has_value() ? static_cast<std::uint8_t>(*cause) : 0;
  result.reports_gone = c.reports_gone;
  result.reports_lost = c.reports_lost;
  result.unconfirmed = c.unconfirmed;
  result.datagrams_sent = c.datagrams_sent;
  result.datagrams_received = c.datagrams_received;
  result.segmented = session.segmented();
  result.segmented_sends = c.segmented_sends;
  result.gro = session.gro();
  result.coalesced_receives = c.coalesced_receives;
  result.gso_fallbacks = c.gso_fallbacks;
  result.bad_datagrams = c.bad_datagrams;
  result.bad_mac_datagrams = c.bad_mac_datagrams;
  result.latency_ns = session.latency_ns();
  result.failovers = c.failovers;
  result.other_target_datagrams = c.other_target_datagrams;
  result.unreachable_sends = c.unreachable_sends;
  result.final_target = session.current_target();
}

}  // namespace

std::string ExplainSilence(const ClientOptions& options) {
  return ExplainSilence(options.target, options.session_id,
                        options.mac.has_value());
}

std::uint64_t Fnv1a(std::uint64_t hash, std::span<const std::byte> bytes) {
  for (std::byte b : bytes) {
    hash ^= static_cast<std::uint64_t>(b);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

namespace {

// Index the frames, checking that they are one session's, in order: the
// offset of each, then the end of the last.
absl::StatusOr<std::vector<std::uint32_t>> IndexFrames(
    const ClientOptions& options, std::span<const std::byte> frames) {
  std::vector<std::uint32_t> offsets;
  for (std::size_t pos = 0; pos < frames.size();) {
    codec::Command command;
    const auto size = codec::DecodeCommand(frames.subspan(pos), command);
    if (!size.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input byte offset %d: %s", pos, codec::Describe(size.error())));
    }
    const std::uint64_t want = options.first_sequence + offsets.size();
    if (command.sequence != want) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "input byte offset %d: sequence %d, expected %d (one session: "
          "%d, %d, ...)",
          pos, command.sequence, want, options.first_sequence,
          options.first_sequence + 1));
    }
    offsets.push_back(static_cast<std::uint32_t>(pos));
    pos += *size;
  }
  offsets.push_back(static_cast<std::uint32_t>(frames.size()));
  return offsets;
}

// The session's options for a run of `total` commands; each report is
// hashed into result.report_hash and written to options.reports_out (the
// first write error kept in `write_error`).
SessionOptions MakeSessionOptions(const ClientOptions& options,
                                  std::size_t total, ClientResult& result,
                                  absl::Status& write_error) {
  SessionOptions session_options;
  session_options.target = options.target;
  session_options.failover_targets = options.failover_targets;
  session_options.failover_timeout_ms = options.failover_timeout_ms;
  session_options.heartbeat_interval_ms = options.heartbeat_interval_ms;
  session_options.session_id = options.session_id;
  // The window the run can use: no more than the commands it has.
  session_options.window = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
      std::min<std::uint64_t>(options.window, total), 1, kMaxWindow));
  session_options.retransmit_timeout_ms = options.retransmit_timeout_ms;
  session_options.first_sequence = options.first_sequence;
  session_options.first_report_sequence = options.first_report_sequence;
  session_options.mac = options.mac;
  session_options.send = options.send;
  session_options.explain_after_ms = options.explain_after_ms;
  session_options.socket_calls_for_testing = options.socket_calls_for_testing;
  session_options.on_report = [&options, &result,
                               &write_error](const codec::FrameView& report) {
    result.report_hash = Fnv1a(result.report_hash, report.bytes());
    if (options.reports_out != nullptr && write_error.ok() &&
        std::fwrite(report.bytes().data(), 1, report.size(),
                    options.reports_out) != report.size()) {
      write_error = absl::UnavailableError(
          absl::StrFormat("writing reports: %s", std::strerror(errno)));
    }
  };
  return session_options;
}

// RunClient's loop, one round per Step(): submit what the rate and the
// window allow, poll the session, say what happened.
class ClientLoop {
 public:
  ClientLoop(const ClientOptions& options, std::span<const std::byte> frames,
             const std::vector<std::uint32_t>& offsets, Session& session,
             ClientResult& result)
      : options_(options),
        frames_(frames),
        offsets_(offsets),
        total_(offsets.size() - 1),
        session_(session),
        result_(result),
        start_ns_(NowNs()),
        explain_ns_(static_cast<std::int64_t>(options.explain_after_ms) *
                    1'000'000) {}

  // Done: every command answered, no report known to be missing, and
  // quiet for a while.
  [[nodiscard]] bool Done(std::int64_t now) const {
    return session_.answered() == total_ && !session_.report_missing() &&
           now - session_.last_ack_ns() >=
               static_cast<std::int64_t>(options_.quiet_ms) * 1'000'000;
  }

  // Not OK once there was no progress for give_up_ms: why.
  [[nodiscard]] absl::Status CheckProgress(std::int64_t now) const {
    if (now - session_.last_progress_ns() <=
        static_cast<std::int64_t>(options_.give_up_ms) * 1'000'000) {
      return absl::OkStatus();
    }
    if (now - session_.last_heard_ns() >= explain_ns_) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "%d of %d commands acknowledged, then %s", session_.answered(),
          total_, session_.ExplainSilence()));
    }
    return absl::DeadlineExceededError(absl::StrFormat(
        "no progress from %s for %d ms (%d of %d commands acknowledged)",
        session_.current_target().ToString(), options_.give_up_ms,
        session_.answered(), total_));
  }

  // Submit what the rate and the window allow.
  absl::Status Submit(std::int64_t now) {
    std::size_t paced = total_;
    if (options_.rate > 0) {
      paced = std::min(
          total_,
          static_cast<std::size_t>(
              static_cast<double>(now - start_ns_) * 1e-9 * options_.rate + 1));
    }
    while (submitted_ < paced && !session_.window_full()) {
      const absl::StatusOr<std::uint64_t> queued = session_.SubmitFrame(
          frames_.subspan(offsets_[submitted_],
                          offsets_[submitted_ + 1] - offsets_[submitted_]));
      if (!queued.ok()) return queued.status();
      ++submitted_;
    }
    return absl::OkStatus();
  }

  // A failover, and a silence once every target has been tried, told on
  // options.diagnostics; the progress bar.
  void Tell(std::int64_t now) {
    if (options_.diagnostics != nullptr &&
        session_.counters().failovers != failovers_written_) {
      failovers_written_ = session_.counters().failovers;
      std::fprintf(options_.diagnostics,
                   "orderwire submit: session %u: nothing heard for %d ms, "
                   "failing over to %s (failover %llu)\n",
                   options_.session_id, options_.failover_timeout_ms,
                   session_.current_target().ToString().c_str(),
                   static_cast<unsigned long long>(failovers_written_));
      std::fflush(options_.diagnostics);
    }
    // With several targets a silence is first a reason to fail over: it is
    // explained once every target has been tried.
    const bool every_target_tried =
        session_.counters().failovers >= options_.failover_targets.size();
    if (options_.diagnostics != nullptr && session_.refusals().silent &&
        every_target_tried && !silence_written_) {
      std::fprintf(options_.diagnostics, "orderwire submit: %s\n",
                   session_.ExplainSilence().c_str());
      std::fflush(options_.diagnostics);
      silence_written_ = true;
      ++result_.silences_explained;
    }
    if (!session_.refusals().silent) silence_written_ = false;
    if (options_.progress && now - last_draw_ns_ > 100'000'000) {
      DrawProgress(session_.answered(), total_,
                   static_cast<double>(now - start_ns_) * 1e-9);
      last_draw_ns_ = now;
    }
  }

  // After the loop: the last progress bar, the counters and the time.
  void Finish() {
    if (options_.progress) {
      DrawProgress(session_.answered(), total_,
                   static_cast<double>(NowNs() - start_ns_) * 1e-9);
      std::fputc('\n', stderr);
    }
    CopyCounters(session_, result_);
    result_.seconds =
        static_cast<double>(std::max(session_.last_ack_ns(), start_ns_) -
                            start_ns_) *
        1e-9;
  }

 private:
  const ClientOptions& options_;
  std::span<const std::byte> frames_;
  const std::vector<std::uint32_t>& offsets_;
  const std::size_t total_;
  Session& session_;
  ClientResult& result_;
  const std::int64_t start_ns_;
  const std::int64_t explain_ns_;
  std::int64_t last_draw_ns_ = 0;
  std::size_t submitted_ = 0;
  std::uint64_t failovers_written_ = 0;
  bool silence_written_ = false;
};

}  // namespace

absl::StatusOr<ClientResult> RunClient(const ClientOptions& options,
                                       std::span<const std::byte> frames,
                                       const std::atomic<bool>& stop) {
  absl::StatusOr<std::vector<std::uint32_t>> offsets =
      IndexFrames(options, frames);
  if (!offsets.ok()) return offsets.status();
  const std::size_t total = offsets->size() - 1;

  ClientResult result;
  result.commands = total;
  result.report_hash = kFnvOffset;
  absl::Status write_error;
  absl::StatusOr<std::unique_ptr<Session>> opened =
      Session::Open(MakeSessionOptions(options, total, result, write_error));
  if (!opened.ok()) return opened.status();
  Session& session = **opened;

  ClientLoop loop(options, frames, *offsets, session, result);
  while (!stop.load(std::memory_order_relaxed)) {
    const std::int64_t now = NowNs();
    if (loop.Done(now)) break;
    if (absl::Status s = loop.CheckProgress(now); !s.ok()) return s;
    if (absl::Status s = loop.Submit(now); !s.ok()) return s;
    const absl::StatusOr<PollResult> round = session.Poll(now);
    if (!round.ok()) return round.status();
    if (!write_error.ok()) return write_error;
    loop.Tell(now);
    // Nothing came and nothing may go now: wait for the socket, briefly.
    if (round->datagrams_received == 0 && !round->more_to_send) {
      pollfd readable{.fd = session.fd(), .events = POLLIN, .revents = 0};
      (void)::poll(&readable, 1, 1);
    }
  }
  loop.Finish();
  return result;
}

}  // namespace orderwire::client
