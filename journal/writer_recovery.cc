// JournalWriter, recovery at Open: the scan of the existing segments, the
// cut of a torn tail, the recovery report; see writer.h and
// docs/JOURNAL.md "Recovery". Cold.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/unique_fd.h"
#include "journal/checkpoint.h"
#include "journal/cut.h"
#include "journal/internal/scan.h"
#include "journal/internal/writer_support.h"
#include "journal/reader.h"
#include "journal/start.h"
#include "journal/writer.h"

namespace orderwire::journal {

using internal::ErrnoStatus;
using internal::kZeroChunk;
using internal::PwriteAll;
using internal::RealtimeNs;

namespace {

// Where a file set aside by an accepted loss goes: <path>.lost, or with the
// time appended when that exists already.
std::string LostPath(const std::string& path) {
  std::string lost = path + ".lost";
  if (::access(lost.c_str(), F_OK) == 0) {
    lost = absl::StrFormat("%s.lost-%d", path, RealtimeNs());
  }
  return lost;
}

// Segment `i` (not the last; its header `header` checked) of a journal
// read from the checkpoint `witness` on: its file must be as long as its
// capacity, and if it precedes the checkpoint's segment its last group must
// end just before the next segment's first index. Cold: one fstat, and
// O(log groups) probes of the segment.
absl::Status CheckWitnessedSegment(
    const std::vector<internal::SegmentEntry>& entries, std::size_t i,
    const SegmentHeader& header, const std::optional<Checkpoint>& witness) {
  if (!witness.has_value()) return absl::OkStatus();  // read in full
  const std::string& path = entries[i].path;
  absl::StatusOr<internal::MappedFile> file = internal::MappedFile::Open(path);
  if (!file.ok()) return file.status();
  const std::span<const std::byte> bytes = file->bytes();
  if (bytes.size() < header.capacity) {
    return absl::DataLossError(absl::StrFormat(
        "data loss in segment %s: the file is %d bytes, shorter than the %d "
        "bytes its header promises (the writer preallocates every segment "
        "in full): it was truncated ('orderwire replay --verify' reads it "
        "and names the records lost)",
        path, bytes.size(), header.capacity));
  }
  const std::uint64_t next = entries[i + 1].name_index;
  if (next > witness->segment_first_index) return absl::OkStatus();
  internal::SeekCounters counters;
  const std::optional<internal::FoundGroup> last =
      internal::LastGroupIn(bytes, GroupFormatOf(header.version), counters);
  const std::uint64_t last_index =
      last.has_value()
          ? last->check.header.first_index + last->check.header.record_count - 1
          : header.first_index - 1;
  if (last_index + 1 != next) {
    return absl::DataLossError(absl::StrFormat(
        "data loss: segment %s ends at index %d but the next one, %s, starts "
        "at index %d: records %d..%d (segment file %s) are missing or "
        "damaged, below the checkpoint's durable index %d ('orderwire replay "
        "--verify' reads the journal in full and says which)",
        path, last_index, entries[i + 1].path, next, last_index + 1, next - 1,
        SegmentFileName(last_index + 1), witness->durable_index));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status JournalWriter::Recover() {
  // A cut of the journal's tail left half-done (cut.h) is finished first:
  // its intent is the commit point.
  absl::StatusOr<std::optional<CutReport>> pending_cut =
      FinishPendingCut(options_.directory, dir_fd_.get());
  if (!pending_cut.ok()) return pending_cut.status();
  if (pending_cut->has_value()) {
    recovery_.cut_message = (*pending_cut)->message;
  }
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
        ::fsync(dir_fd_.get()) != 0) {
      return ErrnoStatus(errno, absl::StrFormat("rename %s to %s",
                                                PreparedPath(), final_path));
    }
    entry.path = final_path;
  }
  if (!prepared_listed && ::unlink(PreparedPath().c_str()) != 0 &&
      errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrFormat("unlink %s", PreparedPath()));
  }
  // A pruned journal starts where its start record says (start.h); segment
  // files before it are left over from an interrupted prune: not part of
  // the journal (the reader skips them too, so its segment numbers match
  // these entries), kept on disk for the next prune to finish.
  absl::StatusOr<std::optional<JournalStart>> start =
      ReadJournalStart(options_.directory);
  if (!start.ok()) return start.status();
  const std::uint64_t first_index =
      start->has_value() ? (*start)->first_index : 1;
  std::erase_if(entries, [&](const internal::SegmentEntry& entry) {
    return entry.name_index < first_index;
  });
  if (entries.empty() && first_index > 1) {
    return absl::DataLossError(absl::StrFormat(
        "data loss: %s holds no journal segment from index %d on, where its "
        "start record (START, written by a prune) says the journal starts: "
        "segment file %s is missing",
        options_.directory, first_index, SegmentFileName(first_index)));
  }
  const bool accept = options_.accept_loss;
  auto accept_loss = [&](std::string_view what) {
    recovery_.loss_accepted = true;
    absl::StrAppendFormat(&recovery_.loss_message, "%s%s",
                          recovery_.loss_message.empty() ? "" : "; ", what);
  };
  if (entries.empty()) {
    // No segment: a new journal, unless a checkpoint says there was one.
    absl::StatusOr<std::optional<Checkpoint>> checkpoint =
        ReadCheckpoint(options_.directory);
    if (!checkpoint.ok()) {
      if (!accept) return checkpoint.status();
      accept_loss(std::string(checkpoint.status().message()));
    } else if (checkpoint->has_value() && (*checkpoint)->durable_index > 0) {
      const std::string message = absl::StrFormat(
          "data loss: %s holds no journal segment, but its checkpoint (%s) "
          "says every index up to %d was durable: records 1..%d are "
          "missing, segment files %s to %s",
          options_.directory, DescribeCheckpoint(**checkpoint),
          (*checkpoint)->durable_index, (*checkpoint)->durable_index,
          SegmentFileName(1),
          SegmentFileName((*checkpoint)->segment_first_index));
      if (!accept) return absl::DataLossError(message);
      accept_loss(message);
    }
    std::uint64_t id = options_.new_journal_id;
    if (id == 0 && ::getrandom(&id, sizeof(id), 0) != sizeof(id)) {
      id = RealtimeNs();
    }
    recovery_.created = true;
    // A seeded journal (WriterOptions::new_journal_first_index) holds the
    // indexes before its first one in a snapshot, none in a segment.
    last_index_ = durable_index_ = options_.new_journal_first_index - 1;
    recovery_.last_index = last_index_;
    return CreateFirstSegment(id);
  }

  // The first segment must start at the journal's first index (1, or the
  // start record's): a bounded read below may not enter it, so a first
  // segment deleted without a prune is found here.
  if (!accept && entries.front().name_index != first_index) {
    return absl::DataLossError(absl::StrFormat(
        "data loss: the journal %s starts at index %d%s, but its first "
        "segment file is %s: records %d..%d are missing (segment file %s)",
        options_.directory, first_index,
        first_index > 1 ? " (its start record, written by a prune)" : "",
        entries.front().path, first_index, entries.front().name_index - 1,
        SegmentFileName(first_index)));
  }

  // The checkpoint: recovery reads the journal from its group on (below).
  std::optional<Checkpoint> witness;
  if (!accept) {
    absl::StatusOr<std::optional<Checkpoint>> checkpoint =
        ReadCheckpoint(options_.directory);
    if (checkpoint.ok() && checkpoint->has_value() &&
        (*checkpoint)->durable_index > 0 &&
        (*checkpoint)->group_first_index >= entries.front().name_index) {
      witness = **checkpoint;
    }
    // A damaged checkpoint: the full read below reports it.
  }

  // Every header but the last must be whole, and all of one journal, every
  // segment but the last as long as its header's capacity, and each segment
  // before the checkpoint's must end just before the next one starts (its
  // last group found by binary search): the segment files a bounded read
  // does not enter are still all there. O(segments) small reads. (With
  // accept_loss the reader below finds such damage and the journal is cut
  // there.)
  const std::size_t n = entries.size();
  std::optional<std::uint64_t> journal_id;
  for (std::size_t i = 0; i + 1 < n && !accept; ++i) {
    base::UniqueFd fd(::open(entries[i].path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
      return ErrnoStatus(errno, absl::StrFormat("open %s", entries[i].path));
    }
    std::vector<std::byte> block(kBlockSize);
    const ssize_t got = ::pread(fd.get(), block.data(), block.size(), 0);
    const int err = errno;
    fd.reset();
    if (got < 0) {
      return ErrnoStatus(err, absl::StrFormat("read %s", entries[i].path));
    }
    block.resize(static_cast<std::size_t>(got));
    const internal::HeaderCheck check =
        internal::CheckSegmentHeader(block, entries[i].name_index);
    if (!check.ok) {
      if (check.header.magic == kSegmentMagic &&
          (check.header.version < kOldestFormatVersion ||
           check.header.version > kFormatVersion)) {
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
    if (absl::Status s =
            CheckWitnessedSegment(entries, i, check.header, witness);
        !s.ok()) {
      return s;
    }
  }

  // Read the journal from the checkpoint's group on, held against the
  // checkpoint: its group must be the one on disk, and every record after
  // it is checked, so a torn tail, a truncated or missing later segment or
  // records below the checkpoint gone at the end are found here. What
  // precedes the group the checkpoint witnesses (it was durable and whole
  // when the checkpoint was written), so Open's cost does not grow with
  // the journal: the reader seeks to the group (docs/JOURNAL.md "Seek").
  // `journal verify` / replay --verify still read everything. A journal
  // without a checkpoint, or under accept_loss, is read in full.
  const std::size_t first = n >= 2 ? n - 2 : 0;  // fsynced below
  const std::uint64_t read_from =
      witness.has_value() ? witness->group_first_index : 0;
  absl::StatusOr<std::unique_ptr<JournalReader>> reader = JournalReader::Open(
      options_.directory,
      ReaderOptions{.accept_loss = accept, .from_index = read_from});
  if (!reader.ok()) return reader.status();
  recovery_.checkpoint_missing = !(*reader)->has_checkpoint_file();
  Record record;
  ReadResult result;
  while ((result = (*reader)->Next(record)) == ReadResult::kRecord) {
  }
  for (const std::string& loss : (*reader)->accepted_losses()) {
    accept_loss(loss);
  }
  std::size_t tail = 0;         // index into entries of the tail segment
  std::uint64_t tail_end = 0;   // offset after its last group
  std::uint64_t tail_last = 0;  // last index in the journal
  SegmentHeader tail_header{};
  const std::vector<SegmentInfo>& infos = (*reader)->segments();
  if (result == ReadResult::kError) {
    const std::optional<internal::Damage>& damage = (*reader)->damage();
    if (!damage.has_value() ||
        (damage->kind != internal::Damage::Kind::kTornTail && !accept)) {
      return (*reader)->status();
    }
    if (damage->kind != internal::Damage::Kind::kTornTail) {
      // Accepted: the journal keeps its whole prefix, up to the damage.
      accept_loss(absl::StrFormat(
          "%s; the journal is cut after index %d and what followed is set "
          "aside",
          damage->message, damage->last_good_index));
      // The segment about to be cut keeps a copy of what it held.
      const std::string& cut = entries[damage->segment].path;
      std::error_code ec;
      if (!std::filesystem::copy_file(cut, LostPath(cut), ec)) {
        return absl::UnknownError(
            absl::StrFormat("cannot keep a copy of %s before cutting it: %s",
                            cut, ec.message()));
      }
    }
    // A torn tail (or an accepted loss): cut it off.
    recovery_.torn_tail = true;
    recovery_.message = damage->message;
    recovery_.torn_segment = entries[damage->segment].path;
    recovery_.torn_offset = damage->offset;
    recovery_.discarded_groups = damage->later_groups;
    for (std::size_t j = n; j-- > damage->segment + 1;) {
      if (accept) {
        if (::rename(entries[j].path.c_str(),
                     LostPath(entries[j].path).c_str()) != 0) {
          return ErrnoStatus(errno,
                             absl::StrFormat("set aside %s", entries[j].path));
        }
      } else if (::unlink(entries[j].path.c_str()) != 0) {
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
      if (accept ? ::rename(entries.back().path.c_str(),
                            LostPath(entries.back().path).c_str()) != 0
                 : ::unlink(entries.back().path.c_str()) != 0) {
        return ErrnoStatus(errno,
                           absl::StrFormat("unlink %s", entries.back().path));
      }
      recovery_.removed_files.push_back(entries.back().path);
      entries.pop_back();
      if (::fsync(dir_fd_.get()) != 0) {
        return ErrnoStatus(errno,
                           absl::StrFormat("fsync %s", options_.directory));
      }
      if (entries.empty() && first_index > 1) {
        return absl::DataLossError(absl::StrFormat(
            "data loss: the segment where the pruned journal %s starts "
            "(index %d) has no valid header: %s",
            options_.directory, first_index, damage->message));
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
      base::UniqueFd fd(::open(entry.path.c_str(), O_RDWR | O_CLOEXEC));
      if (!fd) {
        return ErrnoStatus(errno, absl::StrFormat("open %s", entry.path));
      }
      struct stat st {};
      ::fstat(fd.get(), &st);
      const auto size = static_cast<std::uint64_t>(st.st_size);
      int err = 0;
      if (size > damage->offset &&
          ::fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                      static_cast<off_t>(damage->offset),
                      static_cast<off_t>(size - damage->offset)) != 0) {
        // No hole punching here: write the zeros.
        for (std::uint64_t off = damage->offset; off < size && err == 0;
             off += kZeroChunk) {
          err = PwriteAll(fd.get(), zeros_,
                          std::min<std::uint64_t>(kZeroChunk, size - off), off);
        }
      }
      if (err == 0 && size < info->header.capacity &&
          ::fallocate(fd.get(), 0, 0,
                      static_cast<off_t>(info->header.capacity)) != 0) {
        err = errno;
      }
      if (err == 0 && ::fsync(fd.get()) != 0) err = errno;
      fd.reset();
      if (err != 0) {
        return ErrnoStatus(
            err, absl::StrFormat("cutting the torn tail of %s", entry.path));
      }
      tail = entries.size() - 1;
      tail_end = damage->offset;
      tail_last = damage->last_good_index;
      tail_header = info->header;
    }
    if (::fsync(dir_fd_.get()) != 0) {
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
    const base::UniqueFd fd(
        ::open(entries[i].path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd || ::fsync(fd.get()) != 0) {
      return ErrnoStatus(errno, absl::StrFormat("fsync %s", entries[i].path));
    }
  }
  absl::StatusOr<base::UniqueFd> fd = OpenSegmentFd(entries[tail].path, O_RDWR);
  if (!fd.ok()) return fd.status();
  journal_id_ = tail_header.journal_id;
  segments_.push_back(SegmentFile{.fd = std::move(*fd),
                                  .active = true,
                                  .version = tail_header.version,
                                  .users = 0,
                                  .first_index = tail_header.first_index,
                                  .capacity = tail_header.capacity,
                                  .path = entries[tail].path});
  active_ = 0;
  write_pos_ = tail_end;
  if (absl::Status s = LoadTailBlock(); !s.ok()) return s;
  last_index_ = durable_index_ = tail_last;
  // The last group kept, which the checkpoint names.
  for (std::size_t i = std::min(tail + 1, infos.size()); i-- > 0;) {
    if (infos[i].last_group_first_index != 0) {
      durable_group_ = {.first_index = infos[i].last_group_first_index,
                        .segment_first_index = infos[i].header.first_index,
                        .offset = infos[i].last_group_offset,
                        .crc = infos[i].last_group_crc};
      break;
    }
  }
  // A journal whose segments hold no record yet (a seeded one, which
  // starts past 1: its last index is the one before its first) has no
  // group to name.
  if (tail_last >= first_index && durable_group_.first_index == 0) {
    return absl::InternalError(absl::StrFormat(
        "recovery of %s: the group holding index %d was not found",
        options_.directory, tail_last));
  }
  recovery_.last_index = tail_last;
  recovery_.segments = entries.size();
  recovery_.segments_read = infos.size();
  recovery_.read_from_index = read_from == 0 ? 1 : read_from;
  return absl::OkStatus();
}

absl::Status JournalWriter::LoadTailBlock() {
  tail_writer_ = -1;
  const std::uint64_t lead = write_pos_ % kBlockSize;
  if (!direct_ || lead == 0) return absl::OkStatus();
  const std::string& path = segments_[active_].path;
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  const std::uint64_t block = write_pos_ - lead;
  const ssize_t got =
      ::pread(fd.get(), tail_block_, lead, static_cast<off_t>(block));
  if (got != static_cast<ssize_t>(lead)) {
    return ErrnoStatus(got < 0 ? errno : EIO,
                       absl::StrFormat("reading the last block of %s (offset "
                                       "%d, %d bytes)",
                                       path, block, lead));
  }
  return absl::OkStatus();
}

}  // namespace orderwire::journal
