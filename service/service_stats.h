// The service's counters, each declared once: ServiceStats and the tables
// every output is written from (the stderr report at exit, --stats-json and
// the Prometheus text of service/metrics/metrics.h; docs/SERVICE.md
// "Counters" and "Metrics").
//
// Three kinds of counter:
// - scalars, one row each of ORDERWIRE_SERVICE_SCALARS: a uint64 field of
//   ServiceStats (its name is also its JSON key), its Prometheus family
//   (empty: not exported), counter, gauge or a gauge of nanoseconds exported
//   in seconds, whether it exists only under replicated durability, its
//   section and short label in the report, and its Prometheus help text;
// - labelled counters (ServiceStats's arrays: by kind, reason, cause), one
//   row each of CounterGroups();
// - latency histograms (LatencyBuckets), one row each of kHistograms.
// A flag is a 0/1 gauge like any other scalar.
//
// Threading: the tables are constant; the Format functions read the
// ServiceStats they are given and allocate (cold: the report, the JSON file,
// the HTTP thread).
#ifndef ORDERWIRE_SERVICE_SERVICE_STATS_H_
#define ORDERWIRE_SERVICE_SERVICE_STATS_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "codec/error.h"
#include "feed/types.h"
#include "service/latency_buckets.h"
#include "service/session_table.h"

namespace orderwire::service {

// How a scalar is exported to Prometheus: a counter (`_total`), a gauge, or
// a gauge of nanoseconds written in seconds.
enum class MetricKind : std::uint8_t { kCounter, kGauge, kSecondsGauge };

// kReplicated: meaningful only under `--durability replicated`; kMarketData:
// only with `--md-target`. Exported to Prometheus and printed in the report
// only then (always in the JSON).
enum class CounterScope : std::uint8_t { kAlways, kReplicated, kMarketData };

// The sections of the report at exit, in the order printed.
enum class ReportSection : std::uint8_t {
  kTraffic,
  kSending,
  kCommands,
  kSequences,
  kResends,
  kJournal,
  kJournalFull,
  kSnapshots,
  kSessions,
  kReplication,
  kMarketData,
};
inline constexpr std::size_t kReportSectionCount = 11;
[[nodiscard]] std::string_view Name(ReportSection section);

// X(field, metric, kind, scope, section, label, help), in JSON key order.
// clang-format off
#define ORDERWIRE_SERVICE_SCALARS(X)                                          \
  X(datagrams_in, "orderwire_datagrams_received_total", kCounter, kAlways,    \
    kTraffic, "datagrams in",                                                 \
    "Datagrams received on the service's UDP socket.")                        \
  X(bytes_in, "orderwire_received_bytes_total", kCounter, kAlways, kTraffic,  \
    "bytes in", "Bytes of the datagrams received.")                           \
  X(datagrams_out, "orderwire_datagrams_sent_total", kCounter, kAlways,       \
    kTraffic, "datagrams out",                                                \
    "Report datagrams sent (taken by the kernel).")                           \
  X(bytes_out, "orderwire_sent_bytes_total", kCounter, kAlways, kTraffic,     \
    "bytes out", "Bytes of the report datagrams sent.")                       \
  X(send_failures, "orderwire_send_failures_total", kCounter, kAlways,        \
    kTraffic, "refused by the kernel",                                        \
    "Report datagrams the kernel would not take (dropped; the client "        \
    "recovers them by retransmitting).")                                      \
  X(send_segmented, "orderwire_send_segmented", kGauge, kAlways, kSending,    \
    "segmented now (1: gso)",                                                 \
    "1 while reports are sent in UDP_SEGMENT runs, 0 with sendmmsg.")         \
  X(segmented_sends, "orderwire_segmented_sends_total", kCounter, kAlways,    \
    kSending, "segmented sends",                                              \
    "UDP_SEGMENT sends (sendmmsg entries on the gso path).")                  \
  X(segmented_datagrams, "orderwire_segmented_datagrams_total", kCounter,     \
    kAlways, kSending, "datagrams they carried",                              \
    "Datagrams carried by UDP_SEGMENT sends.")                                \
  X(gso_fallbacks, "orderwire_gso_fallbacks_total", kCounter, kAlways,        \
    kSending, "fallbacks to sendmmsg",                                        \
    "Times the send path fell back to sendmmsg.")                             \
  X(duplicates, "orderwire_duplicate_frames_total", kCounter, kAlways,        \
    kSequences, "duplicate frames",                                           \
    "Command frames below their session's expected sequence "                 \
    "(retransmissions), skipped.")                                            \
  X(gaps, "orderwire_sequence_gap_datagrams_total", kCounter, kAlways,        \
    kSequences, "datagrams with a gap",                                       \
    "Datagrams whose first new frame was beyond the expected sequence.")      \
  X(gap_frames_dropped, "orderwire_gap_frames_dropped_total", kCounter,       \
    kAlways, kSequences, "frames dropped after a gap",                        \
    "Command frames dropped because a gap preceded them.")                    \
  X(sequence_gaps_sent, "orderwire_sequence_gaps_sent_total", kCounter,       \
    kAlways, kSequences, "SequenceGap sent",                                  \
    "SequenceGap frames sent (to sessions held and to unknown ones).")        \
  X(heartbeats, "orderwire_heartbeats_total", kCounter, kAlways, kSequences,  \
    "heartbeats", "Heartbeat frames of admitted datagrams (docs/CONTROLS.md).") \
  X(heartbeat_acks_sent, "orderwire_heartbeat_acks_sent_total", kCounter,     \
    kAlways, kSequences, "HeartbeatAck sent",                                 \
    "HeartbeatAck frames sent (to sessions held and to unknown ones).")       \
  X(session_lapses, "orderwire_session_lapses_total", kCounter, kAlways,      \
    kSequences, "sessions lapsed",                                            \
    "Lapses journaled: sessions silent past their liveness timeout "          \
    "(docs/CONTROLS.md).")                                                    \
  X(reports_resent, "orderwire_reports_resent_total", kCounter, kAlways,      \
    kResends, "reports resent",                                               \
    "Reports sent again for retransmitted commands.")                         \
  X(resend_unavailable, "orderwire_resend_unavailable_total", kCounter,       \
    kAlways, kResends, "resends no longer held",                              \
    "Retransmitted commands whose reports are no longer held.")               \
  X(reports_gone_sent, "orderwire_reports_gone_sent_total", kCounter,         \
    kAlways, kResends, "ReportsGone sent",                                    \
    "ReportsGone frames sent: reports a client will never get.")              \
  X(regenerations, "orderwire_regenerations_total", kCounter, kAlways,        \
    kResends, "regeneration jobs",                                            \
    "Jobs that made a session's reports again from the journal for a "       \
    "resend the history no longer held.")                                     \
  X(regeneration_records, "orderwire_regeneration_records_total", kCounter,   \
    kAlways, kResends, "records they applied",                                \
    "Journal records those jobs applied (their CPU cost).")                   \
  X(regeneration_snapshots, "orderwire_regeneration_snapshots_total",         \
    kCounter, kAlways, kResends, "snapshots they loaded",                     \
    "Snapshots those jobs loaded.")                                           \
  X(reports_regenerated, "orderwire_reports_regenerated_total", kCounter,     \
    kAlways, kResends, "reports regenerated",                                 \
    "Reports sent that were made again from the journal.")                    \
  X(regenerations_refused, "orderwire_regenerations_refused_total",           \
    kCounter, kAlways, kResends, "regenerations refused",                     \
    "Regeneration requests not taken (64 sessions waiting); the "             \
    "client's next retransmission asks again.")                               \
  X(regenerations_gone, "orderwire_regenerations_gone_total", kCounter,       \
    kAlways, kResends, "regenerations gone",                                  \
    "Regenerations answered ReportsGone: older than the retained "            \
    "journal, or failed.")                                                    \
  X(regeneration_failures, "orderwire_regeneration_failures_total",           \
    kCounter, kAlways, kResends, "regenerations failed",                      \
    "Regenerations that failed (journal damage or I/O; each logged).")        \
  X(new_session_gaps_dropped, "orderwire_new_session_gaps_dropped_total",     \
    kCounter, kAlways, kSequences, "SequenceGap(1) not sent",                 \
    "SequenceGap(1) answers to unknown sessions not sent: over 64 per "       \
    "2 ms.")                                                                  \
  X(histories_released, "orderwire_histories_released_total", kCounter,       \
    kAlways, kResends, "idle histories released",                             \
    "Report histories released because their session was idle.")             \
  X(history_bytes, "orderwire_report_history_bytes", kGauge, kAlways,         \
    kResends, "report history bytes",                                         \
    "Bytes all report histories hold now.")                                   \
  X(truncated_by_kernel, "orderwire_datagrams_truncated_by_kernel_total",     \
    kCounter, kAlways, kTraffic, "truncated by the kernel",                   \
    "Datagrams longer than 1472 bytes (also counted as malformed, "           \
    "reason Oversize).")                                                      \
  X(commands_applied, "orderwire_commands_applied_total", kCounter, kAlways,  \
    kCommands, "applied (replayed included)",                                 \
    "Commands applied by the state machine since start, the ones "            \
    "replayed at start-up included.")                                         \
  X(replayed, "orderwire_replayed_records", kGauge, kAlways, kCommands,       \
    "replayed at start",                                                      \
    "Journal records replayed at start-up (after the snapshot).")             \
  X(started_from_snapshot, "orderwire_started_from_snapshot_index", kGauge,   \
    kAlways, kSnapshots, "started from index (0: none)",                      \
    "Index of the snapshot the service started from (0: none).")              \
  X(snapshots_taken, "orderwire_snapshots_written_total", kCounter, kAlways,  \
    kSnapshots, "written", "Snapshots written by a child while serving.")     \
  X(snapshots_failed, "orderwire_snapshots_failed_total", kCounter, kAlways,  \
    kSnapshots, "failed", "Snapshots that failed (each one logged).")         \
  X(last_snapshot_index, "orderwire_snapshot_last_index", kGauge, kAlways,    \
    kSnapshots, "last written at index",                                      \
    "Index of the last snapshot written (0: none).")                          \
  X(snapshot_running, "orderwire_snapshot_running", kGauge, kAlways,          \
    kSnapshots, "being written now",                                          \
    "1 while a snapshot child is writing.")                                   \
  X(fork_ns_last, "orderwire_snapshot_fork_last_seconds", kSecondsGauge,      \
    kAlways, kSnapshots, "fork, the last",                                    \
    "Seconds the loop spent in fork() for the last snapshot.")                \
  X(fork_ns_max, "orderwire_snapshot_fork_max_seconds", kSecondsGauge,        \
    kAlways, kSnapshots, "fork, the longest",                                 \
    "Longest time the loop spent in fork() for a snapshot.")                  \
  X(backpressure_waits, "orderwire_journal_waits_total", kCounter, kAlways,   \
    kJournal, "waits for the disk",                                           \
    "Times the service loop blocked waiting for the journal's writes.")       \
  X(durable_index, "orderwire_journal_durable_index", kGauge, kAlways,        \
    kJournal, "durable index",                                                \
    "Index of the last journal record that is durable.")                      \
  X(last_index, "orderwire_journal_last_index", kGauge, kAlways, kJournal,    \
    "last index", "Index of the last journal record appended.")               \
  X(sessions, "orderwire_sessions", kGauge, kAlways, kSessions, "held",       \
    "Sessions the service holds (listed and unlisted).")                      \
  X(sessions_listed, "orderwire_sessions_listed", kGauge, kAlways, kSessions, \
    "listed", "Sessions listed in the configuration ([sessions.N] tables).")  \
  X(journal_records, "orderwire_journal_appended_records_total", kCounter,    \
    kAlways, kJournal, "records appended",                                    \
    "Records the journal writer appended since start.")                       \
  X(journal_groups, "orderwire_journal_group_commits_total", kCounter,        \
    kAlways, kJournal, "groups committed",                                    \
    "Groups of records the journal writer committed (one write each) "        \
    "since start.")                                                           \
  X(journal_bytes_written, "orderwire_journal_written_bytes_total", kCounter, \
    kAlways, kJournal, "bytes written",                                       \
    "Bytes the journal's group writes put on the device since start.")        \
  X(refused_journal_full_datagrams,                                           \
    "orderwire_journal_full_refused_datagrams_total", kCounter, kAlways,      \
    kJournalFull, "datagrams refused",                                        \
    "Datagrams whose new commands were not journaled: journal full.")         \
  X(refused_journal_full_frames, "orderwire_journal_full_refused_frames_total", \
    kCounter, kAlways, kJournalFull, "frames refused",                        \
    "Command frames not journaled: journal full.")                            \
  X(busy_sent, "orderwire_busy_sent_total", kCounter, kAlways, kJournalFull,  \
    "Busy sent", "Busy frames sent (cause JournalFull).")                     \
  X(journal_full_episodes, "orderwire_journal_full_episodes_total", kCounter, \
    kAlways, kJournalFull, "times", "Times the journal-full state began.")    \
  X(journal_full, "orderwire_journal_full", kGauge, kAlways, kJournalFull,    \
    "full now",                                                               \
    "1 while the journal has no room on its disk (commands answered "         \
    "Busy), else 0.")                                                         \
  X(journal_reduced_segments, "orderwire_journal_reduced_segments_total",     \
    kCounter, kAlways, kJournalFull, "smaller segments",                      \
    "Journal segments made smaller than the segment size: the disk "          \
    "had no room for a whole one.")                                           \
  X(sessions_moved, "orderwire_sessions_moved_total", kCounter, kAlways,      \
    kSessions, "moved to a new endpoint",                                     \
    "Times a keyed session moved to a new endpoint by proving its key.")      \
  X(sessions_recycled, "orderwire_sessions_recycled_total", kCounter,         \
    kAlways, kSessions, "idle ones recycled",                                 \
    "Idle unlisted sessions that gave their slot back (their state "          \
    "stays; they continue when they come back).")                             \
  X(replication, "", kGauge, kReplicated, kReplication, "on",                 \
    "1 under replicated durability.")                                         \
  X(replication_published_messages,                                           \
    "orderwire_replication_published_messages_total", kCounter, kReplicated,  \
    kReplication, "messages published",                                       \
    "Messages (runs of journal records) published to the journal "            \
    "stream.")                                                                \
  X(replication_acknowledged_messages,                                        \
    "orderwire_replication_acknowledged_messages_total", kCounter,            \
    kReplicated, kReplication, "messages acknowledged",                       \
    "Messages the journal stream acknowledged.")                              \
  X(replication_published_records,                                           \
    "orderwire_replication_published_records_total", kCounter, kReplicated,   \
    kReplication, "records published",                                        \
    "Journal records published to the journal stream.")                       \
  X(replication_published_bytes, "", kCounter, kReplicated, kReplication,     \
    "bytes published", "Bytes published to the journal stream.")              \
  X(replicated_index, "orderwire_replicated_index", kGauge, kReplicated,      \
    kReplication, "replicated index",                                         \
    "Last journal index the JetStream journal stream has acknowledged "       \
    "(commands are answered up to min(durable, replicated)).")                \
  X(replication_failures, "orderwire_replication_failures_total", kCounter,   \
    kReplicated, kReplication, "failures",                                    \
    "Replication failures (the first stops the service).")                    \
  X(replication_republished_messages,                                         \
    "orderwire_replication_republished_messages_total", kCounter,             \
    kReplicated, kReplication, "messages republished",                        \
    "Messages published again to the journal stream while it "               \
    "re-elected its leader.")                                                 \
  X(md, "", kGauge, kMarketData, kMarketData, "on",                           \
    "1 while the market-data feed is published (--md-target).")               \
  X(md_messages, "orderwire_md_messages_total", kCounter, kMarketData,        \
    kMarketData, "messages sent",                                             \
    "Feed messages sent live (in Data packets).")                             \
  X(md_packets, "orderwire_md_packets_total", kCounter, kMarketData,          \
    kMarketData, "packets sent",                                              \
    "Data packets of the live feed (each to every target).")                  \
  X(md_heartbeats, "orderwire_md_heartbeats_total", kCounter, kMarketData,    \
    kMarketData, "heartbeats", "Heartbeat packets of the live feed.")         \
  X(md_send_failures, "orderwire_md_send_failures_total", kCounter,           \
    kMarketData, kMarketData, "datagrams not sent",                           \
    "Feed datagrams the kernel would not take (lost: subscribers ask for "    \
    "them again).")                                                           \
  X(md_next_sequence, "orderwire_md_next_sequence", kGauge, kMarketData,      \
    kMarketData, "next sequence",                                             \
    "The feed sequence of the next message (the state's).")                   \
  X(md_subscribers, "orderwire_md_subscribers", kGauge, kMarketData,          \
    kMarketData, "subscribers known",                                         \
    "Unicast feed targets plus request sources of the last minute (a "        \
    "multicast group's members are not known).")                              \
  X(md_first_retained_sequence, "orderwire_md_first_retained_sequence",       \
    kGauge, kMarketData, kMarketData, "first retained sequence",              \
    "F: the oldest feed message the request server can send.")                \
  X(md_retransmit_requests, "orderwire_md_retransmit_requests_total",         \
    kCounter, kMarketData, kMarketData, "retransmissions served",             \
    "RetransmitRequests answered with messages.")                             \
  X(md_retransmit_messages, "orderwire_md_retransmit_messages_total",         \
    kCounter, kMarketData, kMarketData, "messages retransmitted",             \
    "Feed messages sent in answer to RetransmitRequests.")                    \
  X(md_snapshot_requests, "orderwire_md_snapshot_requests_total", kCounter,   \
    kMarketData, kMarketData, "snapshot requests",                            \
    "Well-formed SnapshotRequests received.")                                 \
  X(md_snapshots_sent, "orderwire_md_snapshots_sent_total", kCounter,         \
    kMarketData, kMarketData, "snapshots sent",                               \
    "Snapshots sent whole (not those a new request of the source ended).")    \
  X(md_snapshot_replica_lost, "orderwire_md_snapshot_replica_lost", kGauge,   \
    kMarketData, kMarketData, "snapshot replica lost",                        \
    "1 once the request server's book fell behind the ring: snapshots "       \
    "are Unavailable until a restart.")                                       \
  X(md_requests_dropped, "orderwire_md_requests_dropped_total", kCounter,     \
    kMarketData, kMarketData, "requests dropped",                             \
    "Requests dropped unanswered: over a source's budget after its "          \
    "RateLimited, or from a new source with 65536 known.")                    \
  X(md_requests_throttled, "orderwire_md_requests_throttled_total",           \
    kCounter, kMarketData, kMarketData, "request reading throttled",          \
    "Times the request server stopped reading its socket, the datagrams "    \
    "of all sources over their budget (20,000 a second).")                    \
  X(md_reply_send_failures, "orderwire_md_reply_send_failures_total",         \
    kCounter, kMarketData, kMarketData, "reply datagrams not sent",           \
    "Request server replies the kernel would not take (the subscriber "       \
    "asks again).")                                                           \
  X(md_regenerations, "orderwire_md_regenerations_total", kCounter,           \
    kMarketData, kMarketData, "retransmissions from the journal",             \
    "RetransmitRequests below the ring taken to be made again from the "     \
    "journal.")                                                               \
  X(md_regeneration_starts, "orderwire_md_regeneration_starts_total",         \
    kCounter, kMarketData, kMarketData, "regenerations started afresh",       \
    "Of those, the ones begun from a snapshot or the journal's start (the "  \
    "others went on from where the last one ended).")                         \
  X(md_regeneration_records, "orderwire_md_regeneration_records_total",       \
    kCounter, kMarketData, kMarketData, "records applied for them",           \
    "Journal records applied to make feed messages again (their CPU cost).")  \
  X(md_regenerated_messages, "orderwire_md_regenerated_messages_total",       \
    kCounter, kMarketData, kMarketData, "messages made again",                \
    "Feed messages made again from the journal for retransmissions.")         \
  X(md_regeneration_failures, "orderwire_md_regeneration_failures_total",     \
    kCounter, kMarketData, kMarketData, "regenerations failed",               \
    "Retransmissions below the ring refused Unavailable because the "        \
    "journal could not be read (each logged).")
// clang-format on

// Every counter the service keeps: the scalars above, then the labelled
// counters and the histograms (their rows: CounterGroups(), kHistograms).
// Trivially copyable, a whole number of 64-bit words (StatsMirror copies it
// word by word).
struct ServiceStats {
#define ORDERWIRE_SERVICE_STATS_FIELD(field, ...) std::uint64_t field = 0;
  ORDERWIRE_SERVICE_SCALARS(ORDERWIRE_SERVICE_STATS_FIELD)
#undef ORDERWIRE_SERVICE_STATS_FIELD
  std::array<std::uint64_t, 256> frames_in{};   // by kind, journaled
  std::array<std::uint64_t, 256> frames_out{};  // by kind, reports sent
  std::array<std::uint64_t, 16> rejects{};      // by RejectReason
  std::array<std::uint64_t, codec::kCodecErrorCount> malformed{};  // by cause
  std::array<std::uint64_t, kAdmissionCount> refused{};  // by Admission
  // The feed's request server: Refused sent by reason, requests dropped
  // malformed by cause.
  std::array<std::uint64_t, 8> md_refused{};
  std::array<std::uint64_t, 16> md_malformed{};
  // Receipt (the receive time journaled with the command) to the loop
  // finding it durable and applying it; replayed commands not counted.
  LatencyBuckets command_latency;
  // Each time the loop blocked for the journal's writes (one observation
  // per backpressure_waits).
  LatencyBuckets journal_wait;
  // Replicated only: each message's publish to acknowledgement.
  LatencyBuckets replication_publish_latency;
  // With --md-target: per loop pass that sent feed packets, from the pass
  // finding their records answerable to the last packet sent.
  LatencyBuckets md_publication_lag;
};
static_assert(std::is_trivially_copyable_v<ServiceStats>);
static_assert(feed::kCheckCauseCount <= 16 &&
              static_cast<int>(feed::RefusedReason::kUnavailable) < 8);
static_assert(sizeof(ServiceStats) % sizeof(std::uint64_t) == 0);

// One scalar row of ORDERWIRE_SERVICE_SCALARS.
struct ScalarCounter {
  std::string_view name;  // the ServiceStats field and the JSON key
  std::uint64_t ServiceStats::*member;
  std::string_view metric;  // Prometheus family; empty: not exported
  MetricKind kind;
  CounterScope scope;
  ReportSection section;
  std::string_view label;  // in the report, within its section
  std::string_view help;   // Prometheus HELP
};

inline constexpr ScalarCounter kScalarCounters[] = {
#define ORDERWIRE_SERVICE_STATS_ROW(field, metric, kind, scope, section, \
                                    label, help)                         \
  {#field,                                                               \
   &ServiceStats::field,                                                 \
   metric,                                                               \
   MetricKind::kind,                                                     \
   CounterScope::scope,                                                  \
   ReportSection::section,                                               \
   label,                                                                \
   help},
    ORDERWIRE_SERVICE_SCALARS(ORDERWIRE_SERVICE_STATS_ROW)
#undef ORDERWIRE_SERVICE_STATS_ROW
};

// An array of ServiceStats counted by a label (kind, reason, cause).
struct CounterGroup {
  std::string_view json_key;  // an object of label value -> count
  std::span<const std::uint64_t> (*values)(const ServiceStats&);
  // The label value of index i; empty: none (never written).
  std::string_view (*label_value)(std::size_t i);
  // Whether the JSON object holds only the nonzero counts (else each
  // named one).
  bool json_nonzero_only;
  std::string_view metric;  // a Prometheus counter family
  std::string_view label;   // its label name
  // Whether index i is a Prometheus series (every value the label can
  // take, written zero or not).
  bool (*in_metrics)(std::size_t i);
  ReportSection section;
  std::string_view report_label;  // each nonzero count is a report line
  std::string_view help;
  CounterScope scope = CounterScope::kAlways;  // exported only then
};
// In JSON order: commands_in, reports_out, rejects, malformed, refused,
// md_refused, md_malformed.
[[nodiscard]] std::span<const CounterGroup> CounterGroups();

// A LatencyBuckets of ServiceStats.
struct Histogram {
  std::string_view json_key;
  LatencyBuckets ServiceStats::*member;
  std::string_view metric;  // a Prometheus histogram family, in seconds
  CounterScope scope;
  ReportSection section;
  std::string_view report_label;  // its count and mean in the report
  std::string_view help;
};
inline constexpr Histogram kHistograms[] = {
    {"command_latency", &ServiceStats::command_latency,
     "orderwire_command_durable_latency_seconds", CounterScope::kAlways,
     ReportSection::kCommands, "latency, receipt to applied",
     "Seconds from a command's receipt to the loop finding it durable and "
     "applying it (its reports leave in the same pass)."},
    {"journal_wait", &ServiceStats::journal_wait,
     "orderwire_journal_wait_seconds", CounterScope::kAlways,
     ReportSection::kJournal, "latency, each wait for the disk",
     "Seconds the loop blocked each time it waited for the journal's "
     "writes."},
    {"replication_publish_latency", &ServiceStats::replication_publish_latency,
     "orderwire_replication_publish_latency_seconds", CounterScope::kReplicated,
     ReportSection::kReplication, "latency, publish to acknowledgement",
     "Seconds from publishing a message to the journal stream to its "
     "acknowledgement."},
    {"md_publication_lag", &ServiceStats::md_publication_lag,
     "orderwire_md_publication_lag_seconds", CounterScope::kMarketData,
     ReportSection::kMarketData, "latency, answerable to feed sent",
     "Seconds from the loop finding records answerable to their feed "
     "messages sent (per pass that sent some)."},
};

// Whether a row of scope `scope` is shown (report, Prometheus) for `stats`.
[[nodiscard]] inline bool Shown(CounterScope scope, const ServiceStats& stats) {
  switch (scope) {
    case CounterScope::kAlways:
      return true;
    case CounterScope::kReplicated:
      return stats.replication != 0;
    case CounterScope::kMarketData:
      return stats.md != 0;
  }
  return true;
}

// Every counter as one JSON object: each scalar under its name, in table
// order; each group as an object under its key; each histogram as
// {"count","sum_ns","buckets"} (per bucket, not cumulative); then
// "bounds_ns" (kLatencyBoundsNs).
[[nodiscard]] std::string FormatStatsJson(const ServiceStats& stats);

// Every counter for a person, by section: one line per scalar (its label
// and value; seconds gauges also in ms), per nonzero labelled count, and per
// histogram (count and mean), plus derived lines (datagrams per segmented
// send). Replication rows only when stats.replication.
[[nodiscard]] std::string FormatStatsReport(const ServiceStats& stats);

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_SERVICE_STATS_H_
