// Retention for the running service; see retention.h.
#include "service/retention.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/background_thread.h"
#include "base/clock.h"
#include "journal/prune.h"
#include "state/snapshot.h"

namespace orderwire::service {

using state::ListSnapshots;
using state::LoadedSnapshot;
using state::LoadSnapshot;
using state::SnapshotInfo;

RetentionWorker::RetentionWorker(RetentionOptions options)
    : options_(std::move(options)) {
  if (!options_.on_event) {
    options_.on_event = [](std::string_view line) {
      std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()),
                   line.data());
    };
  }
  // Never the thread a stop signal goes to (base/background_thread.h).
  thread_ = base::StartWithStopSignalsBlocked([this] { Loop(); });
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
  absl::StatusOr<std::optional<std::uint64_t>> snapshot =
      NewestVerifiedSnapshot();
  if (!snapshot.ok()) return failed(snapshot.status());
  if (!snapshot->has_value()) return;
  const std::uint64_t verified[] = {**snapshot};
  const std::uint64_t before = journal::PruneBeforeIndex(
      *segments, verified, options_.policy, base::RealtimeNs());
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

absl::StatusOr<std::optional<std::uint64_t>>
RetentionWorker::NewestVerifiedSnapshot() {
  absl::StatusOr<std::vector<SnapshotInfo>> snapshots =
      ListSnapshots(options_.directory);  // newest first
  if (!snapshots.ok()) return snapshots.status();
  // Verdicts of files that are gone are forgotten.
  for (auto it = verdicts_.begin(); it != verdicts_.end();) {
    const bool listed =
        std::any_of(snapshots->begin(), snapshots->end(),
                    [&](const SnapshotInfo& s) { return s.path == it->first; });
    it = listed ? std::next(it) : verdicts_.erase(it);
  }
  for (const SnapshotInfo& snapshot : *snapshots) {
    struct stat st {};
    if (::stat(snapshot.path.c_str(), &st) != 0) continue;  // just removed
    const Verdict seen{
        .file_bytes = static_cast<std::uint64_t>(st.st_size),
        .modified_ns = std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 +
                       st.st_mtim.tv_nsec};
    auto it = verdicts_.find(snapshot.path);
    if (it == verdicts_.end() || it->second.file_bytes != seen.file_bytes ||
        it->second.modified_ns != seen.modified_ns) {
      // Verified as a restart would load it (and the state dropped).
      absl::StatusOr<LoadedSnapshot> loaded =
          LoadSnapshot(snapshot.path, options_.journal_id);
      Verdict verdict = seen;
      verdict.verified = loaded.ok();
      it = verdicts_.insert_or_assign(snapshot.path, verdict).first;
      if (!loaded.ok()) {
        {
          const std::lock_guard<std::mutex> lock(mutex_);
          ++snapshots_damaged_;
        }
        options_.on_event(absl::StrFormat(
            "retention: snapshot %s does not verify, so it is not relied "
            "on: the journal is pruned only behind an older snapshot that "
            "does (%s)",
            snapshot.path, loaded.status().message()));
      }
    }
    if (it->second.verified)
      return std::optional<std::uint64_t>(snapshot.index);
  }
  return std::optional<std::uint64_t>();
}

std::uint64_t RetentionWorker::segments_pruned() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return segments_pruned_;
}

std::uint64_t RetentionWorker::failures() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return failures_;
}

std::uint64_t RetentionWorker::snapshots_damaged() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return snapshots_damaged_;
}

}  // namespace orderwire::service
