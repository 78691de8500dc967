// The recent reports of one session, kept so they can be sent again.
//
// A client that misses reports (a datagram lost, or the service restarted
// between making a command durable and sending its reports) never gets the
// acknowledgement of that command, times out and retransmits it. The service
// then sees a duplicate command: it answers by sending the session's reports
// again from the first report of that command (go-back-N, as for commands);
// the client drops the ones it already has by their report sequence.
//
// The history is two rings, allocated once when the session is created:
// the last `report_capacity` report frames with their sequences, and, for
// the last `command_capacity` commands, the sequence of the first report
// sent after each command began. Recording a report is one copy of its frame
// into the ring; nothing allocates after construction.
#ifndef ORDERWIRE_SERVICE_REPORT_HISTORY_H_
#define ORDERWIRE_SERVICE_REPORT_HISTORY_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "codec/kind_table.h"

namespace orderwire::service {

class ReportHistory {
 public:
  // Capacities are rounded up to powers of two (a slot is then a mask, not
  // a division, on every report). Precondition: both are at least 1.
  ReportHistory(std::size_t report_capacity, std::size_t command_capacity)
      : frames_(std::bit_ceil(report_capacity) * kSlotSize),
        sizes_(std::bit_ceil(report_capacity)),
        command_first_report_(std::bit_ceil(command_capacity)),
        report_mask_(sizes_.size() - 1),
        command_mask_(command_first_report_.size() - 1) {}

  // Records that command `command_sequence` begins; the next report
  // recorded will be `next_report`.
  void BeginCommand(std::uint64_t command_sequence,
                    std::uint64_t next_report) noexcept {
    command_first_report_[command_sequence & command_mask_] = {command_sequence,
                                                               next_report};
  }

  // Keeps report `sequence` (sequences are recorded in order, 1, 2, ...).
  void Add(std::uint64_t sequence, std::span<const std::byte> frame) noexcept {
    const std::size_t slot = sequence & report_mask_;
    std::memcpy(frames_.data() + slot * kSlotSize, frame.data(), frame.size());
    sizes_[slot] = static_cast<std::uint8_t>(frame.size());
    if (first_ == 0) first_ = sequence;
    next_ = sequence + 1;
    if (next_ - first_ > sizes_.size()) first_ = next_ - sizes_.size();
  }

  // The first report of command `command_sequence`, if it is still known.
  [[nodiscard]] std::optional<std::uint64_t> FirstReportOf(
      std::uint64_t command_sequence) const noexcept {
    const Entry& e = command_first_report_[command_sequence & command_mask_];
    if (e.command != command_sequence || e.report < first_ || first_ == 0) {
      return std::nullopt;
    }
    return e.report;
  }

  // Report `sequence`, if still held.
  [[nodiscard]] std::span<const std::byte> Get(
      std::uint64_t sequence) const noexcept {
    if (first_ == 0 || sequence < first_ || sequence >= next_) return {};
    const std::size_t slot = sequence & report_mask_;
    return {frames_.data() + slot * kSlotSize, sizes_[slot]};
  }

  // One past the last report recorded.
  [[nodiscard]] std::uint64_t next() const noexcept { return next_; }

 private:
  static constexpr std::size_t kSlotSize = codec::kMaxFrameSize;
  struct Entry {
    std::uint64_t command = 0;
    std::uint64_t report = 0;
  };
  std::vector<std::byte> frames_;
  std::vector<std::uint8_t> sizes_;
  std::vector<Entry> command_first_report_;
  std::size_t report_mask_;
  std::size_t command_mask_;
  std::uint64_t first_ = 0;  // oldest report held (0: none yet)
  std::uint64_t next_ = 1;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_REPORT_HISTORY_H_
