// JournalWriter, the append pipeline: records into groups, groups sealed
// and submitted, completions reaped, the durable index advanced in seal
// order; Poll, Wait, Flush and Sync drive it. See writer.h. Hot path.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "absl/strings/str_format.h"
#include "codec/wire.h"
#include "journal/crc32c.h"
#include "journal/internal/io_queue.h"
#include "journal/internal/writer_support.h"
#include "journal/record.h"
#include "journal/writer.h"

namespace orderwire::journal {

using internal::ErrnoStatus;
using internal::ErrnoText;
using internal::IoCompletion;
using internal::IoOp;
using internal::kTagPrepDirSync;
using internal::kTagPrepSync;
using internal::kTagSync;
using internal::kTagWrite;
using internal::kTagZero;
using internal::MonotonicNs;
using internal::OpCode;

// ---------------------------------------------------------------------------
// Appending. Records are written by the record codec (record.h), always
// inlined into the loops below.

AppendStatus JournalWriter::Append(std::span<const std::byte> frames,
                                   std::uint32_t session_id,
                                   std::uint64_t receive_ns,
                                   std::uint32_t flags) noexcept {
  if (!status_.ok() || closed_) return AppendStatus::kFailed;
  const std::byte* const data = frames.data();
  const std::size_t size = frames.size();
  // Records take at most 1.96 times the frames' bytes (a 24-byte header per
  // frame of at least 25 bytes). When the group being filled has that much
  // room, one pass walks, checks and copies the frames; the records count
  // only if every frame was a whole command frame.
  constexpr std::size_t kWorstNum = kRecordHeaderSize + kMinCommandFrame;
  constexpr std::size_t kWorstDen = kMinCommandFrame;
  if (Slot* slot = filling_;
      slot != nullptr &&
      size * kWorstNum / kWorstDen + 1 <= slot->limit - slot->used) {
    std::byte* out = slot->buffer + slot->used;
    const std::size_t index_size = slot->format.record_index_size;
    std::uint64_t index = last_index_;
    std::size_t pos = 0;
    while (pos + codec::kFrameHeaderSize <= size) {
      const std::size_t frame_size = CommandFrameSize(
          static_cast<std::uint8_t>(data[pos + codec::kKindOffset]));
      if (frame_size == 0 || size - pos < frame_size) break;
      out = EncodeRecord(out, index_size, ++index, receive_ns, session_id,
                         flags, data + pos, frame_size);
      pos += frame_size;
    }
    if (pos != size || index == last_index_) return AppendStatus::kInvalidFrame;
    return Commit(*slot, static_cast<std::uint32_t>(out - slot->buffer), index);
  }

  // Otherwise: count and check first, then find room, then copy. `need`
  // counts version 1/2 record headers, which bounds version 3's too.
  std::size_t count = 0;
  std::size_t pos = 0;
  while (pos + codec::kFrameHeaderSize <= size) {
    const std::size_t frame_size = CommandFrameSize(
        static_cast<std::uint8_t>(data[pos + codec::kKindOffset]));
    if (frame_size == 0 || size - pos < frame_size) break;
    pos += frame_size;
    ++count;
  }
  if (pos != size || count == 0) return AppendStatus::kInvalidFrame;
  const std::size_t need = size + count * kRecordHeaderSize;
  if (need > max_append_bytes_) return AppendStatus::kTooLarge;

  Slot* slot = filling_;
  if (slot != nullptr && slot->used + need > slot->limit) {
    Seal(*slot);
    slot = nullptr;
  }
  if (slot == nullptr) {
    slot = OpenGroup(need);
    if (slot == nullptr) {
      if (!status_.ok()) return AppendStatus::kFailed;
      if (space_needed_ != 0 && !GroupFits(need)) {
        // No room here, and no next segment: wait for space, not the disk.
        ++stats_.journal_full;
        SubmitPending();
        return AppendStatus::kJournalFull;
      }
      ++stats_.full;
      SubmitPending();
      return AppendStatus::kFull;
    }
  }
  std::byte* out = slot->buffer + slot->used;
  const std::size_t index_size = slot->format.record_index_size;
  std::uint64_t index = last_index_;
  for (pos = 0; pos < size;) {
    const std::size_t frame_size = CommandFrameSize(
        static_cast<std::uint8_t>(data[pos + codec::kKindOffset]));
    out = EncodeRecord(out, index_size, ++index, receive_ns, session_id, flags,
                       data + pos, frame_size);
    pos += frame_size;
  }
  return Commit(*slot, static_cast<std::uint32_t>(out - slot->buffer), index);
}

AppendStatus JournalWriter::Commit(Slot& slot, std::uint32_t used,
                                   std::uint64_t last) noexcept {
  slot.records += static_cast<std::uint32_t>(last - last_index_);
  slot.used = used;
  slot.last_index = last;
  last_index_ = last;
  if (durability_ == Durability::kSync) {
    Seal(slot);
    SubmitPending();
    if (!WaitDurable(last).ok()) return AppendStatus::kFailed;
    return AppendStatus::kOk;
  }
  if (slot.limit - slot.used < kMaxRecordSize) {
    Seal(slot);  // full
    SubmitPending();
  }
  return AppendStatus::kOk;
}

bool JournalWriter::GroupFits(std::size_t need) const noexcept {
  // The segment's capacity is a multiple of 4096 and write_pos_ one of the
  // group alignment, so the group's padded end (and under O_DIRECT its
  // write's last block) fits exactly when its bytes do.
  return segments_[active_].capacity - write_pos_ >= kGroupOverhead + need;
}

JournalWriter::Slot* JournalWriter::OpenGroup(std::size_t need) noexcept {
  if (free_.empty()) Reap(false);
  SegmentFile* segment = &segments_[active_];
  if (!GroupFits(need)) {
    if (!Rotate()) return nullptr;
    segment = &segments_[active_];
  } else {
    PumpPrepared(false);
  }
  if (free_.empty()) return nullptr;
  const std::uint32_t id = free_.back();
  free_.pop_back();
  Slot& slot = slots_[id];
  slot.state = Slot::State::kFilling;
  slot.header = false;
  slot.waiting = false;
  slot.segment = active_;
  slot.format = GroupFormatOf(segment->version);
  slot.offset = write_pos_;
  // Under O_DIRECT the write starts at the block the group starts in, with
  // that block's old bytes (identical) in front of the group; it must not
  // be in flight together with the write that put them there.
  slot.lead = direct_ ? static_cast<std::uint32_t>(write_pos_ % kBlockSize) : 0;
  slot.blocker = slot.lead != 0 ? tail_writer_ : -1;
  if (slot.lead != 0) std::memcpy(slot.buffer, tail_block_, slot.lead);
  slot.used = slot.lead + slot.format.header_size;
  slot.limit = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(slot.lead + group_size_,
                              segment->capacity - (write_pos_ - slot.lead)) -
      kGroupTrailerSize);
  slot.records = 0;
  slot.first_index = last_index_ + 1;
  slot.last_index = last_index_;
  ++segment->users;
  filling_ = &slot;
  return &slot;
}

void JournalWriter::Seal(Slot& slot) noexcept {
  std::byte* const buffer = slot.buffer;
  std::byte* const group = buffer + slot.lead;
  const std::uint32_t group_bytes = slot.used - slot.lead;
  EncodeGroupHeader(
      slot.format,
      GroupHeader{.magic = slot.format.magic,
                  .records_bytes = group_bytes - slot.format.header_size,
                  .first_index = slot.first_index,
                  .stable_index = durable_index_,
                  .record_count = slot.records,
                  .flags = 0},
      group);
  const std::uint32_t crc = Crc32c({group, group_bytes});
  StoreStruct<kGroupTrailerLayout>(
      GroupTrailer{.crc = crc, .magic = kTrailerMagic}, buffer + slot.used);
  slot.crc = crc;
  // In buffer coordinates (the buffer starts at file offset offset - lead):
  // the trailer's end, where the next group starts, and the write's end.
  const std::uint32_t end =
      slot.used + static_cast<std::uint32_t>(kGroupTrailerSize);
  const std::uint64_t alignment = slot.format.alignment;
  const auto next = static_cast<std::uint32_t>(
      slot.lead + AlignUpTo(end - slot.lead, alignment));
  // O_DIRECT writes whole blocks; buffered writes in a version-1 segment
  // keep its padding to 4096; buffered version 2 writes the group exactly.
  slot.length = direct_ || alignment == kBlockSize
                    ? static_cast<std::uint32_t>(AlignUp(end))
                    : end;
  std::memset(buffer + end, 0, std::max(slot.length, next) - end);
  slot.done = 0;
  slot.synced = !sync_after_write_;
  slot.state = Slot::State::kInFlight;
  slot.submit_ns = MonotonicNs();
  write_pos_ = slot.offset + (next - slot.lead);
  const std::uint32_t id = SlotId(slot);
  if (direct_) {
    // The block the next group starts in, as this write leaves it.
    const std::uint32_t tail = next % kBlockSize;
    if (tail != 0) {
      std::memcpy(tail_block_, buffer + (next - tail), tail);
      tail_writer_ = static_cast<std::int32_t>(id);
    } else {
      tail_writer_ = -1;
    }
  }
  fifo_[(fifo_head_ + fifo_count_) % fifo_.size()] = id;
  ++fifo_count_;
  ++stats_.groups;
  stats_.records += slot.records;
  stats_.bytes_written += slot.length;
  stats_.journal_bytes += next - slot.lead;
  if (filling_ == &slot) filling_ = nullptr;
  if (slot.blocker >= 0) {
    slot.waiting = true;  // submitted by WriteLanded(blocker)
    return;
  }
  SubmitWrite(id);
}

void JournalWriter::WriteLanded(std::uint32_t id) noexcept {
  if (tail_writer_ == static_cast<std::int32_t>(id)) tail_writer_ = -1;
  for (Slot& other : slots_) {
    if (other.blocker != static_cast<std::int32_t>(id)) continue;
    other.blocker = -1;
    if (other.waiting) {
      other.waiting = false;
      SubmitWrite(SlotId(other));
    }
  }
}

void JournalWriter::SubmitWrite(std::uint32_t id) noexcept {
  Slot& slot = slots_[id];
  const SegmentFile& segment = segments_[slot.segment];
  IoOp op;
  op.code = OpCode::kWrite;
  op.fd = segment.fd.get();
  op.data = slot.buffer + slot.done;
  op.length = slot.length - slot.done;
  op.offset = slot.offset - slot.lead + slot.done;
  op.buffer_index = static_cast<int>(id);
  op.dsync = direct_;
  op.link = sync_after_write_;
  op.user_data = std::uint64_t{id} << 8 | kTagWrite;
  ++slot.outstanding;
  PushOp(op);
  if (sync_after_write_) {
    IoOp sync;
    sync.code = OpCode::kFdatasync;
    sync.fd = segment.fd.get();
    sync.user_data = std::uint64_t{id} << 8 | kTagSync;
    ++slot.outstanding;
    ++stats_.syncs;
    PushOp(sync);
  }
}

void JournalWriter::PushOp(const IoOp& op) noexcept {
  if (!queue_->Push(op)) {
    queue_->Submit();
    if (!queue_->Push(op)) {
      Fail(absl::InternalError("the I/O submission queue is full"));
      return;
    }
  }
  ++ops_in_flight_;
  submit_pending_ = true;
}

void JournalWriter::SubmitPending() noexcept {
  if (!submit_pending_ || queue_ == nullptr) return;
  const int ret = queue_->Submit();
  if (ret == 0) {
    submit_pending_ = false;
  } else if (ret != -EAGAIN && ret != -EBUSY) {
    Fail(ErrnoStatus(-ret, "submitting journal I/O"));
  }
}

// ---------------------------------------------------------------------------
// Completions.

void JournalWriter::Reap(bool wait) noexcept {
  if (queue_ == nullptr) return;
  SubmitPending();
  if (ops_in_flight_ == 0) return;
  IoCompletion completions[64];
  bool block = wait && ops_in_flight_ > 0;
  while (true) {
    const int n = queue_->Reap(completions, block);
    if (n < 0) {
      Fail(ErrnoStatus(-n, "waiting for journal I/O"));
      return;
    }
    for (int i = 0; i < n; ++i) Handle(completions[i]);
    if (n < static_cast<int>(std::size(completions))) break;
    block = false;
  }
  Advance();
  SubmitPending();
}

void JournalWriter::Handle(const IoCompletion& c) noexcept {
  --ops_in_flight_;
  const auto tag = static_cast<std::uint32_t>(c.user_data & 0xFFu);
  const std::uint64_t id = c.user_data >> 8;
  if (tag == kTagZero || tag == kTagPrepSync || tag == kTagPrepDirSync) {
    HandlePrepared(id, tag, c.result);
    return;
  }
  if (tag >= internal::kTagCheckpointWrite &&
      tag <= internal::kTagCheckpointDirSync) {
    HandleCheckpoint(tag, c.result);
    return;
  }
  Slot& slot = slots_[id];
  --slot.outstanding;
  if (!status_.ok()) return;
  const SegmentFile& segment = segments_[slot.segment];
  const int err = -c.result;
  switch (tag) {
    case kTagWrite: {
      if (c.result == -EAGAIN || c.result == -EINTR) {
        ++stats_.retries;
        SubmitWrite(static_cast<std::uint32_t>(id));
        return;
      }
      if (c.result <= 0) {
        Fail(absl::DataLossError(absl::StrFormat(
            "journal write failed: segment %s, offset %d, %d bytes: %s",
            segment.path, slot.offset - slot.lead + slot.done,
            slot.length - slot.done,
            c.result == 0 ? std::string("the write returned 0 bytes")
                          : ErrnoText(err))));
        return;
      }
      const std::uint32_t before = slot.done;
      slot.done += static_cast<std::uint32_t>(c.result);
      if (slot.done > slot.length) slot.done = slot.length;
      if (slot.done < slot.length) {
        // A short write: write the rest. Under O_DIRECT the kernel writes
        // whole blocks, so its count is a multiple of the device's block
        // size; it is rounded down to a 512-byte sector all the same, and
        // rewriting bytes already written is harmless.
        ++stats_.short_writes;
        if (direct_) slot.done &= ~std::uint32_t{511};
        if (slot.done <= before) {
          Fail(absl::DataLossError(absl::StrFormat(
              "journal write made no progress: segment %s, offset %d: the "
              "kernel wrote %d of %d bytes, not a whole sector",
              segment.path, slot.offset - slot.lead + before, c.result,
              slot.length - before)));
          return;
        }
        SubmitWrite(static_cast<std::uint32_t>(id));
        return;
      }
      WriteLanded(static_cast<std::uint32_t>(id));
      return;
    }
    case kTagSync: {
      if (c.result == -ECANCELED) return;  // its write is being redone
      if (c.result == -EAGAIN || c.result == -EINTR) {
        ++stats_.retries;
        IoOp sync;
        sync.code = OpCode::kFdatasync;
        sync.fd = segment.fd.get();
        sync.user_data = c.user_data;
        ++slot.outstanding;
        PushOp(sync);
        return;
      }
      if (c.result < 0) {
        Fail(absl::DataLossError(absl::StrFormat(
            "journal fdatasync failed: segment %s (group at offset %d, %d "
            "bytes): %s",
            segment.path, slot.offset, slot.length, ErrnoText(err))));
        return;
      }
      slot.synced = true;
      return;
    }
    default:
      Fail(absl::InternalError(
          absl::StrFormat("unexpected completion tag %d", tag)));
  }
}

bool JournalWriter::Complete(const Slot& slot) const noexcept {
  return slot.outstanding == 0 && slot.done == slot.length && slot.synced;
}

void JournalWriter::Advance() noexcept {
  if (!status_.ok()) return;
  std::int64_t now = 0;
  while (fifo_count_ > 0) {
    Slot& slot = slots_[fifo_[fifo_head_]];
    if (!Complete(slot)) break;
    if (now == 0) now = MonotonicNs();
    fifo_head_ = (fifo_head_ + 1) % fifo_.size();
    --fifo_count_;
    if (!slot.header) {
      durable_index_ = slot.last_index;
      durable_mark_.Publish(durable_index_);  // one release store
      durable_group_ = {
          .first_index = slot.first_index,
          .segment_first_index = segments_[slot.segment].first_index,
          .offset = slot.offset,
          .crc = slot.crc};
      latency_.Record(static_cast<std::uint64_t>(now - slot.submit_ns));
    }
    Release(slot);
  }
}

void JournalWriter::Release(Slot& slot) noexcept {
  slot.state = Slot::State::kFree;
  SegmentFile& segment = segments_[slot.segment];
  --segment.users;
  if (segment.users == 0 && !segment.active) segment.fd.reset();
  free_.push_back(SlotId(slot));
}

// ---------------------------------------------------------------------------
// Poll, Wait, Flush, Sync.

std::uint64_t JournalWriter::Poll() noexcept {
  if (!status_.ok() || closed_) return durable_index_;
  Reap(false);
  PumpPrepared(false);
  // Group commit: a group not yet full is sealed while the pipeline has
  // room, and (O_DIRECT) once its first block is not being written by an
  // earlier group: until then it keeps filling.
  if (filling_ != nullptr && filling_->records > 0 &&
      fifo_count_ < max_partial_ && filling_->blocker < 0) {
    Seal(*filling_);
  }
  MaybeCheckpoint();
  SubmitPending();
  return durable_index_;
}

absl::Status JournalWriter::Wait() {
  if (closed_) return status_;
  if (status_.ok()) {
    Reap(true);
    Poll();
  }
  return status_;
}

absl::Status JournalWriter::WaitDurable(std::uint64_t index) {
  while (status_.ok() && durable_index_ < index) {
    if (filling_ != nullptr && filling_->records > 0 &&
        filling_->first_index <= index) {
      Seal(*filling_);
    }
    Reap(true);
    PumpPrepared(false);
  }
  return status_;
}

absl::Status JournalWriter::Flush() {
  if (closed_) return status_;
  return WaitDurable(last_index_);
}

absl::Status JournalWriter::Sync() {
  if (closed_) return status_;
  if (absl::Status s = Flush(); !s.ok()) return s;
  for (const SegmentFile& segment : segments_) {
    if (segment.fd && ::fdatasync(segment.fd.get()) != 0) {
      Fail(ErrnoStatus(errno, absl::StrFormat("fdatasync %s", segment.path)));
      break;
    }
  }
  return status_;
}

}  // namespace orderwire::journal
