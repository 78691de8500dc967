// Pruning the start of a journal; see prune.h.
#include "journal/prune.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "base/unique_fd.h"
#include "journal/format.h"
#include "journal/internal/scan.h"
#include "journal/internal/writer_support.h"
#include "journal/start.h"

namespace orderwire::journal {
namespace {

using internal::ErrnoStatus;

// The header of a segment file, checked. Error: DataLoss naming the file.
absl::StatusOr<SegmentHeader> ReadHeader(const internal::SegmentEntry& entry,
                                         std::uint64_t* file_size) {
  base::UniqueFd fd(::open(entry.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", entry.path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("stat %s", entry.path));
  }
  *file_size = static_cast<std::uint64_t>(st.st_size);
  std::vector<std::byte> block(kBlockSize);
  const ssize_t got = ::pread(fd.get(), block.data(), block.size(), 0);
  if (got < 0)
    return ErrnoStatus(errno, absl::StrFormat("read %s", entry.path));
  block.resize(static_cast<std::size_t>(got));
  const internal::HeaderCheck check =
      internal::CheckSegmentHeader(block, entry.name_index);
  if (!check.ok) {
    return absl::DataLossError(
        absl::StrFormat("segment %s: %s", entry.path, check.problem));
  }
  return check.header;
}

// Whether the segment holds at least one group: a non-zero group header at
// its first group offset.
absl::StatusOr<bool> HoldsRecords(const std::string& path) {
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoStatus(errno, absl::StrFormat("open %s", path));
  std::byte header[kGroupHeaderSize] = {};
  const ssize_t got = ::pread(fd.get(), header, sizeof(header),
                              static_cast<off_t>(kFirstGroupOffset));
  if (got < 0) return ErrnoStatus(errno, absl::StrFormat("read %s", path));
  return std::any_of(header, header + got,
                     [](std::byte b) { return b != std::byte{0}; });
}

// The journal's segments from its first index on (the prepared next
// segment excluded), and those before it (left by an interrupted prune).
struct Listing {
  std::uint64_t first_index = 1;
  std::optional<JournalStart> start;
  std::vector<internal::SegmentEntry> segments;
  std::vector<internal::SegmentEntry> leftovers;
};

absl::StatusOr<Listing> List(const std::string& directory) {
  Listing listing;
  absl::StatusOr<std::optional<JournalStart>> start =
      ReadJournalStart(directory);
  if (!start.ok()) return start.status();
  listing.start = *start;
  if (start->has_value()) listing.first_index = (*start)->first_index;
  absl::StatusOr<std::vector<internal::SegmentEntry>> entries =
      internal::ListSegments(directory);
  if (!entries.ok()) return entries.status();
  const std::string prepared =
      absl::StrFormat("%s/%s", directory, kPreparedFileName);
  for (internal::SegmentEntry& entry : *entries) {
    if (entry.path == prepared) continue;
    (entry.name_index < listing.first_index ? listing.leftovers
                                            : listing.segments)
        .push_back(std::move(entry));
  }
  if (listing.segments.empty()) {
    return absl::NotFoundError(
        absl::StrFormat("no journal segments from index %d on in %s",
                        listing.first_index, directory));
  }
  return listing;
}

// Copies `from` to `to` durably: to "<to>.partial", fsynced, renamed to
// `to`. The caller fsyncs the directory.
absl::Status CopyFile(const std::string& from, const std::string& to) {
  base::UniqueFd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) return ErrnoStatus(errno, absl::StrFormat("open %s", from));
  const std::string partial = to + ".partial";
  base::UniqueFd out(
      ::open(partial.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644));
  if (!out) return ErrnoStatus(errno, absl::StrFormat("open %s", partial));
  std::vector<char> buffer(1 << 20);
  while (true) {
    const ssize_t n = ::read(in.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrFormat("read %s", from));
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.get(), buffer.data() + done,
                                static_cast<std::size_t>(n - done));
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, absl::StrFormat("write %s", partial));
      }
      done += w;
    }
  }
  if (::fsync(out.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", partial));
  }
  out.reset();
  if (::rename(partial.c_str(), to.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("rename %s to %s", partial, to));
  }
  return absl::OkStatus();
}

absl::Status FsyncDirectory(const std::string& directory) {
  base::UniqueFd fd(
      ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd || ::fsync(fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", directory));
  }
  return absl::OkStatus();
}

}  // namespace

std::string SnapshotFileName(std::uint64_t index) {
  return absl::StrFormat("%020d%s", index, kSnapshotSuffix);
}

absl::StatusOr<std::vector<std::uint64_t>> ListSnapshotIndexes(
    const std::string& directory) {
  const std::string path =
      absl::StrFormat("%s/%s", directory, kSnapshotDirName);
  std::vector<std::uint64_t> indexes;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return indexes;
    return ErrnoStatus(errno, absl::StrFormat("opendir %s", path));
  }
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    constexpr std::size_t kDigits = 20;
    if (name.size() != kDigits + kSnapshotSuffix.size() ||
        name.substr(kDigits) != kSnapshotSuffix) {
      continue;
    }
    std::uint64_t index = 0;
    const auto [ptr, ec] =
        std::from_chars(name.data(), name.data() + kDigits, index);
    if (ec == std::errc() && ptr == name.data() + kDigits) {
      indexes.push_back(index);
    }
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) return ErrnoStatus(err, absl::StrFormat("readdir %s", path));
  std::sort(indexes.begin(), indexes.end());
  return indexes;
}

absl::StatusOr<std::vector<SegmentSummary>> ListSegmentSummaries(
    const std::string& directory) {
  absl::StatusOr<Listing> listing = List(directory);
  if (!listing.ok()) return listing.status();
  std::vector<SegmentSummary> summaries;
  for (std::size_t i = 0; i < listing->segments.size(); ++i) {
    std::uint64_t size = 0;
    absl::StatusOr<SegmentHeader> header =
        ReadHeader(listing->segments[i], &size);
    if (!header.ok()) {
      // The last segment's header may still be on its way to the disk.
      if (i + 1 == listing->segments.size()) break;
      return header.status();
    }
    summaries.push_back({.first_index = header->first_index,
                         .bytes = size,
                         .created_ns = header->created_ns});
  }
  return summaries;
}

namespace {

// The journal must start where it says: pruning past a missing first
// segment would turn data loss into an intended prune.
absl::Status CheckFirstSegment(const std::string& dir, const Listing& listing) {
  const internal::SegmentEntry& front = listing.segments.front();
  if (front.name_index == listing.first_index) return absl::OkStatus();
  return absl::DataLossError(absl::StrFormat(
      "journal %s starts at index %d, but its first segment file is %s: "
      "records %d..%d are missing (segment file %s). Pruning would hide "
      "that loss; nothing was pruned",
      dir, listing.first_index, front.path, listing.first_index,
      front.name_index - 1, SegmentFileName(listing.first_index)));
}

// The first segment that stays: segment i (not the last) holds indexes
// name(i)..name(i+1)-1, and goes when all are below `before_index`. The
// last segment stays, and so does the one holding the last record (the
// journal always holds its last record: recovery and the checkpoint need
// it).
absl::StatusOr<std::size_t> FirstSegmentKept(
    const std::vector<internal::SegmentEntry>& segments,
    std::uint64_t before_index) {
  std::size_t keep_from_limit = segments.size() - 1;
  if (keep_from_limit > 0) {
    absl::StatusOr<bool> holds = HoldsRecords(segments.back().path);
    if (!holds.ok()) return holds.status();
    if (!*holds) --keep_from_limit;
  }
  std::size_t keep_from = 0;
  while (keep_from < keep_from_limit &&
         segments[keep_from + 1].name_index <= before_index) {
    ++keep_from;
  }
  return keep_from;
}

// Why segment `keep_from` is not pruned, in words.
std::string WhyKept(const std::vector<internal::SegmentEntry>& segments,
                    std::size_t keep_from, std::uint64_t before_index) {
  if (keep_from < segments.size() - 1 &&
      segments[keep_from + 1].name_index > before_index) {
    return absl::StrFormat(
        "segment %s holds indexes up to %d, not all below %d",
        segments[keep_from].path, segments[keep_from + 1].name_index - 1,
        before_index);
  }
  if (keep_from == segments.size() - 1) {
    return absl::StrFormat(
        "segment %s is the last one (being appended to): never pruned",
        segments[keep_from].path);
  }
  return absl::StrFormat(
      "segment %s holds the journal's last record (the last segment, %s, "
      "holds none yet): never pruned",
      segments[keep_from].path, segments.back().path);
}

// Segments 1..keep_from checked (headers, of journal `journal_id`), their
// sizes into `sizes`.
absl::Status CheckSegmentsToPrune(
    const std::vector<internal::SegmentEntry>& segments, std::size_t keep_from,
    std::uint64_t journal_id, std::vector<std::uint64_t>& sizes) {
  for (std::size_t i = 1; i <= keep_from; ++i) {
    absl::StatusOr<SegmentHeader> header = ReadHeader(segments[i], &sizes[i]);
    if (!header.ok()) return header.status();
    if (header->journal_id != journal_id) {
      return absl::DataLossError(absl::StrFormat(
          "segment %s belongs to another journal (journal id %016x; %s has "
          "%016x); nothing was pruned",
          segments[i].path, header->journal_id, segments[0].path, journal_id));
    }
  }
  return absl::OkStatus();
}

// The segments before the new start: left over from an interrupted prune,
// then the ones pruned now (segments 0..keep_from-1, of `sizes` bytes).
std::vector<PrunedSegment> SegmentsToRemove(
    const Listing& listing, std::size_t keep_from,
    const std::vector<std::uint64_t>& sizes) {
  const std::vector<internal::SegmentEntry>& segments = listing.segments;
  std::vector<PrunedSegment> to_remove;
  for (const internal::SegmentEntry& entry : listing.leftovers) {
    struct stat st {};
    ::stat(entry.path.c_str(), &st);
    to_remove.push_back({.path = entry.path,
                         .first_index = entry.name_index,
                         .last_index = 0,
                         .bytes = static_cast<std::uint64_t>(st.st_size)});
  }
  for (std::size_t i = 0; i < keep_from; ++i) {
    to_remove.push_back({.path = segments[i].path,
                         .first_index = segments[i].name_index,
                         .last_index = segments[i + 1].name_index - 1,
                         .bytes = sizes[i]});
  }
  for (std::size_t i = 0; i < listing.leftovers.size() && i < to_remove.size();
       ++i) {
    // A leftover ends where the next file begins (or at the start).
    to_remove[i].last_index =
        (i + 1 < to_remove.size() ? to_remove[i + 1].first_index
                                  : listing.first_index) -
        1;
  }
  return to_remove;
}

// Removes `segment`, or with an archive directory moves it there (across
// file systems: a durable copy, then the original goes).
absl::Status RemoveSegment(PrunedSegment& segment, const std::string& archive) {
  if (archive.empty()) {
    if (::unlink(segment.path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrFormat("unlink %s", segment.path));
    }
    return absl::OkStatus();
  }
  const std::string to =
      absl::StrFormat("%s/%s", archive, SegmentFileName(segment.first_index));
  if (::rename(segment.path.c_str(), to.c_str()) != 0) {
    if (errno != EXDEV) {
      return ErrnoStatus(errno,
                         absl::StrFormat("move %s to %s", segment.path, to));
    }
    // Another file system: a durable copy, then the original goes.
    if (absl::Status s = CopyFile(segment.path, to); !s.ok()) return s;
    if (absl::Status s = FsyncDirectory(archive); !s.ok()) return s;
    if (::unlink(segment.path.c_str()) != 0) {
      return ErrnoStatus(errno, absl::StrFormat("unlink %s", segment.path));
    }
  }
  segment.archived_to = to;
  return absl::OkStatus();
}

// Removes (archives) `to_remove` in order, each added to the report as it
// goes, with progress.
absl::Status RemoveSegments(const PruneOptions& options,
                            std::vector<PrunedSegment>& to_remove,
                            PruneReport& report) {
  if (!options.archive.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.archive, ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrFormat("archive directory %s: cannot create it: %s",
                          options.archive, ec.message()));
    }
  }
  std::uint64_t records_done = 0;
  for (PrunedSegment& segment : to_remove) {
    if (absl::Status s = RemoveSegment(segment, options.archive); !s.ok()) {
      return s;
    }
    report.segments.push_back(segment);
    records_done += segment.last_index + 1 - segment.first_index;
    if (options.on_progress) {
      options.on_progress(report.segments.size(), to_remove.size(),
                          records_done);
    }
  }
  return absl::OkStatus();
}

// Snapshots that the journal can no longer continue: those of an index
// below first_index_after - 1.
absl::Status RemoveStrandedSnapshots(const std::string& dir,
                                     PruneReport& report) {
  absl::StatusOr<std::vector<std::uint64_t>> snapshots =
      ListSnapshotIndexes(dir);
  if (!snapshots.ok()) return snapshots.status();
  const std::string snapshot_dir =
      absl::StrFormat("%s/%s", dir, kSnapshotDirName);
  for (const std::uint64_t index : *snapshots) {
    if (index + 1 >= report.first_index_after) continue;
    const std::string path =
        absl::StrFormat("%s/%s", snapshot_dir, SnapshotFileName(index));
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(errno, absl::StrFormat("unlink %s", path));
    }
    report.snapshots_removed.push_back(path);
  }
  if (!report.snapshots_removed.empty()) return FsyncDirectory(snapshot_dir);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PruneReport> PruneJournal(const PruneOptions& options) {
  const std::string& dir = options.directory;
  if (options.before_index == 0) {
    return absl::InvalidArgumentError("prune: the index to prune before is 0");
  }
  absl::StatusOr<Listing> listing = List(dir);
  if (!listing.ok()) return listing.status();
  const std::vector<internal::SegmentEntry>& segments = listing->segments;
  PruneReport report;
  report.first_index_before = listing->first_index;
  report.first_index_after = listing->first_index;
  if (absl::Status s = CheckFirstSegment(dir, *listing); !s.ok()) return s;
  // The journal's id, and every segment to remove checked.
  std::vector<std::uint64_t> sizes(segments.size(), 0);
  absl::StatusOr<SegmentHeader> first = ReadHeader(segments[0], &sizes[0]);
  if (!first.ok()) return first.status();
  const std::uint64_t journal_id = first->journal_id;
  absl::StatusOr<std::size_t> keep_from =
      FirstSegmentKept(segments, options.before_index);
  if (!keep_from.ok()) return keep_from.status();
  report.stopped_because = WhyKept(segments, *keep_from, options.before_index);
  if (absl::Status s =
          CheckSegmentsToPrune(segments, *keep_from, journal_id, sizes);
      !s.ok()) {
    return s;
  }
  const std::uint64_t new_first = segments[*keep_from].name_index;
  if (new_first == listing->first_index && listing->leftovers.empty()) {
    return report;  // nothing to do
  }

  base::UniqueFd dir_fd(
      ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return ErrnoStatus(errno, absl::StrFormat("open %s", dir));
  // 1. The new start, durably, before anything is removed.
  if (new_first != listing->first_index) {
    if (absl::Status s =
            WriteJournalStart(dir, dir_fd.get(),
                              JournalStart{.journal_id = journal_id,
                                           .first_index = new_first,
                                           .written_ns = base::RealtimeNs()});
        !s.ok()) {
      return s;
    }
    report.first_index_after = new_first;
  }
  // 2. The segments before it: left over from an interrupted prune, then
  // the ones pruned now.
  std::vector<PrunedSegment> to_remove =
      SegmentsToRemove(*listing, *keep_from, sizes);
  if (absl::Status s = RemoveSegments(options, to_remove, report); !s.ok()) {
    return s;
  }
  // 3. Both directories durable.
  if (::fsync(dir_fd.get()) != 0) {
    return ErrnoStatus(errno, absl::StrFormat("fsync %s", dir));
  }
  if (!options.archive.empty()) {
    if (absl::Status s = FsyncDirectory(options.archive); !s.ok()) return s;
  }
  // 4. Snapshots that the journal can no longer continue.
  if (absl::Status s = RemoveStrandedSnapshots(dir, report); !s.ok()) return s;
  return report;
}

}  // namespace orderwire::journal
