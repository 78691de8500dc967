// The counters' mirror and their Prometheus text; see metrics.h.
#include "service/metrics/metrics.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "codec/error.h"
#include "codec/kind_table.h"
#include "codec/types.h"

namespace orderwire::service {

void StatsMirror::Publish(const ServiceStats& stats) noexcept {
  // Word by word from the struct itself (trivially copyable): no copy of
  // it first.
  const auto* bytes = reinterpret_cast<const unsigned char*>(&stats);
  for (std::size_t i = 0; i < kWords; ++i) {
    std::uint64_t word;
    std::memcpy(&word, bytes + i * sizeof(word), sizeof(word));
    words_[i].store(word, std::memory_order_relaxed);
  }
  publications_.store(publications_.load(std::memory_order_relaxed) + 1,
                      std::memory_order_relaxed);
}

void StatsMirror::Read(ServiceStats* stats) const noexcept {
  std::array<std::uint64_t, kWords> words;
  for (std::size_t i = 0; i < kWords; ++i) {
    words[i] = words_[i].load(std::memory_order_relaxed);
  }
  // Trivially copyable (static_assert in metrics.h).
  std::memcpy(static_cast<void*>(stats), words.data(), sizeof(*stats));
}

// ---------------------------------------------------------------------------
// The text format.

void PrometheusText::AppendEscaped(std::string_view text, bool label_value) {
  for (const char c : text) {
    if (c == '\\') {
      *out_ += "\\\\";
    } else if (c == '\n') {
      *out_ += "\\n";
    } else if (c == '"' && label_value) {
      *out_ += "\\\"";
    } else {
      *out_ += c;
    }
  }
}

void PrometheusText::Family(std::string_view name, Type type,
                            std::string_view help) {
  absl::StrAppendFormat(out_, "# HELP %s ", name);
  AppendEscaped(help, /*label_value=*/false);
  absl::StrAppendFormat(out_, "\n# TYPE %s %s\n", name,
                        type == Type::kCounter ? "counter"
                        : type == Type::kGauge ? "gauge"
                                               : "histogram");
}

void PrometheusText::Sample(std::string_view name, std::uint64_t value) {
  absl::StrAppendFormat(out_, "%s %d\n", name, value);
}

void PrometheusText::Sample(std::string_view name, std::string_view label,
                            std::string_view label_value, std::uint64_t value) {
  absl::StrAppendFormat(out_, "%s{%s=\"", name, label);
  AppendEscaped(label_value, /*label_value=*/true);
  absl::StrAppendFormat(out_, "\"} %d\n", value);
}

void PrometheusText::SampleSeconds(std::string_view name, std::uint64_t ns) {
  absl::StrAppendFormat(out_, "%s %s\n", name, Seconds(ns));
}

std::string PrometheusText::Seconds(std::uint64_t ns) {
  std::string text =
      absl::StrFormat("%d.%09d", ns / 1'000'000'000, ns % 1'000'000'000);
  // Exact, and as short as it goes: "0.00025", "1", "2.5".
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

void PrometheusText::Histogram(std::string_view name, std::string_view help,
                               std::span<const std::uint64_t> bounds_ns,
                               std::span<const std::uint64_t> buckets,
                               std::uint64_t sum_ns) {
  Family(name, Type::kHistogram, help);
  // Cumulative: each bucket counts every observation at or below its bound.
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds_ns.size(); ++i) {
    cumulative += i < buckets.size() ? buckets[i] : 0;
    absl::StrAppendFormat(out_, "%s_bucket{le=\"%s\"} %d\n", name,
                          Seconds(bounds_ns[i]), cumulative);
  }
  for (std::size_t i = bounds_ns.size(); i < buckets.size(); ++i) {
    cumulative += buckets[i];
  }
  absl::StrAppendFormat(out_, "%s_bucket{le=\"+Inf\"} %d\n", name, cumulative);
  absl::StrAppendFormat(out_, "%s_sum %s\n", name, Seconds(sum_ns));
  absl::StrAppendFormat(out_, "%s_count %d\n", name, cumulative);
}

// ---------------------------------------------------------------------------
// The service's families (docs/SERVICE.md "Metrics" lists them).

namespace {

using Type = PrometheusText::Type;

// The causes a received datagram is dropped for as malformed (the others
// are the encoders' and the typed views').
constexpr codec::CodecError kDatagramErrors[] = {
    codec::CodecError::kBadMagic,       codec::CodecError::kBadVersion,
    codec::CodecError::kBadFlags,       codec::CodecError::kBadReserved,
    codec::CodecError::kZeroFrameCount, codec::CodecError::kCountMismatch,
    codec::CodecError::kTrailingBytes,  codec::CodecError::kTruncated,
    codec::CodecError::kUnknownKind,    codec::CodecError::kNotACommand,
    codec::CodecError::kOversize,
};

void Counter(PrometheusText& text, std::string_view name, std::string_view help,
             std::uint64_t value) {
  text.Family(name, Type::kCounter, help);
  text.Sample(name, value);
}

void Gauge(PrometheusText& text, std::string_view name, std::string_view help,
           std::uint64_t value) {
  text.Family(name, Type::kGauge, help);
  text.Sample(name, value);
}

// One series per kind of class `kind_class`, labelled kind="<name>".
void ByKind(PrometheusText& text, std::string_view name, std::string_view help,
            codec::KindClass kind_class,
            const std::array<std::uint64_t, 256>& counts) {
  text.Family(name, Type::kCounter, help);
  for (std::size_t k = 0; k < codec::kKindTable.size(); ++k) {
    if (codec::kKindTable[k].kind_class != kind_class) continue;
    text.Sample(name, "kind", codec::kKindTable[k].name, counts[k]);
  }
}

}  // namespace

void AppendServiceMetrics(const ServiceStats& s, std::string* out) {
  PrometheusText text(out);
  // Traffic.
  Counter(text, "orderwire_datagrams_received_total",
          "Datagrams received on the service's UDP socket.", s.datagrams_in);
  Counter(text, "orderwire_received_bytes_total",
          "Bytes of the datagrams received.", s.bytes_in);
  Counter(text, "orderwire_datagrams_sent_total",
          "Report datagrams sent (taken by the kernel).", s.datagrams_out);
  Counter(text, "orderwire_sent_bytes_total",
          "Bytes of the report datagrams sent.", s.bytes_out);
  Counter(text, "orderwire_send_failures_total",
          "Report datagrams the kernel would not take (dropped; the client "
          "recovers them by retransmitting).",
          s.send_failures);
  text.Family("orderwire_datagrams_malformed_total", Type::kCounter,
              "Datagrams dropped whole because they do not parse, by reason "
              "(docs/PROTOCOL.md \"Datagram\"); never answered.");
  for (const codec::CodecError e : kDatagramErrors) {
    text.Sample("orderwire_datagrams_malformed_total", "reason", codec::Name(e),
                s.malformed[static_cast<std::size_t>(e)]);
  }
  text.Family("orderwire_datagrams_refused_total", Type::kCounter,
              "Datagrams dropped by the session rules, by cause; never "
              "answered (serve --log-refusals names each).");
  for (std::size_t a = 1; a < kAdmissionCount; ++a) {
    text.Sample("orderwire_datagrams_refused_total", "cause",
                Name(static_cast<Admission>(a)), s.refused[a]);
  }
  // Commands and reports.
  ByKind(text, "orderwire_commands_journaled_total",
         "Command frames journaled, by kind.", codec::KindClass::kCommand,
         s.frames_in);
  Counter(text, "orderwire_commands_applied_total",
          "Commands applied by the state machine since start, the ones "
          "replayed at start-up included.",
          s.commands_applied);
  ByKind(text, "orderwire_reports_sent_total",
         "Report frames sent, by kind (SequenceGap, Busy and ReportsGone "
         "included; resent reports not).",
         codec::KindClass::kReport, s.frames_out);
  text.Family("orderwire_rejects_total", Type::kCounter,
              "Rejected reports, by reject reason.");
  for (std::size_t r = 1; r < s.rejects.size(); ++r) {
    const std::string_view name =
        codec::Name(static_cast<codec::RejectReason>(r));
    if (!name.empty()) {
      text.Sample("orderwire_rejects_total", "reason", name, s.rejects[r]);
    }
  }
  // Sequences and resends.
  Counter(text, "orderwire_duplicate_frames_total",
          "Command frames below their session's expected sequence "
          "(retransmissions), skipped.",
          s.duplicates);
  Counter(text, "orderwire_sequence_gap_datagrams_total",
          "Datagrams whose first new frame was beyond the expected sequence.",
          s.gaps);
  Counter(text, "orderwire_gap_frames_dropped_total",
          "Command frames dropped because a gap preceded them.",
          s.gap_frames_dropped);
  Counter(text, "orderwire_sequence_gaps_sent_total",
          "SequenceGap frames sent (to sessions held and to unknown ones).",
          s.sequence_gaps_sent);
  Counter(text, "orderwire_new_session_gaps_dropped_total",
          "SequenceGap(1) answers to unknown sessions not sent: over 64 per "
          "2 ms.",
          s.new_session_gaps_dropped);
  Counter(text, "orderwire_reports_resent_total",
          "Reports sent again for retransmitted commands.", s.reports_resent);
  Counter(text, "orderwire_resend_unavailable_total",
          "Retransmitted commands whose reports are no longer held.",
          s.resend_unavailable);
  Counter(text, "orderwire_reports_gone_sent_total",
          "ReportsGone frames sent: reports a client will never get.",
          s.reports_gone_sent);
  Counter(text, "orderwire_regenerations_total",
          "Jobs that made a session's reports again from the journal for a "
          "resend the history no longer held.",
          s.regenerations);
  Counter(text, "orderwire_regeneration_records_total",
          "Journal records those jobs applied (their CPU cost).",
          s.regeneration_records);
  Counter(text, "orderwire_regeneration_snapshots_total",
          "Snapshots those jobs loaded.", s.regeneration_snapshots);
  Counter(text, "orderwire_reports_regenerated_total",
          "Reports sent that were made again from the journal.",
          s.reports_regenerated);
  Counter(text, "orderwire_regenerations_refused_total",
          "Regeneration requests not taken (64 sessions waiting); the "
          "client's next retransmission asks again.",
          s.regenerations_refused);
  Counter(text, "orderwire_regenerations_gone_total",
          "Regenerations answered ReportsGone: older than the retained "
          "journal, or failed.",
          s.regenerations_gone);
  Counter(text, "orderwire_regeneration_failures_total",
          "Regenerations that failed (journal damage or I/O; each logged).",
          s.regeneration_failures);
  Gauge(text, "orderwire_report_history_bytes",
        "Bytes all report histories hold now.", s.history_bytes);
  Counter(text, "orderwire_histories_released_total",
          "Report histories released because their session was idle.",
          s.histories_released);
  Counter(text, "orderwire_datagrams_truncated_by_kernel_total",
          "Datagrams longer than 1472 bytes (also counted as malformed, "
          "reason Oversize).",
          s.truncated_by_kernel);
  // The journal.
  Gauge(text, "orderwire_journal_durable_index",
        "Index of the last journal record that is durable.", s.durable_index);
  Gauge(text, "orderwire_journal_last_index",
        "Index of the last journal record appended.", s.last_index);
  Counter(text, "orderwire_journal_appended_records_total",
          "Records the journal writer appended since start.",
          s.journal_records);
  Counter(text, "orderwire_journal_group_commits_total",
          "Groups of records the journal writer committed (one write each) "
          "since start.",
          s.journal_groups);
  Counter(text, "orderwire_journal_written_bytes_total",
          "Bytes the journal's group writes put on the device since start.",
          s.journal_bytes_written);
  Counter(text, "orderwire_journal_waits_total",
          "Times the service loop blocked waiting for the journal's writes.",
          s.backpressure_waits);
  Gauge(text, "orderwire_journal_full",
        "1 while the journal has no room on its disk (commands answered "
        "Busy), else 0.",
        s.journal_full ? 1 : 0);
  Counter(text, "orderwire_journal_full_episodes_total",
          "Times the journal-full state began.", s.journal_full_episodes);
  Counter(text, "orderwire_journal_reduced_segments_total",
          "Journal segments made smaller than the segment size: the disk "
          "had no room for a whole one.",
          s.journal_reduced_segments);
  Counter(text, "orderwire_journal_full_refused_datagrams_total",
          "Datagrams whose new commands were not journaled: journal full.",
          s.refused_journal_full_datagrams);
  Counter(text, "orderwire_journal_full_refused_frames_total",
          "Command frames not journaled: journal full.",
          s.refused_journal_full_frames);
  Counter(text, "orderwire_busy_sent_total",
          "Busy frames sent (cause JournalFull).", s.busy_sent);
  // Sessions.
  Gauge(text, "orderwire_sessions",
        "Sessions the service holds (listed and unlisted).", s.sessions);
  Gauge(text, "orderwire_sessions_listed",
        "Sessions listed in the configuration ([sessions.N] tables).",
        s.sessions_listed);
  Counter(text, "orderwire_sessions_moved_total",
          "Times a keyed session moved to a new endpoint by proving its key.",
          s.sessions_moved);
  Counter(text, "orderwire_sessions_recycled_total",
          "Idle unlisted sessions that gave their slot back (their state "
          "stays; they continue when they come back).",
          s.sessions_recycled);
  // Sending.
  Gauge(text, "orderwire_send_segmented",
        "1 while reports are sent in UDP_SEGMENT runs, 0 with sendmmsg.",
        s.send_segmented ? 1 : 0);
  Counter(text, "orderwire_segmented_sends_total",
          "UDP_SEGMENT sends (sendmmsg entries on the gso path).",
          s.segmented_sends);
  Counter(text, "orderwire_segmented_datagrams_total",
          "Datagrams carried by UDP_SEGMENT sends.", s.segmented_datagrams);
  Counter(text, "orderwire_gso_fallbacks_total",
          "Times the send path fell back to sendmmsg.", s.gso_fallbacks);
  // Start-up and snapshots.
  Gauge(text, "orderwire_started_from_snapshot_index",
        "Index of the snapshot the service started from (0: none).",
        s.started_from_snapshot);
  Gauge(text, "orderwire_replayed_records",
        "Journal records replayed at start-up (after the snapshot).",
        s.replayed);
  Counter(text, "orderwire_snapshots_written_total",
          "Snapshots written by a child while serving.", s.snapshots_taken);
  Counter(text, "orderwire_snapshots_failed_total",
          "Snapshots that failed (each one logged).", s.snapshots_failed);
  Gauge(text, "orderwire_snapshot_last_index",
        "Index of the last snapshot written (0: none).", s.last_snapshot_index);
  Gauge(text, "orderwire_snapshot_running",
        "1 while a snapshot child is writing.", s.snapshot_running ? 1 : 0);
  text.Family("orderwire_snapshot_fork_last_seconds", Type::kGauge,
              "Seconds the loop spent in fork() for the last snapshot.");
  text.SampleSeconds("orderwire_snapshot_fork_last_seconds", s.fork_ns_last);
  text.Family("orderwire_snapshot_fork_max_seconds", Type::kGauge,
              "Longest time the loop spent in fork() for a snapshot.");
  text.SampleSeconds("orderwire_snapshot_fork_max_seconds", s.fork_ns_max);
  // Latency.
  text.Histogram("orderwire_command_durable_latency_seconds",
                 "Seconds from a command's receipt to the loop finding it "
                 "durable and applying it (its reports leave in the same "
                 "pass).",
                 kLatencyBoundsNs, s.command_latency.buckets,
                 s.command_latency.sum_ns);
  text.Histogram("orderwire_journal_wait_seconds",
                 "Seconds the loop blocked each time it waited for the "
                 "journal's writes.",
                 kLatencyBoundsNs, s.journal_wait.buckets,
                 s.journal_wait.sum_ns);
  // Replication (`--durability replicated` only).
  if (!s.replication) return;
  Gauge(text, "orderwire_replicated_index",
        "Last journal index the JetStream journal stream has acknowledged "
        "(commands are answered up to min(durable, replicated)).",
        s.replicated_index);
  Counter(text, "orderwire_replication_published_messages_total",
          "Messages (runs of journal records) published to the journal "
          "stream.",
          s.replication_published_messages);
  Counter(text, "orderwire_replication_acknowledged_messages_total",
          "Messages the journal stream acknowledged.",
          s.replication_acknowledged_messages);
  Counter(text, "orderwire_replication_published_records_total",
          "Journal records published to the journal stream.",
          s.replication_published_records);
  Counter(text, "orderwire_replication_failures_total",
          "Replication failures (the first stops the service).",
          s.replication_failures);
  Counter(text, "orderwire_replication_republished_messages_total",
          "Messages published again to the journal stream while it "
          "re-elected its leader.",
          s.replication_republished_messages);
  text.Histogram("orderwire_replication_publish_latency_seconds",
                 "Seconds from publishing a message to the journal stream to "
                 "its acknowledgement.",
                 kLatencyBoundsNs, s.replication_publish_latency.buckets,
                 s.replication_publish_latency.sum_ns);
}

}  // namespace orderwire::service
