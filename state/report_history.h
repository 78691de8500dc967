// The recent reports of one session, kept so they can be sent again, and the
// budget that bounds the histories of all sessions together.
//
// A client that misses reports (a datagram lost, or the service restarted
// between making a command durable and sending its reports) never gets the
// acknowledgement of that command, times out and retransmits it. The service
// then sees a duplicate command: it answers by sending the session's reports
// again from the first report of that command (go-back-N, as for commands);
// the client drops the ones it already has by their report sequence. When
// that report is no longer held, the service answers ReportsGone
// (docs/PROTOCOL.md "Reports gone") naming the oldest command whose first
// report it still holds.
//
// Memory. A history holds nothing and allocates nothing until its session's
// first report. It is one ring of fixed 80-byte slots (the frame, its size,
// and the command sequence the session had reached when the report was
// made); the ring starts at 2 slots and doubles when it is full, up to the
// per-session cap, as long as the shared HistoryBudget has room for the
// growth. A full ring that may not grow overwrites its oldest report. So a
// session's history is sized by the reports it has made (at most twice
// that), and all histories together never exceed the budget. Release()
// gives a history's memory back (the service does it for idle sessions).
//
// Cost: Add() is one copy into the ring; it allocates only when the ring
// doubles, at most log2(cap / 2) times per session between releases
// (amortized O(1) per report, and no allocation at all once the ring has
// reached its cap or the budget is full: the steady state). Growth uses
// nothrow new: when memory runs out the ring simply does not grow.
//
// Determinism: the reports' bytes never depend on the history, so a
// history of any size (or none) leaves live == restart == replay intact;
// only what can be sent again differs.
#ifndef ORDERWIRE_STATE_REPORT_HISTORY_H_
#define ORDERWIRE_STATE_REPORT_HISTORY_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>

#include "codec/kind_table.h"

namespace orderwire::state {

// The bytes all report histories may hold together. Not thread-safe (the
// service's one thread owns it).
class HistoryBudget {
 public:
  explicit HistoryBudget(std::size_t limit_bytes) : limit_(limit_bytes) {}

  // Takes `bytes` if they fit under the limit.
  [[nodiscard]] bool TryTake(std::size_t bytes) noexcept {
    if (bytes > limit_ - used_) return false;
    used_ += bytes;
    return true;
  }
  void Give(std::size_t bytes) noexcept { used_ -= bytes; }

  [[nodiscard]] std::size_t used() const noexcept { return used_; }
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t limit_;
  std::size_t used_ = 0;
};

class ReportHistory {
 public:
  // One report: the command sequence its session had reached, the frame
  // and its size. 8 + 71 + 1 = 80 bytes.
  struct Slot {
    std::uint64_t command;
    std::array<std::byte, codec::kMaxFrameSize> frame;
    std::uint8_t size;
  };
  static constexpr std::size_t kSlotSize = sizeof(Slot);
  static_assert(kSlotSize == 80);
  // The first ring a history gets.
  static constexpr std::size_t kFirstCapacity = 2;

  ReportHistory() = default;  // holds nothing, allocates nothing
  ReportHistory(ReportHistory&&) noexcept = default;
  ReportHistory& operator=(ReportHistory&&) noexcept = default;

  // Keeps report `sequence` (recorded in order, 1, 2, ..., no gap), made
  // when its session had reached command `command` (non-decreasing). Grows
  // the ring when full, up to `max_reports` (rounded up to a power of two)
  // and as `budget` allows; otherwise the oldest report is overwritten (or,
  // with no ring at all, this one is not kept). Hot path; see the header
  // comment for when it allocates.
  void Add(std::uint64_t sequence, std::uint64_t command,
           std::span<const std::byte> frame, std::size_t max_reports,
           HistoryBudget& budget) noexcept {
    if (held() == capacity_) Grow(max_reports, budget);
    if (capacity_ == 0) {  // nothing may be kept
      lost_command_ = command;
      last_command_ = command;
      return;
    }
    if (held() == capacity_) {  // full: the oldest goes
      lost_command_ = SlotOf(first_).command;
      ++first_;
    }
    Slot& slot = SlotOf(sequence);
    slot.command = command;
    std::memcpy(slot.frame.data(), frame.data(), frame.size());
    slot.size = static_cast<std::uint8_t>(frame.size());
    if (first_ == 0) first_ = sequence;
    next_ = sequence + 1;
    last_command_ = command;
  }

  // The first report of command `command_sequence` (the first report made
  // once the session had reached it), if it is still held.
  [[nodiscard]] std::optional<std::uint64_t> FirstReportOf(
      std::uint64_t command_sequence) const noexcept {
    // Every report dropped so far was made at or before lost_command_:
    // above it, a command's reports are all held.
    if (first_ == 0 || command_sequence <= lost_command_) return std::nullopt;
    const std::uint64_t seq = FirstAtOrAbove(command_sequence);
    if (seq == next_) return std::nullopt;
    return seq;
  }

  // The oldest command whose first report is held, and that report's
  // sequence; nullopt if none is.
  struct CommandStart {
    std::uint64_t command;
    std::uint64_t report;
  };
  [[nodiscard]] std::optional<CommandStart> OldestCommandStart()
      const noexcept {
    if (first_ == 0) return std::nullopt;
    const std::uint64_t seq = FirstAtOrAbove(lost_command_ + 1);
    if (seq == next_) return std::nullopt;
    return CommandStart{SlotOf(seq).command, seq};
  }

  // Report `sequence`, if still held.
  [[nodiscard]] std::span<const std::byte> Get(
      std::uint64_t sequence) const noexcept {
    if (first_ == 0 || sequence < first_ || sequence >= next_) return {};
    const Slot& slot = SlotOf(sequence);
    return {slot.frame.data(), slot.size};
  }

  // Frees the ring and gives its bytes back to `budget`; every report held
  // is then gone (FirstReportOf answers nullopt for every command made so
  // far). Cold.
  void Release(HistoryBudget& budget) noexcept {
    if (capacity_ == 0) return;
    budget.Give(bytes());
    slots_.reset();
    capacity_ = 0;
    first_ = 0;
    lost_command_ = std::max(lost_command_, last_command_);
  }

  // Snapshots (state/snapshot.h), cold: everything a history is, besides
  // the reports it holds (Get, CommandOf).
  struct State {
    std::size_t capacity = 0;  // a power of two, or 0
    std::uint64_t first = 0;   // oldest report held (0: none)
    std::uint64_t next = 1;    // one past the newest held
    std::uint64_t lost_command = 0;
    std::uint64_t last_command = 0;
  };
  [[nodiscard]] State state() const noexcept {
    return State{capacity_, first_, next_, lost_command_, last_command_};
  }
  // The command sequence recorded with held report `sequence`.
  // Precondition: Get(sequence) is not empty.
  [[nodiscard]] std::uint64_t CommandOf(std::uint64_t sequence) const noexcept {
    return SlotOf(sequence).command;
  }
  // Makes this history (which holds no ring) the one `state` describes,
  // holding `held` (reports state.first .. state.next - 1, in order), its
  // ring's bytes taken from `budget`. The caller has checked that `state`
  // is consistent (snapshot.cc does). Returns false, nothing changed, when
  // the budget has no room or memory runs out. Cold, allocates.
  [[nodiscard]] bool Restore(const State& state, std::span<const Slot> held,
                             HistoryBudget& budget) noexcept {
    if (capacity_ != 0) return false;
    if (state.capacity != 0) {
      if (!budget.TryTake(state.capacity * kSlotSize)) return false;
      std::unique_ptr<Slot[]> ring(new (std::nothrow) Slot[state.capacity]);
      if (ring == nullptr) {
        budget.Give(state.capacity * kSlotSize);
        return false;
      }
      slots_ = std::move(ring);
    }
    capacity_ = state.capacity;
    first_ = state.first;
    next_ = state.next;
    lost_command_ = state.lost_command;
    last_command_ = state.last_command;
    for (std::size_t i = 0; i < held.size(); ++i) SlotOf(first_ + i) = held[i];
    return true;
  }

  // Bytes the ring takes.
  [[nodiscard]] std::size_t bytes() const noexcept {
    return capacity_ * kSlotSize;
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  // Reports held.
  [[nodiscard]] std::size_t held() const noexcept {
    return first_ == 0 ? 0 : static_cast<std::size_t>(next_ - first_);
  }
  // The oldest report held (0: none).
  [[nodiscard]] std::uint64_t first() const noexcept { return first_; }

 private:
  Slot& SlotOf(std::uint64_t sequence) noexcept {
    return slots_[sequence & (capacity_ - 1)];
  }
  [[nodiscard]] const Slot& SlotOf(std::uint64_t sequence) const noexcept {
    return slots_[sequence & (capacity_ - 1)];
  }

  // The first held report made at or after command `command`; next_ if
  // none. Binary search: commands are non-decreasing along the ring.
  [[nodiscard]] std::uint64_t FirstAtOrAbove(
      std::uint64_t command) const noexcept {
    std::uint64_t low = first_;
    std::uint64_t high = next_;
    while (low < high) {
      const std::uint64_t mid = low + (high - low) / 2;
      if (SlotOf(mid).command < command) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  }

  void Grow(std::size_t max_reports, HistoryBudget& budget) noexcept {
    const std::size_t cap =
        std::bit_ceil(std::max<std::size_t>(max_reports, 1));
    const std::size_t wanted =
        std::min(capacity_ == 0 ? kFirstCapacity : capacity_ * 2, cap);
    if (wanted <= capacity_) return;
    const std::size_t more = (wanted - capacity_) * kSlotSize;
    if (!budget.TryTake(more)) return;
    std::unique_ptr<Slot[]> grown(new (std::nothrow) Slot[wanted]);
    if (grown == nullptr) {
      budget.Give(more);
      return;
    }
    if (first_ != 0) {
      for (std::uint64_t s = first_; s < next_; ++s) {
        grown[s & (wanted - 1)] = SlotOf(s);
      }
    }
    slots_ = std::move(grown);
    capacity_ = wanted;
  }

  std::unique_ptr<Slot[]> slots_;
  std::size_t capacity_ = 0;  // a power of two, or 0
  std::uint64_t first_ = 0;   // oldest report held (0: none)
  std::uint64_t next_ = 1;    // one past the newest held
  // The command of the newest report dropped or released (0: none), and of
  // the newest report recorded.
  std::uint64_t lost_command_ = 0;
  std::uint64_t last_command_ = 0;
};

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_REPORT_HISTORY_H_
