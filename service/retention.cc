// Retention for the running service; see retention.h.
#include "service/retention.h"

#include <chrono>
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "journal/prune.h"

namespace orderwire::service {

RetentionWorker::RetentionWorker(RetentionOptions options)
    : options_(std::move(options)) {
  if (!options_.on_event) {
    options_.on_event = [](std::string_view line) {
      std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()),
                   line.data());
    };
  }
  thread_ = std::thread([this] { Loop(); });
}

RetentionWorker::~RetentionWorker() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void RetentionWorker::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms),
                   [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    RunOnce();
    lock.lock();
  }
}

void RetentionWorker::RunOnce() {
  const std::string& dir = options_.directory;
  auto failed = [&](const absl::Status& status) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      ++failures_;
    }
    options_.on_event(
        absl::StrFormat("retention: cannot prune %s (tried again in %d ms): %s",
                        dir, options_.interval_ms, status.message()));
  };
  absl::StatusOr<std::vector<journal::SegmentSummary>> segments =
      journal::ListSegmentSummaries(dir);
  if (!segments.ok()) return failed(segments.status());
  absl::StatusOr<std::vector<std::uint64_t>> snapshots =
      journal::ListSnapshotIndexes(dir);
  if (!snapshots.ok()) return failed(snapshots.status());
  const std::uint64_t before = journal::PruneBeforeIndex(
      *segments, *snapshots, options_.policy, base::RealtimeNs());
  if (before == 0) return;
  absl::StatusOr<journal::PruneReport> report =
      journal::PruneJournal({.directory = dir, .before_index = before});
  if (!report.ok()) return failed(report.status());
  if (report->segments.empty()) return;
  std::uint64_t bytes = 0;
  for (const journal::PrunedSegment& segment : report->segments) {
    bytes += segment.bytes;
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    segments_pruned_ += report->segments.size();
  }
  options_.on_event(absl::StrFormat(
      "retention (%s): pruned %d segment(s), %d bytes, indexes %d..%d; the "
      "journal starts at index %d; %d snapshot file(s) removed",
      journal::DescribeRetention(options_.policy), report->segments.size(),
      bytes, report->first_index_before, report->first_index_after - 1,
      report->first_index_after, report->snapshots_removed.size()));
}

std::uint64_t RetentionWorker::segments_pruned() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return segments_pruned_;
}

std::uint64_t RetentionWorker::failures() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return failures_;
}

}  // namespace orderwire::service
