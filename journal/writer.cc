// JournalWriter; see writer.h.
#include "journal/writer.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_format.h"
#include "codec/kind_table.h"
#include "codec/wire.h"
#include "journal/crc32c.h"
#include "journal/internal/scan.h"
#include "journal/reader.h"

namespace orderwire::journal {
namespace {

using codec::StoreLE;
using internal::IoCompletion;
using internal::IoOp;
using internal::OpCode;

// user_data = id << 8 | tag. For slots, id is the slot index; for the zero
// writes of the prepared segment, the chunk number.
constexpr std::uint32_t kTagWrite = 1;
constexpr std::uint32_t kTagSync = 2;
constexpr std::uint32_t kTagZero = 4;
constexpr std::uint32_t kTagPrepSync = 5;
constexpr std::uint32_t kTagPrepDirSync = 6;

constexpr std::uint32_t kZeroChunk = 1u << 20;
constexpr std::uint32_t kZeroWritesInFlight = 2;

constexpr std::size_t kIndexOffset =
    kOffsetOf<kRecordHeaderLayout, &RecordHeader::index>;
constexpr std::size_t kReceiveOffset =
    kOffsetOf<kRecordHeaderLayout, &RecordHeader::receive_ns>;
constexpr std::size_t kSessionOffset =
    kOffsetOf<kRecordHeaderLayout, &RecordHeader::session_id>;
constexpr std::size_t kFlagsOffset =
    kOffsetOf<kRecordHeaderLayout, &RecordHeader::flags>;

std::int64_t MonotonicNs() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::uint64_t RealtimeNs() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string ErrnoText(int err) {
  return absl::StrFormat("%s (errno %d)", std::strerror(err), err);
}

absl::Status ErrnoStatus(int err, std::string_view what) {
  return absl::ErrnoToStatus(err,
                             absl::StrFormat("%s: %s", what, ErrnoText(err)));
}

// Writes all of [data, data + length) at `offset`; returns 0 or errno.
int PwriteAll(int fd, const std::byte* data, std::size_t length,
              std::uint64_t offset) {
  while (length > 0) {
    const ssize_t n = ::pwrite(fd, data, length, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    data += n;
    length -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return 0;
}

std::byte* AllocateAligned(std::size_t bytes) {
  void* p = std::aligned_alloc(kBlockSize, bytes);
  if (p != nullptr) std::memset(p, 0, bytes);
  return static_cast<std::byte*>(p);
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
    case AppendStatus::kFailed:
      return "Failed";
  }
  return "Invalid";
}

// ---------------------------------------------------------------------------
// Open, recovery, close.

JournalWriter::JournalWriter(const WriterOptions& options)
    : options_(options), durability_(options.durability) {}

JournalWriter::~JournalWriter() {
  (void)Close();
  for (Slot& slot : slots_) std::free(slot.buffer);
  std::free(zeros_);
}

absl::StatusOr<std::unique_ptr<JournalWriter>> JournalWriter::Open(
    const WriterOptions& options) {
  std::unique_ptr<JournalWriter> writer(new JournalWriter(options));
  if (absl::Status s = writer->Init(); !s.ok()) {
    writer->closed_ = true;  // nothing to flush
    if (writer->lock_fd_ >= 0) ::close(writer->lock_fd_);
    if (writer->dir_fd_ >= 0) ::close(writer->dir_fd_);
    for (SegmentFile& segment : writer->segments_) {
      if (segment.fd >= 0) ::close(segment.fd);
    }
    writer->lock_fd_ = writer->dir_fd_ = -1;
    return s;
  }
  return writer;
}

absl::Status JournalWriter::Init() {
  const WriterOptions& o = options_;
  if (o.directory.empty()) {
    return absl::InvalidArgumentError("the journal directory is not set");
  }
  if (o.segment_size < kMinSegmentCapacity ||
      o.segment_size > kMaxSegmentCapacity) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "segment size %d is out of range [%d, %d]", o.segment_size,
        kMinSegmentCapacity, kMaxSegmentCapacity));
  }
  capacity_ = AlignUp(o.segment_size);
  std::uint64_t group = o.group_size != 0                  ? o.group_size
                        : durability_ == Durability::kNone ? 256u << 10
                                                           : 64u << 10;
  group = AlignUp(std::max<std::uint64_t>(group, 2 * kBlockSize));
  group = std::min<std::uint64_t>(
      {group, kMaxGroupBytes, capacity_ - kFirstGroupOffset});
  group_size_ = static_cast<std::uint32_t>(group);
  const std::uint32_t slots = o.slots != 0 ? o.slots : 4u;
  if (slots < 2 || slots > 64) {
    return absl::InvalidArgumentError(
        absl::StrFormat("slots must be in [2, 64], not %d", slots));
  }
  max_partial_ = std::min(
      o.max_partial_in_flight != 0 ? o.max_partial_in_flight : 2u, slots - 1);
  max_append_bytes_ = group_size_ - kGroupOverhead;

  prepared_path_ = absl::StrFormat("%s/%s", o.directory, kPreparedFileName);
  std::error_code ec;
  std::filesystem::create_directories(o.directory, ec);
  if (ec) {
    return absl::UnknownError(absl::StrFormat(
        "cannot create journal directory %s: %s", o.directory, ec.message()));
  }
  dir_fd_ = ::open(o.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    return ErrnoStatus(errno, absl::StrFormat("open %s", o.directory));
  }
  const std::string lock_path =
      absl::StrFormat("%s/%s", o.directory, kLockFileName);
  lock_fd_ = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock_fd_ < 0)
    return ErrnoStatus(errno, absl::StrFormat("open %s", lock_path));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrFormat(
          "journal %s is open for appending by another writer (%s is "
          "locked)",
          o.directory, lock_path));
    }
    return ErrnoStatus(err, absl::StrFormat("flock %s", lock_path));
  }
  // Buffers: one per slot, and the zeros that pre-zeroing writes.
  slots_.resize(slots);
  for (Slot& slot : slots_) {
    slot.buffer = AllocateAligned(group_size_);
    if (slot.buffer == nullptr)
      return absl::ResourceExhaustedError("out of memory");
  }
  zeros_ = AllocateAligned(kZeroChunk);
  if (zeros_ == nullptr) return absl::ResourceExhaustedError("out of memory");
  free_.reserve(slots);
  for (std::uint32_t i = slots; i > 0; --i) free_.push_back(i - 1);
  fifo_.assign(slots, 0);
  segments_.reserve(8);

  if (absl::Status s = SetUpIo(); !s.ok()) return s;
  return Recover();
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
    const int fd =
        ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
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
  for (Slot& slot : slots_) buffers.push_back({slot.buffer, group_size_});
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

absl::StatusOr<int> JournalWriter::OpenSegmentFd(const std::string& path,
                                                 int flags) {
  const int fd =
      ::open(path.c_str(), flags | O_CLOEXEC | (direct_ ? O_DIRECT : 0), 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  return fd;
}

void JournalWriter::WriteSegmentHeader(std::uint64_t first_index,
                                       std::byte* block) const noexcept {
  std::memset(block, 0, kBlockSize);
  EncodeSegmentHeader(SegmentHeader{.magic = kSegmentMagic,
                                    .version = kFormatVersion,
                                    .header_size = kSegmentHeaderSize,
                                    .block_size = kBlockSize,
                                    .first_index = first_index,
                                    .created_ns = RealtimeNs(),
                                    .capacity = capacity_,
                                    .journal_id = journal_id_,
                                    .flags = 0,
                                    .reserved = 0,
                                    .crc = 0},
                      block);
}

absl::Status JournalWriter::CreateFirstSegment(std::uint64_t journal_id) {
  journal_id_ = journal_id;
  const std::uint64_t first_index = last_index_ + 1;
  const std::string& prep = PreparedPath();
  absl::StatusOr<int> fd = OpenSegmentFd(prep, O_CREAT | O_TRUNC | O_RDWR);
  if (!fd.ok()) return fd.status();
  auto fail = [&](int err, std::string_view what) {
    ::close(*fd);
    ::unlink(prep.c_str());
    return ErrnoStatus(err, absl::StrFormat("%s %s", what, prep));
  };
  if (::fallocate(*fd, 0, 0, static_cast<off_t>(capacity_)) != 0) {
    return fail(errno, "fallocate");
  }
  if (prezero_) {
    for (std::uint64_t off = 0; off < capacity_; off += kZeroChunk) {
      const std::size_t n =
          std::min<std::uint64_t>(kZeroChunk, capacity_ - off);
      if (int err = PwriteAll(*fd, zeros_, n, off); err != 0) {
        return fail(err, "pre-zero");
      }
    }
  }
  std::byte* block = slots_[0].buffer;
  WriteSegmentHeader(first_index, block);
  if (int err = PwriteAll(*fd, block, kBlockSize, 0); err != 0) {
    return fail(err, "write header of");
  }
  if (::fsync(*fd) != 0) return fail(errno, "fsync");
  const std::string path = absl::StrFormat("%s/%s", options_.directory,
                                           SegmentFileName(first_index));
  if (::rename(prep.c_str(), path.c_str()) != 0) return fail(errno, "rename");
  if (::fsync(dir_fd_) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", options_.directory));
  }
  segments_.push_back(SegmentFile{.fd = *fd,
                                  .active = true,
                                  .users = 0,
                                  .first_index = first_index,
                                  .capacity = capacity_,
                                  .path = path});
  active_ = static_cast<std::uint32_t>(segments_.size() - 1);
  write_pos_ = kFirstGroupOffset;
  ++recovery_.segments;
  return absl::OkStatus();
}

absl::Status JournalWriter::Recover() {
  absl::StatusOr<std::vector<internal::SegmentEntry>> listed =
      internal::ListSegments(options_.directory);
  if (!listed.ok()) return listed.status();
  std::vector<internal::SegmentEntry> entries = std::move(*listed);
  // A prepared segment with a valid header was being used when the writer
  // stopped, but its rename may not have reached the disk: finish it. One
  // without is an unused preparation: remove it.
  bool prepared_listed = false;
  for (internal::SegmentEntry& entry : entries) {
    if (entry.path != PreparedPath()) continue;
    prepared_listed = true;
    const std::string final_path = absl::StrFormat(
        "%s/%s", options_.directory, SegmentFileName(entry.name_index));
    if (::access(final_path.c_str(), F_OK) == 0) {
      return absl::DataLossError(absl::StrFormat(
          "both %s and %s hold the segment starting at index %d", final_path,
          PreparedPath(), entry.name_index));
    }
    if (::rename(PreparedPath().c_str(), final_path.c_str()) != 0 ||
        ::fsync(dir_fd_) != 0) {
      return ErrnoStatus(errno, absl::StrFormat("rename %s to %s",
                                                PreparedPath(), final_path));
    }
    entry.path = final_path;
  }
  if (!prepared_listed && ::unlink(PreparedPath().c_str()) != 0 &&
      errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrFormat("unlink %s", PreparedPath()));
  }
  if (entries.empty()) {
    std::uint64_t id = 0;
    if (::getrandom(&id, sizeof(id), 0) != sizeof(id)) id = RealtimeNs();
    recovery_.created = true;
    return CreateFirstSegment(id);
  }

  // Every header but the last must be whole, and all of one journal.
  const std::size_t n = entries.size();
  std::optional<std::uint64_t> journal_id;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const int fd = ::open(entries[i].path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return ErrnoStatus(errno, absl::StrFormat("open %s", entries[i].path));
    }
    std::vector<std::byte> block(kBlockSize);
    const ssize_t got = ::pread(fd, block.data(), block.size(), 0);
    const int err = errno;
    ::close(fd);
    if (got < 0) {
      return ErrnoStatus(err, absl::StrFormat("read %s", entries[i].path));
    }
    block.resize(static_cast<std::size_t>(got));
    const internal::HeaderCheck check =
        internal::CheckSegmentHeader(block, entries[i].name_index);
    if (!check.ok) {
      if (check.header.magic == kSegmentMagic &&
          check.header.version != kFormatVersion) {
        return absl::UnimplementedError(
            absl::StrFormat("segment %s: %s", entries[i].path, check.problem));
      }
      return absl::DataLossError(absl::StrFormat(
          "segment %s: %s; only the last segment may be incomplete",
          entries[i].path, check.problem));
    }
    if (journal_id.has_value() && *journal_id != check.header.journal_id) {
      return absl::DataLossError(absl::StrFormat(
          "segment %s belongs to another journal (journal id %016x, the "
          "others have %016x)",
          entries[i].path, check.header.journal_id, *journal_id));
    }
    journal_id = check.header.journal_id;
  }

  // Walk the last two segments in full.
  const std::size_t first = n >= 2 ? n - 2 : 0;
  absl::StatusOr<std::unique_ptr<JournalReader>> reader =
      JournalReader::Open(options_.directory, first);
  if (!reader.ok()) return reader.status();
  Record record;
  ReadResult result;
  while ((result = (*reader)->Next(record)) == ReadResult::kRecord) {
  }
  std::size_t tail = 0;         // index into entries of the tail segment
  std::uint64_t tail_end = 0;   // offset after its last group
  std::uint64_t tail_last = 0;  // last index in the journal
  SegmentHeader tail_header{};
  const std::vector<SegmentInfo>& infos = (*reader)->segments();
  if (result == ReadResult::kError) {
    const std::optional<internal::Damage>& damage = (*reader)->damage();
    if (!damage.has_value() ||
        damage->kind != internal::Damage::Kind::kTornTail) {
      return (*reader)->status();
    }
    // A torn tail: cut it off.
    recovery_.torn_tail = true;
    recovery_.message = damage->message;
    recovery_.torn_segment = entries[damage->segment].path;
    recovery_.torn_offset = damage->offset;
    recovery_.discarded_groups = damage->later_groups;
    for (std::size_t j = n; j-- > damage->segment + 1;) {
      if (::unlink(entries[j].path.c_str()) != 0) {
        return ErrnoStatus(errno,
                           absl::StrFormat("unlink %s", entries[j].path));
      }
      recovery_.removed_files.push_back(entries[j].path);
    }
    entries.resize(damage->segment + 1);
    if (damage->offset == 0) {
      // The segment never got its header: remove it as well.
      absl::StatusOr<internal::MappedFile> file =
          internal::MappedFile::Open(entries.back().path);
      if (file.ok()) {
        const auto bytes = file->bytes();
        for (std::uint64_t i = internal::FirstNonZero(bytes, 0);
             i < bytes.size(); i = internal::FirstNonZero(bytes, i + 1)) {
          ++recovery_.discarded_bytes;
        }
      }
      if (::unlink(entries.back().path.c_str()) != 0) {
        return ErrnoStatus(errno,
                           absl::StrFormat("unlink %s", entries.back().path));
      }
      recovery_.removed_files.push_back(entries.back().path);
      entries.pop_back();
      if (::fsync(dir_fd_) != 0) {
        return ErrnoStatus(errno,
                           absl::StrFormat("fsync %s", options_.directory));
      }
      if (entries.empty()) {
        std::uint64_t id = 0;
        if (::getrandom(&id, sizeof(id), 0) != sizeof(id)) id = RealtimeNs();
        recovery_.created = true;
        if (absl::Status s = CreateFirstSegment(id); !s.ok()) return s;
        recovery_.last_index = 0;
        return absl::OkStatus();
      }
      // The previous segment is the tail; the reader walked it in full.
      const SegmentInfo* info = nullptr;
      for (const SegmentInfo& candidate : infos) {
        if (candidate.path == entries.back().path) info = &candidate;
      }
      if (info == nullptr) {
        return absl::DataLossError(absl::StrFormat(
            "cannot recover %s: %s", options_.directory, damage->message));
      }
      tail = entries.size() - 1;
      tail_end = info->data_end;
      tail_last = info->last_index != 0 ? info->last_index
                                        : info->header.first_index - 1;
      tail_header = info->header;
    } else {
      const internal::SegmentEntry& entry = entries.back();
      const SegmentInfo* info = nullptr;
      for (const SegmentInfo& candidate : infos) {
        if (candidate.path == entry.path) info = &candidate;
      }
      if (info == nullptr) {
        return absl::DataLossError(absl::StrFormat(
            "cannot recover %s: %s", options_.directory, damage->message));
      }
      // Count what is cut off, then zero it.
      {
        absl::StatusOr<internal::MappedFile> file =
            internal::MappedFile::Open(entry.path);
        if (!file.ok()) return file.status();
        const auto bytes = file->bytes();
        for (std::uint64_t i = internal::FirstNonZero(bytes, damage->offset);
             i < bytes.size(); i = internal::FirstNonZero(bytes, i + 1)) {
          ++recovery_.discarded_bytes;
        }
      }
      const int fd = ::open(entry.path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0)
        return ErrnoStatus(errno, absl::StrFormat("open %s", entry.path));
      struct stat st {};
      ::fstat(fd, &st);
      const auto size = static_cast<std::uint64_t>(st.st_size);
      int err = 0;
      if (size > damage->offset &&
          ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(damage->offset),
                      static_cast<off_t>(size - damage->offset)) != 0) {
        // No hole punching here: write the zeros.
        for (std::uint64_t off = damage->offset; off < size && err == 0;
             off += kZeroChunk) {
          err = PwriteAll(fd, zeros_,
                          std::min<std::uint64_t>(kZeroChunk, size - off), off);
        }
      }
      if (err == 0 && size < info->header.capacity &&
          ::fallocate(fd, 0, 0, static_cast<off_t>(info->header.capacity)) !=
              0) {
        err = errno;
      }
      if (err == 0 && ::fsync(fd) != 0) err = errno;
      ::close(fd);
      if (err != 0) {
        return ErrnoStatus(
            err, absl::StrFormat("cutting the torn tail of %s", entry.path));
      }
      tail = entries.size() - 1;
      tail_end = damage->offset;
      tail_last = damage->last_good_index;
      tail_header = info->header;
    }
    if (::fsync(dir_fd_) != 0) {
      return ErrnoStatus(errno,
                         absl::StrFormat("fsync %s", options_.directory));
    }
  } else {
    const SegmentInfo& info = infos.back();
    tail = entries.size() - 1;
    tail_end = info.data_end;
    tail_last =
        info.last_index != 0 ? info.last_index : info.header.first_index - 1;
    tail_header = info.header;
  }
  if (journal_id.has_value() && *journal_id != tail_header.journal_id) {
    return absl::DataLossError(absl::StrFormat(
        "segment %s belongs to another journal (journal id %016x, the others "
        "have %016x)",
        entries[tail].path, tail_header.journal_id, *journal_id));
  }

  // Make what was recovered durable: the crash may have left it in the page
  // cache only. Then append to the tail segment.
  for (std::size_t i = first; i <= tail; ++i) {
    const int fd = ::open(entries[i].path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      return ErrnoStatus(err, absl::StrFormat("fsync %s", entries[i].path));
    }
    ::close(fd);
  }
  absl::StatusOr<int> fd = OpenSegmentFd(entries[tail].path, O_RDWR);
  if (!fd.ok()) return fd.status();
  journal_id_ = tail_header.journal_id;
  segments_.push_back(SegmentFile{.fd = *fd,
                                  .active = true,
                                  .users = 0,
                                  .first_index = tail_header.first_index,
                                  .capacity = tail_header.capacity,
                                  .path = entries[tail].path});
  active_ = 0;
  write_pos_ = tail_end;
  last_index_ = durable_index_ = tail_last;
  recovery_.last_index = tail_last;
  recovery_.segments = entries.size();
  return absl::OkStatus();
}

absl::Status JournalWriter::Close() {
  if (closed_) return status_;
  (void)Sync();
  closing_ = true;  // no more segment preparation
  // The kernel may still read the buffers: wait for every op.
  while (ops_in_flight_ > 0 && !submit_pending_) Reap(true);
  closed_ = true;
  for (SegmentFile& segment : segments_) {
    if (segment.fd >= 0) ::close(segment.fd);
    segment.fd = -1;
  }
  if (prepared_.fd >= 0) {
    ::close(prepared_.fd);
    prepared_.fd = -1;
    ::unlink(PreparedPath().c_str());
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  lock_fd_ = dir_fd_ = -1;
  queue_.reset();
  return status_;
}

// ---------------------------------------------------------------------------
// Appending.

namespace {

// The frame size of each command kind, 0 for every other kind byte: a
// 256-byte table (four cache lines) for the append loop.
constexpr std::array<std::uint8_t, 256> kCommandFrameSize = [] {
  std::array<std::uint8_t, 256> sizes{};
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    if (codec::kKindTable[k].kind_class == codec::KindClass::kCommand) {
      sizes[k] = codec::kKindTable[k].frame_size;
    }
  }
  return sizes;
}();

// Copies a command frame (25 to 49 bytes) with two fixed-size, overlapping
// copies, which the compiler turns into a few vector loads and stores.
inline void CopyFrame(std::byte* dst, const std::byte* src,
                      std::size_t size) noexcept {
  static_assert(kMinCommandFrame >= 16 && kMaxCommandFrame <= 64);
  if (size >= 32) {
    std::memcpy(dst, src, 32);
    std::memcpy(dst + size - 32, src + size - 32, 32);
  } else {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + size - 16, src + size - 16, 16);
  }
}

}  // namespace

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
    std::uint64_t index = last_index_;
    std::size_t pos = 0;
    while (pos + codec::kFrameHeaderSize <= size) {
      const std::size_t frame_size =
          kCommandFrameSize[static_cast<std::uint8_t>(
              data[pos + codec::kKindOffset])];
      if (frame_size == 0 || size - pos < frame_size) break;
      StoreLE(out + kIndexOffset, ++index);
      StoreLE(out + kReceiveOffset, receive_ns);
      StoreLE(out + kSessionOffset, session_id);
      StoreLE(out + kFlagsOffset, flags);
      CopyFrame(out + kRecordHeaderSize, data + pos, frame_size);
      out += kRecordHeaderSize + frame_size;
      pos += frame_size;
    }
    if (pos != size || index == last_index_) return AppendStatus::kInvalidFrame;
    return Commit(*slot, static_cast<std::uint32_t>(out - slot->buffer), index);
  }

  // Otherwise: count and check first, then find room, then copy.
  std::size_t count = 0;
  std::size_t pos = 0;
  while (pos + codec::kFrameHeaderSize <= size) {
    const std::size_t frame_size = kCommandFrameSize[static_cast<std::uint8_t>(
        data[pos + codec::kKindOffset])];
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
      ++stats_.full;
      SubmitPending();
      return AppendStatus::kFull;
    }
  }
  std::byte* out = slot->buffer + slot->used;
  std::uint64_t index = last_index_;
  for (pos = 0; pos < size;) {
    const std::size_t frame_size = kCommandFrameSize[static_cast<std::uint8_t>(
        data[pos + codec::kKindOffset])];
    StoreLE(out + kIndexOffset, ++index);
    StoreLE(out + kReceiveOffset, receive_ns);
    StoreLE(out + kSessionOffset, session_id);
    StoreLE(out + kFlagsOffset, flags);
    CopyFrame(out + kRecordHeaderSize, data + pos, frame_size);
    out += kRecordHeaderSize + frame_size;
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

JournalWriter::Slot* JournalWriter::OpenGroup(std::size_t need) noexcept {
  const std::uint64_t group_bytes = AlignUp(kGroupOverhead + need);
  if (free_.empty()) Reap(false);
  SegmentFile* segment = &segments_[active_];
  if (segment->capacity - write_pos_ < group_bytes) {
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
  slot.segment = active_;
  slot.offset = write_pos_;
  slot.used = kGroupHeaderSize;
  slot.limit = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(group_size_, segment->capacity - write_pos_) -
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
  StoreStruct<kGroupHeaderLayout>(
      GroupHeader{.magic = kGroupMagic,
                  .records_bytes =
                      slot.used - static_cast<std::uint32_t>(kGroupHeaderSize),
                  .first_index = slot.first_index,
                  .stable_index = durable_index_,
                  .record_count = slot.records,
                  .flags = 0},
      buffer);
  const std::uint32_t crc = Crc32c({buffer, slot.used});
  StoreStruct<kGroupTrailerLayout>(
      GroupTrailer{.crc = crc, .magic = kTrailerMagic}, buffer + slot.used);
  const std::uint32_t end =
      slot.used + static_cast<std::uint32_t>(kGroupTrailerSize);
  slot.length = static_cast<std::uint32_t>(AlignUp(end));
  std::memset(buffer + end, 0, slot.length - end);
  slot.done = 0;
  slot.synced = !sync_after_write_;
  slot.state = Slot::State::kInFlight;
  slot.submit_ns = MonotonicNs();
  write_pos_ = slot.offset + slot.length;
  fifo_[(fifo_head_ + fifo_count_) % fifo_.size()] = SlotId(slot);
  ++fifo_count_;
  ++stats_.groups;
  stats_.records += slot.records;
  stats_.bytes_written += slot.length;
  if (filling_ == &slot) filling_ = nullptr;
  SubmitWrite(SlotId(slot));
}

void JournalWriter::SubmitWrite(std::uint32_t id) noexcept {
  Slot& slot = slots_[id];
  const SegmentFile& segment = segments_[slot.segment];
  IoOp op;
  op.code = OpCode::kWrite;
  op.fd = segment.fd;
  op.data = slot.buffer + slot.done;
  op.length = slot.length - slot.done;
  op.offset = slot.offset + slot.done;
  op.buffer_index = static_cast<int>(id);
  op.dsync = direct_;
  op.link = sync_after_write_;
  op.user_data = std::uint64_t{id} << 8 | kTagWrite;
  ++slot.outstanding;
  PushOp(op);
  if (sync_after_write_) {
    IoOp sync;
    sync.code = OpCode::kFdatasync;
    sync.fd = segment.fd;
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

void JournalWriter::Fail(absl::Status status) noexcept {
  if (status_.ok()) {
    status_ = absl::Status(
        status.code(),
        absl::StrFormat("%s; the journal writer has stopped (durable up to "
                        "index %d)",
                        status.message(), durable_index_));
  }
}

void JournalWriter::Handle(const IoCompletion& c) noexcept {
  --ops_in_flight_;
  const auto tag = static_cast<std::uint32_t>(c.user_data & 0xFFu);
  const std::uint64_t id = c.user_data >> 8;
  if (tag == kTagZero || tag == kTagPrepSync || tag == kTagPrepDirSync) {
    HandlePrepared(id, tag, c.result);
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
            segment.path, slot.offset + slot.done, slot.length - slot.done,
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
              segment.path, slot.offset + before, c.result,
              slot.length - before)));
          return;
        }
        SubmitWrite(static_cast<std::uint32_t>(id));
      }
      return;
    }
    case kTagSync: {
      if (c.result == -ECANCELED) return;  // its write is being redone
      if (c.result == -EAGAIN || c.result == -EINTR) {
        ++stats_.retries;
        IoOp sync;
        sync.code = OpCode::kFdatasync;
        sync.fd = segment.fd;
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
      latency_.Record(static_cast<std::uint64_t>(now - slot.submit_ns));
    }
    Release(slot);
  }
}

void JournalWriter::Release(Slot& slot) noexcept {
  slot.state = Slot::State::kFree;
  SegmentFile& segment = segments_[slot.segment];
  --segment.users;
  if (segment.users == 0 && !segment.active && segment.fd >= 0) {
    ::close(segment.fd);
    segment.fd = -1;
  }
  free_.push_back(SlotId(slot));
}

// ---------------------------------------------------------------------------
// Segments.

void JournalWriter::PumpPrepared(bool start_now) noexcept {
  if (!status_.ok() || closing_) return;
  Prepared& p = prepared_;
  if (p.state == Prepared::State::kNone) {
    // Start once an eighth of the active segment is used, or on demand.
    if (!start_now && write_pos_ < segments_[active_].capacity / 8) return;
    const std::string& path = PreparedPath();
    const int fd = ::open(
        path.c_str(),
        O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC | (direct_ ? O_DIRECT : 0),
        0644);
    if (fd < 0) {
      Fail(ErrnoStatus(errno, absl::StrFormat("preparing the next segment: "
                                              "open %s",
                                              path)));
      return;
    }
    if (::fallocate(fd, 0, 0, static_cast<off_t>(capacity_)) != 0) {
      const int err = errno;
      ::close(fd);
      Fail(ErrnoStatus(err, absl::StrFormat("preparing the next segment: "
                                            "fallocate %s (%d bytes)",
                                            path, capacity_)));
      return;
    }
    p.fd = fd;
    p.chunks = prezero_ ? static_cast<std::uint32_t>(
                              (capacity_ + kZeroChunk - 1) / kZeroChunk)
                        : 0;
    p.next_chunk = 0;
    p.chunks_done = 0;
    p.in_flight = 0;
    p.state = Prepared::State::kZeroing;
  }
  if (p.state == Prepared::State::kZeroing) {
    while (p.next_chunk < p.chunks && p.in_flight < kZeroWritesInFlight) {
      const std::uint64_t offset = std::uint64_t{p.next_chunk} * kZeroChunk;
      IoOp op;
      op.code = OpCode::kWrite;
      op.fd = p.fd;
      op.data = zeros_;
      op.length = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(kZeroChunk, capacity_ - offset));
      op.offset = offset;
      op.buffer_index = static_cast<int>(slots_.size());
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
      sync.fd = p.fd;
      sync.user_data = kTagPrepSync;
      ++p.in_flight;
      p.state = Prepared::State::kSyncing;
      PushOp(sync);
    }
  }
}

void JournalWriter::HandlePrepared(std::uint64_t id, std::uint32_t tag,
                                   std::int32_t result) noexcept {
  Prepared& p = prepared_;
  --p.in_flight;
  if (!status_.ok()) return;
  if (result == -EAGAIN || result == -EINTR ||
      (tag == kTagZero && result >= 0 &&
       static_cast<std::uint64_t>(result) <
           std::min<std::uint64_t>(kZeroChunk, capacity_ - id * kZeroChunk))) {
    // Again (a short zero write is redone whole: zeros over zeros).
    ++stats_.retries;
    IoOp op;
    if (tag == kTagZero) {
      const std::uint64_t offset = id * kZeroChunk;
      op.code = OpCode::kWrite;
      op.fd = p.fd;
      op.data = zeros_;
      op.length = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(kZeroChunk, capacity_ - offset));
      op.offset = offset;
      op.buffer_index = static_cast<int>(slots_.size());
    } else {
      op.code = OpCode::kFsync;
      op.fd = tag == kTagPrepSync ? p.fd : dir_fd_;
    }
    op.user_data = id << 8 | tag;
    ++p.in_flight;
    PushOp(op);
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
                        tag == kTagZero ? id * kZeroChunk : 0)));
    return;
  }
  if (tag == kTagZero) {
    ++p.chunks_done;
    PumpPrepared(false);
  } else if (tag == kTagPrepSync) {
    // The file is durable; now its name in the directory.
    IoOp dir_sync;
    dir_sync.code = OpCode::kFsync;
    dir_sync.fd = dir_fd_;
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
    if (prepared_.state != Prepared::State::kReady) return false;
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
         (segments_[entry].fd >= 0 || segments_[entry].users > 0)) {
    ++entry;
  }
  if (entry == segments_.size()) segments_.emplace_back();
  SegmentFile& old = segments_[active_];
  old.active = false;
  if (old.users == 0 && old.fd >= 0) {
    ::close(old.fd);
    old.fd = -1;
  }
  SegmentFile& segment = segments_[entry];
  segment.fd = prepared_.fd;
  segment.active = true;
  segment.users = 0;
  segment.first_index = first_index;
  segment.capacity = capacity_;
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
  WriteSegmentHeader(first_index, slot.buffer);
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
  SubmitWrite(id);
  write_pos_ = kFirstGroupOffset;
  return status_.ok();
}

// ---------------------------------------------------------------------------
// Poll, Wait, Flush, Sync.

std::uint64_t JournalWriter::Poll() noexcept {
  if (!status_.ok() || closed_) return durable_index_;
  Reap(false);
  PumpPrepared(false);
  if (filling_ != nullptr && filling_->records > 0 &&
      fifo_count_ < max_partial_) {
    Seal(*filling_);
  }
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
    if (segment.fd >= 0 && ::fdatasync(segment.fd) != 0) {
      Fail(ErrnoStatus(errno, absl::StrFormat("fdatasync %s", segment.path)));
      break;
    }
  }
  return status_;
}

}  // namespace orderwire::journal
