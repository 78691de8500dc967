// Retention for the running service (`serve --retain SEGMENTS|BYTES|
// DURATION`): a helper thread that, at most once a second, lists the
// journal's segments and snapshots, asks the retention policy
// (journal/retention.h) how far the journal may be pruned, and prunes it
// (journal/prune.h: the start record first, then unlink). It never touches
// the service loop: pruning is file-system metadata work (an fsync of the
// start record and of the directory, an unlink per segment) that would
// otherwise stall the loop for milliseconds. It may run beside the writer:
// the writer appends only to the last segment, which is never pruned, and
// the service's writer holds the journal's lock for it.
//
// Nothing a restart needs goes: segments are pruned only strictly before
// the newest VERIFIED snapshot's index + 1, and a journal without one is
// never pruned. A snapshot is verified as a restart loads it (LoadSnapshot:
// every checksum, count and cross-reference, and the journal's id), once
// per file (a file is known by its path, size and modification time: a
// snapshot is published whole by a rename and never rewritten). A file
// named like a snapshot that does not verify is reported once, counted
// (snapshots_damaged()), and never relied on: the restart would skip it and
// need the records after the previous one, so those stay.
#ifndef ORDERWIRE_SERVICE_RETENTION_H_
#define ORDERWIRE_SERVICE_RETENTION_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "journal/retention.h"

namespace orderwire::service {

struct RetentionOptions {
  std::string directory;  // the journal's
  journal::RetentionPolicy policy;
  // The journal the snapshots must belong to (its segments' journal_id).
  std::uint64_t journal_id = 0;
  // How often to look (milliseconds).
  std::uint32_t interval_ms = 1000;
  // Called on the retention thread with a line for the operator after each
  // prune, or when pruning fails (it is tried again next interval). Null:
  // the line goes to stderr.
  std::function<void(std::string_view)> on_event{};
};

class RetentionWorker {
 public:
  // Starts the thread. Cold.
  explicit RetentionWorker(RetentionOptions options);
  // Stops the thread (waits for a prune in progress to finish).
  ~RetentionWorker();
  RetentionWorker(const RetentionWorker&) = delete;
  RetentionWorker& operator=(const RetentionWorker&) = delete;

  // One look at the journal, and a prune if the policy allows one: what the
  // thread does every interval. Public for tests. Cold.
  void RunOnce();

  // Counters (read from any thread).
  [[nodiscard]] std::uint64_t segments_pruned() const;
  [[nodiscard]] std::uint64_t failures() const;
  // Snapshot files seen that do not verify (each counted once).
  [[nodiscard]] std::uint64_t snapshots_damaged() const;

 private:
  // What verifying one snapshot file found, kept while the file is there.
  struct Verdict {
    std::uint64_t file_bytes = 0;
    std::int64_t modified_ns = 0;
    bool verified = false;
  };

  void Loop();
  // The index of the newest snapshot that verifies, or nullopt; each
  // damaged one newer than it reported. Only the retention thread calls it.
  absl::StatusOr<std::optional<std::uint64_t>> NewestVerifiedSnapshot();

  RetentionOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::uint64_t segments_pruned_ = 0;
  std::uint64_t failures_ = 0;
  std::uint64_t snapshots_damaged_ = 0;
  std::map<std::string, Verdict> verdicts_;  // by path; retention thread only
  std::thread thread_;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_RETENTION_H_
