// ReportRegenerator: a session's reports made again from the journal, for a
// resend that its report history no longer holds (docs/PROTOCOL.md "Reports
// the history no longer holds"; docs/SERVICE.md gives the sizes and costs).
//
// Matching is deterministic: replaying the journal from a state in which a
// report had not yet been made makes it again, byte for byte. A request names
// a session, where its reports are needed from (the first report made once
// the session had reached command `from_command`, at or after report
// `from_report`), and the last journal index the live StateMachine has
// applied. A worker thread loads the newest snapshot in which the session had
// not reached that point (or starts at the journal's first record), replays
// the journal from there through a StateMachine of its own up to that index
// (StateRebuild: the same snapshot checks, pruned-journal rule and pinned
// configurations as a restart), and passes the session's reports from that
// point on, in order, to the service's thread through a bounded ring. The
// service sends them (Take) and stops the job as soon as the next report is
// in the live history again (Cancel), or when the job is over (Finished).
//
// Bounds:
// - CPU: one job at a time, on one thread at nice +10 (the matching loop
//   keeps its core); a job costs loading one snapshot (or none) plus
//   applying the records from it to the request's index. At most kMaxQueued
//   sessions wait (one entry each: a request for a session already waiting
//   is merged into it, one for the session being served from a point it
//   covers is merged into the job); beyond that Request answers kFull and the
//   client's next retransmission asks again. A request that a job finished
//   less than kRepeatNs ago covered is merged too (the duplicates of one
//   retransmitted window).
// - Memory: the ring (kRingSlots x 80 bytes, allocated once), and per job
//   the worker's StateMachine (the engine's pools for max_live_orders, and at
//   most one history report per session: StateMachine::KeepNoHistory),
//   freed when the job ends.
// - The replay waits while the ring is full: a slow client slows the job,
//   not the loop.
//
// Errors: a job ends with NotFound when the reports are older than the
// retained journal (pruned, and no snapshot from before them), and with the
// journal's or the rebuild's error otherwise (DataLoss naming file and
// offset, an I/O errno): the service then answers ReportsGone.
//
// Threading: every public function is for the service's thread only; the
// worker thread blocks SIGINT and SIGTERM (base/background_thread.h); the
// worker owns the replay. The hot path is untouched: the service calls
// Take/Finished only while a job is active (one load otherwise).
#ifndef ORDERWIRE_STATE_REPORT_REGENERATOR_H_
#define ORDERWIRE_STATE_REPORT_REGENERATOR_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "codec/kind_table.h"
#include "state/pinned_config.h"
#include "state/state_machine.h"

namespace orderwire::state {

struct RegenerationRequest {
  std::uint32_t session_id = 0;
  // Reports from the first one made once the session had reached this
  // command (0: any)...
  std::uint64_t from_command = 0;
  // ... whose sequence is at least this (0: any).
  std::uint64_t from_report = 0;
  // The journal is replayed up to this index (the live StateMachine's
  // last_index(): every record up to it is durable).
  std::uint64_t up_to_index = 0;
};

struct ReportRegeneratorOptions {
  std::string journal_dir;
  std::uint64_t journal_id = 0;
  // The StateMachine when no snapshot is used, and the configuration of
  // segments that pin none (as RestartFromJournal takes them).
  StateMachineOptions machine;
  PinnedConfig unpinned;
};

// What the worker has done, for the service's counters (relaxed reads).
struct RegenerationCounters {
  std::uint64_t jobs = 0;             // begun
  std::uint64_t records_applied = 0;  // by all jobs
  std::uint64_t reports_made = 0;     // put in the ring
  std::uint64_t snapshots_loaded = 0;
};

class ReportRegenerator {
 public:
  static constexpr std::size_t kRingSlots = 4096;
  static constexpr std::size_t kMaxQueued = 64;
  static constexpr std::int64_t kRepeatNs = 100'000'000;

  // Starts the worker thread (it waits for requests). Allocates the ring.
  explicit ReportRegenerator(ReportRegeneratorOptions options);
  // Cancels the job and joins the worker.
  ~ReportRegenerator();
  ReportRegenerator(const ReportRegenerator&) = delete;
  ReportRegenerator& operator=(const ReportRegenerator&) = delete;

  enum class Queued : std::uint8_t {
    kQueued,  // a new entry
    kMerged,  // covered by an entry waiting, the job, or a recent job
    kFull,    // kMaxQueued sessions wait already: not taken
  };
  // `now_ns`: the caller's monotonic clock (for kRepeatNs). Cold.
  Queued Request(const RegenerationRequest& request, std::int64_t now_ns);

  // Whether a job is active: its reports are being handed out, or its end
  // is still to be taken. One acquire load.
  [[nodiscard]] bool active() const noexcept {
    return active_.load(std::memory_order_acquire) != 0;
  }
  // The active job's session. Precondition: active().
  [[nodiscard]] std::uint32_t active_session() const noexcept {
    return static_cast<std::uint32_t>(active_.load(std::memory_order_acquire));
  }
  // Hands `sink` the job's reports made so far, in order (sequence, frame),
  // at most `max`; `sink` returns false to stop (that report is not taken:
  // Cancel() usually follows). Returns how many it took.
  std::size_t Take(absl::FunctionRef<bool(std::uint64_t sequence,
                                          std::span<const std::byte> frame)>
                       sink,
                   std::size_t max);

  // The job is over and every report it made was taken (or the job was
  // cancelled): its end, and the sequence after its last report. The next
  // queued request starts. nullopt: still running (or no job).
  struct Finished {
    std::uint32_t session_id = 0;
    absl::Status status;            // OK: replayed to the request's index
    std::uint64_t next_report = 0;  // after the last report made (0: none)
    bool cancelled = false;
  };
  std::optional<Finished> TakeFinished(std::int64_t now_ns);

  // Ends the active job: its remaining reports are dropped, the replay
  // stops at its next record.
  void Cancel();

  [[nodiscard]] RegenerationCounters counters() const noexcept;
  // Sessions waiting.
  [[nodiscard]] std::size_t queued() const;

 private:
  struct Slot {
    std::uint64_t sequence;
    std::uint8_t size;
    std::array<std::byte, codec::kMaxFrameSize> frame;
  };
  struct Job {
    RegenerationRequest request;
    absl::Status status;
    std::uint64_t next_report = 0;
  };
  struct Recent {
    RegenerationRequest request;
    std::int64_t finished_ns = 0;
  };

  void Work();
  // The replay of one job; its end status.
  absl::Status RunJob(Job& job);
  // Worker: puts a report in the ring, waiting while it is full. False when
  // the job was cancelled or the regenerator stops.
  bool Push(std::uint64_t sequence, std::span<const std::byte> frame);
  [[nodiscard]] bool Covers(const RegenerationRequest& have,
                            const RegenerationRequest& want) const noexcept;

  const ReportRegeneratorOptions options_;
  std::unique_ptr<Slot[]> ring_;
  // Ring indexes (monotonic; slot = index % kRingSlots): the worker writes
  // head_, the service's thread tail_.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  alignas(64) std::atomic<std::uint64_t> tail_{0};
  // 0: no job; else kActiveBit | the job's session id.
  static constexpr std::uint64_t kActiveBit = std::uint64_t{1} << 32;
  alignas(64) std::atomic<std::uint64_t> active_{0};
  std::atomic<bool> cancel_{false};
  std::atomic<bool> job_done_{false};  // the worker finished the job

  std::atomic<bool> stop_{false};

  mutable std::mutex mu_;
  std::condition_variable wake_;
  // Guarded by mu_: the requests waiting, the one being served (from when
  // the worker takes it until the service has taken its end), and the end
  // of the last one the worker finished.
  std::deque<RegenerationRequest> queue_;
  std::optional<RegenerationRequest> running_;
  Job finished_;
  // The service's thread only: the last jobs ended, for kRepeatNs.
  std::array<Recent, 16> recent_{};
  std::size_t recent_next_ = 0;

  std::atomic<std::uint64_t> jobs_{0};
  std::atomic<std::uint64_t> records_applied_{0};
  std::atomic<std::uint64_t> reports_made_{0};
  std::atomic<std::uint64_t> snapshots_loaded_{0};

  std::thread worker_;  // last: started once the rest exists
};

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_REPORT_REGENERATOR_H_
