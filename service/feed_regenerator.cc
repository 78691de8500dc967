#include "service/feed_regenerator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "codec/wire.h"
#include "feed/packet.h"
#include "journal/start.h"
#include "state/snapshot.h"

namespace orderwire::service {
namespace {

constexpr std::int64_t kRecheckNs = 1'000'000'000;

}  // namespace

FeedRegenerator::FeedRegenerator(FeedRegeneratorOptions options)
    : options_(std::move(options)) {
  // Only outputs() are read: one report per session is kept.
  options_.machine.report_history = 1;
  if (options_.records_per_pass == 0) options_.records_per_pass = 1;
}

FeedRegenerator::~FeedRegenerator() = default;

absl::StatusOr<std::uint64_t> FeedRegenerator::FirstRegenerable(
    std::int64_t now_ns) {
  if (checked_ && now_ns < next_check_ns_) return first_;
  checked_ = true;
  next_check_ns_ = now_ns + kRecheckNs;
  const absl::StatusOr<std::uint64_t> first =
      journal::FirstAvailableIndex(options_.journal_dir);
  if (!first.ok()) {
    ++counters_.failures;
    return first_ = first.status();
  }
  if (*first <= 1) return first_ = std::uint64_t{1};
  absl::StatusOr<std::vector<state::SnapshotInfo>> list =
      state::ListSnapshots(options_.journal_dir);
  if (!list.ok()) {
    ++counters_.failures;
    return first_ = list.status();
  }
  // Oldest first: the first that loads and reaches the journal's start.
  for (std::size_t i = list->size(); i-- > 0;) {
    const state::SnapshotInfo& info = (*list)[i];
    if (info.index + 1 < *first) continue;
    auto [known, inserted] = snapshot_feed_.try_emplace(info.index, 0);
    if (inserted) {
      absl::StatusOr<state::LoadedSnapshot> loaded =
          state::LoadSnapshot(info.path, options_.journal_id);
      if (loaded.ok()) {
        known->second = loaded->machine->feed_producer().next_sequence();
      }
    }
    if (known->second != 0) return first_ = known->second;
  }
  return first_ = std::uint64_t{0};
}

void FeedRegenerator::Begin(std::uint64_t first, std::size_t count) {
  ++counters_.requests;
  blocks_.clear();
  status_ = absl::OkStatus();
  busy_ = true;
  reopened_ = false;
  next_wanted_ = first;
  end_ = first + count;
  if (rebuild_ != nullptr) {
    const state::StateMachine& machine = *rebuild_->state().machine;
    // The last record's messages are still the machine's: a request from
    // any of them on goes on from here.
    const std::uint64_t from =
        machine.feed_producer().next_sequence() - machine.feed().size();
    if (from <= first) {
      ++counters_.continued;
      Collect(machine);
      return;
    }
    rebuild_.reset();
  }
}

absl::Status FeedRegenerator::StartRebuild() {
  const std::uint64_t wanted = next_wanted_;
  state::RebuildOptions o{
      .directory = options_.journal_dir,
      .use_snapshots = true,
      .snapshot_usable =
          [wanted](const state::StateMachine& machine) {
            return machine.feed_producer().next_sequence() <= wanted;
          },
      .journal_id = options_.journal_id,
      .machine_options = options_.machine,
      .unpinned = options_.unpinned,
      .unreadable_snapshots_replay_all = true,
      .pruned_error =
          [wanted](std::uint64_t first) {
            return absl::NotFoundError(absl::StrFormat(
                "feed sequence %d is older than the retained journal: it "
                "starts at index %s, and no snapshot from before it is kept",
                wanted, journal::GroupedDigits(first)));
          },
  };
  auto rebuild = std::make_unique<state::StateRebuild>(std::move(o));
  if (absl::Status s = rebuild->Begin(); !s.ok()) return s;
  ++counters_.starts;
  if (rebuild->state().snapshot.has_value()) ++counters_.snapshots_loaded;
  rebuild->state().machine->KeepNoHistory();
  rebuild_ = std::move(rebuild);
  return absl::OkStatus();
}

void FeedRegenerator::Collect(const state::StateMachine& machine) {
  for (const state::FeedMessage& m : machine.feed()) {
    if (m.sequence < next_wanted_ || m.sequence >= end_) continue;
    const std::size_t at = blocks_.size();
    blocks_.resize(at + feed::kBlockLengthSize + m.bytes.size());
    codec::StoreLE<std::uint16_t>(blocks_.data() + at,
                                  static_cast<std::uint16_t>(m.bytes.size()));
    std::copy(m.bytes.begin(), m.bytes.end(),
              blocks_.begin() +
                  static_cast<std::ptrdiff_t>(at + feed::kBlockLengthSize));
    next_wanted_ = m.sequence + 1;
    ++counters_.messages;
  }
}

FeedRegenerator::Progress FeedRegenerator::Fail(absl::Status status) {
  ++counters_.failures;
  status_ = std::move(status);
  busy_ = false;
  rebuild_.reset();
  return Progress::kFailed;
}

FeedRegenerator::Progress FeedRegenerator::Work() {
  if (!busy_) return Progress::kDone;
  if (rebuild_ == nullptr) {
    // Loading the snapshot and opening the reader are this pass's work.
    if (absl::Status s = StartRebuild(); !s.ok()) return Fail(std::move(s));
    return Progress::kWorking;
  }
  state::StateMachine& machine = *rebuild_->state().machine;
  for (std::size_t n = 0; n < options_.records_per_pass; ++n) {
    if (next_wanted_ >= end_) break;
    const absl::StatusOr<bool> applied = rebuild_->ApplyNext();
    if (!applied.ok()) return Fail(applied.status());
    if (!*applied) {
      const state::RebuiltState& state = rebuild_->state();
      if (state.end == journal::ReadResult::kError) {
        return Fail(state.reader->status());
      }
      if (reopened_) {
        return Fail(absl::DataLossError(absl::StrFormat(
            "journal %s ended at index %d before feed sequence %d",
            options_.journal_dir, machine.last_index(), next_wanted_)));
      }
      // The reader knows the segments listed when it opened: a newer one
      // needs a new reader, from the last message made.
      reopened_ = true;
      rebuild_.reset();
      return Progress::kWorking;
    }
    ++counters_.records_applied;
    Collect(machine);
  }
  if (next_wanted_ < end_) return Progress::kWorking;
  busy_ = false;
  return Progress::kDone;
}

void FeedRegenerator::Release() noexcept {
  rebuild_.reset();
  blocks_ = {};
}

}  // namespace orderwire::service
