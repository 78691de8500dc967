// Reports as the engine emits them: encoded frames in a caller-owned,
// reusable ReportBuffer, each with a small record of its kind and owner.
//
// The engine is handed a ReportBuffer with every command and appends that
// command's reports to it in emission order (PROTOCOL.md "Validation and
// report details" fixes the order). Each report is written once, as the frame
// bytes that go to the journal and the network unchanged (codec::EncodeFrame,
// straight from the engine's fields into the buffer), beside a 12-byte
// `Report` record (kind, owner, where the frame is) for the code that routes
// it. Code that needs a field reads it from the frame:
// `reports.Get<codec::Filled>(report).leaves_quantity` decodes the model,
// `reports.View<codec::Filled>(report).Get<&codec::Filled::price>()` reads
// one field in place.
//
// Frame sequence numbers: the buffer numbers the frames it encodes from
// `next_sequence()` upwards (1, 2, 3, ... by default) and keeps counting
// across Clear(), which is what one session wants (`orderwire match`). A
// service that splits reports between sessions routes each by Report::owner
// (the OwnerTag of the order it concerns) and rewrites the first 8 bytes of
// each frame with that session's number (StoreLE at codec::kSequenceOffset).
//
// Memory: the buffer grows (doubling) only when one batch holds more reports
// than it ever did; cleared and reused, it never allocates again. One batch
// holds at most 2^32 bytes of frames (about 60 million reports): clear it
// between commands or datagrams (a batch past that aborts). A command
// can produce any number of reports (a sweep of the book), so there is no
// fixed bound that a fixed buffer could honour.
#ifndef ORDERWIRE_ENGINE_REPORT_H_
#define ORDERWIRE_ENGINE_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "codec/frame.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/result.h"
#include "codec/types.h"
#include "codec/wire.h"

namespace orderwire::engine {

// An opaque tag the caller attaches to the orders a command enters (the
// service uses its dense session index). 0 is a valid tag (`orderwire
// match`: one owner). The engine only stores it, compares it and copies it
// into reports; it never interprets it.
using OwnerTag = std::uint32_t;

// One report: its kind, whose it is and where its frame is in the buffer.
// The fields are read from the frame (ReportBuffer::Get / View).
struct Report {
  codec::Kind kind;
  std::uint8_t frame_size;
  std::uint32_t frame_offset;  // into ReportBuffer::frames()
  // Whose report this is: the owner of the order it concerns. A maker's
  // Filled and a resting order's SelfTrade Cancelled carry the maker's
  // owner; every other report (Accepted, Rejected, a taker's Filled, a
  // remainder's Cancelled, a requested Cancelled, Replaced) the owner of
  // the command that caused it. Not part of the frame.
  OwnerTag owner;
};

static_assert(std::is_trivially_copyable_v<Report>);
// kind, frame_size, 2 bytes of padding, frame_offset, owner.
static_assert(sizeof(Report) == 12);

class ReportBuffer {
 public:
  // Reserves room for `reserve_reports` reports and their frames.
  explicit ReportBuffer(std::size_t reserve_reports = 4096);

  // Forgets the reports, keeping the memory; sequences keep counting.
  void Clear() noexcept {
    size_ = 0;
    frame_bytes_ = 0;
  }

  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] const Report& operator[](std::size_t i) const noexcept {
    return reports_[i];
  }
  [[nodiscard]] std::span<const Report> reports() const noexcept {
    return {reports_.data(), size_};
  }
  // Every frame, back to back, in emission order.
  [[nodiscard]] std::span<const std::byte> frames() const noexcept {
    return {frames_.data(), frame_bytes_};
  }
  // The frame of report `i`.
  [[nodiscard]] std::span<const std::byte> frame(std::size_t i) const noexcept {
    return {frames_.data() + reports_[i].frame_offset, reports_[i].frame_size};
  }

  // The frame of `report`, one of this buffer's reports.
  [[nodiscard]] std::span<const std::byte> frame(
      const Report& report) const noexcept {
    return {frames_.data() + report.frame_offset, report.frame_size};
  }
  // A typed view of the frame of `report` (one of this buffer's reports):
  // fields read in place. Precondition: report.kind is Model's kind.
  template <typename Model>
  [[nodiscard]] codec::View<Model> View(const Report& report) const noexcept;
  // The model of `report`, decoded from its frame. Precondition: as View.
  // For tools and tests; a field or two on a hot path: View.
  template <typename Model>
  [[nodiscard]] Model Get(const Report& report) const noexcept {
    return View<Model>(report).ToModel();
  }

  // Rewrites the sequence number of frame `i` in place: a service that
  // splits reports between sessions numbers each on its session. Hot path.
  void SetFrameSequence(std::size_t i, std::uint64_t sequence) noexcept {
    codec::StoreLE(
        frames_.data() + reports_[i].frame_offset + codec::kSequenceOffset,
        sequence);
  }

  // The sequence number the next frame gets (1 for a new buffer).
  [[nodiscard]] std::uint64_t next_sequence() const noexcept {
    return next_sequence_;
  }
  void set_next_sequence(std::uint64_t sequence) noexcept {
    next_sequence_ = sequence;
  }

  // Appends one report for `owner` (Report::owner): the frame of `model`
  // (numbered next_sequence()) and its record. Used by the engine. Hot path:
  // inlined, so the model's fields go from registers into the frame; no
  // allocation, except when the buffer must grow (never, once it has held
  // the largest batch).
  template <typename Model>
  [[gnu::always_inline]] inline void Append(const Model& model,
                                            OwnerTag owner) noexcept;

 private:
  void Grow();  // cold: doubles both arrays
  // Cold: a View/Get of the wrong kind (a broken precondition): aborts.
  [[noreturn]] static void WrongKind(codec::Kind actual, codec::Kind wanted);

  std::vector<Report> reports_;
  std::vector<std::byte> frames_;
  std::size_t capacity_ = 0;  // reports_.size()
  std::size_t size_ = 0;
  std::size_t frame_bytes_ = 0;
  std::uint64_t next_sequence_ = 1;
};

// ---------------------------------------------------------------------------
// Implementation.

template <typename Model>
codec::View<Model> ReportBuffer::View(const Report& report) const noexcept {
  // The frame was encoded here with its kind: the parse cannot fail unless
  // the precondition (report.kind is Model's kind) is broken.
  const codec::Result<codec::View<Model>> view =
      codec::View<Model>::Parse(frame(report));
  if (!view.ok()) [[unlikely]] {
    WrongKind(report.kind, codec::MessageTraits<Model>::kKind);
  }
  return *view;
}

template <typename Model>
inline void ReportBuffer::Append(const Model& model, OwnerTag owner) noexcept {
  constexpr std::size_t kSize = codec::kFrameSize<Model>;
  // frames_ always has room for kMaxFrameSize bytes per report slot, so one
  // check covers both arrays. capacity_ (== reports_.size()) is kept apart so
  // that the check is one load, not a division by sizeof(Report).
  if (size_ == capacity_) [[unlikely]] {
    Grow();
  }
  Report& report = reports_[size_++];
  report.kind = codec::MessageTraits<Model>::kKind;
  report.frame_size = static_cast<std::uint8_t>(kSize);
  report.frame_offset = static_cast<std::uint32_t>(frame_bytes_);
  report.owner = owner;
  // Cannot fail: room for kSize bytes was ensured above.
  (void)codec::EncodeFrame(
      next_sequence_++, model,
      std::span<std::byte>(frames_.data() + frame_bytes_, kSize));
  frame_bytes_ += kSize;
}

}  // namespace orderwire::engine

#endif  // ORDERWIRE_ENGINE_REPORT_H_
