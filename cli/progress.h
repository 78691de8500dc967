// Progress on long work (replay, journal prune, journal write; snapshot can
// use it too): a one-line display on standard error, only when it is a
// terminal, refreshed at most every 200 ms, cleared at the end:
//
//   replay: 12,345,678 records, 9.81M records/s, 42%, ETA 0:07
//
// When standard error is not a terminal (a pipe, a file, a test) nothing at
// all is written, so logs and scripts see only the commands' own output.
// The environment variable ORDERWIRE_PROGRESS_INTERVAL_MS replaces the
// 200 ms (0: every update draws, so even a short command draws its line;
// the tests of the drawing on a terminal use it). The clock and the
// terminal test are injectable for tests.
#ifndef ORDERWIRE_CLI_PROGRESS_H_
#define ORDERWIRE_CLI_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "journal/reader.h"

namespace orderwire::cli {

// "replay: 1,000 records, 2.0k records/s, 50%, ETA 0:01". `total_work` 0:
// unknown (no percentage, no ETA); `work_done` and `total_work` are in the
// same unit (bytes of journal, records, segments). The ETA assumes the rate
// of work so far. Pure.
std::string FormatProgress(std::string_view what, std::uint64_t records,
                           double elapsed_s, std::uint64_t work_done,
                           std::uint64_t total_work);

struct ProgressOptions {
  // Draw at all: by default, whether standard error is a terminal.
  bool enabled = false;
  // Monotonic nanoseconds (default: steady_clock).
  std::function<std::int64_t()> now_ns{};
  std::FILE* out = stderr;
  std::int64_t interval_ns = 200'000'000;  // at most 5 refreshes a second
};

// The time between refreshes that ORDERWIRE_PROGRESS_INTERVAL_MS sets:
// `env_value` is its value (nullptr when unset). Unset or empty: 200 ms.
// A value that is not a whole number of milliseconds is said on `warnings`
// (naming it) and the 200 ms are kept.
std::int64_t ProgressIntervalNs(const char* env_value, std::FILE* warnings);

class Progress {
 public:
  // Enabled when standard error is a terminal; refreshed at the interval
  // of ProgressIntervalNs(getenv("ORDERWIRE_PROGRESS_INTERVAL_MS")).
  Progress(std::string_view what, std::uint64_t total_work);
  Progress(std::string_view what, std::uint64_t total_work,
           ProgressOptions options);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { Finish(); }

  // Records done and work done so far. Cheap when disabled (one branch)
  // and between refreshes (one clock read); call it every few thousand
  // records.
  void Update(std::uint64_t records, std::uint64_t work_done);
  // Clears the line, if one was drawn. Idempotent.
  void Finish();

  [[nodiscard]] bool enabled() const noexcept { return options_.enabled; }
  [[nodiscard]] int refreshes() const noexcept { return refreshes_; }

 private:
  std::string what_;
  std::uint64_t total_work_;
  ProgressOptions options_;
  std::int64_t start_ns_ = 0;
  std::int64_t last_ns_ = 0;
  int refreshes_ = 0;
  bool drawn_ = false;
};

// Progress over the records a journal reader hands out (`replay`, `replay
// --verify`, `snapshot`): the display is made at the first record, once
// the reader has positioned itself (after a seek its total_bytes() and
// bytes_done() count from the seek point), and refreshed every 65,536
// records.
class ReaderProgress {
 public:
  explicit ReaderProgress(std::string_view what) : what_(what) {}

  // One more record from `reader`. Cheap: a count and a mask.
  void Count(const journal::JournalReader& reader) {
    if (++records_ == 1) progress_.emplace(what_, reader.total_bytes());
    if ((records_ & 0xFFFF) == 0) {
      progress_->Update(records_, reader.bytes_done());
    }
  }
  // Clears the line, if one was drawn.
  void Finish() {
    if (progress_.has_value()) progress_->Finish();
  }
  [[nodiscard]] std::uint64_t records() const noexcept { return records_; }

 private:
  std::string what_;
  std::uint64_t records_ = 0;
  std::optional<Progress> progress_;
};

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_PROGRESS_H_
