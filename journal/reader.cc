// JournalReader; see reader.h.
#include "journal/reader.h"

#include <sys/stat.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "journal/cut.h"
#include "journal/start.h"

namespace orderwire::journal {

absl::StatusOr<std::unique_ptr<JournalReader>> JournalReader::Open(
    const std::string& directory, std::size_t first_segment) {
  return Open(directory, ReaderOptions{.first_segment = first_segment});
}

namespace {

// The checkpoint a reader holds the journal against, read before the
// segments are looked at.
struct CheckpointRead {
  std::optional<Checkpoint> checkpoint;
  bool file = false;  // the directory holds a checkpoint file
  // Under accept_loss, an undecodable checkpoint set aside: in words.
  std::string loss;
};

// The checkpoint first: it witnesses what was durable before the segments
// are looked at, so a writer appending meanwhile only adds. None when the
// options do not use it or the reader starts at a later segment.
absl::StatusOr<CheckpointRead> ReadReaderCheckpoint(
    const std::string& directory, const ReaderOptions& options) {
  CheckpointRead out;
  if (!options.use_checkpoint || options.first_segment != 0) return out;
  absl::StatusOr<std::optional<Checkpoint>> read = ReadCheckpoint(directory);
  if (read.ok()) {
    out.checkpoint = *read;
    out.file = out.checkpoint.has_value();
  } else if (options.accept_loss &&
             read.status().code() == absl::StatusCode::kDataLoss) {
    out.file = true;
    out.loss = absl::StrFormat(
        "%s; set aside (--accept-loss): the journal's end is not checked",
        read.status().message());
  } else if (read.status().code() == absl::StatusCode::kNotFound) {
    // The directory itself is missing: said when it is listed.
  } else {
    return read.status();
  }
  return out;
}

// The journal's segments from its start on.
struct SegmentListing {
  std::optional<JournalStart> start;
  std::vector<internal::SegmentEntry> entries;
  // Segment files below the start: left over from an interrupted prune.
  std::vector<std::string> leftovers;
};

// The start record (start.h): where a pruned journal begins. Segment files
// that begin before it are left over from an interrupted prune. Errors: the
// start record's, the listing's, a journal with no segment (from its
// start on).
absl::StatusOr<SegmentListing> ListJournal(const std::string& directory) {
  SegmentListing out;
  absl::StatusOr<std::optional<JournalStart>> start =
      ReadJournalStart(directory);
  if (!start.ok() && start.status().code() != absl::StatusCode::kNotFound) {
    return start.status();
  }
  out.start = start.ok() ? *start : std::nullopt;
  absl::StatusOr<std::vector<internal::SegmentEntry>> entries =
      internal::ListSegments(directory);
  if (!entries.ok()) return entries.status();
  out.entries = std::move(*entries);
  if (out.start.has_value()) {
    std::erase_if(out.entries, [&](const internal::SegmentEntry& entry) {
      if (entry.name_index >= out.start->first_index) return false;
      out.leftovers.push_back(entry.path);
      return true;
    });
  }
  if (out.entries.empty() && out.start.has_value()) {
    return absl::DataLossError(absl::StrFormat(
        "data loss: %s holds no journal segment from index %d on, where its "
        "start record (START, written by a prune) says the journal starts: "
        "segment file %s is missing",
        directory, out.start->first_index,
        SegmentFileName(out.start->first_index)));
  }
  if (out.entries.empty()) {
    return absl::NotFoundError(absl::StrFormat(
        "no journal segments (files named like 00000000000000000001.owj) in "
        "%s",
        directory));
  }
  return out;
}

// Where the options say to start, checked against each other and the
// segments.
absl::Status CheckStartingPoint(
    const std::string& directory, const ReaderOptions& options,
    const std::vector<internal::SegmentEntry>& entries) {
  if (options.from_index != 0 && options.from_time_ns.has_value()) {
    return absl::InvalidArgumentError(
        "a reader starts at an index or at a time, not both");
  }
  const bool seek = options.from_index != 0 || options.from_time_ns.has_value();
  if (seek && options.first_segment != 0) {
    return absl::InvalidArgumentError(
        "a reader seeks (from_index, from_time_ns) or starts at a segment, "
        "not both");
  }
  if (options.from_index != 0 &&
      options.from_index < entries.front().name_index) {
    return absl::OutOfRangeError(absl::StrFormat(
        "index %d is not in the journal %s: it starts at index %d (segment "
        "%s); the records before it were pruned or are missing",
        options.from_index, directory, entries.front().name_index,
        entries.front().path));
  }
  if (options.first_segment >= entries.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s has %d segments, cannot start at segment %d",
                        directory, entries.size(), options.first_segment));
  }
  return absl::OkStatus();
}

// The size of each segment file (0 if it cannot be stat'ed).
std::vector<std::uint64_t> SegmentFileSizes(
    const std::vector<internal::SegmentEntry>& entries) {
  std::vector<std::uint64_t> sizes;
  sizes.reserve(entries.size());
  for (const internal::SegmentEntry& entry : entries) {
    struct stat st {};
    sizes.push_back(::stat(entry.path.c_str(), &st) == 0
                        ? static_cast<std::uint64_t>(st.st_size)
                        : 0);
  }
  return sizes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<JournalReader>> JournalReader::Open(
    const std::string& directory, const ReaderOptions& options) {
  // A journal whose tail is being cut (cut.h) holds records on their way
  // out: it is read only once a writer has finished the cut.
  if (absl::Status s = CheckNoPendingCut(directory); !s.ok()) return s;
  absl::StatusOr<CheckpointRead> checkpoint =
      ReadReaderCheckpoint(directory, options);
  if (!checkpoint.ok()) return checkpoint.status();
  absl::StatusOr<SegmentListing> listing = ListJournal(directory);
  if (!listing.ok()) return listing.status();
  if (absl::Status s = CheckStartingPoint(directory, options, listing->entries);
      !s.ok()) {
    return s;
  }
  // Progress counts the bytes from where reading starts: the segments
  // before a first segment are not work (nor, after a seek, those before
  // the seek point: Seek() takes them off).
  std::vector<std::uint64_t> sizes = SegmentFileSizes(listing->entries);
  std::uint64_t total = 0;
  for (std::size_t i = options.first_segment; i < sizes.size(); ++i) {
    total += sizes[i];
  }
  auto reader = std::unique_ptr<JournalReader>(
      new JournalReader(std::move(listing->entries), total, options));
  reader->segment_bytes_ = std::move(sizes);
  reader->checkpoint_ = checkpoint->checkpoint;
  reader->checkpoint_file_ = checkpoint->file;
  reader->journal_start_ = listing->start;
  reader->pruned_leftovers_ = std::move(listing->leftovers);
  if (listing->start.has_value()) {
    reader->first_index_ = listing->start->first_index;
    reader->next_index_ = listing->start->first_index;
  }
  // A checkpoint naming a group that was pruned since (the writer's last
  // one before the prune) still witnesses the durable index; only the
  // group itself can no longer be compared.
  const std::optional<Checkpoint>& witness = checkpoint->checkpoint;
  if (witness.has_value() && witness->durable_index > 0 &&
      witness->durable_index >= reader->first_index_) {
    reader->checkpoint_group_ = witness->group_first_index;
  }
  if (!checkpoint->loss.empty()) {
    reader->accepted_losses_.push_back(std::move(checkpoint->loss));
  }
  return reader;
}

JournalReader::JournalReader(std::vector<internal::SegmentEntry> entries,
                             std::uint64_t total_bytes,
                             const ReaderOptions& options)
    : set_(std::move(entries)),
      first_segment_(options.first_segment),
      accept_loss_(options.accept_loss),
      total_bytes_(total_bytes),
      from_index_(options.from_index),
      from_time_ns_(options.from_time_ns) {}

namespace {

// The receive time of the first record of `group`, a group of `format`.
std::uint64_t FirstReceiveNs(std::span<const std::byte> segment,
                             const internal::FoundGroup& group,
                             const GroupFormat& format) {
  return RecordReceiveNs(segment.data() + group.offset + format.header_size,
                         format.record_index_size);
}

}  // namespace

bool JournalReader::BeforeSeekPoint(const std::byte* record,
                                    std::uint64_t index) const noexcept {
  if (from_time_ns_.has_value()) {
    return RecordReceiveNs(record, record_index_size_) < *from_time_ns_;
  }
  return index < from_index_;
}

absl::StatusOr<std::size_t> JournalReader::SegmentForTime(
    std::uint64_t time_ns) {
  // The segments whose first record was received before `time_ns` come
  // first (one writer's clock): find where they end, start in the last.
  std::size_t low = 0;
  std::size_t high = set_.size();
  while (low < high) {
    const std::size_t mid = low + (high - low) / 2;
    absl::StatusOr<std::span<const std::byte>> bytes = set_.Map(mid);
    if (!bytes.ok()) return bytes.status();
    ++seek_counters_.segments_mapped;
    std::uint16_t version = 0;
    if (bytes->size() >= kSegmentHeaderSize) {
      version = LoadStruct<kSegmentHeaderLayout, SegmentHeader>(bytes->data())
                    .version;
    }
    const GroupFormat format = GroupFormatOf(version);
    const std::optional<internal::FoundGroup> first =
        internal::FindGroupAtOrAfter(*bytes, kFirstGroupOffset, format,
                                     seek_counters_);
    if (first.has_value() && FirstReceiveNs(*bytes, *first, format) < time_ns) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low == 0 ? 0 : low - 1;
}

bool JournalReader::Seek() {
  // The segment: by the index in its name, or by its first receive time.
  std::size_t segment = 0;
  if (from_time_ns_.has_value()) {
    absl::StatusOr<std::size_t> found = SegmentForTime(*from_time_ns_);
    if (!found.ok()) {
      Fail(found.status());
      return false;
    }
    segment = *found;
  } else {
    std::size_t low = 0;  // name_index <= from_index_ (checked at Open)
    std::size_t high = set_.size();
    while (high - low > 1) {
      const std::size_t mid = low + (high - low) / 2;
      if (set_.entry(mid).name_index <= from_index_) {
        low = mid;
      } else {
        high = mid;
      }
    }
    segment = low;
  }
  first_segment_ = segment;
  next_index_ = set_.entry(segment).name_index;  // its header must agree
  if (!EnterSegment(segment)) return false;
  ++seek_counters_.segments_mapped;

  // The group: binary search over offsets. `low` is a group start whose
  // first record is before the seek point (or the segment's first group,
  // not yet verified); no group that verifies and starts at or after
  // `high` is before it.
  const GroupFormat format = group_format_;
  const std::uint64_t alignment = format.alignment;
  auto before = [&](const internal::FoundGroup& group) {
    return from_time_ns_.has_value()
               ? FirstReceiveNs(bytes_, group, format) < *from_time_ns_
               : group.check.header.first_index <= from_index_;
  };
  std::uint64_t low = kFirstGroupOffset;
  std::uint64_t low_first = next_index_;
  std::uint64_t high = bytes_.size();
  while (true) {
    const std::uint64_t mid = (low + (high - low) / 2) / alignment * alignment;
    if (mid <= low) break;
    const std::optional<internal::FoundGroup> found =
        internal::FindGroupAtOrAfter(bytes_, mid, format, seek_counters_);
    if (found.has_value() && found->offset < high && before(*found)) {
      low = found->offset;
      low_first = found->check.header.first_index;
    } else {
      high = mid;
    }
  }
  if (!from_time_ns_.has_value()) {
    // Step over the few whole groups before the index (damaged ones
    // included: they hold only records before it). A group that starts
    // after it means the records from the index on are missing here:
    // reading from `low` reports that.
    while (true) {
      const std::optional<internal::FoundGroup> found =
          internal::FindGroupAtOrAfter(bytes_, low, format, seek_counters_);
      if (!found.has_value() || found->check.header.first_index > from_index_) {
        break;
      }
      const std::uint64_t last = found->check.header.first_index +
                                 found->check.header.record_count - 1;
      if (last >= from_index_) {
        low = found->offset;
        low_first = found->check.header.first_index;
        break;
      }
      low = found->check.end;
      low_first = last + 1;
    }
  }
  pos_ = low;
  next_index_ = low_first;
  infos_.back().data_end = low;
  // Progress: the work is what lies after the seek point.
  for (std::size_t i = 0; i < segment && i < segment_bytes_.size(); ++i) {
    total_bytes_ -= std::min(total_bytes_, segment_bytes_[i]);
  }
  total_bytes_ -= std::min(total_bytes_, low);
  seek_offset_ = low;
  // The checkpoint's group lies before the seek point: it is not read (the
  // records after it still are held against the checkpoint's end).
  if (checkpoint_group_ != 0 && checkpoint_group_ < next_index_) {
    checkpoint_group_ = 0;
  }
  seeking_ = true;
  return true;
}

bool JournalReader::CheckpointProblem(std::string message) {
  if (accept_loss_) {
    accepted_losses_.push_back(std::move(message));
    checkpoint_.reset();
    checkpoint_group_ = 0;
    return true;
  }
  Fail(absl::DataLossError(message));
  return false;
}

bool JournalReader::CheckCheckpointGroup(const internal::GroupCheck& check) {
  const Checkpoint& c = *checkpoint_;
  checkpoint_group_ = 0;
  const std::uint64_t last =
      check.header.first_index + check.header.record_count - 1;
  const SegmentHeader& segment = infos_.back().header;
  if (check.header.first_index == c.group_first_index &&
      last == c.durable_index && segment.first_index == c.segment_first_index &&
      pos_ == c.group_offset && check.crc == c.group_crc) {
    return true;
  }
  return CheckpointProblem(absl::StrFormat(
      "data loss: the journal's checkpoint names the group of indexes %d..%d "
      "at offset %d of segment %s with checksum 0x%08x, but the journal "
      "holds indexes %d..%d at offset %d of %s with checksum 0x%08x: the "
      "records up to index %d that were durable have been overwritten (by "
      "another writer, or a restored copy of the journal)",
      c.group_first_index, c.durable_index, c.group_offset,
      SegmentFileName(c.segment_first_index), c.group_crc,
      check.header.first_index, last, pos_, infos_.back().path, check.crc,
      c.durable_index));
}

void JournalReader::SegmentDamage(std::size_t segment,
                                  const std::string& message) {
  internal::Damage damage;
  damage.kind = internal::Damage::Kind::kDataLoss;
  damage.segment = segment;
  damage.offset = 0;
  damage.last_good_index = next_index_ - 1;
  damage.message = message;
  damage_ = std::move(damage);
  Fail(absl::DataLossError(message));
}

ReadResult JournalReader::Truncated() {
  const SegmentInfo& info = infos_.back();
  const std::uint64_t last = next_index_ - 1;
  std::string message = absl::StrFormat(
      "data loss in segment %s: the file is %d bytes, shorter than the %d "
      "bytes its header promises (the writer preallocates every segment "
      "in full): it was truncated. The journal holds indexes up to %d "
      "there (data up to offset %d); whatever followed is gone",
      info.path, bytes_.size(), info.header.capacity, last, pos_);
  if (checkpoint_.has_value() && checkpoint_->durable_index > last) {
    absl::StrAppendFormat(
        &message,
        ", including records %d..%d, which the checkpoint says were durable",
        last + 1, checkpoint_->durable_index);
  }
  internal::Damage damage;
  damage.kind = internal::Damage::Kind::kDataLoss;
  damage.segment = segment_;
  damage.offset = pos_;
  damage.last_good_index = last;
  damage.message = message;
  damage_ = std::move(damage);
  return Fail(absl::DataLossError(message));
}

ReadResult JournalReader::End() {
  const std::uint64_t last = next_index_ - 1;
  if (checkpoint_.has_value() && checkpoint_->durable_index > last) {
    const Checkpoint& c = *checkpoint_;
    const SegmentInfo& info = infos_.back();
    std::string files;
    if (c.segment_first_index > info.header.first_index) {
      files =
          last + 1 == c.segment_first_index
              ? absl::StrFormat("segment file %s is missing",
                                SegmentFileName(last + 1))
              : absl::StrFormat(
                    "segment files from %s to %s (which held index %d) "
                    "are missing",
                    SegmentFileName(last + 1),
                    SegmentFileName(c.segment_first_index), c.durable_index);
    } else {
      files = absl::StrFormat(
          "segment %s was cut short: it ends at offset %d, and the group "
          "the checkpoint names is at offset %d",
          info.path, info.data_end, c.group_offset);
    }
    if (!CheckpointProblem(absl::StrFormat(
            "data loss: the journal ends at index %d, but its checkpoint "
            "(%s) says every index up to %d was durable: records %d..%d are "
            "missing; %s",
            last, DescribeCheckpoint(c), c.durable_index, last + 1,
            c.durable_index, files))) {
      return ReadResult::kError;
    }
  }
  state_ = State::kEnd;
  pos_ = bytes_.size();
  return ReadResult::kEnd;
}

ReadResult JournalReader::Fail(absl::Status status) {
  state_ = State::kError;
  status_ = std::move(status);
  records_left_ = 0;
  return ReadResult::kError;
}

ReadResult JournalReader::Damaged(std::size_t segment, std::uint64_t offset,
                                  bool torn, std::string_view problem) {
  absl::StatusOr<internal::Damage> damage = internal::AnalyzeDamage(
      set_, segment, offset, next_index_, torn, problem,
      checkpoint_.has_value() ? checkpoint_->durable_index : 0);
  if (!damage.ok()) return Fail(damage.status());
  std::string message = damage->message;
  if (damage->kind == internal::Damage::Kind::kTornTail) {
    absl::StrAppendFormat(
        &message,
        ". The journal was not closed cleanly; records after index %d are "
        "not in it. Opening it for appending (orderwire journal write) "
        "recovers it by cutting the torn tail off",
        damage->last_good_index);
  }
  damage_ = std::move(*damage);
  return Fail(absl::DataLossError(message));
}

bool JournalReader::EnterSegment(std::size_t i) {
  absl::StatusOr<std::span<const std::byte>> bytes = set_.Map(i);
  if (!bytes.ok()) {
    Fail(bytes.status());
    return false;
  }
  const internal::SegmentEntry& entry = set_.entry(i);
  const internal::HeaderCheck check =
      internal::CheckSegmentHeader(*bytes, entry.name_index);
  if (!check.ok) {
    BadSegmentHeader(i, check);
    return false;
  }
  if (!OfThisJournal(i, check.header)) return false;
  if (i == first_segment_ && i > 0) next_index_ = check.header.first_index;
  if (check.header.first_index != next_index_) {
    SegmentOutOfPlace(i, check.header);
    return false;
  }
  done_before_segment_ += bytes_.size();
  segment_ = i;
  bytes_ = *bytes;
  pos_ = kFirstGroupOffset;
  group_format_ = GroupFormatOf(check.header.version);
  record_index_size_ = group_format_.record_index_size;
  SegmentInfo info;
  info.path = entry.path;
  info.header = check.header;
  info.metadata = check.metadata;
  info.file_size = bytes->size();
  info.data_end = kFirstGroupOffset;
  infos_.push_back(std::move(info));
  return true;
}

void JournalReader::BadSegmentHeader(std::size_t i,
                                     const internal::HeaderCheck& check) {
  const internal::SegmentEntry& entry = set_.entry(i);
  // Only the last segment can lack its header after a crash: a later
  // segment proves this header was written (docs/JOURNAL.md "Recovery":
  // a damaged header other than the last one's is data loss, and
  // recovery refuses it).
  if (check.torn && i + 1 == set_.size() && i == 0 &&
      entry.name_index > first_index_) {
    // A lone segment whose header never got written is a torn tail only
    // where it would be the journal's first segment: its file name says
    // where it begins, and recovery checks that name first
    // (writer_recovery.cc).
    SegmentDamage(
        i,
        absl::StrFormat(
            "segment %s: %s; and the journal starts at index %d, but "
            "this, its first segment file, begins at index %d: the "
            "segments holding records %d..%d are missing (from segment "
            "file %s)",
            entry.path, check.problem, first_index_, entry.name_index,
            first_index_, entry.name_index - 1, SegmentFileName(first_index_)));
  } else if (check.torn && i + 1 == set_.size()) {
    Damaged(i, 0, true, check.problem);
  } else if (check.header.magic == kSegmentMagic &&
             (check.header.version < kOldestFormatVersion ||
              check.header.version > kFormatVersion)) {
    Fail(absl::UnimplementedError(
        absl::StrFormat("segment %s: %s", entry.path, check.problem)));
  } else {
    SegmentDamage(
        i, absl::StrFormat("segment %s: %s (after index %d)%s", entry.path,
                           check.problem, next_index_ - 1,
                           check.torn ? "; only the last segment may be "
                                        "incomplete"
                                      : ""));
  }
}

bool JournalReader::OfThisJournal(std::size_t i, const SegmentHeader& header) {
  const internal::SegmentEntry& entry = set_.entry(i);
  if (infos_.empty() && journal_start_.has_value() &&
      journal_start_->journal_id != header.journal_id) {
    SegmentDamage(
        i, absl::StrFormat(
               "the journal's start record (%s) belongs to another journal "
               "(journal id %016x; segment %s has %016x)",
               kJournalStartFileName, journal_start_->journal_id, entry.path,
               header.journal_id));
    return false;
  }
  if (infos_.empty() && checkpoint_.has_value() &&
      checkpoint_->journal_id != header.journal_id) {
    if (!CheckpointProblem(absl::StrFormat(
            "the journal's checkpoint belongs to another journal (journal id "
            "%016x; segment %s has %016x)",
            checkpoint_->journal_id, entry.path, header.journal_id))) {
      return false;
    }
  }
  if (!infos_.empty() &&
      infos_.front().header.journal_id != header.journal_id) {
    SegmentDamage(
        i, absl::StrFormat("segment %s belongs to another journal (journal id "
                           "%016x; %s has %016x)",
                           entry.path, header.journal_id, infos_.front().path,
                           infos_.front().header.journal_id));
    return false;
  }
  return true;
}

void JournalReader::SegmentOutOfPlace(std::size_t i,
                                      const SegmentHeader& header) {
  const internal::SegmentEntry& entry = set_.entry(i);
  if (i == 0 && first_index_ > 1) {
    SegmentDamage(
        i, absl::StrFormat(
               "segment %s: the journal starts at index %d (its start "
               "record START, written when it was pruned, says so), but "
               "its first segment starts at index %d: the segments "
               "holding records %d..%d are missing (from segment file %s)",
               entry.path, first_index_, header.first_index, first_index_,
               header.first_index - 1, SegmentFileName(first_index_)));
    return;
  }
  if (i == 0) {
    SegmentDamage(
        i, absl::StrFormat("segment %s: the journal's first segment starts at "
                           "index %d, not 1: the segments before it are "
                           "missing (records 1..%d, from segment file %s)",
                           entry.path, header.first_index,
                           header.first_index - 1, SegmentFileName(1)));
    return;
  }
  // The previous segment ended early, or segments overlap.
  const bool missing = header.first_index > next_index_;
  if (bytes_.size() < infos_.back().header.capacity) {
    Truncated();
    return;
  }
  const std::string problem =
      missing ? absl::StrFormat(
                    "the segment ends here but the next one, %s, starts "
                    "at index %d: records %d..%d (segment file %s) are "
                    "missing",
                    entry.path, header.first_index, next_index_,
                    header.first_index - 1, SegmentFileName(next_index_))
              : std::string(
                    "the next segment starts at an index this "
                    "one already holds");
  Damaged(i - 1, pos_, missing, problem);
}

ReadResult JournalReader::NextGroup(Record& record) noexcept {
  while (true) {
    switch (state_) {
      case State::kEnd:
        return ReadResult::kEnd;
      case State::kError:
        return ReadResult::kError;
      case State::kStart:
        if (from_index_ != 0 || from_time_ns_.has_value()) {
          if (!Seek()) return ReadResult::kError;
        } else if (!EnterSegment(first_segment_)) {
          return ReadResult::kError;
        }
        state_ = State::kReading;
        break;
      case State::kReading:
        break;
    }
    const internal::GroupCheck check =
        internal::CheckGroup(bytes_, pos_, next_index_, group_format_);
    if (check.state == internal::GroupState::kValid) {
      SegmentInfo& info = infos_.back();
      info.records += check.header.record_count;
      info.groups += 1;
      info.last_index =
          check.header.first_index + check.header.record_count - 1;
      info.data_end = check.end;
      info.last_group_offset = pos_;
      info.last_group_first_index = check.header.first_index;
      info.last_group_crc = check.crc;
      if (checkpoint_group_ != 0 && info.last_index >= checkpoint_group_ &&
          !CheckCheckpointGroup(check)) {
        return ReadResult::kError;
      }
      cursor_ = bytes_.data() + pos_ + group_format_.header_size;
      records_left_ = check.header.record_count;
      next_index_ += check.header.record_count;
      pos_ = check.end;
      if (seeking_) {
        // Records before the seek point are passed over, not yielded.
        while (records_left_ != 0 &&
               BeforeSeekPoint(cursor_, next_index_ - records_left_)) {
          cursor_ += group_format_.record_header_size +
                     RecordFrameSize(cursor_, record_index_size_);
          --records_left_;
        }
        if (records_left_ == 0) continue;
        seeking_ = false;
      }
      return Next(record);
    }
    const bool truncated = bytes_.size() < infos_.back().header.capacity;
    if (check.state == internal::GroupState::kBad) {
      if (truncated && check.torn) return Truncated();
      return Damaged(segment_, pos_, check.torn, check.problem);
    }
    // kEmpty: this segment's data ends here; the rest must be zeros.
    const std::uint64_t nonzero = internal::FirstNonZero(bytes_, pos_);
    if (nonzero != bytes_.size()) {
      const std::string problem = absl::StrFormat(
          "no group here, but a non-zero byte follows at offset %d", nonzero);
      return Damaged(segment_, pos_, true, problem);
    }
    if (truncated) return Truncated();
    if (segment_ + 1 == set_.size()) return End();
    if (!EnterSegment(segment_ + 1)) return ReadResult::kError;
  }
}

}  // namespace orderwire::journal
