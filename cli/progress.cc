// Progress on long work; see progress.h.
#include "cli/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "journal/start.h"

namespace orderwire::cli {
namespace {

std::int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string RateText(double per_second) {
  if (per_second >= 1e6) return absl::StrFormat("%.2fM", per_second / 1e6);
  if (per_second >= 1e3) return absl::StrFormat("%.1fk", per_second / 1e3);
  return absl::StrFormat("%.0f", per_second);
}

}  // namespace

std::string FormatProgress(std::string_view what, std::uint64_t records,
                           double elapsed_s, std::uint64_t work_done,
                           std::uint64_t total_work) {
  std::string out =
      absl::StrFormat("%s: %s records", what, journal::GroupedDigits(records));
  if (elapsed_s > 0) {
    absl::StrAppendFormat(&out, ", %s records/s",
                          RateText(static_cast<double>(records) / elapsed_s));
  }
  if (total_work > 0) {
    const std::uint64_t done = std::min(work_done, total_work);
    absl::StrAppendFormat(&out, ", %d%%",
                          static_cast<int>(100.0 * static_cast<double>(done) /
                                           static_cast<double>(total_work)));
    if (done > 0 && elapsed_s > 0) {
      const double left = elapsed_s * static_cast<double>(total_work - done) /
                          static_cast<double>(done);
      const auto seconds = static_cast<std::uint64_t>(std::llround(left));
      if (seconds >= 3600) {
        absl::StrAppendFormat(&out, ", ETA %d:%02d:%02d", seconds / 3600,
                              seconds / 60 % 60, seconds % 60);
      } else {
        absl::StrAppendFormat(&out, ", ETA %d:%02d", seconds / 60,
                              seconds % 60);
      }
    }
  }
  return out;
}

std::int64_t ProgressIntervalNs(const char* env_value, std::FILE* warnings) {
  const std::int64_t fallback = ProgressOptions{}.interval_ns;
  if (env_value == nullptr || *env_value == '\0') return fallback;
  std::uint32_t ms = 0;
  if (!absl::SimpleAtoi(env_value, &ms)) {
    std::fprintf(warnings,
                 "orderwire: ORDERWIRE_PROGRESS_INTERVAL_MS=\"%s\" is not a "
                 "whole number of milliseconds; progress is refreshed every "
                 "%lld ms\n",
                 env_value, static_cast<long long>(fallback / 1'000'000));
    return fallback;
  }
  return std::int64_t{ms} * 1'000'000;
}

namespace {

// The options of a progress display on standard error: drawn when it is a
// terminal, at the interval of the environment (read, and a bad value
// said, only then).
ProgressOptions TerminalOptions() {
  ProgressOptions options{.enabled = ::isatty(STDERR_FILENO) == 1};
  if (options.enabled) {
    options.interval_ns = ProgressIntervalNs(
        std::getenv("ORDERWIRE_PROGRESS_INTERVAL_MS"), stderr);
  }
  return options;
}

}  // namespace

Progress::Progress(std::string_view what, std::uint64_t total_work)
    : Progress(what, total_work, TerminalOptions()) {}

Progress::Progress(std::string_view what, std::uint64_t total_work,
                   ProgressOptions options)
    : what_(what), total_work_(total_work), options_(std::move(options)) {
  if (!options_.now_ns) options_.now_ns = SteadyNs;
  if (options_.enabled) start_ns_ = last_ns_ = options_.now_ns();
}

void Progress::Update(std::uint64_t records, std::uint64_t work_done) {
  if (!options_.enabled) return;
  const std::int64_t now = options_.now_ns();
  if (now - last_ns_ < options_.interval_ns) return;
  last_ns_ = now;
  const std::string line = FormatProgress(
      what_, records, static_cast<double>(now - start_ns_) * 1e-9, work_done,
      total_work_);
  // Carriage return, the line, clear to the end of the line.
  std::fprintf(options_.out, "\r%s\033[K", line.c_str());
  std::fflush(options_.out);
  drawn_ = true;
  ++refreshes_;
}

void Progress::Finish() {
  if (!drawn_) return;
  std::fputs("\r\033[K", options_.out);
  std::fflush(options_.out);
  drawn_ = false;
}

}  // namespace orderwire::cli
