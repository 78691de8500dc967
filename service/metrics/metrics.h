// The service's counters for a reader on another thread, and their
// Prometheus text exposition (format 0.0.4), for `serve --metrics-listen`
// (docs/SERVICE.md "Metrics").
//
// One source of truth: the service's thread keeps its counters in a
// ServiceStats (service_stats.h: the numbers behind the stats line, the
// report and --stats-json) and publishes a copy of them into a StatsMirror: one
// relaxed atomic store per 8-byte word, no lock, no allocation, no system call.
// The HTTP thread reads the mirror with relaxed loads into its own ServiceStats
// and formats that into its own buffer. Each word is read whole (never torn),
// but two counters may come from two publications: Prometheus scrapes need no
// more. The service publishes at most once a millisecond, busy or idle, so a
// scrape lags the live counters by at most a millisecond of traffic and
// equals them within the loop's 50 ms idle wait once traffic stops.
#ifndef ORDERWIRE_SERVICE_METRICS_METRICS_H_
#define ORDERWIRE_SERVICE_METRICS_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "service/service.h"

namespace orderwire::service {

// ServiceStats as relaxed atomic words: written by one thread (Publish),
// read by any (Read). Neither allocates nor locks.
class StatsMirror {
 public:
  StatsMirror() = default;
  StatsMirror(const StatsMirror&) = delete;
  StatsMirror& operator=(const StatsMirror&) = delete;

  // The service's thread: copies `stats` word by word (relaxed stores).
  // Hot-path safe: about 600 stores, nothing else.
  void Publish(const ServiceStats& stats) noexcept;
  // Any thread: the last publication (all zero before the first), word by
  // word (relaxed loads).
  void Read(ServiceStats* stats) const noexcept;
  // How many times Publish ran (0: nothing published yet).
  [[nodiscard]] std::uint64_t publications() const noexcept {
    return publications_.load(std::memory_order_relaxed);
  }

 private:
  static_assert(std::is_trivially_copyable_v<ServiceStats>);
  static_assert(sizeof(ServiceStats) % sizeof(std::uint64_t) == 0);
  static constexpr std::size_t kWords =
      sizeof(ServiceStats) / sizeof(std::uint64_t);
  std::array<std::atomic<std::uint64_t>, kWords> words_{};
  std::atomic<std::uint64_t> publications_{0};
};

// Writes the Prometheus text exposition format 0.0.4 into a string it
// appends to: each family's `# HELP` and `# TYPE` lines once, then its
// samples; label values and help text escaped as the format requires
// (label values: backslash, double quote, line feed; help: backslash, line
// feed). Names are the caller's and are not checked. Cold (the HTTP
// thread): it appends to a std::string.
class PrometheusText {
 public:
  enum class Type : std::uint8_t { kCounter, kGauge, kHistogram };

  explicit PrometheusText(std::string* out) : out_(out) {}

  // `# HELP name help` and `# TYPE name type`.
  void Family(std::string_view name, Type type, std::string_view help);
  // `name value` / `name{label="value"} value`.
  void Sample(std::string_view name, std::uint64_t value);
  void Sample(std::string_view name, std::string_view label,
              std::string_view label_value, std::uint64_t value);
  // A value in nanoseconds written in seconds, exactly (`0.00025`).
  void SampleSeconds(std::string_view name, std::uint64_t ns);
  // A whole histogram family in seconds: `name_bucket{le="..."}` with the
  // cumulative count of observations <= each bound (`bounds_ns`, ascending,
  // in nanoseconds) and `le="+Inf"`, then `name_sum` (seconds) and
  // `name_count` (equal to the +Inf bucket). `buckets` are per-bucket (not
  // cumulative) counts, one more than the bounds (the last: above them all).
  void Histogram(std::string_view name, std::string_view help,
                 std::span<const std::uint64_t> bounds_ns,
                 std::span<const std::uint64_t> buckets, std::uint64_t sum_ns);

  // Nanoseconds as decimal seconds, exact, without trailing zeros
  // (250000 -> "0.00025", 1000000000 -> "1", 0 -> "0").
  static std::string Seconds(std::uint64_t ns);

 private:
  void AppendEscaped(std::string_view text, bool label_value);
  std::string* out_;
};

// Every counter of `stats` in the Prometheus text format, appended to
// `out`: one family per row of the tables of service_stats.h that names one
// (listed in docs/SERVICE.md "Metrics"), the replicated-only ones only when
// stats.replication is set. Series with labels (kind, reason, cause) are
// written for every value the label can take, zero or not, so a rate() never
// starts from a missing series. Cold (the HTTP thread).
void AppendServiceMetrics(const ServiceStats& stats, std::string* out);

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_METRICS_METRICS_H_
