// JournalWriter: options, open and close; see writer.h. The rest of the
// writer is split by job:
//   writer_append.cc    the append pipeline: group building, submission and
//                       completion of the I/O, the durable index; Poll,
//                       Wait, Flush, Sync
//   writer_recovery.cc  recovery at Open: the segment scan, cutting a torn
//                       tail, the recovery report
//   writer_segments.cc  segment files: the first one, the next one's
//                       preparation (preallocation, pre-zeroing, sync) and
//                       the rotation that renames it into place
#include "journal/writer.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/unique_fd.h"
#include "journal/internal/writer_support.h"

namespace orderwire::journal {
namespace {

using internal::ErrnoStatus;
using internal::kZeroChunk;
using internal::PwriteAll;

std::byte* AllocateAligned(std::size_t bytes) {
  void* p = std::aligned_alloc(kBlockSize, bytes);
  if (p != nullptr) std::memset(p, 0, bytes);
  return static_cast<std::byte*>(p);
}

// The slots a writer of `options` has: 4 unless they say.
std::uint32_t SlotCount(const WriterOptions& options) {
  return options.slots != 0 ? options.slots : 4u;
}

// The options' values checked, before anything is created: the first that
// is out of range, or OK.
absl::Status CheckOptions(const WriterOptions& o) {
  if (o.directory.empty()) {
    return absl::InvalidArgumentError("the journal directory is not set");
  }
  if (o.segment_size < kMinSegmentCapacity ||
      o.segment_size > kMaxSegmentCapacity) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "segment size %d is out of range [%d, %d]", o.segment_size,
        kMinSegmentCapacity, kMaxSegmentCapacity));
  }
  if (o.metadata.size() > kMaxSegmentMetadata) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "segment metadata of %d bytes is too large (at most %d)",
        o.metadata.size(), kMaxSegmentMetadata));
  }
  if (o.format_version < kOldestFormatVersion ||
      o.format_version > kFormatVersion) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "format version %d is not one this build writes (%d to %d)",
        o.format_version, kOldestFormatVersion, kFormatVersion));
  }
  if (o.new_journal_first_index == 0) {
    return absl::InvalidArgumentError(
        "new_journal_first_index 0: journal indexes start at 1");
  }
  if (o.no_space_retry_ms == 0) {
    return absl::InvalidArgumentError(
        "no_space_retry_ms must be at least 1 (a retry without a pause would "
        "busy-loop on a full disk)");
  }
  const std::uint32_t slots = SlotCount(o);
  if (slots < 2 || slots > 64) {
    return absl::InvalidArgumentError(
        absl::StrFormat("slots must be in [2, 64], not %d", slots));
  }
  return absl::OkStatus();
}

std::string KiB(std::uint64_t bytes) {
  if (bytes % (1u << 20) == 0) return absl::StrFormat("%d MiB", bytes >> 20);
  return absl::StrFormat("%d KiB", bytes >> 10);
}

}  // namespace

std::string_view Name(Durability durability) noexcept {
  switch (durability) {
    case Durability::kNone:
      return "none";
    case Durability::kBatch:
      return "batch";
    case Durability::kSync:
      return "sync";
  }
  return "invalid";
}

absl::StatusOr<Durability> ParseDurability(std::string_view text) {
  if (text == "none") return Durability::kNone;
  if (text == "batch") return Durability::kBatch;
  if (text == "sync") return Durability::kSync;
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown durability mode '%s' (use none, batch or sync)", text));
}

std::string_view Name(AppendStatus status) noexcept {
  switch (status) {
    case AppendStatus::kOk:
      return "Ok";
    case AppendStatus::kFull:
      return "Full";
    case AppendStatus::kInvalidFrame:
      return "InvalidFrame";
    case AppendStatus::kTooLarge:
      return "TooLarge";
    case AppendStatus::kJournalFull:
      return "JournalFull";
    case AppendStatus::kFailed:
      return "Failed";
  }
  return "Invalid";
}

// ---------------------------------------------------------------------------
// Open and close.

JournalWriter::JournalWriter(const WriterOptions& options)
    : options_(options), durability_(options.durability) {}

JournalWriter::~JournalWriter() {
  (void)Close();
  for (Slot& slot : slots_) std::free(slot.buffer);
  std::free(zeros_);
  std::free(tail_block_);
}

absl::StatusOr<std::unique_ptr<JournalWriter>> JournalWriter::Open(
    const WriterOptions& options) {
  std::unique_ptr<JournalWriter> writer(new JournalWriter(options));
  if (absl::Status s = writer->Init(); !s.ok()) {
    writer->closed_ = true;  // nothing to flush; the files close with it
    return s;
  }
  return writer;
}

absl::Status JournalWriter::Init() {
  if (absl::Status s = CheckOptions(options_); !s.ok()) return s;
  SetSizes();
  if (absl::Status s = CreateDirectory(); !s.ok()) return s;
  if (absl::Status s = Lock(); !s.ok()) return s;
  if (absl::Status s = AllocateBuffers(); !s.ok()) return s;
  if (absl::Status s = SetUpIo(); !s.ok()) return s;
  metadata_ = options_.metadata;  // for a journal Recover() creates
  if (absl::Status s = Recover(); !s.ok()) return s;
  if (!recovery_.created) {
    if (absl::Status s = LoadActiveMetadata(); !s.ok()) return s;
  }
  OpenDurableMark();
  return WriteFirstCheckpoint();
}

void JournalWriter::SetSizes() {
  const WriterOptions& o = options_;
  capacity_ = AlignUp(o.segment_size);
  std::uint64_t group = o.group_size != 0                  ? o.group_size
                        : durability_ == Durability::kNone ? 256u << 10
                                                           : 64u << 10;
  group = AlignUp(std::max<std::uint64_t>(group, 2 * kBlockSize));
  group = std::min<std::uint64_t>(
      {group, kMaxGroupBytes, capacity_ - kFirstGroupOffset});
  group_size_ = static_cast<std::uint32_t>(group);
  buffer_size_ = group_size_ + static_cast<std::uint32_t>(kBlockSize);
  // A segment smaller than capacity_ (a disk without room for a whole one)
  // still takes the header block and one full group (group <= capacity_ -
  // kFirstGroupOffset, so this is at most capacity_).
  smallest_capacity_ = std::min(
      capacity_,
      std::max(kSmallestReducedSegment, AlignUp(kFirstGroupOffset + group)));
  last_prepared_capacity_ = capacity_;
  format_version_ = o.format_version;
  max_partial_ =
      std::min(o.max_partial_in_flight != 0 ? o.max_partial_in_flight : 2u,
               SlotCount(o) - 1);
  max_append_bytes_ = group_size_ - kGroupOverhead;
}

absl::Status JournalWriter::CreateDirectory() {
  const WriterOptions& o = options_;
  prepared_path_ = absl::StrFormat("%s/%s", o.directory, kPreparedFileName);
  checkpoint_path_ = absl::StrFormat("%s/%s", o.directory, kCheckpointFileName);
  checkpoint_temp_path_ =
      absl::StrFormat("%s/%s", o.directory, kCheckpointTempFileName);
  std::error_code ec;
  std::filesystem::create_directories(o.directory, ec);
  if (ec) {
    return absl::UnknownError(absl::StrFormat(
        "cannot create journal directory %s: %s", o.directory, ec.message()));
  }
  return absl::OkStatus();
}

// Buffers: one per slot, and the zeros that pre-zeroing writes.
absl::Status JournalWriter::AllocateBuffers() {
  const std::uint32_t slots = SlotCount(options_);
  slots_.resize(slots);
  for (Slot& slot : slots_) {
    slot.buffer = AllocateAligned(buffer_size_);
    if (slot.buffer == nullptr)
      return absl::ResourceExhaustedError("out of memory");
  }
  zeros_ = AllocateAligned(kZeroChunk);
  tail_block_ = AllocateAligned(kBlockSize);
  if (zeros_ == nullptr || tail_block_ == nullptr) {
    return absl::ResourceExhaustedError("out of memory");
  }
  free_.reserve(slots);
  for (std::uint32_t i = slots; i > 0; --i) free_.push_back(i - 1);
  fifo_.assign(slots, 0);
  segments_.reserve(8);
  return absl::OkStatus();
}

// Followers in other processes read how far the journal is durable from
// the DURABLE file (durable_mark.h).
// Optional: without it (no room for it on a full disk) the writer goes
// on, and followers go by the checkpoint; a stale one is removed so that
// none reads a previous writer's value as current.
void JournalWriter::OpenDurableMark() {
  const std::string& directory = options_.directory;
  absl::StatusOr<DurableMarkPublisher> mark =
      DurableMarkPublisher::Open(directory, journal_id_, durable_index_);
  if (mark.ok()) {
    durable_mark_ = std::move(*mark);
  } else {
    recovery_.durable_file_problem = std::string(mark.status().message());
    ::unlink(absl::StrFormat("%s/%s", directory, kDurableFileName).c_str());
  }
}

// What was recovered is durable now: witness it (this also starts the
// checkpoint of a journal that had none, and re-bases it after a loss
// was accepted).
absl::Status JournalWriter::WriteFirstCheckpoint() {
  const WriterOptions& o = options_;
  checkpoint_interval_ns_ =
      std::int64_t{o.checkpoint_interval_ms != 0 ? o.checkpoint_interval_ms
                                                 : 1000} *
      1'000'000;
  next_checkpoint_ns_ = internal::MonotonicNs() + checkpoint_interval_ns_;
  absl::Status s = WriteCheckpointNow();
  if (absl::IsResourceExhausted(s) && !o.accept_loss) {
    // No room for the small checkpoint file (ENOSPC, EDQUOT): a restart on
    // a full disk still works while the last segment has room. The
    // checkpoint on disk, if any, is true of the journal (recovery just
    // checked it); Poll publishes a new one once space appears. After an
    // accepted loss the checkpoint must be re-based, so that stays fatal.
    ++stats_.checkpoint_failures;
    return absl::OkStatus();
  }
  return s;
}

absl::Status JournalWriter::Lock() {
  const WriterOptions& o = options_;
  dir_fd_.reset(
      ::open(o.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd_) {
    return ErrnoStatus(errno, absl::StrFormat("open %s", o.directory));
  }
  // The lock is on the directory itself: no file can be deleted to defeat
  // it. LOCK is locked too (for older writers, which lock only it) and
  // holds the pid of the writer, which only messages use.
  const std::string lock_path =
      absl::StrFormat("%s/%s", o.directory, kLockFileName);
  auto locked_by_another = [&]() {
    std::string holder = "its pid is unknown";
    if (base::UniqueFd fd(::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC));
        fd) {
      char text[32] = {};
      const ssize_t n = ::pread(fd.get(), text, sizeof(text) - 1, 0);
      if (n > 0) {
        std::string_view pid(text, static_cast<std::size_t>(n));
        while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) {
          pid.remove_suffix(1);
        }
        holder = absl::StrFormat("%s says pid %s", lock_path, pid);
      }
    }
    return absl::UnavailableError(absl::StrFormat(
        "journal %s is open for appending by another writer (the directory "
        "is locked; %s)",
        o.directory, holder));
  };
  // A descriptor of its own, never handed to the I/O queue: io_uring may
  // hold a file it used for a moment after the process died, and the lock
  // must go with the process.
  dir_lock_fd_.reset(
      ::open(o.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_lock_fd_) {
    return ErrnoStatus(errno, absl::StrFormat("open %s", o.directory));
  }
  if (::flock(dir_lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) return locked_by_another();
    return ErrnoStatus(err, absl::StrFormat("flock %s", o.directory));
  }
  lock_fd_.reset(::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644));
  if (!lock_fd_) {
    return ErrnoStatus(errno, absl::StrFormat("open %s", lock_path));
  }
  if (::flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) return locked_by_another();
    return ErrnoStatus(err, absl::StrFormat("flock %s", lock_path));
  }
  const std::string pid = absl::StrFormat("%d\n", ::getpid());
  if (::ftruncate(lock_fd_.get(), 0) != 0 ||
      PwriteAll(lock_fd_.get(), reinterpret_cast<const std::byte*>(pid.data()),
                pid.size(), 0) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("write %s", lock_path));
  }
  return absl::OkStatus();
}

const std::string& JournalWriter::PreparedPath() const {
  return prepared_path_;
}

absl::Status JournalWriter::SetUpIo() {
  const WriterOptions& o = options_;
  const bool durable = durability_ != Durability::kNone;
  // Whether O_DIRECT works in this directory: try it on a scratch file.
  if (durable && o.sync_method != SyncMethod::kFdatasync) {
    const std::string probe =
        absl::StrFormat("%s/odirect.probe", options_.directory);
    base::UniqueFd fd(
        ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0644));
    if (fd) {
      fd.reset();
      direct_ = true;
    } else if (o.sync_method == SyncMethod::kDirectDsync) {
      return ErrnoStatus(errno,
                         absl::StrFormat("O_DIRECT is not supported for %s "
                                         "(sync method DirectDsync)",
                                         probe));
    }
    ::unlink(probe.c_str());
  }
  sync_after_write_ = durable && !direct_;
  prezero_ = durable && o.prezero;

  std::string fallback_note;
  const unsigned entries = 2 * static_cast<unsigned>(slots_.size()) + 16;
  if (o.backend == IoBackend::kBlocking) {
    queue_ = internal::MakeBlockingQueue(entries);
  } else {
    absl::StatusOr<std::unique_ptr<internal::IoQueue>> uring =
        internal::MakeUringQueue(entries);
    if (uring.ok()) {
      queue_ = std::move(*uring);
    } else if (o.backend == IoBackend::kIoUring) {
      return uring.status();
    } else {
      queue_ = internal::MakeBlockingQueue(entries);
      fallback_note = absl::StrFormat(
          " (fallback: %s; writes block the caller)", uring.status().message());
    }
  }
  if (o.faults != nullptr) {
    queue_ = internal::MakeFaultyQueue(std::move(queue_), o.faults);
  }
  std::vector<iovec> buffers;
  for (Slot& slot : slots_) buffers.push_back({slot.buffer, buffer_size_});
  buffers.push_back({zeros_, kZeroChunk});
  const bool registered = queue_->RegisterBuffers(buffers) == 0;

  io_description_ = absl::StrFormat(
      "%s, %s, %d x %s groups%s%s", queue_->name(),
      direct_ ? "O_DIRECT writes with RWF_DSYNC"
      : sync_after_write_
          ? "buffered writes, each followed by a linked fdatasync"
          : "buffered writes, no sync",
      slots_.size(), KiB(group_size_),
      registered && queue_->name() == "io_uring" ? ", registered buffers" : "",
      fallback_note);
  return absl::OkStatus();
}

absl::Status JournalWriter::Close() {
  if (closed_) return status_;
  (void)Sync();
  closing_ = true;  // no more segment preparation
  // The kernel may still read the buffers: wait for every op.
  while (ops_in_flight_ > 0 && !submit_pending_) Reap(true);
  if (status_.ok() && queue_ != nullptr &&
      durable_index_ > checkpointed_index_) {
    absl::Status s = WriteCheckpointNow();
    if (absl::IsResourceExhausted(s)) {
      // A full disk: the records are durable; the checkpoint on disk lags
      // (still true, it witnesses less) until the next writer publishes.
      ++stats_.checkpoint_failures;
    } else if (!s.ok()) {
      Fail(s);
    }
  }
  closed_ = true;
  // Every segment was synced (or the writer had failed): a close error
  // would say nothing more, so the descriptors are simply dropped.
  for (SegmentFile& segment : segments_) segment.fd.reset();
  if (prepared_.fd) {
    prepared_.fd.reset();
    ::unlink(PreparedPath().c_str());
  }
  lock_fd_.reset();
  dir_lock_fd_.reset();
  dir_fd_.reset();
  queue_.reset();
  return status_;
}

void JournalWriter::Fail(const absl::Status& status) noexcept {
  if (status_.ok()) {
    status_ = absl::Status(
        status.code(),
        absl::StrFormat("%s; the journal writer has stopped (durable up to "
                        "index %d)",
                        status.message(), durable_index_));
  }
}

}  // namespace orderwire::journal
