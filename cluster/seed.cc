// Seeding a new member's journal from a snapshot; see seed.h.
#include "cluster/seed.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/clock.h"
#include "base/unique_fd.h"
#include "journal/start.h"
#include "state/state_machine.h"

namespace orderwire::cluster {
namespace {

using state::CopySnapshot;
using state::DescribeDifferences;
using state::EncodePinnedConfig;
using state::LoadedSnapshot;
using state::LoadSnapshot;
using state::PinnedConfig;
using state::PinnedConfigOf;
using state::SnapshotInfo;

// OK when `dir` is missing or an empty directory; otherwise
// FailedPrecondition naming what it holds.
absl::Status CheckNewDirectory(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::ErrnoToStatus(errno, absl::StrFormat("stat %s", dir));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot seed a journal in %s: it is not a directory", dir));
  }
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()),
                                              ::closedir);
  if (listing == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("opendir %s", dir));
  }
  std::vector<std::string> entries;
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") entries.emplace_back(name);
  }
  if (entries.empty()) return absl::OkStatus();
  std::sort(entries.begin(), entries.end());
  constexpr std::size_t kNamed = 5;
  const std::size_t named = std::min(entries.size(), kNamed);
  return absl::FailedPreconditionError(absl::StrFormat(
      "cannot seed a journal in %s: the directory is not empty (it holds %d "
      "entr%s: %s%s). Seeding from a snapshot makes a new member's journal; "
      "a directory that holds a journal restarts from its own snapshots "
      "(start without the snapshot). To seed anew, give a new or empty "
      "directory",
      dir, entries.size(), entries.size() == 1 ? "y" : "ies",
      absl::StrJoin(entries.begin(),
                    entries.begin() + static_cast<std::ptrdiff_t>(named), ", "),
      entries.size() > named ? ", ..." : ""));
}

}  // namespace

absl::StatusOr<SnapshotInfo> CheckSeed(const SeedOptions& options) {
  const std::string& dir = options.journal.directory;
  if (absl::Status s = CheckNewDirectory(dir); !s.ok()) return s;
  absl::StatusOr<LoadedSnapshot> loaded = LoadSnapshot(options.snapshot, 0);
  if (!loaded.ok()) {
    return absl::Status(
        loaded.status().code(),
        absl::StrFormat("cannot seed journal %s from %s (a snapshot file "
                        "that verifies, as `orderwire snapshot inspect` "
                        "checks it): %s",
                        dir, options.snapshot, loaded.status().message()));
  }
  const SnapshotInfo& info = loaded->info;
  if (info.index == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot seed journal %s from %s: the snapshot is of index 0 (no "
        "record applied); start on the empty directory instead",
        dir, options.snapshot));
  }
  const PinnedConfig pinned = PinnedConfigOf(*loaded->machine);
  if (!(pinned == options.given)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot seed journal %s from %s: the configuration given differs "
        "from the one the snapshot holds at index %d (snapshot -> given): "
        "%s. The records after the snapshot apply with the primary's "
        "configuration: give the primary's",
        dir, options.snapshot, info.index,
        DescribeDifferences(pinned, options.given)));
  }
  return info;
}

absl::StatusOr<SeededJournal> SeedJournal(const SeedOptions& options) {
  absl::StatusOr<SnapshotInfo> checked = CheckSeed(options);
  if (!checked.ok()) return checked.status();
  const std::string& dir = options.journal.directory;
  const std::uint64_t first_index = checked->index + 1;
  const std::uint64_t journal_id = checked->journal_id;
  const auto failed = [&](const absl::Status& s) {
    return absl::Status(
        s.code(),
        absl::StrFormat("seeding journal %s from snapshot %s failed: %s. The "
                        "directory holds no journal that opens (its start "
                        "record was not written): empty it and seed again",
                        dir, options.snapshot, s.message()));
  };
  // 1. The journal's one segment, starting after the snapshot, with the
  // snapshot's journal_id and the configuration given pinned. The writer
  // holds the directory's lock until the end.
  journal::WriterOptions writer_options = options.journal;
  writer_options.metadata = EncodePinnedConfig(options.given);
  writer_options.new_journal_first_index = first_index;
  writer_options.new_journal_id = journal_id;
  absl::StatusOr<std::unique_ptr<journal::JournalWriter>> writer =
      journal::JournalWriter::Open(writer_options);
  if (!writer.ok()) return failed(writer.status());
  if (!(*writer)->recovery().created) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot seed journal %s: a journal appeared in it while seeding "
        "began (another process?); nothing of the seeding was written",
        dir));
  }
  // 2. The snapshot, the very bytes verified.
  absl::StatusOr<SnapshotInfo> copy =
      CopySnapshot(options.snapshot, dir, journal_id);
  if (!copy.ok()) return failed(copy.status());
  if (copy->index != checked->index) {
    return failed(absl::FailedPreconditionError(absl::StrFormat(
        "the snapshot file changed while it was copied (index %d, then %d)",
        checked->index, copy->index)));
  }
  // 3. The start record: from here on the directory is a journal.
  {
    const base::UniqueFd dir_fd(
        ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_fd.valid()) {
      return failed(
          absl::ErrnoToStatus(errno, absl::StrFormat("open %s", dir)));
    }
    if (absl::Status s = journal::WriteJournalStart(
            dir, dir_fd.get(),
            journal::JournalStart{.journal_id = journal_id,
                                  .first_index = first_index,
                                  .written_ns = base::RealtimeNs()});
        !s.ok()) {
      return failed(s);
    }
  }
  if (absl::Status s = (*writer)->Close(); !s.ok()) return s;
  SeededJournal seeded;
  seeded.snapshot = *std::move(copy);
  seeded.first_index = first_index;
  seeded.journal_id = journal_id;
  seeded.report = absl::StrFormat(
      "journal %s seeded from snapshot %s (index %d, journal id %016x, %d "
      "session(s), %d live orders): it starts at index %d",
      dir, options.snapshot, seeded.snapshot.index, journal_id,
      seeded.snapshot.sessions, seeded.snapshot.live_orders, first_index);
  return seeded;
}

}  // namespace orderwire::cluster
