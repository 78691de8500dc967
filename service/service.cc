// The UDP order-entry service; see service.h.
#include "net/service.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "engine/engine.h"
#include "engine/report.h"
#include "journal/reader.h"
#include "net/report_history.h"

namespace orderwire::net {
namespace {

std::int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000 +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// A SequenceGap is sent at most once per session per this long, unless the
// client has answered the previous one (a round trip on loopback is tens of
// microseconds; a lost gap report is retried after this).
constexpr std::int64_t kGapRepeatNs = 2'000'000;
// The same for sending a session's reports again on a duplicate command.
constexpr std::int64_t kResendRepeatNs = 2'000'000;
// Live orders the order -> session table holds before it first grows.
constexpr std::size_t kInitialOwners = 4096;

// A command journaled and waiting to be durable.
struct Pending {
  std::uint64_t index;
  std::uint32_t session;  // Session::index
  std::uint32_t flags;
  codec::Command command;
};

// Outgoing state of a session.
struct SessionOutput {
  ReportHistory history;
  int tx_slot = -1;  // the datagram being filled in the send batch
  std::uint64_t resent_from = 0;
  std::int64_t resent_ns = 0;
};

}  // namespace

class Service::Impl {
 public:
  explicit Impl(ServiceOptions options)
      : options_(std::move(options)),
        engine_(options_.config.engine),
        sessions_(options_.config),
        rx_(options_.batch),
        tx_(options_.batch),
        tx_owner_(options_.batch),
        pending_(options_.max_pending) {
    outputs_.reserve(options_.config.max_sessions);
    // Sized to the live orders, not to the capacity (as the engine sizes its
    // own indices): reserved for 2 x max_live_orders it had 4M slots (68
    // MiB) for the few hundred orders the mixed workload keeps live, and
    // every lookup and insert missed the caches and the TLB (a quarter of
    // the server's time at full rate; docs/BENCHMARKS.md "Service"). It
    // grows (allocates and rehashes) only at a new high-water mark of live
    // orders past kInitialOwners, like the engine's tables.
    owners_.reserve(kInitialOwners);
  }

  absl::Status Start();
  absl::Status Run(const std::atomic<bool>& stop);

  ServiceOptions options_;
  engine::Engine engine_;
  engine::ReportBuffer reports_{1 << 12};
  SessionTable sessions_;
  std::vector<std::unique_ptr<SessionOutput>> outputs_;  // by Session::index
  // Which session each live order belongs to (its reports go there).
  absl::flat_hash_map<std::uint64_t, std::uint32_t> owners_;
  std::unique_ptr<journal::JournalWriter> writer_;
  std::optional<UdpSocket> socket_;
  Endpoint local_;
  DatagramBatch rx_;
  DatagramBatch tx_;
  std::size_t tx_used_ = 0;  // slots of tx_ holding datagrams to send
  std::vector<std::uint32_t> tx_owner_;  // session index of each slot
  std::vector<Pending> pending_;         // ring
  std::size_t pending_head_ = 0;
  std::size_t pending_size_ = 0;
  ServiceStats stats_;
  std::string startup_report_;
  std::int64_t now_ns_ = 0;

 private:
  SessionOutput& OutputOf(const Session& session);
  void ProcessDatagram(std::size_t slot, std::uint64_t receive_ns);
  // Journals frames [first, first+count) of `frames` for `session`, waiting
  // for the journal when it is full. False if the writer failed.
  bool Journal(Session& session, std::span<const std::byte> frames,
               std::uint64_t receive_ns, std::uint32_t flags,
               std::span<const codec::Command> commands);
  void WaitForJournal();
  // Applies every pending command the journal has made durable.
  void ApplyDurable();
  // Applies one command and routes its reports. `send`: false during replay.
  void Apply(const codec::Command& command, std::uint32_t flags,
             Session& session, bool send);
  void Route(const engine::Report& report, std::span<const std::byte> frame,
             Session& submitter, bool send);
  void Emit(Session& session, std::span<const std::byte> frame);
  void SendGap(Session& session);
  void ResendFrom(Session& session, std::uint64_t first_report);
  std::span<std::byte> ReserveOutput(Session& session, std::size_t size);
  void FlushOutput();
};

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Service::~Service() = default;

absl::StatusOr<std::unique_ptr<Service>> Service::Start(
    ServiceOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  if (absl::Status s = impl->Start(); !s.ok()) return s;
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

absl::Status Service::Run(const std::atomic<bool>& stop) {
  return impl_->Run(stop);
}
const Endpoint& Service::local_endpoint() const { return impl_->local_; }
const ServiceStats& Service::stats() const { return impl_->stats_; }
const std::string& Service::startup_report() const {
  return impl_->startup_report_;
}

SessionOutput& Service::Impl::OutputOf(const Session& session) {
  while (outputs_.size() <= session.index) outputs_.emplace_back();
  std::unique_ptr<SessionOutput>& out = outputs_[session.index];
  if (out == nullptr) {
    // Once per session, when it first appears.
    out = std::make_unique<SessionOutput>(SessionOutput{
        ReportHistory(options_.report_history, options_.command_history)});
  }
  return *out;
}

absl::Status Service::Impl::Start() {
  if (absl::Status s = engine::ValidateConfig(options_.config.engine);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::unique_ptr<journal::JournalWriter>> writer =
      journal::JournalWriter::Open(options_.journal);
  if (!writer.ok()) return writer.status();
  writer_ = std::move(*writer);
  const journal::RecoveryReport& recovery = writer_->recovery();
  startup_report_ = absl::StrFormat(
      "journal %s: %s, %d segment(s), last index %d; %s, durability %s",
      options_.journal.directory, recovery.created ? "created" : "recovered",
      recovery.segments, recovery.last_index, writer_->io_description(),
      journal::Name(writer_->durability()));
  if (recovery.torn_tail) {
    absl::StrAppendFormat(&startup_report_, "\n  %s", recovery.message);
  }

  // Replay: the engine, the sessions and their report histories become what
  // they were when the last durable record was applied.
  if (recovery.last_index > 0) {
    absl::StatusOr<std::unique_ptr<journal::JournalReader>> reader =
        journal::JournalReader::Open(options_.journal.directory);
    if (!reader.ok()) return reader.status();
    journal::Record record;
    const std::int64_t start = MonotonicNs();
    while (record.index < recovery.last_index &&
           (*reader)->Next(record) == journal::ReadResult::kRecord) {
      codec::Command command;
      if (!codec::DecodeCommand(record.frame.bytes(), command).ok()) {
        return absl::DataLossError(absl::StrFormat(
            "journal record %d is not a command frame", record.index));
      }
      Session* session = sessions_.Recover(record.session_id);
      if (session == nullptr) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "journal record %d: session %d does not fit: the journal has "
            "more sessions than max_sessions = %d",
            record.index, record.session_id, options_.config.max_sessions));
      }
      if (command.sequence != session->next_expected) {
        return absl::DataLossError(absl::StrFormat(
            "journal record %d: session %d sequence %d, expected %d",
            record.index, record.session_id, command.sequence,
            session->next_expected));
      }
      ++session->next_expected;
      Apply(command, record.flags, *session, /*send=*/false);
      ++stats_.replayed;
    }
    if (!(*reader)->status().ok()) return (*reader)->status();
    if (record.index != recovery.last_index) {
      return absl::DataLossError(absl::StrFormat(
          "journal replay ended at index %d, but the journal holds %d",
          record.index, recovery.last_index));
    }
    const double seconds = static_cast<double>(MonotonicNs() - start) * 1e-9;
    absl::StrAppendFormat(
        &startup_report_,
        "\n  replayed %d records in %.3f s: %d session(s), %d live orders, "
        "next order id %d",
        stats_.replayed, seconds, sessions_.size(), engine_.live_orders(),
        engine_.next_order_id());
  }
  stats_.durable_index = writer_->durable_index();
  stats_.last_index = writer_->last_index();

  absl::StatusOr<UdpSocket> socket = UdpSocket::Bind(options_.listen);
  if (!socket.ok()) return socket.status();
  socket_.emplace(std::move(*socket));
  absl::StatusOr<Endpoint> local = socket_->LocalEndpoint();
  if (!local.ok()) return local.status();
  local_ = *local;
  return absl::OkStatus();
}

absl::Status Service::Impl::Run(const std::atomic<bool>& stop) {
  const auto interval_ns = static_cast<std::int64_t>(options_.interval_s * 1e9);
  std::int64_t next_interval_ns = MonotonicNs() + interval_ns;
  while (!stop.load(std::memory_order_relaxed)) {
    if (writer_->failed()) return writer_->status();
    now_ns_ = MonotonicNs();
    if (interval_ns > 0 && now_ns_ >= next_interval_ns &&
        options_.on_interval) {
      options_.on_interval();
      next_interval_ns = now_ns_ + interval_ns;
    }
    const int n = socket_->Receive(rx_, rx_.capacity());
    if (n < 0 && n != -EAGAIN && n != -EINTR) {
      return absl::UnavailableError(absl::StrFormat(
          "receive on %s: %s", local_.ToString(), std::strerror(-n)));
    }
    if (n > 0) {
      const std::uint64_t receive_ns = RealtimeNs();
      for (int i = 0; i < n; ++i) {
        ProcessDatagram(static_cast<std::size_t>(i), receive_ns);
      }
    }
    ApplyDurable();
    if (n > 0) continue;
    // Nothing arrived: wait for the disk if it has work, else the network.
    if (pending_size_ > 0) {
      WaitForJournal();
    } else {
      socket_->WaitReadable(50);
    }
  }
  // Shutdown: nothing more is read; what was journaled is made durable,
  // applied and answered.
  if (absl::Status s = writer_->Flush(); !s.ok()) return s;
  ApplyDurable();
  absl::Status closed = writer_->Close();
  stats_.durable_index = writer_->durable_index();
  return closed;
}

void Service::Impl::ProcessDatagram(std::size_t slot,
                                    std::uint64_t receive_ns) {
  const std::span<const std::byte> bytes = rx_.datagram(slot);
  ++stats_.datagrams_in;
  stats_.bytes_in += bytes.size();
  if (rx_.truncated(slot)) {
    ++stats_.truncated_by_kernel;
    ++stats_.malformed[static_cast<std::size_t>(codec::CodecError::kOversize)];
    return;
  }
  const auto datagram =
      codec::DatagramView::Parse(bytes, codec::FrameFilter::kCommands);
  if (!datagram.ok()) {
    ++stats_.malformed[static_cast<std::size_t>(datagram.error())];
    return;
  }
  Session* session = nullptr;
  const Admission admission =
      sessions_.Admit(datagram->session_id(), rx_.peer(slot), &session);
  if (admission != Admission::kOk) {
    ++stats_.refused[static_cast<std::size_t>(admission)];
    return;
  }
  stats_.sessions = sessions_.size();

  // Frames below the expected sequence are duplicates (skipped); the run
  // that starts at the expected sequence is applied; it ends at the first
  // frame that does not continue it. A frame above the expected sequence is
  // a gap: it and the rest of the datagram are dropped.
  const std::byte* const frames_begin = datagram->frame_bytes().data();
  std::array<codec::Command, 64> commands;  // a datagram holds <= 58 frames
  std::size_t frames_seen = 0;
  std::size_t run_count = 0;
  std::size_t run_begin = 0;
  bool saw_duplicate = false;
  std::uint64_t first_duplicate = 0;
  bool gap = false;
  std::uint64_t expected = session->next_expected;
  for (auto it = datagram->begin(); it != datagram->end(); ++it) {
    const codec::FrameView frame = *it;
    const std::uint64_t sequence = frame.sequence();
    if (sequence < expected) {
      ++stats_.duplicates;
      if (!saw_duplicate) first_duplicate = sequence;
      saw_duplicate = true;
      if (run_count > 0) break;  // out of order after the run: stop there
      ++frames_seen;
      continue;
    }
    if (sequence != expected) {
      gap = true;
      break;
    }
    if (run_count == 0) run_begin = it.OffsetFrom(frames_begin);
    (void)codec::DecodeCommand(frame.bytes(), commands[run_count]);
    ++run_count;
    ++frames_seen;
    ++expected;
  }
  if (saw_duplicate) {
    // A retransmission of commands already applied: the client lacks their
    // reports (a datagram lost, or a restart between durable and sent).
    // Send the session's reports again from the first of them, once per
    // round trip; the client drops those it has by report sequence.
    const std::optional<std::uint64_t> from =
        OutputOf(*session).history.FirstReportOf(first_duplicate);
    if (from.has_value()) {
      ResendFrom(*session, *from);
    } else {
      ++stats_.resend_unavailable;
    }
  }
  if (run_count > 0) {
    // Journal the run verbatim, split where the authorization flag changes.
    const std::span<const std::byte> frame_bytes = datagram->frame_bytes();
    std::size_t offset = run_begin;
    std::size_t i = 0;
    while (i < run_count) {
      const bool allowed =
          session->policy->accounts.Contains(commands[i].account_id);
      std::size_t j = i;
      std::size_t end = offset;
      while (j < run_count && session->policy->accounts.Contains(
                                  commands[j].account_id) == allowed) {
        end += codec::Info(commands[j].kind).frame_size;
        ++j;
      }
      if (!Journal(
              *session, frame_bytes.subspan(offset, end - offset), receive_ns,
              allowed ? 0 : journal::kRecordUnauthorized,
              std::span<const codec::Command>(commands).subspan(i, j - i))) {
        return;
      }
      offset = end;
      i = j;
    }
  }
  if (gap) {
    // After the run: the SequenceGap names the sequence expected now.
    ++stats_.gaps;
    stats_.gap_frames_dropped += datagram->frame_count() - frames_seen;
    SendGap(*session);
  }
}

bool Service::Impl::Journal(Session& session, std::span<const std::byte> frames,
                            std::uint64_t receive_ns, std::uint32_t flags,
                            std::span<const codec::Command> commands) {
  // Room in the pending ring first (back-pressure on the engine side).
  while (pending_size_ + commands.size() > pending_.size()) {
    WaitForJournal();
    if (writer_->failed()) return false;
  }
  while (true) {
    const journal::AppendStatus status =
        writer_->Append(frames, session.id, receive_ns, flags);
    if (status == journal::AppendStatus::kOk) break;
    if (status != journal::AppendStatus::kFull) return false;
    WaitForJournal();  // back-pressure on the disk side
    if (writer_->failed()) return false;
  }
  std::uint64_t index = writer_->last_index() - commands.size() + 1;
  for (const codec::Command& command : commands) {
    Pending& p = pending_[(pending_head_ + pending_size_) % pending_.size()];
    p.index = index++;
    p.session = session.index;
    p.flags = flags;
    p.command = command;
    ++pending_size_;
    ++stats_.frames_in[static_cast<std::uint8_t>(command.kind)];
  }
  session.next_expected += commands.size();
  stats_.last_index = writer_->last_index();
  return true;
}

void Service::Impl::WaitForJournal() {
  ++stats_.backpressure_waits;
  (void)writer_->Wait();
  ApplyDurable();
}

void Service::Impl::ApplyDurable() {
  const std::uint64_t durable = writer_->Poll();
  stats_.durable_index = durable;
  while (pending_size_ > 0 && pending_[pending_head_].index <= durable) {
    const Pending& p = pending_[pending_head_];
    Apply(p.command, p.flags, sessions_.at(p.session), /*send=*/true);
    pending_head_ = (pending_head_ + 1) % pending_.size();
    --pending_size_;
  }
  FlushOutput();
}

void Service::Impl::Apply(const codec::Command& command, std::uint32_t flags,
                          Session& session, bool send) {
  reports_.Clear();
  OutputOf(session).history.BeginCommand(command.sequence, session.next_report);
  if ((flags & journal::kRecordUnauthorized) != 0) {
    engine_.RejectUnauthorized(command, reports_);
  } else {
    engine_.Execute(command, reports_);
  }
  ++stats_.commands_applied;
  for (std::size_t i = 0; i < reports_.size(); ++i) {
    Route(reports_[i], reports_.frame(i), session, send);
  }
}

void Service::Impl::Route(const engine::Report& report,
                          std::span<const std::byte> frame, Session& submitter,
                          bool send) {
  // Each report goes to the session that submitted the order it concerns;
  // a Rejected goes to the submitter of the rejected command.
  Session* target = &submitter;
  switch (report.kind) {
    case codec::Kind::kRejected: {
      const auto reason = static_cast<std::size_t>(report.rejected.reason);
      if (reason < stats_.rejects.size()) ++stats_.rejects[reason];
      break;
    }
    case codec::Kind::kAccepted:
      owners_[report.accepted.order_id] = submitter.index;
      break;
    default: {
      std::uint64_t order_id = 0;
      bool finished = false;
      if (report.kind == codec::Kind::kFilled) {
        order_id = report.filled.order_id;
        finished = report.filled.leaves_quantity == 0;
      } else if (report.kind == codec::Kind::kCancelled) {
        order_id = report.cancelled.order_id;
        finished = true;
      } else if (report.kind == codec::Kind::kReplaced) {
        order_id = report.replaced.order_id;
      }
      if (auto it = owners_.find(order_id); it != owners_.end()) {
        target = &sessions_.at(it->second);
        if (finished) owners_.erase(it);
      }
      break;
    }
  }
  // The report takes the next sequence of its session.
  std::array<std::byte, codec::kMaxFrameSize> numbered;
  std::memcpy(numbered.data(), frame.data(), frame.size());
  codec::StoreLE(numbered.data() + codec::kSequenceOffset, target->next_report);
  const std::span<const std::byte> out(numbered.data(), frame.size());
  OutputOf(*target).history.Add(target->next_report, out);
  ++target->next_report;
  if (send) {
    ++stats_.frames_out[static_cast<std::uint8_t>(report.kind)];
    Emit(*target, out);
  }
}

std::span<std::byte> Service::Impl::ReserveOutput(Session& session,
                                                  std::size_t size) {
  SessionOutput& out = OutputOf(session);
  if (out.tx_slot >= 0) {
    const auto slot = static_cast<std::size_t>(out.tx_slot);
    const std::size_t used = tx_.datagram(slot).size();
    if (used + size <= codec::kMaxDatagramSize) {
      return tx_.buffer(slot).subspan(used, size);
    }
    out.tx_slot = -1;  // full: it is sent with the batch
  }
  if (tx_used_ == tx_.capacity()) FlushOutput();
  const std::size_t slot = tx_used_++;
  tx_owner_[slot] = session.index;
  codec::DatagramBuilder builder(tx_.buffer(slot), session.id);
  tx_.set_length(slot, builder.size());
  tx_.set_peer(slot, session.peer);
  out.tx_slot = static_cast<int>(slot);
  return tx_.buffer(slot).subspan(builder.size(), size);
}

void Service::Impl::Emit(Session& session, std::span<const std::byte> frame) {
  if (!session.pinned) return;  // recovered, not heard from since: nowhere
  const std::span<std::byte> dst = ReserveOutput(session, frame.size());
  std::memcpy(dst.data(), frame.data(), frame.size());
  const auto slot = static_cast<std::size_t>(OutputOf(session).tx_slot);
  const std::size_t length = tx_.datagram(slot).size() + frame.size();
  tx_.set_length(slot, length);
  // frame_count is the header's u16 at a layout-derived offset.
  std::byte* const header = tx_.buffer(slot).data();
  constexpr std::size_t kCount =
      codec::DatagramOffsetOf<&codec::DatagramHeader::frame_count>();
  codec::StoreLE<std::uint16_t>(
      header + kCount, static_cast<std::uint16_t>(
                           codec::LoadLE<std::uint16_t>(header + kCount) + 1));
}

void Service::Impl::SendGap(Session& session) {
  if (session.gap_sent_for == session.next_expected &&
      now_ns_ - session.gap_sent_ns < kGapRepeatNs) {
    return;  // one per round trip
  }
  session.gap_sent_for = session.next_expected;
  session.gap_sent_ns = now_ns_;
  std::array<std::byte, codec::kFrameSize<codec::SequenceGap>> frame;
  (void)codec::EncodeFrame(0, codec::SequenceGap{session.next_expected}, frame);
  ++stats_.sequence_gaps_sent;
  ++stats_.frames_out[static_cast<std::uint8_t>(codec::Kind::kSequenceGap)];
  Emit(session, frame);
}

void Service::Impl::ResendFrom(Session& session, std::uint64_t first_report) {
  SessionOutput& out = OutputOf(session);
  // Once per round trip: a resend from this point or an earlier one went out
  // less than a round trip ago (e.g. for the previous datagram of the same
  // retransmitted window) and covered these reports, and those made since
  // went out live. Resending for every such datagram would send
  // O(window^2) reports.
  if (out.resent_from != 0 && first_report >= out.resent_from &&
      now_ns_ - out.resent_ns < kResendRepeatNs) {
    return;
  }
  out.resent_from = first_report;
  out.resent_ns = now_ns_;
  for (std::uint64_t seq = first_report; seq < session.next_report; ++seq) {
    const std::span<const std::byte> frame = out.history.Get(seq);
    if (frame.empty()) break;
    Emit(session, frame);
    ++stats_.reports_resent;
  }
}

void Service::Impl::FlushOutput() {
  if (tx_used_ == 0) return;
  // The datagrams being filled are closed: their sessions start new ones.
  for (std::size_t i = 0; i < tx_used_; ++i) {
    outputs_[tx_owner_[i]]->tx_slot = -1;
  }
  std::size_t sent = 0;
  int attempts = 0;
  while (sent < tx_used_) {
    const int n = socket_->SendRange(tx_, sent, tx_used_ - sent);
    if (n > 0) {
      for (std::size_t i = sent; i < sent + static_cast<std::size_t>(n); ++i) {
        stats_.bytes_out += tx_.datagram(i).size();
      }
      sent += static_cast<std::size_t>(n);
      stats_.datagrams_out += static_cast<std::uint64_t>(n);
      attempts = 0;
      continue;
    }
    // The socket buffer is full (or the peer is gone): retry briefly, then
    // drop; the client recovers by retransmitting (see ReportHistory).
    if (++attempts > 1000 ||
        (n < 0 && n != -EAGAIN && n != -ENOBUFS && n != -EINTR)) {
      ++stats_.send_failures;
      ++sent;
      attempts = 0;
    }
  }
  tx_used_ = 0;
}

// ---------------------------------------------------------------------------
// Counters.

std::string Service::StatsLine() const {
  const ServiceStats& s = impl_->stats_;
  std::uint64_t malformed = 0;
  for (std::uint64_t v : s.malformed) malformed += v;
  std::uint64_t refused = 0;
  for (std::uint64_t v : s.refused) refused += v;
  std::uint64_t frames_in = 0;
  for (std::uint64_t v : s.frames_in) frames_in += v;
  std::uint64_t frames_out = 0;
  for (std::uint64_t v : s.frames_out) frames_out += v;
  return absl::StrFormat(
      "datagrams in %d out %d | commands %d reports %d | durable %d/%d | "
      "dup %d gaps %d malformed %d refused %d | sessions %d",
      s.datagrams_in, s.datagrams_out, frames_in, frames_out, s.durable_index,
      s.last_index, s.duplicates, s.gaps, malformed, refused, s.sessions);
}

std::string Service::StatsReport() const {
  const ServiceStats& s = impl_->stats_;
  std::string out;
  absl::StrAppendFormat(&out, "  datagrams in      %d (%d bytes)\n",
                        s.datagrams_in, s.bytes_in);
  absl::StrAppendFormat(
      &out, "  datagrams out     %d (%d bytes, %d refused by the kernel)\n",
      s.datagrams_out, s.bytes_out, s.send_failures);
  for (std::size_t k = 0; k < 256; ++k) {
    if (s.frames_in[k] != 0) {
      absl::StrAppendFormat(&out, "  commands in       %-16s %d\n",
                            codec::kKindTable[k].name, s.frames_in[k]);
    }
  }
  for (std::size_t k = 0; k < 256; ++k) {
    if (s.frames_out[k] != 0) {
      absl::StrAppendFormat(&out, "  reports out       %-16s %d\n",
                            codec::kKindTable[k].name, s.frames_out[k]);
    }
  }
  for (std::size_t r = 0; r < s.rejects.size(); ++r) {
    if (s.rejects[r] != 0) {
      absl::StrAppendFormat(&out, "  rejected          %-16s %d\n",
                            codec::Name(static_cast<codec::RejectReason>(r)),
                            s.rejects[r]);
    }
  }
  for (std::size_t e = 0; e < s.malformed.size(); ++e) {
    if (s.malformed[e] != 0) {
      absl::StrAppendFormat(&out, "  dropped malformed %-16s %d\n",
                            codec::Name(static_cast<codec::CodecError>(e)),
                            s.malformed[e]);
    }
  }
  for (std::size_t a = 0; a < s.refused.size(); ++a) {
    if (s.refused[a] != 0) {
      absl::StrAppendFormat(&out, "  dropped refused   %-16s %d\n",
                            Name(static_cast<Admission>(a)), s.refused[a]);
    }
  }
  absl::StrAppendFormat(&out, "  duplicates        %d frames\n", s.duplicates);
  absl::StrAppendFormat(&out,
                        "  gaps              %d datagrams (%d frames dropped, "
                        "%d SequenceGap sent)\n",
                        s.gaps, s.gap_frames_dropped, s.sequence_gaps_sent);
  absl::StrAppendFormat(&out, "  reports resent    %d (%d too old)\n",
                        s.reports_resent, s.resend_unavailable);
  absl::StrAppendFormat(&out,
                        "  commands applied  %d (+%d replayed at start)\n",
                        s.commands_applied - s.replayed, s.replayed);
  absl::StrAppendFormat(
      &out, "  journal           durable %d of %d, %d waits for the disk\n",
      s.durable_index, s.last_index, s.backpressure_waits);
  absl::StrAppendFormat(&out, "  sessions          %d\n", s.sessions);
  return out;
}

std::string Service::StatsJson() const {
  const ServiceStats& s = impl_->stats_;
  std::string out = "{";
  const auto field = [&](std::string_view name, std::uint64_t value) {
    absl::StrAppendFormat(&out, "%s\"%s\":%d", out.size() > 1 ? "," : "", name,
                          value);
  };
  field("datagrams_in", s.datagrams_in);
  field("bytes_in", s.bytes_in);
  field("datagrams_out", s.datagrams_out);
  field("bytes_out", s.bytes_out);
  field("send_failures", s.send_failures);
  field("duplicates", s.duplicates);
  field("gaps", s.gaps);
  field("gap_frames_dropped", s.gap_frames_dropped);
  field("sequence_gaps_sent", s.sequence_gaps_sent);
  field("reports_resent", s.reports_resent);
  field("resend_unavailable", s.resend_unavailable);
  field("truncated_by_kernel", s.truncated_by_kernel);
  field("commands_applied", s.commands_applied);
  field("replayed", s.replayed);
  field("backpressure_waits", s.backpressure_waits);
  field("durable_index", s.durable_index);
  field("last_index", s.last_index);
  field("sessions", s.sessions);
  const auto group = [&](std::string_view name, auto&& fill) {
    absl::StrAppendFormat(&out, ",\"%s\":{", name);
    bool first = true;
    fill([&](std::string_view key, std::uint64_t value) {
      absl::StrAppendFormat(&out, "%s\"%s\":%d", first ? "" : ",", key, value);
      first = false;
    });
    out += "}";
  };
  group("commands_in", [&](auto put) {
    for (std::size_t k = 0; k < 256; ++k) {
      if (s.frames_in[k]) put(codec::kKindTable[k].name, s.frames_in[k]);
    }
  });
  group("reports_out", [&](auto put) {
    for (std::size_t k = 0; k < 256; ++k) {
      if (s.frames_out[k]) put(codec::kKindTable[k].name, s.frames_out[k]);
    }
  });
  group("rejects", [&](auto put) {
    for (std::size_t r = 1; r < s.rejects.size(); ++r) {
      const auto name = codec::Name(static_cast<codec::RejectReason>(r));
      if (!name.empty()) put(name, s.rejects[r]);
    }
  });
  group("malformed", [&](auto put) {
    for (std::size_t e = 1; e < s.malformed.size(); ++e) {
      put(codec::Name(static_cast<codec::CodecError>(e)), s.malformed[e]);
    }
  });
  group("refused", [&](auto put) {
    for (std::size_t a = 1; a < s.refused.size(); ++a) {
      put(Name(static_cast<Admission>(a)), s.refused[a]);
    }
  });
  out += "}";
  return out;
}

}  // namespace orderwire::net
