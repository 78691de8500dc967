// Cutting a journal's tail into a side journal; see cut.h.
#include "journal/cut.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/unique_fd.h"
#include "journal/checkpoint.h"
#include "journal/crc32c.h"
#include "journal/format.h"
#include "journal/internal/scan.h"
#include "journal/internal/writer_support.h"
#include "journal/prune.h"
#include "journal/record.h"
#include "journal/start.h"

namespace orderwire::journal {
namespace {

using internal::ErrnoStatus;

constexpr absl::string_view kIntentTitle = "orderwire journal cut 1";
constexpr std::size_t kMaxIntentBytes = 1 << 16;

// What the CUT file says.
struct CutIntent {
  std::uint64_t keep_through_index = 0;
  std::uint64_t last_index = 0;
  std::uint64_t journal_id = 0;
  // The first indexes of S and of every later segment, ascending.
  std::vector<std::uint64_t> segments;
};

std::string EncodeIntent(const CutIntent& intent) {
  std::string text = absl::StrFormat(
      "%s\nkeep_through_index %d\nlast_index %d\njournal_id %d\nsegments",
      kIntentTitle, intent.keep_through_index, intent.last_index,
      intent.journal_id);
  for (const std::uint64_t first : intent.segments) {
    absl::StrAppend(&text, " ", first);
  }
  absl::StrAppend(&text, "\n");
  const std::uint32_t crc =
      Crc32c(std::as_bytes(std::span(text.data(), text.size())));
  absl::StrAppendFormat(&text, "crc %08x\n", crc);
  return text;
}

absl::StatusOr<CutIntent> DecodeIntent(std::string_view text_view,
                                       const std::string& path) {
  // Abseil's own string_view here (it is not std's in this build).
  const absl::string_view text(text_view.data(), text_view.size());
  const auto bad = [&](std::string_view why) {
    return absl::DataLossError(absl::StrFormat(
        "%s is not a journal cut intent (%s); it was written whole and "
        "renamed into place, so this is damage: look at it before removing "
        "it",
        path, why));
  };
  const std::size_t crc_at = text.rfind("crc ");
  if (crc_at == absl::string_view::npos) return bad("no crc line");
  std::uint32_t crc = 0;
  if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(text.substr(crc_at + 4)),
                           &crc) ||
      crc != Crc32c(std::as_bytes(std::span(text_view.substr(0, crc_at))))) {
    return bad("checksum mismatch");
  }
  const std::vector<absl::string_view> lines =
      absl::StrSplit(text.substr(0, crc_at), '\n', absl::SkipEmpty());
  if (lines.size() != 5 || lines[0] != kIntentTitle) {
    return bad("unexpected lines");
  }
  CutIntent intent;
  const auto field = [&](absl::string_view line, absl::string_view name,
                         std::uint64_t& value) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
    return parts.size() == 2 && parts[0] == name &&
           absl::SimpleAtoi(parts[1], &value);
  };
  if (!field(lines[1], "keep_through_index", intent.keep_through_index) ||
      !field(lines[2], "last_index", intent.last_index) ||
      !field(lines[3], "journal_id", intent.journal_id)) {
    return bad("a field does not parse");
  }
  std::vector<absl::string_view> parts = absl::StrSplit(lines[4], ' ');
  if (parts.size() < 2 || parts[0] != "segments") return bad("no segments");
  for (std::size_t i = 1; i < parts.size(); ++i) {
    std::uint64_t first = 0;
    if (!absl::SimpleAtoi(parts[i], &first) ||
        (!intent.segments.empty() && first <= intent.segments.back())) {
      return bad("segment list");
    }
    intent.segments.push_back(first);
  }
  if (intent.keep_through_index >= intent.last_index ||
      intent.segments.front() > intent.keep_through_index + 1) {
    return bad("indexes out of order");
  }
  return intent;
}

std::string PathIn(const std::string& dir, std::string_view name) {
  return absl::StrFormat("%s/%s", dir, name);
}

absl::Status SyncDirectory(const std::string& dir) {
  const base::UniqueFd fd(
      ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd || ::fsync(fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync directory %s", dir));
  }
  return absl::OkStatus();
}

absl::Status CopyFileDurably(const std::string& from, const std::string& to) {
  absl::StatusOr<internal::MappedFile> source =
      internal::MappedFile::Open(from);
  if (!source.ok()) return source.status();
  const base::UniqueFd fd(
      ::open(to.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("create %s", to));
  const std::span<const std::byte> bytes = source->bytes();
  if (const int err =
          internal::PwriteAll(fd.get(), bytes.data(), bytes.size(), 0);
      err != 0) {
    return ErrnoStatus(err, absl::StrFormat("write %s", to));
  }
  if (::fsync(fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", to));
  }
  return absl::OkStatus();
}

// A group a checkpoint can name.
struct GroupPlace {
  std::uint64_t segment_first_index = 0;
  std::uint64_t offset = 0;
  std::uint64_t first_index = 0;
  std::uint32_t crc = 0;
};

absl::Status Stop(CutStep step, CutStep stop_after) {
  if (step == stop_after) {
    return absl::AbortedError(absl::StrFormat(
        "journal cut stopped after step %d (test)", static_cast<int>(step)));
  }
  return absl::OkStatus();
}

// Step 2.
absl::Status CopyTail(const std::string& directory, const CutIntent& intent,
                      const std::string& side) {
  if (::access(PathIn(side, kCutCopiedFileName).c_str(), F_OK) == 0) {
    return absl::OkStatus();  // copied before an interruption
  }
  std::error_code ec;
  std::filesystem::remove_all(side, ec);
  std::filesystem::create_directories(side, ec);
  if (ec) {
    return absl::UnknownError(
        absl::StrFormat("cannot create %s: %s", side, ec.message()));
  }
  for (const std::uint64_t first : intent.segments) {
    const std::string name = SegmentFileName(first);
    if (absl::Status s =
            CopyFileDurably(PathIn(directory, name), PathIn(side, name));
        !s.ok()) {
      return s;
    }
  }
  const base::UniqueFd side_fd(
      ::open(side.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!side_fd) return ErrnoStatus(errno, absl::StrFormat("open %s", side));
  if (intent.segments.front() > 1) {
    JournalStart start{
        .journal_id = intent.journal_id,
        .first_index = intent.segments.front(),
        .written_ns = static_cast<std::uint64_t>(internal::RealtimeNs())};
    if (absl::Status s = WriteJournalStart(side, side_fd.get(), start);
        !s.ok()) {
      return s;
    }
  }
  const std::string note = absl::StrFormat(
      "records %d..%d cut from %s (its records from index %d on, before the "
      "cut, byte for byte)\n",
      intent.keep_through_index + 1, intent.last_index, directory,
      intent.segments.front());
  if (absl::Status s = internal::PublishSmallFile(
          side, side_fd.get(), "COPIED.tmp", kCutCopiedFileName,
          std::as_bytes(std::span(note)));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = SyncDirectory(PathIn(directory, kCutDirName)); !s.ok()) {
    return s;
  }
  return SyncDirectory(directory);
}

// Step 3: cuts segment S of the journal after K, from its pristine copy in
// `side`. Sets `last_group` to the group that ends at K in S (nullopt when
// S keeps no group).
absl::Status CutSegment(const std::string& directory, const CutIntent& intent,
                        const std::string& side,
                        std::optional<GroupPlace>& last_group) {
  const std::uint64_t keep = intent.keep_through_index;
  const std::uint64_t first = intent.segments.front();
  const std::string name = SegmentFileName(first);
  absl::StatusOr<internal::MappedFile> copy =
      internal::MappedFile::Open(PathIn(side, name));
  if (!copy.ok()) return copy.status();
  const std::span<const std::byte> bytes = copy->bytes();
  const internal::HeaderCheck header =
      internal::CheckSegmentHeader(bytes, first);
  if (!header.ok) {
    return absl::DataLossError(absl::StrFormat(
        "cut: segment %s: %s", PathIn(side, name), header.problem));
  }
  const GroupFormat format = GroupFormatOf(header.header.version);
  std::uint64_t pos = kFirstGroupOffset;
  std::uint64_t expected = first;
  std::vector<std::byte> sealed;  // the group cut short, when one is
  last_group.reset();
  while (expected <= keep) {
    const internal::GroupCheck group =
        internal::CheckGroup(bytes, pos, expected, format);
    if (group.state != internal::GroupState::kValid) {
      return absl::DataLossError(absl::StrFormat(
          "cut: segment %s: the group at offset %d (index %d expected) does "
          "not verify: %s",
          PathIn(side, name), pos, expected,
          group.state == internal::GroupState::kEmpty ? "no group"
                                                      : group.problem));
    }
    const std::uint64_t group_last =
        group.header.first_index + group.header.record_count - 1;
    if (group_last <= keep) {
      last_group = GroupPlace{first, pos, group.header.first_index, group.crc};
      pos = group.end;
      expected = group_last + 1;
      continue;
    }
    // The group holds K and K + 1: sealed again with its records up to K.
    const std::uint64_t kept = keep - group.header.first_index + 1;
    std::uint64_t records_bytes = 0;
    const std::byte* record = bytes.data() + pos + format.header_size;
    for (std::uint64_t i = 0; i < kept; ++i) {
      const std::size_t size =
          format.record_header_size +
          RecordFrameSize(record, format.record_index_size);
      record += size;
      records_bytes += size;
    }
    GroupHeader cut_header = group.header;
    cut_header.records_bytes = static_cast<std::uint32_t>(records_bytes);
    cut_header.record_count = static_cast<std::uint32_t>(kept);
    const std::size_t unpadded =
        format.header_size + records_bytes + kGroupTrailerSize;
    sealed.assign(AlignUpTo(unpadded, format.alignment), std::byte{0});
    EncodeGroupHeader(format, cut_header, sealed.data());
    std::memcpy(sealed.data() + format.header_size,
                bytes.data() + pos + format.header_size, records_bytes);
    const std::uint32_t crc = Crc32c(std::span<const std::byte>(
        sealed.data(), format.header_size + records_bytes));
    std::byte* trailer = sealed.data() + format.header_size + records_bytes;
    codec::StoreLE(trailer, crc);
    codec::StoreLE(trailer + sizeof(std::uint32_t), kTrailerMagic);
    last_group = GroupPlace{first, pos, group.header.first_index, crc};
    break;
  }
  // The journal's S: zeros from the end of what it keeps (the file keeps
  // its size and its preallocation), then the group cut short, synced.
  const std::string path = PathIn(directory, name);
  const base::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  const std::uint64_t capacity = bytes.size();
  const std::uint64_t end = pos + sealed.size();
  if (::ftruncate(fd.get(), static_cast<off_t>(end)) != 0 ||
      ::ftruncate(fd.get(), static_cast<off_t>(capacity)) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("truncate %s", path));
  }
  // Preallocated again (fails harmlessly where not supported).
  (void)::fallocate(fd.get(), 0, 0, static_cast<off_t>(capacity));
  if (!sealed.empty()) {
    if (const int err =
            internal::PwriteAll(fd.get(), sealed.data(), sealed.size(), pos);
        err != 0) {
      return ErrnoStatus(err, absl::StrFormat("write %s", path));
    }
  }
  if (::fsync(fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", path));
  }
  return absl::OkStatus();
}

// A segment's header (checked: a bad one is data loss) and the last whole
// group in it, if any.
struct SegmentTail {
  std::uint64_t journal_id = 0;
  std::optional<internal::FoundGroup> last_group;
};

absl::StatusOr<SegmentTail> ReadSegmentTail(
    const internal::SegmentEntry& entry) {
  absl::StatusOr<internal::MappedFile> file =
      internal::MappedFile::Open(entry.path);
  if (!file.ok()) return file.status();
  const internal::HeaderCheck header =
      internal::CheckSegmentHeader(file->bytes(), entry.name_index);
  if (!header.ok) {
    return absl::DataLossError(
        absl::StrFormat("cut: segment %s: %s", entry.path, header.problem));
  }
  internal::SeekCounters counters;
  return SegmentTail{
      .journal_id = header.header.journal_id,
      .last_group = internal::LastGroupIn(
          file->bytes(), GroupFormatOf(header.header.version), counters)};
}

// The last group of the journal segment before S, when S keeps none.
absl::StatusOr<std::optional<GroupPlace>> LastGroupBefore(
    const std::string& directory, std::uint64_t segment_first) {
  absl::StatusOr<std::vector<internal::SegmentEntry>> entries =
      internal::ListSegments(directory);
  if (!entries.ok()) return entries.status();
  absl::StatusOr<std::uint64_t> first_index = FirstAvailableIndex(directory);
  if (!first_index.ok()) return first_index.status();
  for (std::size_t i = entries->size(); i-- > 0;) {
    const internal::SegmentEntry& entry = (*entries)[i];
    if (entry.name_index >= segment_first || entry.mapped != nullptr) continue;
    if (entry.name_index < *first_index) break;
    absl::StatusOr<SegmentTail> tail = ReadSegmentTail(entry);
    if (!tail.ok()) return tail.status();
    if (const std::optional<internal::FoundGroup>& found = tail->last_group;
        found.has_value()) {
      return GroupPlace{entry.name_index, found->offset,
                        found->check.header.first_index, found->check.crc};
    }
  }
  return std::optional<GroupPlace>();
}

// Step 4: the segments after S are removed.
absl::Status RemoveLaterSegments(const std::string& directory,
                                 const CutIntent& intent, CutReport& report) {
  for (std::size_t i = 1; i < intent.segments.size(); ++i) {
    const std::string path =
        PathIn(directory, SegmentFileName(intent.segments[i]));
    if (::unlink(path.c_str()) == 0) {
      report.segments_removed.push_back(path);
    } else if (errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrFormat("unlink %s", path));
    }
  }
  return absl::OkStatus();
}

// Step 5: the snapshots of indexes after K are removed.
absl::Status RemoveLaterSnapshots(const std::string& directory,
                                  const CutIntent& intent, CutReport& report) {
  absl::StatusOr<std::vector<std::uint64_t>> snapshots =
      ListSnapshotIndexes(directory);
  if (!snapshots.ok()) return snapshots.status();
  for (const std::uint64_t index : *snapshots) {
    if (index <= intent.keep_through_index) continue;
    const std::string path = absl::StrFormat(
        "%s/%s/%s", directory, kSnapshotDirName, SnapshotFileName(index));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrFormat("unlink %s", path));
    }
    report.snapshots_removed.push_back(path);
  }
  if (!report.snapshots_removed.empty()) {
    return SyncDirectory(PathIn(directory, kSnapshotDirName));
  }
  return absl::OkStatus();
}

// Step 6: a checkpoint past K is rewritten to name the group that ends at K
// (`last_group`, in S, or else the last group before S), or removed when
// the journal keeps no record.
absl::Status RewriteCheckpoint(const std::string& directory, int dir_fd,
                               const CutIntent& intent,
                               std::optional<GroupPlace> last_group) {
  absl::StatusOr<std::optional<Checkpoint>> checkpoint =
      ReadCheckpoint(directory);
  if (!checkpoint.ok()) return checkpoint.status();
  if (!checkpoint->has_value() ||
      (*checkpoint)->durable_index <= intent.keep_through_index) {
    return absl::OkStatus();
  }
  if (!last_group.has_value()) {
    absl::StatusOr<std::optional<GroupPlace>> before =
        LastGroupBefore(directory, intent.segments.front());
    if (!before.ok()) return before.status();
    last_group = *before;
  }
  if (last_group.has_value()) {
    Checkpoint rewritten = **checkpoint;
    rewritten.written_ns = static_cast<std::uint64_t>(internal::RealtimeNs());
    rewritten.durable_index = intent.keep_through_index;
    rewritten.group_first_index = last_group->first_index;
    rewritten.segment_first_index = last_group->segment_first_index;
    rewritten.group_offset = last_group->offset;
    rewritten.group_crc = last_group->crc;
    return WriteCheckpoint(directory, dir_fd, rewritten);
  }
  // The journal keeps no record: nothing to witness.
  const std::string path = PathIn(directory, kCheckpointFileName);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, absl::StrFormat("unlink %s", path));
  }
  return absl::OkStatus();
}

// Steps 2 to 7 of a cut whose intent is written: the tail copied, S cut,
// the later segments and snapshots removed, the checkpoint rewritten, the
// directory synced, the intent removed. Each step is followed by the
// test's stop point.
absl::StatusOr<CutReport> RunCut(const std::string& directory, int dir_fd,
                                 const CutIntent& intent, CutStep stop_after) {
  CutReport report;
  report.cut = true;
  report.keep_through_index = intent.keep_through_index;
  report.last_index = intent.last_index;
  report.side_journal = SideJournalPath(
      directory, intent.keep_through_index + 1, intent.last_index);
  absl::Status s = CopyTail(directory, intent, report.side_journal);
  if (s.ok()) s = Stop(CutStep::kTailCopied, stop_after);
  std::optional<GroupPlace> last_group;
  if (s.ok()) {
    s = CutSegment(directory, intent, report.side_journal, last_group);
  }
  if (s.ok()) s = Stop(CutStep::kSegmentCut, stop_after);
  if (s.ok()) s = RemoveLaterSegments(directory, intent, report);
  if (s.ok()) s = Stop(CutStep::kLaterSegmentsRemoved, stop_after);
  if (s.ok()) s = RemoveLaterSnapshots(directory, intent, report);
  if (s.ok()) s = Stop(CutStep::kSnapshotsRemoved, stop_after);
  if (s.ok()) s = RewriteCheckpoint(directory, dir_fd, intent, last_group);
  if (s.ok()) s = Stop(CutStep::kCheckpointRewritten, stop_after);
  if (!s.ok()) return s;
  if (::fsync(dir_fd) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", directory));
  }
  s = Stop(CutStep::kDirectorySynced, stop_after);
  if (!s.ok()) return s;
  const std::string cut_path = PathIn(directory, kCutFileName);
  if (::unlink(cut_path.c_str()) != 0 || ::fsync(dir_fd) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("unlink %s", cut_path));
  }
  report.message = absl::StrFormat(
      "cut records %d..%d of %s (kept in %s)", intent.keep_through_index + 1,
      intent.last_index, directory, report.side_journal);
  return report;
}

absl::StatusOr<std::optional<CutIntent>> ReadIntent(
    const std::string& directory) {
  const std::string path = PathIn(directory, kCutFileName);
  absl::StatusOr<std::optional<std::vector<std::byte>>> bytes =
      internal::ReadSmallFile(path, kMaxIntentBytes);
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return std::optional<CutIntent>();
  const std::string_view text(reinterpret_cast<const char*>((*bytes)->data()),
                              (*bytes)->size());
  absl::StatusOr<CutIntent> intent = DecodeIntent(text, path);
  if (!intent.ok()) return intent.status();
  return std::optional<CutIntent>(*intent);
}

}  // namespace

std::string SideJournalPath(const std::string& directory,
                            std::uint64_t first_index,
                            std::uint64_t last_index) {
  return absl::StrFormat("%s/%s/%d-%d", directory, kCutDirName, first_index,
                         last_index);
}

absl::StatusOr<std::optional<CutReport>> FinishPendingCut(
    const std::string& directory, int dir_fd) {
  absl::StatusOr<std::optional<CutIntent>> intent = ReadIntent(directory);
  if (!intent.ok()) return intent.status();
  if (!intent->has_value()) return std::optional<CutReport>();
  absl::StatusOr<CutReport> report =
      RunCut(directory, dir_fd, **intent, CutStep::kNone);
  if (!report.ok()) return report.status();
  report->finished_pending = true;
  return std::optional<CutReport>(*std::move(report));
}

absl::Status CheckNoPendingCut(const std::string& directory) {
  const std::string path = PathIn(directory, kCutFileName);
  if (::access(path.c_str(), F_OK) == 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "journal %s has a cut in progress (%s): its records after an index "
        "are being moved into %s/%s/; open the journal for writing (orderwire "
        "serve, orderwire serve --standby, orderwire journal write) to "
        "finish the cut before reading it",
        directory, path, directory, kCutDirName));
  }
  return absl::OkStatus();
}

namespace {

// The journal directory, opened and locked against a writer.
absl::StatusOr<base::UniqueFd> LockForCut(const std::string& directory) {
  base::UniqueFd dir_fd(
      ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrFormat("no journal directory %s", directory));
    }
    return ErrnoStatus(errno, absl::StrFormat("open %s", directory));
  }
  if (::flock(dir_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return absl::UnavailableError(absl::StrFormat(
          "journal %s is open for appending by a writer: close it before "
          "cutting its tail",
          directory));
    }
    return ErrnoStatus(errno, absl::StrFormat("flock %s", directory));
  }
  return dir_fd;
}

// The journal's segments from `first_index` on; none may be a prepared
// segment in use.
absl::StatusOr<std::vector<internal::SegmentEntry>> SegmentsToCut(
    const std::string& directory, std::uint64_t first_index) {
  absl::StatusOr<std::vector<internal::SegmentEntry>> listed =
      internal::ListSegments(directory);
  if (!listed.ok()) return listed.status();
  std::vector<internal::SegmentEntry> entries;
  for (internal::SegmentEntry& entry : *listed) {
    if (entry.mapped != nullptr) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "journal %s has a prepared next segment in use (%s): open it with a "
          "writer first (recovery renames it into place)",
          directory, entry.path));
    }
    if (entry.name_index >= first_index) entries.push_back(std::move(entry));
  }
  if (entries.empty()) {
    return absl::NotFoundError(
        absl::StrFormat("no journal segment in %s", directory));
  }
  return entries;
}

// L, the journal's last index: the last group of the last segment that
// holds one (first_index - 1 if none does); and the journal's id.
struct JournalEnd {
  std::uint64_t last_index = 0;
  std::uint64_t journal_id = 0;
};

absl::StatusOr<JournalEnd> FindJournalEnd(
    const std::vector<internal::SegmentEntry>& entries,
    std::uint64_t first_index) {
  JournalEnd end{.last_index = first_index - 1, .journal_id = 0};
  for (std::size_t i = entries.size(); i-- > 0;) {
    absl::StatusOr<SegmentTail> tail = ReadSegmentTail(entries[i]);
    if (!tail.ok()) return tail.status();
    end.journal_id = tail->journal_id;
    if (const std::optional<internal::FoundGroup>& found = tail->last_group;
        found.has_value()) {
      end.last_index = found->check.header.first_index +
                       found->check.header.record_count - 1;
      break;
    }
  }
  return end;
}

// A side journal of an earlier cut of the same range (another rejoin at
// the same indexes) is moved aside, never reused nor deleted: step 2
// trusts a side journal that says COPIED.
absl::Status MoveEarlierSideJournalAside(const std::string& directory,
                                         const std::string& side) {
  if (!std::filesystem::exists(side)) return absl::OkStatus();
  for (int n = 1;; ++n) {
    const std::string aside = absl::StrFormat("%s.earlier-%d", side, n);
    if (std::filesystem::exists(aside)) continue;
    if (::rename(side.c_str(), aside.c_str()) != 0) {
      return ErrnoStatus(errno,
                         absl::StrFormat("rename %s to %s", side, aside));
    }
    return SyncDirectory(PathIn(directory, kCutDirName));
  }
}

}  // namespace

absl::StatusOr<CutReport> CutJournalTail(const CutOptions& options) {
  const std::string& directory = options.directory;
  const std::uint64_t keep = options.keep_through_index;
  absl::StatusOr<base::UniqueFd> dir_fd = LockForCut(directory);
  if (!dir_fd.ok()) return dir_fd.status();
  absl::StatusOr<std::optional<CutReport>> pending =
      FinishPendingCut(directory, dir_fd->get());
  if (!pending.ok()) return pending.status();
  const bool finished_pending = pending->has_value();

  absl::StatusOr<std::uint64_t> first_index = FirstAvailableIndex(directory);
  if (!first_index.ok()) return first_index.status();
  // A pruned journal keeps at least its first record: recovery finds a
  // pruned journal's end from the records it holds.
  if (*first_index > 1 && keep < *first_index) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot keep a journal through index %d: %s starts at index %d (its "
        "records before were pruned), so the least it can keep is through "
        "%d",
        keep, directory, *first_index, *first_index));
  }
  absl::StatusOr<std::vector<internal::SegmentEntry>> entries =
      SegmentsToCut(directory, *first_index);
  if (!entries.ok()) return entries.status();
  absl::StatusOr<JournalEnd> end = FindJournalEnd(*entries, *first_index);
  if (!end.ok()) return end.status();
  if (keep >= end->last_index) {
    CutReport report;
    report.finished_pending = finished_pending;
    report.keep_through_index = keep;
    report.last_index = end->last_index;
    report.message = absl::StrFormat(
        "nothing to cut: %s ends at index %d, keeping through %d", directory,
        end->last_index, keep);
    return report;
  }
  // S, the segment holding K + 1, and every later one.
  CutIntent intent{.keep_through_index = keep,
                   .last_index = end->last_index,
                   .journal_id = end->journal_id,
                   .segments = {}};
  for (const internal::SegmentEntry& entry : *entries) {
    if (entry.name_index <= keep + 1) intent.segments.clear();
    if (entry.name_index <= keep + 1 || !intent.segments.empty()) {
      intent.segments.push_back(entry.name_index);
    }
  }
  if (absl::Status s = MoveEarlierSideJournalAside(
          directory, SideJournalPath(directory, keep + 1, end->last_index));
      !s.ok()) {
    return s;
  }
  const std::string encoded = EncodeIntent(intent);
  if (absl::Status s = internal::PublishSmallFile(
          directory, dir_fd->get(), kCutTempFileName, kCutFileName,
          std::as_bytes(std::span(encoded)));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Stop(CutStep::kIntentWritten, options.stop_after);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<CutReport> done =
      RunCut(directory, dir_fd->get(), intent, options.stop_after);
  if (done.ok()) done->finished_pending = finished_pending;
  return done;
}

}  // namespace orderwire::journal
