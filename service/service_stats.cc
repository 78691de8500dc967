// The counters' tables and their JSON and report; see service_stats.h.
#include "service/service_stats.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/kind_table.h"
#include "codec/types.h"
#include "feed/types.h"

namespace orderwire::service {

namespace {

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

std::string_view KindName(std::size_t k) { return codec::kKindTable[k].name; }
bool IsCommandKind(std::size_t k) {
  return codec::kKindTable[k].kind_class == codec::KindClass::kCommand;
}
bool IsReportKind(std::size_t k) {
  return codec::kKindTable[k].kind_class == codec::KindClass::kReport;
}
std::string_view RejectName(std::size_t r) {
  return r == 0 ? std::string_view()
                : codec::Name(static_cast<codec::RejectReason>(r));
}
bool IsReject(std::size_t r) { return !RejectName(r).empty(); }
std::string_view CodecErrorName(std::size_t e) {
  return e == 0 ? std::string_view()
                : codec::Name(static_cast<codec::CodecError>(e));
}
bool IsDatagramError(std::size_t e) {
  return std::ranges::any_of(kDatagramErrors, [e](codec::CodecError d) {
    return static_cast<std::size_t>(d) == e;
  });
}
std::string_view AdmissionName(std::size_t a) {
  return a == 0 ? std::string_view() : Name(static_cast<Admission>(a));
}
bool IsRefusal(std::size_t a) { return a != 0; }
std::string_view RefusedReasonName(std::size_t r) {
  return r >= 1 && r <= static_cast<std::size_t>(
                            feed::RefusedReason::kUnavailable)
             ? feed::Name(static_cast<feed::RefusedReason>(r))
             : std::string_view();
}
bool IsRefusedReason(std::size_t r) { return !RefusedReasonName(r).empty(); }
std::string_view CheckCauseName(std::size_t c) {
  return c >= 1 && c < static_cast<std::size_t>(feed::kCheckCauseCount)
             ? feed::Name(static_cast<feed::CheckCause>(c))
             : std::string_view();
}
// The causes RequestView::Parse gives (MARKETDATA.md "Checks").
bool IsRequestCause(std::size_t c) {
  using feed::CheckCause;
  switch (static_cast<CheckCause>(c)) {
    case CheckCause::kOversize:
    case CheckCause::kTruncated:
    case CheckCause::kBadMagic:
    case CheckCause::kBadVersion:
    case CheckCause::kBadType:
    case CheckCause::kBadToken:
    case CheckCause::kBadSequence:
    case CheckCause::kBadCount:
    case CheckCause::kZeroCount:
    case CheckCause::kTrailingBytes:
      return true;
    default:
      return false;
  }
}

template <auto Member>
std::span<const std::uint64_t> Values(const ServiceStats& s) {
  return s.*Member;
}

constexpr CounterGroup kCounterGroups[] = {
    {"commands_in", &Values<&ServiceStats::frames_in>, &KindName, true,
     "orderwire_commands_journaled_total", "kind", &IsCommandKind,
     ReportSection::kCommands, "journaled",
     "Command frames journaled, by kind."},
    {"reports_out", &Values<&ServiceStats::frames_out>, &KindName, true,
     "orderwire_reports_sent_total", "kind", &IsReportKind,
     ReportSection::kCommands, "reports sent",
     "Report frames sent, by kind (SequenceGap, Busy and ReportsGone "
     "included; resent reports not)."},
    {"rejects", &Values<&ServiceStats::rejects>, &RejectName, false,
     "orderwire_rejects_total", "reason", &IsReject, ReportSection::kCommands,
     "rejected", "Rejected reports, by reject reason."},
    {"malformed", &Values<&ServiceStats::malformed>, &CodecErrorName, false,
     "orderwire_datagrams_malformed_total", "reason", &IsDatagramError,
     ReportSection::kTraffic, "dropped malformed",
     "Datagrams dropped whole because they do not parse, by reason "
     "(docs/PROTOCOL.md \"Datagram\"); never answered."},
    {"refused", &Values<&ServiceStats::refused>, &AdmissionName, false,
     "orderwire_datagrams_refused_total", "cause", &IsRefusal,
     ReportSection::kTraffic, "dropped refused",
     "Datagrams dropped by the session rules, by cause; never "
     "answered (serve --log-refusals names each)."},
    {"md_refused", &Values<&ServiceStats::md_refused>, &RefusedReasonName,
     false, "orderwire_md_requests_refused_total", "reason", &IsRefusedReason,
     ReportSection::kMarketData, "requests refused",
     "Feed requests answered Refused, by reason (docs/MARKETDATA.md).",
     CounterScope::kMarketData},
    {"md_malformed", &Values<&ServiceStats::md_malformed>, &CheckCauseName,
     false, "orderwire_md_requests_malformed_total", "cause", &IsRequestCause,
     ReportSection::kMarketData, "requests malformed",
     "Datagrams to the feed's request server dropped unanswered, by the "
     "cause of docs/MARKETDATA.md \"Checks\".",
     CounterScope::kMarketData},
};

double MeanUs(const LatencyBuckets& h) {
  const std::uint64_t n = h.count();
  return n == 0 ? 0.0
                : static_cast<double>(h.sum_ns) / static_cast<double>(n) * 1e-3;
}

void AppendLine(std::string* out, std::string_view label,
                std::string_view value) {
  absl::StrAppendFormat(out, "    %-34s %s\n", label, value);
}

// The lines of one section of the report (empty: nothing shown in it).
std::string ReportSectionLines(const ServiceStats& s, ReportSection section) {
  std::string out;
  for (const ScalarCounter& c : kScalarCounters) {
    if (c.section != section || !Shown(c.scope, s)) continue;
    const std::uint64_t v = s.*c.member;
    AppendLine(&out, c.label,
               c.kind == MetricKind::kSecondsGauge
                   ? absl::StrFormat("%d ns (%.3f ms)", v,
                                     static_cast<double>(v) * 1e-6)
                   : absl::StrCat(v));
  }
  // Derived: what segmentation gains.
  if (section == ReportSection::kSending) {
    AppendLine(&out, "datagrams per segmented send",
               absl::StrFormat(
                   "%.2f", s.segmented_sends == 0
                               ? 0.0
                               : static_cast<double>(s.segmented_datagrams) /
                                     static_cast<double>(s.segmented_sends)));
  }
  for (const CounterGroup& g : CounterGroups()) {
    if (g.section != section) continue;
    const std::span<const std::uint64_t> values = g.values(s);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::string_view name = g.label_value(i);
      if (values[i] == 0 || name.empty()) continue;
      AppendLine(&out, absl::StrFormat("%s %s", g.report_label, name),
                 absl::StrCat(values[i]));
    }
  }
  for (const Histogram& h : kHistograms) {
    if (h.section != section || !Shown(h.scope, s)) continue;
    const LatencyBuckets& b = s.*h.member;
    AppendLine(
        &out, h.report_label,
        absl::StrFormat("%d observed, %.1f us mean", b.count(), MeanUs(b)));
  }
  return out;
}

}  // namespace

std::span<const CounterGroup> CounterGroups() { return kCounterGroups; }

std::string_view Name(ReportSection section) {
  switch (section) {
    case ReportSection::kTraffic:
      return "traffic";
    case ReportSection::kSending:
      return "sending";
    case ReportSection::kCommands:
      return "commands";
    case ReportSection::kSequences:
      return "sequences";
    case ReportSection::kResends:
      return "resends";
    case ReportSection::kJournal:
      return "journal";
    case ReportSection::kJournalFull:
      return "journal full";
    case ReportSection::kSnapshots:
      return "snapshots";
    case ReportSection::kSessions:
      return "sessions";
    case ReportSection::kReplication:
      return "replication";
    case ReportSection::kMarketData:
      return "market data";
  }
  return "";
}

std::string FormatStatsJson(const ServiceStats& s) {
  std::string out = "{";
  for (const ScalarCounter& c : kScalarCounters) {
    absl::StrAppendFormat(&out, "%s\"%s\":%d", out.size() > 1 ? "," : "",
                          c.name, s.*c.member);
  }
  for (const CounterGroup& g : CounterGroups()) {
    absl::StrAppendFormat(&out, ",\"%s\":{", g.json_key);
    const std::span<const std::uint64_t> values = g.values(s);
    bool first = true;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::string_view name = g.label_value(i);
      if (name.empty() || (g.json_nonzero_only && values[i] == 0)) continue;
      absl::StrAppendFormat(&out, "%s\"%s\":%d", first ? "" : ",", name,
                            values[i]);
      first = false;
    }
    out += "}";
  }
  for (const Histogram& h : kHistograms) {
    const LatencyBuckets& b = s.*h.member;
    absl::StrAppendFormat(&out,
                          ",\"%s\":{\"count\":%d,\"sum_ns\":%d,\"buckets\":[",
                          h.json_key, b.count(), b.sum_ns);
    for (std::size_t i = 0; i < b.buckets.size(); ++i) {
      absl::StrAppendFormat(&out, "%s%d", i == 0 ? "" : ",", b.buckets[i]);
    }
    out += "]}";
  }
  out += ",\"bounds_ns\":[";
  for (std::size_t i = 0; i < kLatencyBoundsNs.size(); ++i) {
    absl::StrAppendFormat(&out, "%s%d", i == 0 ? "" : ",", kLatencyBoundsNs[i]);
  }
  out += "]}";
  return out;
}

std::string FormatStatsReport(const ServiceStats& s) {
  std::string out;
  for (std::size_t i = 0; i < kReportSectionCount; ++i) {
    const auto section = static_cast<ReportSection>(i);
    const std::string lines = ReportSectionLines(s, section);
    if (lines.empty()) continue;
    absl::StrAppendFormat(&out, "  %s\n%s", Name(section), lines);
  }
  return out;
}

}  // namespace orderwire::service
