// The Prometheus text of the service's counters (service/metrics/metrics.h):
// the exact exposition of a few counters and a histogram (escaping, cumulative
// buckets, +Inf, _sum and _count), the latency buckets' edges, the mirror
// the HTTP thread reads, the service's families, and that the JSON, the
// report and the Prometheus text each show every row of the counters' tables
// (service/service_stats.h) with its value.
#include "service/metrics/metrics.h"

#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/error.h"
#include "codec/kind_table.h"
#include "codec/types.h"
#include "gtest/gtest.h"
#include "service/latency_buckets.h"
#include "service/service.h"
#include "service/service_stats.h"

namespace orderwire::service {
namespace {

using Type = PrometheusText::Type;

TEST(PrometheusText, WritesFamiliesSamplesAndAHistogramExactly) {
  std::string out;
  PrometheusText text(&out);
  text.Family("demo_requests_total", Type::kCounter,
              "Requests, with a back\\slash\nand a new line.");
  text.Sample("demo_requests_total", "path", "a\"quoted\"\\path\nnext", 7);
  text.Sample("demo_requests_total", "path", "plain", 0);
  text.Family("demo_up", Type::kGauge, "Whether it is up.");
  text.Sample("demo_up", 1);
  text.Family("demo_fork_seconds", Type::kGauge, "A time in seconds.");
  text.SampleSeconds("demo_fork_seconds", 1'500'250'000);
  const std::uint64_t bounds[] = {1'000'000, 2'500'000, 1'000'000'000};
  // Per bucket: 2 at or below 1 ms, none in (1 ms, 2.5 ms], 3 in
  // (2.5 ms, 1 s], 4 above every bound.
  const std::uint64_t buckets[] = {2, 0, 3, 4};
  text.Histogram("demo_latency_seconds", "Latency.", bounds, buckets,
                 12'000'000'001);
  EXPECT_EQ(out,
            "# HELP demo_requests_total Requests, with a back\\\\slash\\nand "
            "a new line.\n"
            "# TYPE demo_requests_total counter\n"
            "demo_requests_total{path=\"a\\\"quoted\\\"\\\\path\\nnext\"} 7\n"
            "demo_requests_total{path=\"plain\"} 0\n"
            "# HELP demo_up Whether it is up.\n"
            "# TYPE demo_up gauge\n"
            "demo_up 1\n"
            "# HELP demo_fork_seconds A time in seconds.\n"
            "# TYPE demo_fork_seconds gauge\n"
            "demo_fork_seconds 1.50025\n"
            "# HELP demo_latency_seconds Latency.\n"
            "# TYPE demo_latency_seconds histogram\n"
            "demo_latency_seconds_bucket{le=\"0.001\"} 2\n"
            "demo_latency_seconds_bucket{le=\"0.0025\"} 2\n"
            "demo_latency_seconds_bucket{le=\"1\"} 5\n"
            "demo_latency_seconds_bucket{le=\"+Inf\"} 9\n"
            "demo_latency_seconds_sum 12.000000001\n"
            "demo_latency_seconds_count 9\n");
}

TEST(PrometheusText, WritesSecondsExactlyAndShort) {
  EXPECT_EQ(PrometheusText::Seconds(0), "0");
  EXPECT_EQ(PrometheusText::Seconds(1), "0.000000001");
  EXPECT_EQ(PrometheusText::Seconds(5'000), "0.000005");
  EXPECT_EQ(PrometheusText::Seconds(250'000), "0.00025");
  EXPECT_EQ(PrometheusText::Seconds(1'000'000'000), "1");
  EXPECT_EQ(PrometheusText::Seconds(2'500'000'000), "2.5");
  EXPECT_EQ(PrometheusText::Seconds(UINT64_MAX), "18446744073.709551615");
}

// A value equal to a bound belongs to that bound's bucket (Prometheus's
// le is "less than or equal"); above the last bound, to +Inf.
TEST(LatencyBuckets, CountsEachValueInTheFirstBucketWhoseBoundHoldsIt) {
  LatencyBuckets h;
  h.Record(0);
  h.Record(kLatencyBoundsNs[0]);
  h.Record(kLatencyBoundsNs[0] + 1);
  h.Record(kLatencyBoundsNs.back());
  h.Record(kLatencyBoundsNs.back() + 1);
  h.Record(UINT64_MAX / 2);
  EXPECT_EQ(h.buckets[0], 2u);
  EXPECT_EQ(h.buckets[1], 1u);
  EXPECT_EQ(h.buckets[kLatencyBoundsNs.size() - 1], 1u);
  EXPECT_EQ(h.buckets[kLatencyBoundsNs.size()], 2u);
  EXPECT_EQ(h.count(), 6u);
  EXPECT_EQ(h.sum_ns, kLatencyBoundsNs[0] * 2 + 1 +
                          kLatencyBoundsNs.back() * 2 + 1 + UINT64_MAX / 2);
}

ServiceStats DistinctStats() {
  ServiceStats s;
  s.datagrams_in = 11;
  s.bytes_in = 1'234;
  s.datagrams_out = 12;
  s.send_segmented = true;
  s.journal_full = true;
  s.frames_in[static_cast<std::size_t>(codec::Kind::kNewLimit)] = 5;
  s.frames_out[static_cast<std::size_t>(codec::Kind::kSequenceGap)] = 6;
  s.malformed[static_cast<std::size_t>(codec::CodecError::kBadMagic)] = 3;
  s.refused[static_cast<std::size_t>(Admission::kBadMac)] = 4;
  s.rejects[static_cast<std::size_t>(codec::RejectReason::kNotOwner)] = 8;
  s.durable_index = 99;
  s.last_index = 100;
  s.journal_groups = 7;
  s.sessions = 2;
  s.sessions_listed = 1;
  s.fork_ns_max = 1'500'000;
  s.reports_regenerated = 13;
  s.regenerations_gone = 14;
  s.command_latency.Record(40'000);
  s.command_latency.Record(3'000'000'000);
  return s;
}

TEST(StatsMirror, ReadsWhatWasPublishedAndZeroBefore) {
  StatsMirror mirror;
  ServiceStats before = DistinctStats();
  mirror.Read(&before);
  EXPECT_EQ(mirror.publications(), 0u);
  EXPECT_EQ(before.datagrams_in, 0u);
  EXPECT_FALSE(before.send_segmented);
  EXPECT_EQ(before.command_latency.count(), 0u);

  const ServiceStats published = DistinctStats();
  mirror.Publish(published);
  ServiceStats read;
  mirror.Read(&read);
  EXPECT_EQ(mirror.publications(), 1u);
  EXPECT_EQ(read.datagrams_in, 11u);
  EXPECT_EQ(read.bytes_in, 1'234u);
  EXPECT_TRUE(read.send_segmented);
  EXPECT_TRUE(read.journal_full);
  EXPECT_EQ(read.frames_in, published.frames_in);
  EXPECT_EQ(read.frames_out, published.frames_out);
  EXPECT_EQ(read.malformed, published.malformed);
  EXPECT_EQ(read.refused, published.refused);
  EXPECT_EQ(read.rejects, published.rejects);
  EXPECT_EQ(read.durable_index, 99u);
  EXPECT_EQ(read.sessions_listed, 1u);
  EXPECT_EQ(read.command_latency.buckets, published.command_latency.buckets);
  EXPECT_EQ(read.command_latency.sum_ns, published.command_latency.sum_ns);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool HasLine(const std::string& text, const std::string& line) {
  for (const std::string& l : Lines(text)) {
    if (l == line) return true;
  }
  return false;
}

TEST(ServiceMetrics, ExposesEachCounterUnderItsNameAndLabel) {
  std::string out;
  AppendServiceMetrics(DistinctStats(), &out);
  for (const char* line : {
           "orderwire_datagrams_received_total 11",
           "orderwire_received_bytes_total 1234",
           "orderwire_datagrams_sent_total 12",
           "orderwire_commands_journaled_total{kind=\"NewLimit\"} 5",
           "orderwire_commands_journaled_total{kind=\"Replace\"} 0",
           "orderwire_reports_sent_total{kind=\"SequenceGap\"} 6",
           "orderwire_reports_sent_total{kind=\"Accepted\"} 0",
           "orderwire_datagrams_malformed_total{reason=\"BadMagic\"} 3",
           "orderwire_datagrams_malformed_total{reason=\"Oversize\"} 0",
           "orderwire_datagrams_refused_total{cause=\"BadMac\"} 4",
           "orderwire_datagrams_refused_total{cause=\"TooManySessions\"} 0",
           "orderwire_rejects_total{reason=\"NotOwner\"} 8",
           "orderwire_journal_durable_index 99",
           "orderwire_journal_last_index 100",
           "orderwire_journal_group_commits_total 7",
           "orderwire_journal_full 1",
           "orderwire_send_segmented 1",
           "orderwire_sessions 2",
           "orderwire_sessions_listed 1",
           "orderwire_snapshot_fork_max_seconds 0.0015",
           "orderwire_command_durable_latency_seconds_bucket{le=\"0.00005\"} 1",
           "orderwire_command_durable_latency_seconds_bucket{le=\"2.5\"} 1",
           "orderwire_command_durable_latency_seconds_bucket{le=\"+Inf\"} 2",
           "orderwire_command_durable_latency_seconds_sum 3.00004",
           "orderwire_command_durable_latency_seconds_count 2",
           "orderwire_journal_wait_seconds_count 0",
           "orderwire_reports_regenerated_total 13",
           "orderwire_regenerations_gone_total 14",
       }) {
    EXPECT_TRUE(HasLine(out, line)) << "missing: " << line << "\n" << out;
  }
  // Only command kinds under commands, only report kinds under reports.
  EXPECT_FALSE(
      HasLine(out, "orderwire_commands_journaled_total{kind=\"Accepted\"} 0"));
  EXPECT_FALSE(
      HasLine(out, "orderwire_reports_sent_total{kind=\"NewLimit\"} 0"));
}

// Every sample belongs to a family announced before it, once, with HELP
// then TYPE; counters end in _total; no name repeats its family.
TEST(ServiceMetrics, AnnouncesEveryFamilyOnceBeforeItsSamples) {
  std::string out;
  AppendServiceMetrics(DistinctStats(), &out);
  std::set<std::string> announced;
  std::string family;
  std::string type;
  std::string pending_help;
  for (const std::string& line : Lines(out)) {
    if (line.rfind("# HELP ", 0) == 0) {
      pending_help = line.substr(7, line.find(' ', 7) - 7);
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::size_t space = line.find(' ', 7);
      family = line.substr(7, space - 7);
      type = line.substr(space + 1);
      EXPECT_EQ(family, pending_help) << "TYPE without its HELP: " << line;
      EXPECT_TRUE(announced.insert(family).second) << "twice: " << family;
      if (type == "counter") {
        EXPECT_TRUE(family.ends_with("_total")) << family;
      }
      continue;
    }
    const std::string name = line.substr(0, line.find_first_of("{ "));
    if (type == "histogram") {
      EXPECT_TRUE(name == family + "_bucket" || name == family + "_sum" ||
                  name == family + "_count")
          << line;
    } else {
      EXPECT_EQ(name, family) << line;
    }
  }
  // Every family of service_stats.h's tables (session_lapses the latest):
  // a new one is counted here.
  EXPECT_EQ(announced.size(), 62u);
}

// Each scalar, each labelled count and each histogram of `s` set to a value
// of its own (from 1000 up; the seconds gauges whole milliseconds), every
// flag included (so `replication` is on).
ServiceStats EveryCounterDistinct() {
  ServiceStats s;
  std::uint64_t next = 1000;
  for (const ScalarCounter& c : kScalarCounters) {
    s.*c.member =
        c.kind == MetricKind::kSecondsGauge ? ++next * 1'000'000 : ++next;
  }
  for (const CounterGroup& g : CounterGroups()) {
    const std::span<const std::uint64_t> values = g.values(s);
    auto* writable = const_cast<std::uint64_t*>(values.data());
    for (std::size_t i = 0; i < values.size(); ++i) writable[i] = ++next;
  }
  for (const Histogram& h : kHistograms) {
    (s.*h.member).Record(++next * 1'000);
  }
  return s;
}

std::string Metric(const std::string& name, const std::string& value) {
  return name + " " + value;
}

TEST(ServiceStatsTables, NamesAreUniqueAndCountersEndInTotal) {
  std::set<std::string_view> names;
  std::set<std::string_view> metrics;
  for (const ScalarCounter& c : kScalarCounters) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_FALSE(c.label.empty()) << c.name;
    EXPECT_FALSE(c.help.empty()) << c.name;
    if (c.metric.empty()) continue;
    EXPECT_TRUE(metrics.insert(c.metric).second) << c.metric;
    EXPECT_TRUE(c.metric.starts_with("orderwire_")) << c.metric;
    EXPECT_EQ(c.metric.ends_with("_total"), c.kind == MetricKind::kCounter)
        << c.metric;
    EXPECT_EQ(c.metric.ends_with("_seconds"),
              c.kind == MetricKind::kSecondsGauge)
        << c.metric;
  }
  for (const CounterGroup& g : CounterGroups()) {
    EXPECT_TRUE(names.insert(g.json_key).second) << g.json_key;
    EXPECT_TRUE(metrics.insert(g.metric).second) << g.metric;
  }
  for (const Histogram& h : kHistograms) {
    EXPECT_TRUE(names.insert(h.json_key).second) << h.json_key;
    EXPECT_TRUE(metrics.insert(h.metric).second) << h.metric;
  }
}

// Each combination of the two switches of CounterScope: replicated
// durability, and the market-data feed.
struct Switches {
  bool replicated;
  bool md;
};
constexpr Switches kSwitches[] = {
    {false, false}, {true, false}, {false, true}, {true, true}};

// Whether a row of `scope` is exported and reported under `on`.
bool ShownUnder(CounterScope scope, Switches on) {
  return scope == CounterScope::kAlways ||
         (scope == CounterScope::kReplicated && on.replicated) ||
         (scope == CounterScope::kMarketData && on.md);
}

std::string TraceOf(Switches on) {
  return absl::StrFormat("replicated %d, md %d", on.replicated, on.md);
}

TEST(ServiceStatsTables, JsonHoldsEveryRowWithItsValue) {
  const ServiceStats s = EveryCounterDistinct();
  const std::string json = FormatStatsJson(s);
  std::size_t last = 0;
  for (const ScalarCounter& c : kScalarCounters) {
    const std::string field = absl::StrFormat("\"%s\":%d", c.name, s.*c.member);
    const std::size_t at = json.find(field);
    ASSERT_NE(at, std::string::npos) << field << "\n" << json;
    EXPECT_TRUE(json[at - 1] == '{' || json[at - 1] == ',') << field;
    EXPECT_GT(at, last) << "out of table order: " << field;
    last = at;
  }
  for (const CounterGroup& g : CounterGroups()) {
    const std::size_t open = json.find(absl::StrFormat("\"%s\":{", g.json_key));
    ASSERT_NE(open, std::string::npos) << g.json_key;
    const std::string object = json.substr(open, json.find('}', open) - open);
    const std::span<const std::uint64_t> values = g.values(s);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (g.label_value(i).empty()) continue;
      const std::string field =
          absl::StrFormat("\"%s\":%d", g.label_value(i), values[i]);
      EXPECT_NE(object.find(field), std::string::npos)
          << g.json_key << ": " << field << "\n"
          << object;
    }
  }
  for (const Histogram& h : kHistograms) {
    const LatencyBuckets& b = s.*h.member;
    const std::string field =
        absl::StrFormat("\"%s\":{\"count\":1,\"sum_ns\":%d,\"buckets\":[",
                        h.json_key, b.sum_ns);
    EXPECT_NE(json.find(field), std::string::npos) << field << "\n" << json;
  }
  EXPECT_NE(json.find("\"bounds_ns\":[5000,"), std::string::npos);
}

TEST(ServiceStatsTables, PrometheusHoldsEveryRowWithItsValue) {
  ServiceStats s = EveryCounterDistinct();
  for (const Switches on : kSwitches) {
    SCOPED_TRACE(TraceOf(on));
    s.replication = on.replicated ? 1 : 0;
    s.md = on.md ? 1 : 0;
    std::string out;
    AppendServiceMetrics(s, &out);
    for (const ScalarCounter& c : kScalarCounters) {
      if (c.metric.empty()) continue;
      const std::string metric(c.metric);
      const bool shown = ShownUnder(c.scope, on);
      const char* type = c.kind == MetricKind::kCounter ? "counter" : "gauge";
      EXPECT_EQ(HasLine(out, "# TYPE " + metric + " " + type), shown) << metric;
      EXPECT_EQ(HasLine(out, "# HELP " + metric + " " + std::string(c.help)),
                shown)
          << metric;
      const std::uint64_t v = s.*c.member;
      EXPECT_EQ(HasLine(out, Metric(metric, c.kind == MetricKind::kSecondsGauge
                                                ? PrometheusText::Seconds(v)
                                                : std::to_string(v))),
                shown)
          << metric;
    }
    for (const CounterGroup& g : CounterGroups()) {
      const std::string metric(g.metric);
      const bool shown = ShownUnder(g.scope, on);
      EXPECT_EQ(HasLine(out, "# TYPE " + metric + " counter"), shown) << metric;
      const std::span<const std::uint64_t> values = g.values(s);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::string line = absl::StrFormat(
            "%s{%s=\"%s\"} %d", metric, g.label, g.label_value(i), values[i]);
        EXPECT_EQ(HasLine(out, line), shown && g.in_metrics(i)) << line;
      }
    }
    for (const Histogram& h : kHistograms) {
      const std::string metric(h.metric);
      const bool shown = ShownUnder(h.scope, on);
      EXPECT_EQ(HasLine(out, "# TYPE " + metric + " histogram"), shown);
      EXPECT_EQ(
          HasLine(out, Metric(metric + "_sum",
                              PrometheusText::Seconds((s.*h.member).sum_ns))),
          shown)
          << metric;
    }
  }
}

TEST(ServiceStatsTables, ReportHoldsEveryRowWithItsValue) {
  ServiceStats s = EveryCounterDistinct();
  for (const Switches on : kSwitches) {
    SCOPED_TRACE(TraceOf(on));
    s.replication = on.replicated ? 1 : 0;
    s.md = on.md ? 1 : 0;
    const std::string report = FormatStatsReport(s);
    // A line "    LABEL   VALUE" (VALUE alone or followed by a space).
    const auto has = [&](std::string_view label, std::uint64_t value) {
      for (const std::string& line : Lines(report)) {
        const std::string head = "    " + std::string(label) + " ";
        if (!line.starts_with(head)) continue;
        const std::size_t at = line.find_first_not_of(' ', head.size());
        if (at == std::string::npos) continue;
        const std::string rest = line.substr(at);
        const std::string number = std::to_string(value);
        if (rest == number || rest.starts_with(number + " ")) return true;
      }
      return false;
    };
    for (const ScalarCounter& c : kScalarCounters) {
      // Their values are the switches.
      if (c.name == "replication" || c.name == "md") continue;
      const bool shown = ShownUnder(c.scope, on);
      EXPECT_EQ(has(c.label, s.*c.member), shown) << c.name << "\n" << report;
    }
    for (const CounterGroup& g : CounterGroups()) {
      const std::span<const std::uint64_t> values = g.values(s);
      for (std::size_t i = 0; i < values.size(); ++i) {
        if (g.label_value(i).empty()) continue;
        EXPECT_TRUE(
            has(absl::StrFormat("%s %s", g.report_label, g.label_value(i)),
                values[i]))
            << g.json_key << " " << i << "\n"
            << report;
      }
    }
    for (const Histogram& h : kHistograms) {
      const bool shown = ShownUnder(h.scope, on);
      EXPECT_EQ(has(h.report_label, 1), shown) << h.json_key;
    }
  }
  // The derived figure: datagrams per segmented send.
  s.segmented_sends = 4;
  s.segmented_datagrams = 10;
  EXPECT_NE(
      FormatStatsReport(s).find("datagrams per segmented send       2.50"),
      std::string::npos)
      << FormatStatsReport(s);
}

}  // namespace
}  // namespace orderwire::service
