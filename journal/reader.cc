// JournalReader; see reader.h.
#include "journal/reader.h"

#include <sys/stat.h>

#include <utility>

#include "absl/strings/str_format.h"

namespace orderwire::journal {

absl::StatusOr<std::unique_ptr<JournalReader>> JournalReader::Open(
    const std::string& directory, std::size_t first_segment) {
  absl::StatusOr<std::vector<internal::SegmentEntry>> entries =
      internal::ListSegments(directory);
  if (!entries.ok()) return entries.status();
  if (entries->empty()) {
    return absl::NotFoundError(absl::StrFormat(
        "no journal segments (files named like 00000000000000000001.owj) in "
        "%s",
        directory));
  }
  if (first_segment >= entries->size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s has %d segments, cannot start at segment %d",
                        directory, entries->size(), first_segment));
  }
  std::uint64_t total = 0;
  for (const internal::SegmentEntry& entry : *entries) {
    struct stat st {};
    if (::stat(entry.path.c_str(), &st) == 0) {
      total += static_cast<std::uint64_t>(st.st_size);
    }
  }
  return std::unique_ptr<JournalReader>(
      new JournalReader(std::move(*entries), total, first_segment));
}

JournalReader::JournalReader(std::vector<internal::SegmentEntry> entries,
                             std::uint64_t total_bytes,
                             std::size_t first_segment)
    : set_(std::move(entries)),
      first_segment_(first_segment),
      total_bytes_(total_bytes) {}

ReadResult JournalReader::Fail(absl::Status status) {
  state_ = State::kError;
  status_ = std::move(status);
  records_left_ = 0;
  return ReadResult::kError;
}

ReadResult JournalReader::Damaged(std::size_t segment, std::uint64_t offset,
                                  bool torn, std::string_view problem) {
  absl::StatusOr<internal::Damage> damage = internal::AnalyzeDamage(
      set_, segment, offset, next_index_, torn, problem);
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
    // Only the last segment can lack its header after a crash: a later
    // segment proves this header was written (docs/JOURNAL.md "Recovery":
    // a damaged header other than the last one's is data loss, and
    // recovery refuses it).
    if (check.torn && i + 1 == set_.size()) {
      Damaged(i, 0, true, check.problem);
    } else if (check.header.magic == kSegmentMagic &&
               check.header.version != kFormatVersion) {
      Fail(absl::UnimplementedError(
          absl::StrFormat("segment %s: %s", entry.path, check.problem)));
    } else {
      Fail(absl::DataLossError(absl::StrFormat(
          "segment %s: %s (after index %d)%s", entry.path, check.problem,
          next_index_ - 1,
          check.torn ? "; only the last segment may be incomplete" : "")));
    }
    return false;
  }
  if (!infos_.empty() &&
      infos_.front().header.journal_id != check.header.journal_id) {
    Fail(absl::DataLossError(absl::StrFormat(
        "segment %s belongs to another journal (journal id %016x; %s has "
        "%016x)",
        entry.path, check.header.journal_id, infos_.front().path,
        infos_.front().header.journal_id)));
    return false;
  }
  if (i == first_segment_ && i > 0) next_index_ = check.header.first_index;
  if (check.header.first_index != next_index_) {
    if (i == 0) {
      Fail(absl::DataLossError(absl::StrFormat(
          "segment %s: the journal's first segment starts at index %d, not "
          "1: the segments before it are missing",
          entry.path, check.header.first_index)));
    } else {
      // The previous segment ended early, or segments overlap.
      const bool missing = check.header.first_index > next_index_;
      Damaged(i - 1, pos_, missing,
              missing ? "the segment ends here but the next one starts at a "
                        "later index: records are missing"
                      : "the next segment starts at an index this one "
                        "already holds");
    }
    return false;
  }
  done_before_segment_ += bytes_.size();
  segment_ = i;
  bytes_ = *bytes;
  pos_ = kFirstGroupOffset;
  SegmentInfo info;
  info.path = entry.path;
  info.header = check.header;
  info.metadata = check.metadata;
  info.file_size = bytes->size();
  info.data_end = kFirstGroupOffset;
  infos_.push_back(std::move(info));
  return true;
}

ReadResult JournalReader::NextGroup(Record& record) noexcept {
  while (true) {
    switch (state_) {
      case State::kEnd:
        return ReadResult::kEnd;
      case State::kError:
        return ReadResult::kError;
      case State::kStart:
        if (!EnterSegment(first_segment_)) return ReadResult::kError;
        state_ = State::kReading;
        break;
      case State::kReading:
        break;
    }
    const internal::GroupCheck check =
        internal::CheckGroup(bytes_, pos_, next_index_);
    if (check.state == internal::GroupState::kValid) {
      SegmentInfo& info = infos_.back();
      info.records += check.header.record_count;
      info.groups += 1;
      info.last_index =
          check.header.first_index + check.header.record_count - 1;
      info.data_end = check.end;
      cursor_ = bytes_.data() + pos_ + kGroupHeaderSize;
      records_left_ = check.header.record_count;
      next_index_ += check.header.record_count;
      pos_ = check.end;
      return Next(record);
    }
    if (check.state == internal::GroupState::kBad) {
      return Damaged(segment_, pos_, check.torn, check.problem);
    }
    // kEmpty: this segment's data ends here; the rest must be zeros.
    const std::uint64_t nonzero = internal::FirstNonZero(bytes_, pos_);
    if (nonzero != bytes_.size()) {
      const std::string problem = absl::StrFormat(
          "no group here, but a non-zero byte follows at offset %d", nonzero);
      return Damaged(segment_, pos_, true, problem);
    }
    if (segment_ + 1 == set_.size()) {
      state_ = State::kEnd;
      pos_ = bytes_.size();
      return ReadResult::kEnd;
    }
    if (!EnterSegment(segment_ + 1)) return ReadResult::kError;
  }
}

}  // namespace orderwire::journal
