// JournalReader: sequential, zero-copy reading of a journal, every checksum
// verified.
//
// The reader maps each segment read-only and walks its groups in order. A
// group is checked in full (trailer magic, CRC32C, contiguous indexes,
// command kinds, exact sizes, zero padding) before the first of its records
// is handed out, so a record is never yielded from a group that does not
// verify. Records are views into the mapping: `Record::frame` points at the
// frame bytes exactly as they were received, nothing is copied, and the
// views stay valid for the reader's lifetime (segments stay mapped).
//
//   auto reader = JournalReader::Open(dir);
//   if (!reader.ok()) return reader.status();
//   Record r;
//   while ((*reader)->Next(r) == ReadResult::kRecord) Apply(r.frame);
//   if (!(*reader)->status().ok()) return (*reader)->status();
//
// The end of the journal is where the last segment's data ends and nothing
// but zeros follows. Anything else (a torn tail left by a crash, a damaged
// header, corruption) ends the reading with an error naming the file, the
// offset and the last good index: a journal that is not whole is never
// reported as read in full. The reader does not repair anything; opening the
// journal for appending (JournalWriter::Open) recovers a torn tail.
//
// The journal's end is witnessed: the reader holds it against the journal's
// checkpoint (checkpoint.h), read before the segments are listed. Records
// up to the checkpoint's durable index must all be there, the group it
// names must be the one on disk, and a segment file must be as long as its
// header's capacity (the writer preallocates it): a journal cut short at a
// group boundary, a deleted last segment or a journal rewritten by another
// writer is DataLoss naming the missing indexes and files, not a clean end.
// With ReaderOptions::accept_loss a disagreement with the checkpoint (or a
// damaged one) is recorded in accepted_losses() and reading goes on; damage
// to the segments still ends the reading.
//
// A pruned journal starts where its start record (start.h, the file START)
// says: its first segment must begin exactly there (one that begins later
// is DataLoss, as a missing first segment of an unpruned journal is), and
// segment files that begin earlier, left by an interrupted prune, are
// ignored.
#ifndef ORDERWIRE_JOURNAL_READER_H_
#define ORDERWIRE_JOURNAL_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/frame.h"
#include "journal/checkpoint.h"
#include "journal/format.h"
#include "journal/internal/scan.h"
#include "journal/record.h"
#include "journal/start.h"

namespace orderwire::journal {

enum class ReadResult : std::uint8_t {
  kRecord,  // `record` holds the next record
  kEnd,     // the journal ended cleanly
  kError,   // see status(): damage, or an I/O error
};

// What the reader learnt about a segment it entered.
struct SegmentInfo {
  std::string path;
  SegmentHeader header;
  // The caller's metadata from the segment's header block (checksummed;
  // empty if the segment has none). header.first_index is the index from
  // which it applies.
  std::string metadata{};
  std::uint64_t file_size = 0;
  std::uint64_t records = 0;     // records read from it so far
  std::uint64_t groups = 0;      // groups read from it so far
  std::uint64_t last_index = 0;  // last index read from it (0 if none)
  std::uint64_t data_end = 0;    // offset after its last group read
  // The last group read from it (0s if none): where, its first index and
  // its trailer checksum, as a checkpoint names a group.
  std::uint64_t last_group_offset = 0;
  std::uint64_t last_group_first_index = 0;
  std::uint32_t last_group_crc = 0;
};

struct ReaderOptions {
  // Start at this segment (in name order), at the index its header names:
  // the reading of a tail only. The checkpoint is not held against it.
  std::size_t first_segment = 0;
  // Hold the journal against its checkpoint (see above).
  bool use_checkpoint = true;
  // The operator accepts losing records: a checkpoint that disagrees with
  // the journal, is damaged or belongs to another journal is recorded in
  // accepted_losses() instead of ending the reading.
  bool accept_loss = false;
  // Seek (docs/JOURNAL.md "Seek"): start at the record with this index (0:
  // the journal's start). Records before it are not yielded, and the
  // segments and groups before it are not read, so damage there is not
  // reported. An index past the end of the journal reads nothing: Next()
  // returns kEnd (the journal's end still held against the checkpoint), so
  // a follower can start at last_index() + 1. An index before the first
  // segment's first index (a pruned journal) fails Open with OutOfRange
  // naming both.
  std::uint64_t from_index = 0;
  // Seek by time: start at the first record whose receive_ns >= this. The
  // group is found by binary search over the segments' and groups' first
  // receive times, then records are skipped forward while receive_ns < T.
  // With one writer's CLOCK_REALTIME that never stepped back this is the
  // first such record of the journal; if the clock stepped back the result
  // is still defined (the first record >= T after the group the search
  // lands on) but an earlier record >= T may exist. Exclusive with
  // from_index and first_segment.
  std::optional<std::uint64_t> from_time_ns = std::nullopt;
};

class JournalReader {
 public:
  // Lists the segments of `directory`. Errors: NotFound if the directory
  // does not exist or holds no segment; the errno of reading it. Nothing is
  // mapped or checked yet. With first_segment > 0 reading starts at that
  // segment (in name order), at the index its header names: recovery reads
  // only the tail this way. Cold.
  static absl::StatusOr<std::unique_ptr<JournalReader>> Open(
      const std::string& directory, std::size_t first_segment = 0);
  // The same with options. Errors also: a damaged checkpoint (DataLoss)
  // unless options.accept_loss.
  static absl::StatusOr<std::unique_ptr<JournalReader>> Open(
      const std::string& directory, const ReaderOptions& options);

  JournalReader(const JournalReader&) = delete;
  JournalReader& operator=(const JournalReader&) = delete;

  // The next record. kError: status() says what and where (DataLoss for a
  // torn tail or damage, with the file, offset and last good index;
  // Unimplemented for an unsupported format version; the errno of an I/O
  // error). After kEnd or kError every call returns the same. Hot path: a
  // few loads per record; per group, one pass over its bytes.
  ReadResult Next(Record& record) noexcept {
    if (records_left_ != 0) {
      // The group check verified stored indexes (versions 1, 2) equal to
      // first_index + position, and every frame a whole command frame: the
      // index is that position either way.
      const std::uint64_t index = next_index_ - records_left_;
      --records_left_;
      cursor_ = DecodeRecord(cursor_, record_index_size_, index, record);
      return ReadResult::kRecord;
    }
    return NextGroup(record);
  }

  // OK until Next() returned kError.
  [[nodiscard]] const absl::Status& status() const noexcept { return status_; }
  // The damage that ended the reading, if that is what ended it.
  [[nodiscard]] const std::optional<internal::Damage>& damage() const {
    return damage_;
  }

  // The checkpoint the journal is held against (none: the journal has none,
  // options.use_checkpoint is false, or it was set aside under accept_loss).
  [[nodiscard]] const std::optional<Checkpoint>& checkpoint() const {
    return checkpoint_;
  }
  // Whether the journal directory holds a checkpoint file at all.
  [[nodiscard]] bool has_checkpoint_file() const { return checkpoint_file_; }
  // Under accept_loss: each loss the reader let pass, in words (indexes,
  // files, why).
  [[nodiscard]] const std::vector<std::string>& accepted_losses() const {
    return accepted_losses_;
  }

  // The journal's first index: 1, or for a pruned journal the first index
  // its start record (start.h) gives. Segment files that begin before it
  // (left over from an interrupted prune) are not read: see
  // pruned_leftovers().
  [[nodiscard]] std::uint64_t first_index() const noexcept {
    return first_index_;
  }
  // The start record, if the journal has one (it was pruned).
  [[nodiscard]] const std::optional<JournalStart>& journal_start() const {
    return journal_start_;
  }
  // Segment files below first_index(): pruned, but a prune was interrupted
  // before it removed them. Ignored; the next prune removes them.
  [[nodiscard]] const std::vector<std::string>& pruned_leftovers() const {
    return pruned_leftovers_;
  }

  // The segments entered so far (all of them after kEnd).
  [[nodiscard]] const std::vector<SegmentInfo>& segments() const {
    return infos_;
  }
  [[nodiscard]] std::size_t segment_count() const { return set_.size(); }
  // Index of the last record handed out (0 before the first).
  [[nodiscard]] std::uint64_t last_index() const noexcept {
    return next_index_ - 1 - records_left_;
  }
  // For progress display, both counted from where reading starts (the first
  // segment read, or after a seek the seek point, once the first Next()
  // has positioned it): the bytes of the segment files from there on, and
  // the bytes passed since.
  [[nodiscard]] std::uint64_t total_bytes() const noexcept {
    return total_bytes_;
  }
  [[nodiscard]] std::uint64_t bytes_done() const noexcept {
    return done_before_segment_ + pos_ - seek_offset_;
  }
  // What positioning at ReaderOptions::from_index / from_time_ns cost (all
  // zero without a seek): O(log segments + log groups) probes.
  [[nodiscard]] const internal::SeekCounters& seek_counters() const noexcept {
    return seek_counters_;
  }

 private:
  JournalReader(std::vector<internal::SegmentEntry> entries,
                std::uint64_t total_bytes, const ReaderOptions& options);

  ReadResult NextGroup(Record& record) noexcept;
  // Positions the reader at options' from_index / from_time_ns: enters the
  // segment and sets pos_ and next_index_. False (status set) on an error.
  bool Seek();
  // Seek by time: the segment to start in (binary search over the first
  // receive times of segments).
  absl::StatusOr<std::size_t> SegmentForTime(std::uint64_t time_ns);
  // Whether the record at `record`, whose index is `index`, comes before
  // the seek point.
  [[nodiscard]] bool BeforeSeekPoint(const std::byte* record,
                                     std::uint64_t index) const noexcept;
  // Maps and checks segment `i`; false (status set) on an error.
  bool EnterSegment(std::size_t i);
  // EnterSegment's failures, each setting the status: segment `i`'s header
  // does not check (`check` says why); it belongs to another journal than
  // the start record, the checkpoint or the first segment (false; true if
  // it is of this one, or accept_loss let the checkpoint go); it does not
  // start at next_index_.
  void BadSegmentHeader(std::size_t i, const internal::HeaderCheck& check);
  bool OfThisJournal(std::size_t i, const SegmentHeader& header);
  void SegmentOutOfPlace(std::size_t i, const SegmentHeader& header);
  ReadResult Damaged(std::size_t segment, std::uint64_t offset, bool torn,
                     std::string_view problem);
  ReadResult Fail(absl::Status status);
  // The segment being read ends at pos_ but its file is shorter than its
  // header's capacity: it was truncated.
  ReadResult Truncated();
  // Segment `segment` cannot be entered (a damaged or foreign header, a
  // first segment that does not start at 1): DataLoss, with the damage
  // placed at its offset 0, where the journal can be cut.
  void SegmentDamage(std::size_t segment, const std::string& message);
  // The journal ended cleanly at next_index_ - 1: held against the
  // checkpoint.
  ReadResult End();
  // A valid group reaching the checkpoint's group: is it that group?
  bool CheckCheckpointGroup(const internal::GroupCheck& check);
  // A disagreement with the checkpoint: an error, or under accept_loss a
  // recorded loss. False if the reading must stop.
  bool CheckpointProblem(std::string message);

  internal::SegmentSet set_;
  std::size_t first_segment_ = 0;
  bool accept_loss_ = false;
  std::optional<Checkpoint> checkpoint_;
  bool checkpoint_file_ = false;
  // The checkpoint's group first index, until a group reaching it was read.
  std::uint64_t checkpoint_group_ = 0;
  std::vector<std::string> accepted_losses_;
  std::optional<JournalStart> journal_start_;
  std::uint64_t first_index_ = 1;
  std::vector<std::string> pruned_leftovers_;
  std::vector<SegmentInfo> infos_;
  std::uint64_t total_bytes_ = 0;
  std::uint64_t done_before_segment_ = 0;
  std::vector<std::uint64_t> segment_bytes_;  // file sizes at Open, by entry
  std::uint64_t seek_offset_ = 0;  // where a seek put the first segment's pos_

  std::size_t segment_ = 0;
  std::span<const std::byte> bytes_;
  std::uint64_t pos_ = 0;  // offset of the next group in the segment
  // How the segment's groups are framed: GroupFormatOf(its version).
  GroupFormat group_format_ = GroupFormatOf(kFormatVersion);
  // group_format_.record_index_size, for Next().
  std::size_t record_index_size_ = 0;
  const std::byte* cursor_ = nullptr;
  std::uint32_t records_left_ = 0;
  std::uint64_t next_index_ = 1;  // index of the next group's first record
  enum class State : std::uint8_t { kStart, kReading, kEnd, kError };
  State state_ = State::kStart;
  absl::Status status_;
  std::optional<internal::Damage> damage_;
  // Seek: skip records before the seek point until the first one after it.
  std::uint64_t from_index_ = 0;
  std::optional<std::uint64_t> from_time_ns_;
  bool seeking_ = false;
  internal::SeekCounters seek_counters_;
};

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_READER_H_
