// Reports made again from the journal; see report_regenerator.h.
#include "state/report_regenerator.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/background_thread.h"
#include "journal/start.h"
#include "state/rebuild.h"

namespace orderwire::state {
namespace {

// How long the worker sleeps while the ring is full.
constexpr auto kRingFullWait = std::chrono::microseconds(200);

}  // namespace

ReportRegenerator::ReportRegenerator(ReportRegeneratorOptions options)
    : options_(std::move(options)),
      ring_(std::make_unique<Slot[]>(kRingSlots)),
      // The stop signals go to the service's thread (background_thread.h).
      worker_(base::StartWithStopSignalsBlocked([this] { Work(); })) {}

ReportRegenerator::~ReportRegenerator() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
  }
  cancel_.store(true);
  wake_.notify_all();
  worker_.join();
}

bool ReportRegenerator::Covers(const RegenerationRequest& have,
                               const RegenerationRequest& want) const noexcept {
  return have.session_id == want.session_id &&
         have.from_command <= want.from_command &&
         have.from_report <= want.from_report;
}

ReportRegenerator::Queued ReportRegenerator::Request(
    const RegenerationRequest& request, std::int64_t now_ns) {
  for (const Recent& recent : recent_) {
    if (recent.finished_ns != 0 && now_ns - recent.finished_ns < kRepeatNs &&
        Covers(recent.request, request)) {
      return Queued::kMerged;
    }
  }
  std::lock_guard lock(mu_);
  if (running_.has_value() && Covers(*running_, request)) {
    return Queued::kMerged;
  }
  for (RegenerationRequest& waiting : queue_) {
    if (waiting.session_id != request.session_id) continue;
    waiting.from_command = std::min(waiting.from_command, request.from_command);
    waiting.from_report = std::min(waiting.from_report, request.from_report);
    waiting.up_to_index = std::max(waiting.up_to_index, request.up_to_index);
    return Queued::kMerged;
  }
  if (queue_.size() >= kMaxQueued) return Queued::kFull;
  queue_.push_back(request);
  wake_.notify_one();
  return Queued::kQueued;
}

std::size_t ReportRegenerator::Take(
    absl::FunctionRef<bool(std::uint64_t, std::span<const std::byte>)> sink,
    std::size_t max) {
  // The worker resets the ring before it publishes a job's session.
  if (!active()) return 0;
  const std::uint64_t head = head_.load(std::memory_order_acquire);
  std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (cancel_.load(std::memory_order_relaxed)) {
    tail_.store(head, std::memory_order_release);
    return 0;
  }
  std::size_t taken = 0;
  while (tail != head && taken < max) {
    const Slot& slot = ring_[tail % kRingSlots];
    if (!sink(slot.sequence, {slot.frame.data(), slot.size})) break;
    ++tail;
    ++taken;
  }
  tail_.store(tail, std::memory_order_release);
  return taken;
}

std::optional<ReportRegenerator::Finished> ReportRegenerator::TakeFinished(
    std::int64_t now_ns) {
  if (!active() || !job_done_.load(std::memory_order_acquire)) {
    return std::nullopt;
  }
  const bool cancelled = cancel_.load(std::memory_order_relaxed);
  if (!cancelled && tail_.load(std::memory_order_relaxed) !=
                        head_.load(std::memory_order_acquire)) {
    return std::nullopt;  // reports still to take
  }
  Finished out;
  {
    std::lock_guard lock(mu_);
    out.session_id = finished_.request.session_id;
    out.status = finished_.status;
    out.next_report = finished_.next_report;
    out.cancelled = cancelled;
    recent_[recent_next_++ % recent_.size()] =
        Recent{finished_.request, now_ns};
    running_.reset();
    active_.store(0, std::memory_order_release);
  }
  wake_.notify_one();
  return out;
}

void ReportRegenerator::Cancel() { cancel_.store(true); }

RegenerationCounters ReportRegenerator::counters() const noexcept {
  return RegenerationCounters{
      .jobs = jobs_.load(std::memory_order_relaxed),
      .records_applied = records_applied_.load(std::memory_order_relaxed),
      .reports_made = reports_made_.load(std::memory_order_relaxed),
      .snapshots_loaded = snapshots_loaded_.load(std::memory_order_relaxed),
  };
}

std::size_t ReportRegenerator::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

void ReportRegenerator::Work() {
  // The matching loop keeps its core: this thread yields to it.
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)),
                      10);
  while (true) {
    Job job;
    {
      std::unique_lock lock(mu_);
      // A job starts once the service has taken the previous one's end.
      wake_.wait(lock, [this] {
        return stop_.load() || (!queue_.empty() && active_.load() == 0);
      });
      if (stop_.load()) return;
      job.request = queue_.front();
      queue_.pop_front();
      running_ = job.request;
      head_.store(0, std::memory_order_relaxed);
      tail_.store(0, std::memory_order_relaxed);
      cancel_.store(false, std::memory_order_relaxed);
      job_done_.store(false, std::memory_order_relaxed);
      active_.store(kActiveBit | job.request.session_id,
                    std::memory_order_release);
    }
    jobs_.fetch_add(1, std::memory_order_relaxed);
    job.status = RunJob(job);
    {
      std::lock_guard lock(mu_);
      finished_ = std::move(job);
    }
    job_done_.store(true, std::memory_order_release);
  }
}

bool ReportRegenerator::Push(std::uint64_t sequence,
                             std::span<const std::byte> frame) {
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  while (true) {
    if (cancel_.load(std::memory_order_relaxed) ||
        stop_.load(std::memory_order_relaxed)) {
      return false;
    }
    if (head - tail_.load(std::memory_order_acquire) < kRingSlots) break;
    std::this_thread::sleep_for(kRingFullWait);
  }
  Slot& slot = ring_[head % kRingSlots];
  slot.sequence = sequence;
  slot.size = static_cast<std::uint8_t>(frame.size());
  std::memcpy(slot.frame.data(), frame.data(), frame.size());
  head_.store(head + 1, std::memory_order_release);
  return true;
}

absl::Status ReportRegenerator::RunJob(Job& job) {
  const RegenerationRequest r = job.request;
  RebuildOptions rebuild_options{
      .directory = options_.journal_dir,
      .use_snapshots = true,
      // A snapshot before every report wanted: the session had not reached
      // the command, or not made the report, when it was taken.
      .snapshot_usable =
          [r](const StateMachine& machine) {
            const SessionState* session = machine.Find(r.session_id);
            return session == nullptr ||
                   session->next_expected <= r.from_command ||
                   session->next_report <= r.from_report;
          },
      .up_to_index = r.up_to_index,
      .journal_id = options_.journal_id,
      .machine_options = options_.machine,
      .unpinned = options_.unpinned,
      .unreadable_snapshots_replay_all = true,
      .pruned_error =
          [&](std::uint64_t first) {
            return absl::NotFoundError(absl::StrFormat(
                "the reports of session %d from %s are older than the "
                "retained journal: it starts at index %s, and no snapshot "
                "from before them is kept",
                r.session_id,
                r.from_command != 0
                    ? absl::StrFormat("command %d", r.from_command)
                    : absl::StrFormat("report %d", r.from_report),
                journal::GroupedDigits(first)));
          },
  };
  rebuild_options.machine_options.report_history = 1;
  bool started = false;
  std::uint64_t applied = 0;
  std::uint64_t made = 0;  // reports not yet counted in reports_made_
  rebuild_options.on_applied = [&](const journal::Record&,
                                   const StateMachine& machine,
                                   const journal::JournalReader&) {
    if ((++applied & 1023) == 0) {
      records_applied_.fetch_add(1024, std::memory_order_relaxed);
      reports_made_.fetch_add(made, std::memory_order_relaxed);
      made = 0;
      if (cancel_.load(std::memory_order_relaxed)) {
        return absl::CancelledError("regeneration cancelled");
      }
    }
    for (const Output& out : machine.outputs()) {
      if (out.session_id != r.session_id) continue;
      if (!started) {
        // The command the session had reached when the report was made
        // (report_history.h): the same tag the live history keeps.
        const std::uint64_t command =
            machine.session(out.session).next_expected - 1;
        if (command < r.from_command || out.sequence < r.from_report) continue;
        started = true;
      }
      if (!Push(out.sequence, out.frame)) {
        return absl::CancelledError("regeneration cancelled");
      }
      job.next_report = out.sequence + 1;
      ++made;
    }
    return absl::OkStatus();
  };
  StateRebuild rebuild(std::move(rebuild_options));
  if (absl::Status s = rebuild.Begin(); !s.ok()) return s;
  RebuiltState& state = rebuild.state();
  if (state.snapshot.has_value()) {
    snapshots_loaded_.fetch_add(1, std::memory_order_relaxed);
  }
  state.machine->KeepNoHistory();
  absl::Status applied_status = rebuild.ApplyTail();
  records_applied_.fetch_add(applied & 1023, std::memory_order_relaxed);
  reports_made_.fetch_add(made, std::memory_order_relaxed);
  if (!applied_status.ok()) return applied_status;
  if (state.end == journal::ReadResult::kError) return state.reader->status();
  if (state.machine->last_index() < r.up_to_index) {
    return absl::DataLossError(absl::StrFormat(
        "journal %s ended at index %d while making reports again up to index "
        "%d",
        options_.journal_dir, state.machine->last_index(), r.up_to_index));
  }
  return absl::OkStatus();
}

}  // namespace orderwire::state
