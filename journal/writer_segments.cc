// JournalWriter, segment files: the first segment of a new journal, the
// preparation of the next segment off the append path (created under a
// temporary name, preallocated, pre-zeroed and synced with its directory
// through the I/O queue) and the rotation that renames it into place and
// writes its header; see writer.h and docs/JOURNAL.md "Segments,
// preallocation, rotation".
//
// Paced zeroing. Under batch and sync every group's write carries a cache flush
// (RWF_DSYNC, or a linked fdatasync), and a flush writes out everything the
// device (here: the hypervisor's page cache under a virtual disk) holds dirty,
// the pre-zeroing's writes included. Zeroing a 64 MiB segment as fast as the
// device takes it puts tens of MiB in front of the next group syncs, which then
// take milliseconds (docs/BENCHMARKS.md "Segment preparation"). So the zeroing
// follows the fill of the active segment instead: from where it began (normally
// an eighth in, when the preparation is created and preallocated, which is what
// detects a full disk early) to kReadyNumerator/kReadyDenominator of the active
// segment, the zero bytes submitted stay within the same share of the next
// segment (plus one write), one kPrepZeroChunk write at a time. Each group's
// flush then carries at most a couple of hundred KiB of zeros.
// The schedule is tied to bytes appended, not to time, so it keeps up with
// any rate: at half way the next segment is zeroed and its fsync starts,
// half a segment before it is needed. If it is needed
// sooner anyway (StartSegment, or a rotation after a late start such as a
// disk-full episode), the preparation drops the schedule and runs at full
// speed, kPrepZeroWritesInFlight writes at a time ("late").
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/unique_fd.h"
#include "journal/internal/io_queue.h"
#include "journal/internal/scan.h"
#include "journal/internal/writer_support.h"
#include "journal/writer.h"

namespace orderwire::journal {

using internal::ErrnoStatus;
using internal::IoOp;
using internal::kPrepZeroChunk;
using internal::kPrepZeroWritesInFlight;
using internal::kTagPrepDirSync;
using internal::kTagPrepSync;
using internal::kTagZero;
using internal::kZeroChunk;
using internal::MonotonicNs;
using internal::OpCode;
using internal::PwriteAll;
using internal::RealtimeNs;

// ---------------------------------------------------------------------------
// Segment files and the first segment.

absl::StatusOr<base::UniqueFd> JournalWriter::OpenSegmentFd(
    const std::string& path, int flags) {
  base::UniqueFd fd(
      ::open(path.c_str(), flags | O_CLOEXEC | (direct_ ? O_DIRECT : 0), 0644));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  return fd;
}

void JournalWriter::WriteSegmentHeader(std::uint64_t first_index,
                                       std::uint64_t capacity,
                                       std::byte* block) const noexcept {
  std::memset(block, 0, kBlockSize);
  EncodeSegmentHeader(
      SegmentHeader{.magic = kSegmentMagic,
                    .version = format_version_,
                    .header_size = kSegmentHeaderSize,
                    .block_size = kBlockSize,
                    .first_index = first_index,
                    .created_ns = RealtimeNs(),
                    .capacity = capacity,
                    .journal_id = journal_id_,
                    .flags = 0,
                    .metadata_size = 0,
                    .metadata_crc = 0,
                    .crc = 0},
      std::as_bytes(std::span(metadata_.data(), metadata_.size())), block);
}

absl::Status JournalWriter::LoadActiveMetadata() {
  const std::string& path = segments_[active_].path;
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  std::vector<std::byte> block(kBlockSize);
  const ssize_t got = ::pread(fd.get(), block.data(), block.size(), 0);
  if (got < 0) return ErrnoStatus(errno, absl::StrFormat("read %s", path));
  block.resize(static_cast<std::size_t>(got));
  const internal::HeaderCheck check =
      internal::CheckSegmentHeader(block, segments_[active_].first_index);
  if (!check.ok) {
    return absl::DataLossError(
        absl::StrFormat("segment %s: %s", path, check.problem));
  }
  metadata_ = check.metadata;
  return absl::OkStatus();
}

absl::StatusOr<JournalWriter::Space> JournalWriter::SpaceOnDisk() const {
  struct statvfs fs {};
  if (::statvfs(options_.directory.c_str(), &fs) != 0) {
    return ErrnoStatus(errno,
                       absl::StrFormat("statvfs %s", options_.directory));
  }
  Space space;
  space.free_bytes = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(options_.directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (!ParseSegmentFileName(name).has_value() && name != kPreparedFileName) {
      continue;
    }
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) == 0) {
      space.journal_bytes += static_cast<std::uint64_t>(st.st_blocks) * 512;
    }
  }
  if (ec) {
    return absl::UnknownError(absl::StrFormat(
        "reading the directory %s: %s", options_.directory, ec.message()));
  }
  return space;
}

absl::Status JournalWriter::StartSegment(std::string_view metadata) {
  if (closed_) {
    return status_.ok() ? absl::FailedPreconditionError(
                              "StartSegment: the journal writer is closed")
                        : status_;
  }
  if (metadata.size() > kMaxSegmentMetadata) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "segment metadata of %d bytes is too large (at most %d)",
        metadata.size(), kMaxSegmentMetadata));
  }
  if (absl::Status s = Flush(); !s.ok()) return s;
  std::string previous = std::exchange(metadata_, std::string(metadata));
  // Rotate() takes the prepared segment once it is ready and two slots
  // are free (every group is durable now, so only an earlier header write
  // can hold one).
  while (!Rotate()) {
    if (!status_.ok()) return status_;
    if (space_needed_ != 0) {
      // The disk is too full for the new segment: nothing changed.
      metadata_ = std::move(previous);
      return absl::ResourceExhaustedError(absl::StrFormat(
          "cannot start a new segment in %s: the disk is full (%s); free "
          "%d bytes and try again",
          options_.directory, space_reason_, space_needed_));
    }
    Reap(true);
  }
  // Every sealed write, the new header among them, complete.
  while (status_.ok() && fifo_count_ > 0) Reap(true);
  return status_;
}

absl::Status JournalWriter::CreateFirstSegment(std::uint64_t journal_id) {
  journal_id_ = journal_id;
  const std::uint64_t first_index = last_index_ + 1;
  const std::string& prep = PreparedPath();
  absl::StatusOr<base::UniqueFd> fd =
      OpenSegmentFd(prep, O_CREAT | O_TRUNC | O_RDWR);
  if (!fd.ok()) return fd.status();
  auto fail = [&](int err, std::string_view what) {
    fd->reset();
    ::unlink(prep.c_str());
    return ErrnoStatus(err, absl::StrFormat("%s %s", what, prep));
  };
  if (::fallocate(fd->get(), 0, 0, static_cast<off_t>(capacity_)) != 0) {
    return fail(errno, "fallocate");
  }
  if (prezero_) {
    for (std::uint64_t off = 0; off < capacity_; off += kZeroChunk) {
      const std::size_t n =
          std::min<std::uint64_t>(kZeroChunk, capacity_ - off);
      if (int err = PwriteAll(fd->get(), zeros_, n, off); err != 0) {
        return fail(err, "pre-zero");
      }
    }
  }
  std::byte* block = slots_[0].buffer;
  WriteSegmentHeader(first_index, capacity_, block);
  if (int err = PwriteAll(fd->get(), block, kBlockSize, 0); err != 0) {
    return fail(err, "write header of");
  }
  if (::fsync(fd->get()) != 0) return fail(errno, "fsync");
  const std::string path = absl::StrFormat("%s/%s", options_.directory,
                                           SegmentFileName(first_index));
  if (::rename(prep.c_str(), path.c_str()) != 0) return fail(errno, "rename");
  if (::fsync(dir_fd_.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", options_.directory));
  }
  segments_.push_back(SegmentFile{.fd = std::move(*fd),
                                  .active = true,
                                  .version = format_version_,
                                  .users = 0,
                                  .first_index = first_index,
                                  .capacity = capacity_,
                                  .path = path});
  active_ = static_cast<std::uint32_t>(segments_.size() - 1);
  write_pos_ = kFirstGroupOffset;
  tail_writer_ = -1;
  ++recovery_.segments;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// The next segment: preparation and rotation.

namespace {

// Errors that mean the disk (or the quota) has no room: a state to wait out.
bool IsNoSpace(int err) noexcept { return err == ENOSPC || err == EDQUOT; }

// The next segment is to be zeroed by the time the active one is this full:
// the rest of it is the margin for the prepared file's fsync and its
// directory's (each a commit of the file system's journal, which can take
// longer than a full-speed writer takes to fill the last quarter of a small
// segment).
constexpr std::uint64_t kReadyNumerator = 1;
constexpr std::uint64_t kReadyDenominator = 2;

// Paced zeroing: the zero bytes of a `next_capacity`-byte segment that may
// have been submitted when the active segment (`active_capacity` bytes) is
// filled to `write_pos`, zeroing having begun at `pace_start`: the share
// of the way from pace_start to the ready-by point, plus one write, so that
// the first goes at once. Everything once the ready-by point is passed.
std::uint64_t ZeroBytesDue(std::uint64_t next_capacity,
                           std::uint64_t active_capacity,
                           std::uint64_t pace_start,
                           std::uint64_t write_pos) noexcept {
  const std::uint64_t ready_by =
      active_capacity / kReadyDenominator * kReadyNumerator;
  if (write_pos >= ready_by || pace_start >= ready_by) return next_capacity;
  if (write_pos <= pace_start) return kPrepZeroChunk;
  const double share = static_cast<double>(write_pos - pace_start) /
                       static_cast<double>(ready_by - pace_start);
  return static_cast<std::uint64_t>(share *
                                    static_cast<double>(next_capacity)) +
         kPrepZeroChunk;
}

}  // namespace

void JournalWriter::DiscardPrepared() noexcept {
  prepared_.fd.reset();
  ::unlink(PreparedPath().c_str());
}

void JournalWriter::PreparedNoSpace(int err, std::string_view what) noexcept {
  Prepared& p = prepared_;
  if (space_needed_ == 0) {
    // Cold: once per episode of a full disk.
    space_reason_ = absl::StrFormat(
        "preparing the next segment: %s %s: %s (no room for a segment of %d "
        "bytes%s)",
        what, PreparedPath(), internal::ErrnoText(err), smallest_capacity_,
        smallest_capacity_ < capacity_
            ? absl::StrFormat(
                  ", the smallest the journal makes; its segment size is %d",
                  capacity_)
            : "");
  }
  ++stats_.prepare_no_space;
  p.state = Prepared::State::kNoSpace;
  space_needed_ = smallest_capacity_;
  p.retry_ns =
      MonotonicNs() + std::int64_t{options_.no_space_retry_ms} * 1'000'000;
  // The file goes once the kernel is done with it: a zero write still in
  // flight would otherwise land in a file of the same name made later.
  if (p.in_flight == 0) DiscardPrepared();
}

std::uint64_t JournalWriter::AllocatePrepared(int fd, int* err) noexcept {
  for (std::uint64_t size = capacity_;;) {
    if (::fallocate(fd, 0, 0, static_cast<off_t>(size)) == 0) return size;
    *err = errno;
    if (!IsNoSpace(*err) || size <= smallest_capacity_) return 0;
    // What the failed attempt allocated is given back before the next.
    if (::ftruncate(fd, 0) != 0) {
      *err = errno;
      return 0;
    }
    size = std::max(smallest_capacity_, AlignUp(size / 2));
  }
}

void JournalWriter::PumpPrepared(bool needed_now) noexcept {
  if (!status_.ok() || closing_) return;
  Prepared& p = prepared_;
  bool retry = false;
  if (p.state == Prepared::State::kNoSpace) {
    // Retried at a bounded rate, whoever asks (needed_now included).
    if (p.in_flight > 0 || MonotonicNs() < p.retry_ns) return;
    p.state = Prepared::State::kNone;
    retry = true;
  }
  if (p.state == Prepared::State::kNone) {
    // Start once an eighth of the active segment is used, or on demand.
    if (!needed_now && !retry && write_pos_ < segments_[active_].capacity / 8) {
      return;
    }
    if (!StartPrepared()) return;
  }
  if (p.state == Prepared::State::kZeroing) ZeroPrepared(needed_now);
}

bool JournalWriter::StartPrepared() noexcept {
  Prepared& p = prepared_;
  const std::string& path = PreparedPath();
  base::UniqueFd fd(::open(
      path.c_str(),
      O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC | (direct_ ? O_DIRECT : 0), 0644));
  if (!fd) {
    const int err = errno;
    if (IsNoSpace(err)) {
      PreparedNoSpace(err, "open");
      return false;
    }
    Fail(ErrnoStatus(err, absl::StrFormat("preparing the next segment: "
                                          "open %s",
                                          path)));
    return false;
  }
  int err = 0;
  const std::uint64_t size = AllocatePrepared(fd.get(), &err);
  if (size == 0) {
    p.fd = std::move(fd);  // removed with the partial file
    if (IsNoSpace(err)) {
      PreparedNoSpace(err, "fallocate");
      return false;
    }
    DiscardPrepared();
    Fail(ErrnoStatus(err, absl::StrFormat("preparing the next segment: "
                                          "fallocate %s (%d bytes)",
                                          path, capacity_)));
    return false;
  }
  space_needed_ = 0;
  if (size < capacity_) ++stats_.reduced_segments;
  last_prepared_capacity_ = size;
  p.fd = std::move(fd);
  p.capacity = size;
  p.chunks = prezero_ ? static_cast<std::uint32_t>((size + kPrepZeroChunk - 1) /
                                                   kPrepZeroChunk)
                      : 0;
  p.next_chunk = 0;
  p.chunks_done = 0;
  p.in_flight = 0;
  p.pace_start = write_pos_;
  p.late = false;
  p.state = Prepared::State::kZeroing;
  return true;
}

IoOp JournalWriter::ZeroWriteOp(std::uint64_t chunk) const noexcept {
  const Prepared& p = prepared_;
  const std::uint64_t offset = chunk * kPrepZeroChunk;
  IoOp op;
  op.code = OpCode::kWrite;
  op.fd = p.fd.get();
  op.data = zeros_;
  op.length = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(kPrepZeroChunk, p.capacity - offset));
  op.offset = offset;
  op.buffer_index = static_cast<int>(slots_.size());
  return op;
}

void JournalWriter::ZeroPrepared(bool needed_now) noexcept {
  Prepared& p = prepared_;
  // On schedule: one write at a time, within the bytes due. Late: as
  // fast as the device goes.
  const std::uint64_t due = ZeroBytesDue(
      p.capacity, segments_[active_].capacity, p.pace_start, write_pos_);
  if (needed_now || due >= p.capacity) p.late = true;
  const std::uint32_t most_in_flight = p.late ? kPrepZeroWritesInFlight : 1;
  while (
      p.next_chunk < p.chunks && p.in_flight < most_in_flight &&
      (p.late || (std::uint64_t{p.next_chunk} + 1) * kPrepZeroChunk <= due)) {
    IoOp op = ZeroWriteOp(p.next_chunk);
    op.user_data = std::uint64_t{p.next_chunk} << 8 | kTagZero;
    ++p.next_chunk;
    ++p.in_flight;
    PushOp(op);
  }
  if (p.chunks_done == p.chunks && p.in_flight == 0) {
    if (durability_ == Durability::kNone) {
      // Nothing is claimed durable against an OS crash under kNone, and
      // an fsync here would wait for the writeback of the page cache.
      p.state = Prepared::State::kReady;
      return;
    }
    IoOp sync;
    sync.code = OpCode::kFsync;
    sync.fd = p.fd.get();
    sync.user_data = kTagPrepSync;
    ++p.in_flight;
    p.state = Prepared::State::kSyncing;
    PushOp(sync);
  }
}

void JournalWriter::HandlePrepared(std::uint64_t id, std::uint32_t tag,
                                   std::int32_t result) noexcept {
  Prepared& p = prepared_;
  --p.in_flight;
  if (!status_.ok()) return;
  if (p.state == Prepared::State::kNoSpace) {
    // An op of an abandoned preparation: the file goes with the last one.
    if (p.in_flight == 0) DiscardPrepared();
    return;
  }
  if (result == -EAGAIN || result == -EINTR ||
      (tag == kTagZero && result >= 0 &&
       static_cast<std::uint64_t>(result) <
           std::min<std::uint64_t>(kPrepZeroChunk,
                                   p.capacity - id * kPrepZeroChunk))) {
    // Again (a short zero write is redone whole: zeros over zeros).
    ++stats_.retries;
    IoOp op;
    if (tag == kTagZero) {
      op = ZeroWriteOp(id);
    } else {
      op.code = OpCode::kFsync;
      op.fd = tag == kTagPrepSync ? p.fd.get() : dir_fd_.get();
    }
    op.user_data = id << 8 | tag;
    ++p.in_flight;
    PushOp(op);
    return;
  }
  if (result < 0 && IsNoSpace(-result)) {
    PreparedNoSpace(-result, tag == kTagZero ? "pre-zeroing write" : "fsync");
    return;
  }
  if (result < 0) {
    Fail(ErrnoStatus(
        -result,
        absl::StrFormat("preparing the next segment %s: %s at "
                        "offset %d",
                        PreparedPath(),
                        tag == kTagZero       ? "pre-zeroing write"
                        : tag == kTagPrepSync ? "fsync"
                                              : "fsync of the directory",
                        tag == kTagZero ? id * kPrepZeroChunk : 0)));
    return;
  }
  if (tag == kTagZero) {
    ++p.chunks_done;
    PumpPrepared(false);
  } else if (tag == kTagPrepSync) {
    // The file is durable; now its name in the directory.
    IoOp dir_sync;
    dir_sync.code = OpCode::kFsync;
    dir_sync.fd = dir_fd_.get();
    dir_sync.user_data = kTagPrepDirSync;
    ++p.in_flight;
    PushOp(dir_sync);
  } else {
    p.state = Prepared::State::kReady;
  }
}

bool JournalWriter::Rotate() noexcept {
  if (prepared_.state != Prepared::State::kReady) {
    PumpPrepared(true);
    if (prepared_.state != Prepared::State::kReady) {
      if (prepared_.state != Prepared::State::kNoSpace && space_needed_ == 0 &&
          !prepared_.counted_wait) {
        prepared_.counted_wait = true;
        ++stats_.prepare_waits;
      }
      return false;
    }
  }
  if (free_.size() < 2) return false;  // the header and the first group
  if (filling_ != nullptr) Seal(*filling_);

  const std::uint64_t first_index = last_index_ + 1;
  const std::string path = absl::StrFormat("%s/%s", options_.directory,
                                           SegmentFileName(first_index));
  if (::rename(PreparedPath().c_str(), path.c_str()) != 0) {
    Fail(ErrnoStatus(errno,
                     absl::StrFormat("rename %s to %s", PreparedPath(), path)));
    return false;
  }
  // Find a free entry for the new file.
  std::uint32_t entry = 0;
  while (entry < segments_.size() &&
         (segments_[entry].fd || segments_[entry].users > 0)) {
    ++entry;
  }
  if (entry == segments_.size()) segments_.emplace_back();
  SegmentFile& old = segments_[active_];
  old.active = false;
  if (old.users == 0) old.fd.reset();
  SegmentFile& segment = segments_[entry];
  segment.fd = std::move(prepared_.fd);
  segment.active = true;
  segment.version = format_version_;
  segment.users = 0;
  segment.first_index = first_index;
  segment.capacity = prepared_.capacity;
  segment.path = path;
  active_ = entry;
  prepared_ = Prepared{};
  ++stats_.rotations;

  // The header block, written like a group (and before any group of this
  // segment counts as durable), and the directory fsync that makes the new
  // name durable.
  const std::uint32_t id = free_.back();
  free_.pop_back();
  Slot& slot = slots_[id];
  WriteSegmentHeader(first_index, segment.capacity, slot.buffer);
  slot.state = Slot::State::kInFlight;
  slot.header = true;
  slot.segment = entry;
  slot.offset = 0;
  slot.used = static_cast<std::uint32_t>(kSegmentHeaderSize);
  slot.length = static_cast<std::uint32_t>(kBlockSize);
  slot.done = 0;
  slot.records = 0;
  slot.submit_ns = MonotonicNs();
  ++segment.users;
  fifo_[(fifo_head_ + fifo_count_) % fifo_.size()] = id;
  ++fifo_count_;
  slot.lead = 0;
  slot.blocker = -1;
  slot.waiting = false;
  SubmitWrite(id);
  write_pos_ = kFirstGroupOffset;
  tail_writer_ = -1;  // a block of the old segment: nothing to rewrite here
  return status_.ok();
}

}  // namespace orderwire::journal
