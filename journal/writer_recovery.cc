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
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

// The non-zero bytes of `bytes` from `from` on: what a cut discards.
std::uint64_t NonZeroBytes(std::span<const std::byte> bytes,
                           std::uint64_t from) {
  std::uint64_t count = 0;
  for (std::uint64_t i = internal::FirstNonZero(bytes, from); i < bytes.size();
       i = internal::FirstNonZero(bytes, i + 1)) {
    ++count;
  }
  return count;
}

// A new journal's id: random, or the time if the kernel has no randomness
// to give.
std::uint64_t RandomJournalId() {
  std::uint64_t id = 0;
  if (::getrandom(&id, sizeof(id), 0) != sizeof(id)) id = RealtimeNs();
  return id;
}

}  // namespace

// Recover()'s steps, in the order Run() takes them; the state they share
// (the segment files as recovery changes them, the journal's first index,
// the checkpoint the read is held against, the reader that read it) is in
// members. A nested class of JournalWriter: it sets the writer's members.
class JournalWriter::Recovery {
 public:
  explicit Recovery(JournalWriter& writer)
      : w_(writer),
        directory_(writer.options_.directory),
        accept_(writer.options_.accept_loss) {}

  absl::Status Run();

 private:
  // Where appending resumes: the segment (an index into entries_), the
  // offset after its last group, the journal's last index, its header.
  struct Tail {
    std::size_t entry = 0;
    std::uint64_t end = 0;
    std::uint64_t last = 0;
    SegmentHeader header{};
  };

  absl::Status FinishCut();
  absl::Status ListAndAdoptPrepared();
  absl::Status ApplyStartRecord();
  absl::Status StartNewJournal();
  absl::Status CheckFirstSegment() const;
  void ReadWitness();
  absl::Status CheckEarlierSegments();
  absl::Status CheckEarlierSegment(std::size_t i);
  absl::StatusOr<ReadResult> ReadToTheEnd();
  absl::StatusOr<std::optional<Tail>> CutDamage();
  absl::Status KeepCopyOfDamaged(const internal::Damage& damage);
  absl::Status RemoveSegmentsAfter(std::size_t segment);
  absl::StatusOr<std::optional<Tail>> RemoveHeaderless(
      const internal::Damage& damage);
  absl::StatusOr<Tail> ZeroTornTail(const internal::Damage& damage);
  [[nodiscard]] Tail LastSegmentTail() const;
  [[nodiscard]] const SegmentInfo* InfoOf(const std::string& path) const;
  absl::Status Resume(const Tail& tail);
  void NoteLoss(std::string_view what);
  [[nodiscard]] absl::Status FsyncDirectory() const;

  JournalWriter& w_;
  const std::string& directory_;
  const bool accept_;
  std::vector<internal::SegmentEntry> entries_;
  std::uint64_t first_index_ = 1;
  // Where the fsync of what was recovered starts: the last two segments as
  // listed (before any was removed).
  std::size_t first_synced_ = 0;
  std::optional<Checkpoint> witness_;
  std::optional<std::uint64_t> journal_id_;
  std::uint64_t read_from_ = 0;
  std::unique_ptr<JournalReader> reader_;
};

absl::Status JournalWriter::Recover() { return Recovery(*this).Run(); }

absl::Status JournalWriter::Recovery::Run() {
  if (absl::Status s = FinishCut(); !s.ok()) return s;
  if (absl::Status s = ListAndAdoptPrepared(); !s.ok()) return s;
  if (absl::Status s = ApplyStartRecord(); !s.ok()) return s;
  if (entries_.empty()) return StartNewJournal();
  if (absl::Status s = CheckFirstSegment(); !s.ok()) return s;
  ReadWitness();
  if (absl::Status s = CheckEarlierSegments(); !s.ok()) return s;
  first_synced_ = entries_.size() >= 2 ? entries_.size() - 2 : 0;
  absl::StatusOr<ReadResult> result = ReadToTheEnd();
  if (!result.ok()) return result.status();
  std::optional<Tail> tail;
  if (*result == ReadResult::kError) {
    absl::StatusOr<std::optional<Tail>> cut = CutDamage();
    if (!cut.ok()) return cut.status();
    if (!cut->has_value()) return absl::OkStatus();  // a new journal
    tail = **cut;
  } else {
    tail = LastSegmentTail();
  }
  if (journal_id_.has_value() && *journal_id_ != tail->header.journal_id) {
    return absl::DataLossError(absl::StrFormat(
        "segment %s belongs to another journal (journal id %016x, the others "
        "have %016x)",
        entries_[tail->entry].path, tail->header.journal_id, *journal_id_));
  }
  return Resume(*tail);
}

// A cut of the journal's tail left half-done (cut.h) is finished first:
// its intent is the commit point.
absl::Status JournalWriter::Recovery::FinishCut() {
  absl::StatusOr<std::optional<CutReport>> pending_cut =
      FinishPendingCut(directory_, w_.dir_fd_.get());
  if (!pending_cut.ok()) return pending_cut.status();
  if (pending_cut->has_value()) {
    w_.recovery_.cut_message = (*pending_cut)->message;
  }
  return absl::OkStatus();
}

// The segment files. A prepared segment with a valid header was being used
// when the writer stopped, but its rename may not have reached the disk:
// finish it. One without is an unused preparation: remove it.
absl::Status JournalWriter::Recovery::ListAndAdoptPrepared() {
  absl::StatusOr<std::vector<internal::SegmentEntry>> listed =
      internal::ListSegments(directory_);
  if (!listed.ok()) return listed.status();
  entries_ = std::move(*listed);
  const std::string& prepared = w_.PreparedPath();
  bool prepared_listed = false;
  for (internal::SegmentEntry& entry : entries_) {
    if (entry.path != prepared) continue;
    prepared_listed = true;
    const std::string final_path =
        absl::StrFormat("%s/%s", directory_, SegmentFileName(entry.name_index));
    if (::access(final_path.c_str(), F_OK) == 0) {
      return absl::DataLossError(absl::StrFormat(
          "both %s and %s hold the segment starting at index %d", final_path,
          prepared, entry.name_index));
    }
    if (::rename(prepared.c_str(), final_path.c_str()) != 0 ||
        ::fsync(w_.dir_fd_.get()) != 0) {
      return ErrnoStatus(
          errno, absl::StrFormat("rename %s to %s", prepared, final_path));
    }
    entry.path = final_path;
  }
  if (!prepared_listed && ::unlink(prepared.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrFormat("unlink %s", prepared));
  }
  return absl::OkStatus();
}

// A pruned journal starts where its start record says (start.h); segment
// files before it are left over from an interrupted prune: not part of the
// journal (the reader skips them too, so its segment numbers match these
// entries), kept on disk for the next prune to finish.
absl::Status JournalWriter::Recovery::ApplyStartRecord() {
  absl::StatusOr<std::optional<JournalStart>> start =
      ReadJournalStart(directory_);
  if (!start.ok()) return start.status();
  first_index_ = start->has_value() ? (*start)->first_index : 1;
  std::erase_if(entries_, [&](const internal::SegmentEntry& entry) {
    return entry.name_index < first_index_;
  });
  if (entries_.empty() && first_index_ > 1) {
    return absl::DataLossError(absl::StrFormat(
        "data loss: %s holds no journal segment from index %d on, where its "
        "start record (START, written by a prune) says the journal starts: "
        "segment file %s is missing",
        directory_, first_index_, SegmentFileName(first_index_)));
  }
  return absl::OkStatus();
}

// No segment: a new journal, unless a checkpoint says there was one.
absl::Status JournalWriter::Recovery::StartNewJournal() {
  absl::StatusOr<std::optional<Checkpoint>> checkpoint =
      ReadCheckpoint(directory_);
  if (!checkpoint.ok()) {
    if (!accept_) return checkpoint.status();
    NoteLoss(std::string(checkpoint.status().message()));
  } else if (checkpoint->has_value() && (*checkpoint)->durable_index > 0) {
    const std::string message = absl::StrFormat(
        "data loss: %s holds no journal segment, but its checkpoint (%s) "
        "says every index up to %d was durable: records 1..%d are "
        "missing, segment files %s to %s",
        directory_, DescribeCheckpoint(**checkpoint),
        (*checkpoint)->durable_index, (*checkpoint)->durable_index,
        SegmentFileName(1),
        SegmentFileName((*checkpoint)->segment_first_index));
    if (!accept_) return absl::DataLossError(message);
    NoteLoss(message);
  }
  std::uint64_t id = w_.options_.new_journal_id;
  if (id == 0) id = RandomJournalId();
  w_.recovery_.created = true;
  // A seeded journal (WriterOptions::new_journal_first_index) holds the
  // indexes before its first one in a snapshot, none in a segment.
  w_.last_index_ = w_.durable_index_ = w_.options_.new_journal_first_index - 1;
  w_.recovery_.last_index = w_.last_index_;
  return w_.CreateFirstSegment(id);
}

// The first segment must start at the journal's first index (1, or the
// start record's): a bounded read below may not enter it, so a first
// segment deleted without a prune is found here.
absl::Status JournalWriter::Recovery::CheckFirstSegment() const {
  if (accept_ || entries_.front().name_index == first_index_) {
    return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrFormat(
      "data loss: the journal %s starts at index %d%s, but its first "
      "segment file is %s: records %d..%d are missing (segment file %s)",
      directory_, first_index_,
      first_index_ > 1 ? " (its start record, written by a prune)" : "",
      entries_.front().path, first_index_, entries_.front().name_index - 1,
      SegmentFileName(first_index_)));
}

// The checkpoint: recovery reads the journal from its group on (below). A
// damaged checkpoint: the full read reports it.
void JournalWriter::Recovery::ReadWitness() {
  if (accept_) return;
  absl::StatusOr<std::optional<Checkpoint>> checkpoint =
      ReadCheckpoint(directory_);
  if (checkpoint.ok() && checkpoint->has_value() &&
      (*checkpoint)->durable_index > 0 &&
      (*checkpoint)->group_first_index >= entries_.front().name_index) {
    witness_ = **checkpoint;
  }
}

// Every header but the last must be whole, and all of one journal, every
// segment but the last as long as its header's capacity, and each segment
// before the checkpoint's must end just before the next one starts (its
// last group found by binary search): the segment files a bounded read
// does not enter are still all there. O(segments) small reads. (With
// accept_loss the reader below finds such damage and the journal is cut
// there.)
absl::Status JournalWriter::Recovery::CheckEarlierSegments() {
  for (std::size_t i = 0; i + 1 < entries_.size() && !accept_; ++i) {
    if (absl::Status s = CheckEarlierSegment(i); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Segment `i`, not the last: its header, its journal id, and against the
// checkpoint its length and last group.
absl::Status JournalWriter::Recovery::CheckEarlierSegment(std::size_t i) {
  const std::string& path = entries_[i].path;
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  std::vector<std::byte> block(kBlockSize);
  const ssize_t got = ::pread(fd.get(), block.data(), block.size(), 0);
  const int err = errno;
  fd.reset();
  if (got < 0) return ErrnoStatus(err, absl::StrFormat("read %s", path));
  block.resize(static_cast<std::size_t>(got));
  const internal::HeaderCheck check =
      internal::CheckSegmentHeader(block, entries_[i].name_index);
  if (!check.ok) {
    if (check.header.magic == kSegmentMagic &&
        (check.header.version < kOldestFormatVersion ||
         check.header.version > kFormatVersion)) {
      return absl::UnimplementedError(
          absl::StrFormat("segment %s: %s", path, check.problem));
    }
    return absl::DataLossError(
        absl::StrFormat("segment %s: %s; only the last segment may be "
                        "incomplete",
                        path, check.problem));
  }
  if (journal_id_.has_value() && *journal_id_ != check.header.journal_id) {
    return absl::DataLossError(absl::StrFormat(
        "segment %s belongs to another journal (journal id %016x, the "
        "others have %016x)",
        path, check.header.journal_id, *journal_id_));
  }
  journal_id_ = check.header.journal_id;
  return CheckWitnessedSegment(entries_, i, check.header, witness_);
}

// Read the journal from the checkpoint's group on, held against the
// checkpoint: its group must be the one on disk, and every record after it
// is checked, so a torn tail, a truncated or missing later segment or
// records below the checkpoint gone at the end are found here. What
// precedes the group the checkpoint witnesses (it was durable and whole
// when the checkpoint was written), so Open's cost does not grow with the
// journal: the reader seeks to the group (docs/JOURNAL.md "Seek"). `journal
// verify` / replay --verify still read everything. A journal without a
// checkpoint, or under accept_loss, is read in full. Returns how the read
// ended (kEnd or kError).
absl::StatusOr<ReadResult> JournalWriter::Recovery::ReadToTheEnd() {
  read_from_ = witness_.has_value() ? witness_->group_first_index : 0;
  absl::StatusOr<std::unique_ptr<JournalReader>> reader = JournalReader::Open(
      directory_,
      ReaderOptions{.accept_loss = accept_, .from_index = read_from_});
  if (!reader.ok()) return reader.status();
  reader_ = std::move(*reader);
  w_.recovery_.checkpoint_missing = !reader_->has_checkpoint_file();
  Record record;
  ReadResult result;
  while ((result = reader_->Next(record)) == ReadResult::kRecord) {
  }
  for (const std::string& loss : reader_->accepted_losses()) NoteLoss(loss);
  return result;
}

// The read ended in damage: a torn tail (or, under accept_loss, any
// damage) is cut off, the segments after it removed (set aside). Returns
// where appending resumes; nullopt when no segment was left and a new
// journal was started in their place.
absl::StatusOr<std::optional<JournalWriter::Recovery::Tail>>
JournalWriter::Recovery::CutDamage() {
  const std::optional<internal::Damage>& damage = reader_->damage();
  if (!damage.has_value() ||
      (damage->kind != internal::Damage::Kind::kTornTail && !accept_)) {
    return reader_->status();
  }
  if (damage->kind != internal::Damage::Kind::kTornTail) {
    if (absl::Status s = KeepCopyOfDamaged(*damage); !s.ok()) return s;
  }
  // A torn tail (or an accepted loss): cut it off.
  RecoveryReport& report = w_.recovery_;
  report.torn_tail = true;
  report.message = damage->message;
  report.torn_segment = entries_[damage->segment].path;
  report.torn_offset = damage->offset;
  report.discarded_groups = damage->later_groups;
  if (absl::Status s = RemoveSegmentsAfter(damage->segment); !s.ok()) return s;
  std::optional<Tail> tail;
  if (damage->offset == 0) {
    absl::StatusOr<std::optional<Tail>> before = RemoveHeaderless(*damage);
    if (!before.ok() || !before->has_value()) return before;
    tail = **before;
  } else {
    absl::StatusOr<Tail> zeroed = ZeroTornTail(*damage);
    if (!zeroed.ok()) return zeroed.status();
    tail = *zeroed;
  }
  if (absl::Status s = FsyncDirectory(); !s.ok()) return s;
  return tail;
}

// Accepted data loss: the journal keeps its whole prefix, up to the damage;
// the segment about to be cut keeps a copy of what it held.
absl::Status JournalWriter::Recovery::KeepCopyOfDamaged(
    const internal::Damage& damage) {
  NoteLoss(absl::StrFormat(
      "%s; the journal is cut after index %d and what followed is set aside",
      damage.message, damage.last_good_index));
  const std::string& cut = entries_[damage.segment].path;
  std::error_code ec;
  if (!std::filesystem::copy_file(cut, LostPath(cut), ec)) {
    return absl::UnknownError(absl::StrFormat(
        "cannot keep a copy of %s before cutting it: %s", cut, ec.message()));
  }
  return absl::OkStatus();
}

// The segments after `segment` are removed (under accept_loss set aside),
// the last first.
absl::Status JournalWriter::Recovery::RemoveSegmentsAfter(std::size_t segment) {
  for (std::size_t j = entries_.size(); j-- > segment + 1;) {
    const std::string& path = entries_[j].path;
    if (accept_) {
      if (::rename(path.c_str(), LostPath(path).c_str()) != 0) {
        return ErrnoStatus(errno, absl::StrFormat("set aside %s", path));
      }
    } else if (::unlink(path.c_str()) != 0) {
      return ErrnoStatus(errno, absl::StrFormat("unlink %s", path));
    }
    w_.recovery_.removed_files.push_back(path);
  }
  entries_.resize(segment + 1);
  return absl::OkStatus();
}

// The damaged segment never got its header: it is removed as well, and the
// previous one, which the reader walked in full, is the tail. Without a
// previous one a new journal is started (nullopt), unless the journal was
// pruned: then its start is lost.
absl::StatusOr<std::optional<JournalWriter::Recovery::Tail>>
JournalWriter::Recovery::RemoveHeaderless(const internal::Damage& damage) {
  const std::string path = entries_.back().path;
  if (absl::StatusOr<internal::MappedFile> file =
          internal::MappedFile::Open(path);
      file.ok()) {
    w_.recovery_.discarded_bytes += NonZeroBytes(file->bytes(), 0);
  }
  if (accept_ ? ::rename(path.c_str(), LostPath(path).c_str()) != 0
              : ::unlink(path.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("unlink %s", path));
  }
  w_.recovery_.removed_files.push_back(path);
  entries_.pop_back();
  if (absl::Status s = FsyncDirectory(); !s.ok()) return s;
  if (entries_.empty() && first_index_ > 1) {
    return absl::DataLossError(absl::StrFormat(
        "data loss: the segment where the pruned journal %s starts "
        "(index %d) has no valid header: %s",
        directory_, first_index_, damage.message));
  }
  if (entries_.empty()) {
    // A journal whose creation was cut short: created again, as new.
    w_.recovery_.created = true;
    std::uint64_t id = w_.options_.new_journal_id;
    if (id == 0) id = RandomJournalId();
    if (absl::Status s = w_.CreateFirstSegment(id); !s.ok()) return s;
    w_.recovery_.last_index = 0;
    return std::nullopt;
  }
  const SegmentInfo* info = InfoOf(entries_.back().path);
  if (info == nullptr) {
    return absl::DataLossError(
        absl::StrFormat("cannot recover %s: %s", directory_, damage.message));
  }
  return Tail{.entry = entries_.size() - 1,
              .end = info->data_end,
              .last = info->last_index != 0 ? info->last_index
                                            : info->header.first_index - 1,
              .header = info->header};
}

// The torn tail of the last segment: what is cut off is counted, then
// zeroed from the damage on (a punched hole, or zeros written), the file
// kept at its capacity and synced.
absl::StatusOr<JournalWriter::Recovery::Tail>
JournalWriter::Recovery::ZeroTornTail(const internal::Damage& damage) {
  const internal::SegmentEntry& entry = entries_.back();
  const SegmentInfo* info = InfoOf(entry.path);
  if (info == nullptr) {
    return absl::DataLossError(
        absl::StrFormat("cannot recover %s: %s", directory_, damage.message));
  }
  {
    absl::StatusOr<internal::MappedFile> file =
        internal::MappedFile::Open(entry.path);
    if (!file.ok()) return file.status();
    w_.recovery_.discarded_bytes += NonZeroBytes(file->bytes(), damage.offset);
  }
  base::UniqueFd fd(::open(entry.path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", entry.path));
  struct stat st {};
  ::fstat(fd.get(), &st);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  int err = 0;
  if (size > damage.offset &&
      ::fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  static_cast<off_t>(damage.offset),
                  static_cast<off_t>(size - damage.offset)) != 0) {
    // No hole punching here: write the zeros.
    for (std::uint64_t off = damage.offset; off < size && err == 0;
         off += kZeroChunk) {
      err = PwriteAll(fd.get(), w_.zeros_,
                      std::min<std::uint64_t>(kZeroChunk, size - off), off);
    }
  }
  if (err == 0 && size < info->header.capacity &&
      ::fallocate(fd.get(), 0, 0, static_cast<off_t>(info->header.capacity)) !=
          0) {
    err = errno;
  }
  if (err == 0 && ::fsync(fd.get()) != 0) err = errno;
  fd.reset();
  if (err != 0) {
    return ErrnoStatus(
        err, absl::StrFormat("cutting the torn tail of %s", entry.path));
  }
  return Tail{.entry = entries_.size() - 1,
              .end = damage.offset,
              .last = damage.last_good_index,
              .header = info->header};
}

// The read ended cleanly: appending resumes after the last segment's last
// group.
JournalWriter::Recovery::Tail JournalWriter::Recovery::LastSegmentTail() const {
  const SegmentInfo& info = reader_->segments().back();
  return Tail{.entry = entries_.size() - 1,
              .end = info.data_end,
              .last = info.last_index != 0 ? info.last_index
                                           : info.header.first_index - 1,
              .header = info.header};
}

// What the reader found of the segment at `path`; nullptr if it did not
// reach it.
const SegmentInfo* JournalWriter::Recovery::InfoOf(
    const std::string& path) const {
  const SegmentInfo* info = nullptr;
  for (const SegmentInfo& candidate : reader_->segments()) {
    if (candidate.path == path) info = &candidate;
  }
  return info;
}

// Make what was recovered durable: the crash may have left it in the page
// cache only. Then append to the tail segment, after the last group kept,
// which the checkpoint names; and report.
absl::Status JournalWriter::Recovery::Resume(const Tail& tail) {
  for (std::size_t i = first_synced_; i <= tail.entry; ++i) {
    const base::UniqueFd fd(
        ::open(entries_[i].path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd || ::fsync(fd.get()) != 0) {
      return ErrnoStatus(errno, absl::StrFormat("fsync %s", entries_[i].path));
    }
  }
  absl::StatusOr<base::UniqueFd> fd =
      w_.OpenSegmentFd(entries_[tail.entry].path, O_RDWR);
  if (!fd.ok()) return fd.status();
  w_.journal_id_ = tail.header.journal_id;
  w_.segments_.push_back(SegmentFile{.fd = std::move(*fd),
                                     .active = true,
                                     .version = tail.header.version,
                                     .users = 0,
                                     .first_index = tail.header.first_index,
                                     .capacity = tail.header.capacity,
                                     .path = entries_[tail.entry].path});
  w_.active_ = 0;
  w_.write_pos_ = tail.end;
  if (absl::Status s = w_.LoadTailBlock(); !s.ok()) return s;
  w_.last_index_ = w_.durable_index_ = tail.last;
  const std::vector<SegmentInfo>& infos = reader_->segments();
  for (std::size_t i = std::min(tail.entry + 1, infos.size()); i-- > 0;) {
    if (infos[i].last_group_first_index != 0) {
      w_.durable_group_ = {.first_index = infos[i].last_group_first_index,
                           .segment_first_index = infos[i].header.first_index,
                           .offset = infos[i].last_group_offset,
                           .crc = infos[i].last_group_crc};
      break;
    }
  }
  // A journal whose segments hold no record yet (a seeded one, which
  // starts past 1: its last index is the one before its first) has no
  // group to name.
  if (tail.last >= first_index_ && w_.durable_group_.first_index == 0) {
    return absl::InternalError(
        absl::StrFormat("recovery of %s: the group holding index %d was not "
                        "found",
                        directory_, tail.last));
  }
  RecoveryReport& report = w_.recovery_;
  report.last_index = tail.last;
  report.segments = entries_.size();
  report.segments_read = infos.size();
  report.read_from_index = read_from_ == 0 ? 1 : read_from_;
  return absl::OkStatus();
}

// WriterOptions::accept_loss let `what` go: added to the report.
void JournalWriter::Recovery::NoteLoss(std::string_view what) {
  RecoveryReport& report = w_.recovery_;
  report.loss_accepted = true;
  absl::StrAppendFormat(&report.loss_message, "%s%s",
                        report.loss_message.empty() ? "" : "; ", what);
}

absl::Status JournalWriter::Recovery::FsyncDirectory() const {
  if (::fsync(w_.dir_fd_.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", directory_));
  }
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
