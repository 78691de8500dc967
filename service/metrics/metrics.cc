// The counters' mirror and their Prometheus text; see metrics.h.
#include "service/metrics/metrics.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "service/service_stats.h"

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
// The service's families: the tables of service_stats.h, which name them
// (docs/SERVICE.md "Metrics" says how they are served).

namespace {

using Type = PrometheusText::Type;

void AppendScalar(PrometheusText& text, const ScalarCounter& c,
                  std::uint64_t value) {
  text.Family(c.metric,
              c.kind == MetricKind::kCounter ? Type::kCounter : Type::kGauge,
              c.help);
  if (c.kind == MetricKind::kSecondsGauge) {
    text.SampleSeconds(c.metric, value);
  } else {
    text.Sample(c.metric, value);
  }
}

}  // namespace

void AppendServiceMetrics(const ServiceStats& s, std::string* out) {
  PrometheusText text(out);
  for (const ScalarCounter& c : kScalarCounters) {
    if (c.metric.empty() || !Shown(c.scope, s)) continue;
    AppendScalar(text, c, s.*c.member);
  }
  for (const CounterGroup& g : CounterGroups()) {
    if (!Shown(g.scope, s)) continue;
    text.Family(g.metric, Type::kCounter, g.help);
    const std::span<const std::uint64_t> values = g.values(s);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (g.in_metrics(i))
        text.Sample(g.metric, g.label, g.label_value(i), values[i]);
    }
  }
  for (const Histogram& h : kHistograms) {
    if (!Shown(h.scope, s)) continue;
    const LatencyBuckets& b = s.*h.member;
    text.Histogram(h.metric, h.help, kLatencyBoundsNs, b.buckets, b.sum_ns);
  }
}

}  // namespace orderwire::service
