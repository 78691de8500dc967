// JournalWriter: appends command frames to the journal with io_uring and
// group commit, and says how far the journal is durable.
//
// Design. Append() copies the caller's frames, verbatim, into the group
// being filled: one of a fixed set of slots (aligned buffers registered with
// io_uring, allocated once at Open). A group is sealed (header, CRC32C
// trailer, zero padding to the next 8-byte boundary) and written with a
// single write at an explicit offset of a preallocated segment when it is
// full, when Poll() finds the pipeline with room for it (group commit:
// records gather while earlier groups are in flight), or on Flush(). Several
// groups are in flight at once. Completions are unordered, so a group counts
// as durable only when it and every group sealed before it have completed;
// durable_index() is the last index of that prefix and never runs ahead of
// the disk.
//
// Compact groups (format version 2). Groups are packed: each starts at the
// first 8-byte boundary after the previous one's trailer. Buffered writes
// (kNone, kFdatasync) write exactly the group's bytes. O_DIRECT writes must
// cover whole 4096-byte blocks, so a group that starts inside a block
// already partly written rewrites that block: the writer keeps the bytes of
// the journal's last, partly filled block in memory (tail_block_) and the
// group's write begins at that block with those identical bytes in front.
// Two writes that cover the same block are never in flight together (the
// older one landing last would zero the newer group's start): a group whose
// first block is shared with a write still in flight keeps filling until
// that write completes, and one that must be sealed meanwhile (full, or
// Flush) waits, sealed, and is submitted when it completes.
// docs/JOURNAL.md "Compact groups" says why a torn rewrite of the shared
// block cannot lose a group that was durable.
//
// Durability modes (docs/JOURNAL.md has the measured costs):
// - kNone: buffered writes, no sync. durable_index() covers the groups whose
//   write completed: they survive a crash of the process, not of the OS.
// - kBatch (default): every group is made durable on its own before it
//   counts: with O_DIRECT and RWF_DSYNC on the write itself (the default
//   where the file system supports O_DIRECT), or a buffered write with an
//   fdatasync linked behind it (IOSQE_IO_LINK). Many records share a sync.
// - kSync: like kBatch, but Append() seals its records into a group of
//   their own and returns only once they are durable: no group commit.
//
// Segments: when a group does not fit in the current segment, the writer
// rotates to the next one, which it prepares in advance off the append path
// (created under a temporary name, preallocated with fallocate, for kBatch
// and kSync pre-zeroed so that synced writes change no file metadata, then
// fsynced with its directory), renames into place and gives its header;
// nothing in the new segment counts as durable before the header does.
// Preparation starts once an eighth of the current segment is used, so that
// a disk too full for the next segment shows long before the current one
// ends. The zeroing is paced by the fill of the current segment (one small
// write at a time, finished by the time it is half full), so it
// never floods the device cache that every group's sync has to flush.
//
// Disk full is a state, not an error. When the disk has no room for a whole
// next segment, the writer prepares a smaller one (halving the size until
// it fits, down to smallest_segment(); the size is in the segment's header,
// which every reader goes by) and counts it (WriterStats::reduced_segments).
// When even that fails with ENOSPC or EDQUOT, it removes the partial file,
// remembers the free space it needs (space_needed(): the smallest segment)
// and tries again at most every WriterOptions::no_space_retry_ms (from
// Poll, Wait and Append; never a busy loop), from a whole segment down
// again. Appends go on into the current segment while it has room; once it
// has none, Append() answers kJournalFull (nothing appended, nothing lost,
// the writer keeps running) until a preparation succeeds.
//
// Errors: a failed write or sync (any errno other than EAGAIN/EINTR, which
// are retried; short writes are completed) stops the writer for good:
// status() names the file, offset and errno, Append() returns kFailed and
// durable_index() stays where it was.
//
// Threading: one thread at a time. Usage from an event loop:
//
//   auto writer = JournalWriter::Open({.directory = dir});
//   ...
//   switch (w->Append(datagram_frames, session, now_ns)) {
//     case AppendStatus::kOk: break;
//     case AppendStatus::kFull: /* stop reading; Poll() later */ break;
//     ...
//   }
//   const std::uint64_t durable = w->Poll();  // each loop iteration
//   // send the reports of commands with journal index <= durable
#ifndef ORDERWIRE_JOURNAL_WRITER_H_
#define ORDERWIRE_JOURNAL_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/latency_histogram.h"
#include "base/unique_fd.h"
#include "journal/checkpoint.h"
#include "journal/durable_mark.h"
#include "journal/format.h"
#include "journal/internal/io_queue.h"

namespace orderwire::journal {

enum class Durability : std::uint8_t { kNone, kBatch, kSync };

// "none", "batch", "sync".
[[nodiscard]] std::string_view Name(Durability durability) noexcept;
// Parses a Name(). Error: InvalidArgument naming the accepted values.
absl::StatusOr<Durability> ParseDurability(std::string_view text);

// How kBatch and kSync make a group durable.
enum class SyncMethod : std::uint8_t {
  kAuto,         // kDirectDsync where O_DIRECT works, else kFdatasync
  kDirectDsync,  // O_DIRECT write with RWF_DSYNC
  kFdatasync,    // buffered write, fdatasync linked behind it
};

enum class IoBackend : std::uint8_t {
  kAuto,      // io_uring; if the kernel refuses it, kBlocking (announced)
  kIoUring,   // io_uring or an Unavailable error
  kBlocking,  // pwritev2/fdatasync in the calling thread
};

// When a whole next segment does not fit on the disk, the writer makes a
// smaller one, never below this (nor below one full group and the header
// block; a segment_size below it is not reduced at all): see
// JournalWriter::smallest_segment().
inline constexpr std::uint64_t kSmallestReducedSegment = std::uint64_t{1} << 20;

struct WriterOptions {
  std::string directory;  // created if missing
  Durability durability = Durability::kBatch;
  // Bytes per segment file (rounded up to 4096; at least 64 KiB).
  std::uint64_t segment_size = std::uint64_t{64} << 20;
  // Bytes per group buffer (rounded up to 4096); 0 picks the default for
  // the durability (256 KiB for kNone, 64 KiB otherwise).
  std::uint32_t group_size = 0;
  // Group buffers (2 to 64); 0 picks the default, 4. Every buffer but the
  // one being filled can be in flight. More buffers give more throughput
  // and a longer queue at the device, so a longer submit-to-durable tail;
  // 4 is the balance measured in docs/BENCHMARKS.md (Journal).
  std::uint32_t slots = 0;
  // Poll() seals a group that is not full only while fewer than this many
  // groups are in flight (group commit); 0 picks 2. At most slots - 1.
  std::uint32_t max_partial_in_flight = 0;
  SyncMethod sync_method = SyncMethod::kAuto;
  IoBackend backend = IoBackend::kAuto;
  // Pre-zero new segments under kBatch and kSync.
  bool prezero = true;
  // While the disk is too full for the next segment, preparing it is tried
  // again at most this often (milliseconds, at least 1).
  std::uint32_t no_space_retry_ms = 250;
  // The caller's metadata for the header block of the journal's first
  // segment, if Open creates the journal (at most kMaxSegmentMetadata
  // bytes; opaque to the journal: the service pins its configuration
  // there). An existing journal keeps its own: the writer takes the
  // metadata of its last segment (metadata()), and every rotation copies
  // it; only StartSegment() changes it.
  std::string metadata{};
  // A journal Open creates (the directory holds none) starts at this index
  // with this journal_id (0: a random one), instead of at 1: a new
  // member's journal seeded from a snapshot at new_journal_first_index - 1
  // (cluster/seed.h), whose records up to that index are the snapshot's.
  // Its last_index() and durable_index() are new_journal_first_index - 1
  // until it holds a record. It opens again only once its start record
  // (start.h) says it starts there, which the seeding writes last. An
  // existing journal ignores both. (A journal whose only segment never got
  // its header is created again: it takes new_journal_id too.)
  std::uint64_t new_journal_first_index = 1;
  std::uint64_t new_journal_id = 0;
  // The operator accepts losing records that were durable: where recovery
  // would refuse with DataLoss (a truncated or missing segment, records
  // below the checkpoint gone, corruption followed by durable data, a
  // damaged or foreign checkpoint), it keeps the longest whole prefix of
  // the journal, sets the rest aside (later segment files are renamed to
  // <name>.lost, not deleted), reports what was lost in
  // RecoveryReport::loss_message and writes a new checkpoint.
  bool accept_loss = false;
  // The checkpoint (checkpoint.h) is published at most this often while
  // groups become durable, through the I/O queue, and at Open and Close.
  // 0 picks 1000 ms: publishing every 100 ms slows a batch write
  // measurably, every second does not (docs/BENCHMARKS.md "Journal").
  std::uint32_t checkpoint_interval_ms = 0;
  // Tests only: sees every I/O op and completion of the writer's queue and
  // may rewrite results (see internal/io_queue.h). Null: no wrapper, no cost.
  internal::IoFaults* faults = nullptr;
  // The format version of the segments the writer starts: kFormatVersion
  // (3, packed groups with compact framing), 2 (packed groups, the framing
  // of version 1) or 1 (groups on 4096-byte boundaries). Appending to an
  // existing journal continues its last segment in that segment's own
  // version (a journal written by an older orderwire is never rewritten),
  // so the writer writes all three; every segment started later gets this
  // one. Only tests start segments in 1 or 2, to make such journals.
  std::uint16_t format_version = kFormatVersion;
};

enum class AppendStatus : std::uint8_t {
  kOk,            // appended; durable once durable_index() reaches them
  kFull,          // no buffer free (or the next segment not ready yet):
                  // nothing appended; Poll()/Wait() and try again
  kInvalidFrame,  // `frames` is empty, holds a partial frame or a
                  // non-command kind: nothing appended
  kTooLarge,      // more than max_append_bytes() of records: nothing
  kJournalFull,   // the current segment has no room for the records and
                  // the disk none for the next segment: nothing appended;
                  // not an error (space_needed() says how much to free;
                  // the writer resumes by itself)
  kFailed,        // the writer has stopped, see status()
};

[[nodiscard]] std::string_view Name(AppendStatus status) noexcept;

// What Open() found and did.
struct RecoveryReport {
  bool created = false;          // a new journal was started
  std::uint64_t last_index = 0;  // last record in the journal after Open
  std::uint64_t segments = 0;    // segment files after Open
  bool torn_tail = false;        // a torn tail was cut off
  std::string torn_segment;      // where
  std::uint64_t torn_offset = 0;
  std::uint64_t discarded_bytes = 0;       // non-zero bytes cut off
  std::uint64_t discarded_groups = 0;      // whole groups found past the tear
  std::vector<std::string> removed_files;  // later segments removed
  std::string message;  // the damage report (empty without a torn tail)
  // WriterOptions::accept_loss let records that had been durable go: what
  // was lost (indexes, files, why). Empty otherwise.
  bool loss_accepted = false;
  std::string loss_message;
  // The journal had no checkpoint (written by older code, or a new
  // journal): its end could not be checked this time. One is written now.
  bool checkpoint_missing = false;
  // What recovery read: the groups of these segments, from this index on
  // (the checkpoint's group: the checkpoint witnesses what precedes it; 1
  // for a journal without one or under accept_loss, read in full). The
  // headers of all segments are checked either way.
  std::uint64_t segments_read = 0;
  std::uint64_t read_from_index = 0;
  // Empty, or why the DURABLE file (durable_mark.h) could not be written
  // (e.g. a full disk): the writer goes on without it; followers then go by
  // the checkpoint.
  std::string durable_file_problem;
  // A cut of the journal's tail (cut.h) found half-done and finished:
  // what was cut, where it is kept. Empty otherwise.
  std::string cut_message;
};

// Counters since Open.
struct WriterStats {
  std::uint64_t records = 0;
  std::uint64_t groups = 0;
  // Bytes the group writes put on the device: under O_DIRECT whole blocks,
  // the old bytes of a rewritten shared block included.
  std::uint64_t bytes_written = 0;
  // Bytes of the journal the groups take: from each group's start to where
  // the next one starts (its padding included). Over `records`, the
  // journal's cost per record.
  std::uint64_t journal_bytes = 0;
  std::uint64_t syncs = 0;  // fdatasync ops (kFdatasync method)
  std::uint64_t short_writes = 0;
  std::uint64_t retries = 0;  // EAGAIN/EINTR resubmissions
  std::uint64_t rotations = 0;
  std::uint64_t full = 0;              // Append() calls answered kFull
  std::uint64_t journal_full = 0;      // Append() calls answered kJournalFull
  std::uint64_t prepare_no_space = 0;  // preparation attempts that found
                                       // no space
  // Segments prepared smaller than the configured size because the disk
  // had no room for a whole one (docs/JOURNAL.md "Disk full").
  std::uint64_t reduced_segments = 0;
  // Rotations that found the next segment not ready yet (for lack of time,
  // not of space) and waited for it (Append answered kFull meanwhile):
  // counted once per segment. 0 when the paced zeroing kept up.
  std::uint64_t prepare_waits = 0;
  std::uint64_t checkpoints = 0;          // checkpoints published
  std::uint64_t checkpoint_failures = 0;  // attempts that failed (retried)
};

class JournalWriter {
 public:
  // Opens (or creates) the journal in options.directory for appending,
  // after recovering it: a torn tail is reported in recovery() and cut off
  // (zeroed, later segments removed); data loss (damage followed by data
  // that had been durable, or a group written in full that does not
  // verify) is refused with DataLoss naming the file and offset, and so are
  // records the checkpoint witnesses as durable that are gone (unless
  // options.accept_loss). Takes an exclusive flock on the directory itself
  // (and on its LOCK file, which holds the writer's pid for messages), so
  // that deleting a file cannot let a second writer in. Errors:
  // InvalidArgument (options), DataLoss, Unavailable (locked by another
  // writer, or backend kIoUring without io_uring), the errno of any file
  // operation. Cold: reads every segment, writes the checkpoint, may write
  // a new segment.
  static absl::StatusOr<std::unique_ptr<JournalWriter>> Open(
      const WriterOptions& options);

  // Closes (see Close()); errors are dropped: call Close() to see them.
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Appends `frames` (whole command frames back to back, e.g. the frames of
  // a datagram) as consecutive records with this session, receive time and
  // record flags (the caller's: stored verbatim, never interpreted).
  // All or nothing: the records land in one group, so they also become
  // durable together. Under kNone and kBatch it never blocks (it may submit
  // a full group to the kernel); under kSync it returns once the records
  // are durable. Hot path: two passes over the frames, one copy, no
  // allocation.
  AppendStatus Append(std::span<const std::byte> frames,
                      std::uint32_t session_id, std::uint64_t receive_ns,
                      std::uint32_t flags = 0) noexcept;

  // Reaps completions, resubmits retries and the rest of short writes,
  // advances durable_index(), seals the group being filled when the
  // pipeline has room, moves segment preparation on. Never blocks. Returns
  // durable_index().
  std::uint64_t Poll() noexcept;

  // Blocks until some I/O completes (returns at once when nothing is in
  // flight), then does what Poll() does. Error: status() if stopped.
  absl::Status Wait();

  // Seals the group being filled and blocks until durable_index() ==
  // last_index(). Error: status() if the writer stopped.
  absl::Status Flush();

  // Flush(), then fdatasync of the open segments, so that under kNone too
  // everything appended is on disk. For shutdown.
  absl::Status Sync();

  // Sync(), waits for all I/O, closes the files, removes the prepared next
  // segment and releases the lock. Further calls do nothing.
  absl::Status Close();

  // Starts a new segment whose header block carries `metadata` (at most
  // kMaxSegmentMetadata bytes): the next record appended (index
  // last_index() + 1) is its first, so a reader sees the new metadata take
  // effect exactly there. Later rotations copy it. Blocks: flushes what was
  // appended, prepares and rotates to the new segment and waits until its
  // header is written (under kBatch and kSync, durable). If the current
  // segment holds no record yet, the new segment replaces it (same first
  // index: the rename replaces the file). Errors: InvalidArgument (too
  // large), ResourceExhausted when the disk has no room for the new
  // segment (space_needed(); nothing changed, the writer goes on), status()
  // if the writer stopped (it stops on an I/O error here as in Append).
  // Cold.
  absl::Status StartSegment(std::string_view metadata);

  // The path of the segment being appended to.
  [[nodiscard]] const std::string& segment_path() const noexcept {
    return segments_[active_].path;
  }
  // The metadata of the segment being appended to (see WriterOptions).
  [[nodiscard]] const std::string& metadata() const noexcept {
    return metadata_;
  }

  // The journal's id: random, chosen when its first segment was created,
  // the same in every segment header (format.h). Snapshots and checkpoints
  // name it so they are never applied to another journal.
  [[nodiscard]] std::uint64_t journal_id() const noexcept {
    return journal_id_;
  }
  // Index of the last record appended (0 if none yet).
  [[nodiscard]] std::uint64_t last_index() const noexcept {
    return last_index_;
  }
  // Every record up to this index is durable under the writer's mode.
  [[nodiscard]] std::uint64_t durable_index() const noexcept {
    return durable_index_;
  }
  [[nodiscard]] bool failed() const noexcept { return !status_.ok(); }
  // 0, or while the disk is too full for the next segment, the free bytes
  // its preparation needs in the journal's directory: smallest_segment().
  [[nodiscard]] std::uint64_t space_needed() const noexcept {
    return space_needed_;
  }
  // The configured segment size (WriterOptions::segment_size rounded up to
  // 4096), which every new segment has when the disk has room for it.
  [[nodiscard]] std::uint64_t segment_size() const noexcept {
    return capacity_;
  }
  // The smallest segment the writer makes when a whole one does not fit:
  // kSmallestReducedSegment, or segment_size() if that is smaller, and at
  // least the header block and one full group (max_append_bytes() of
  // records).
  [[nodiscard]] std::uint64_t smallest_segment() const noexcept {
    return smallest_capacity_;
  }
  // The size of the last next segment whose preparation began (its space
  // allocated); segment_size() before any.
  [[nodiscard]] std::uint64_t last_prepared_size() const noexcept {
    return last_prepared_capacity_;
  }
  // Why, while space_needed() is not 0: the operation, file and errno of
  // the first failed preparation of this episode.
  [[nodiscard]] const std::string& space_reason() const noexcept {
    return space_reason_;
  }
  [[nodiscard]] const absl::Status& status() const noexcept { return status_; }
  [[nodiscard]] const RecoveryReport& recovery() const noexcept {
    return recovery_;
  }
  // The most record bytes one Append() can take: the frame bytes plus 24
  // bytes per frame. At least 60 KiB with the default options.
  [[nodiscard]] std::size_t max_append_bytes() const noexcept {
    return max_append_bytes_;
  }
  // How the writer does its I/O, e.g. "io_uring, O_DIRECT + RWF_DSYNC";
  // says so when it fell back to blocking I/O because io_uring is missing.
  [[nodiscard]] const std::string& io_description() const noexcept {
    return io_description_;
  }
  [[nodiscard]] const WriterStats& stats() const noexcept { return stats_; }
  // The room the journal has on its file system: the bytes free there
  // (statvfs f_bavail) and those its own segment files take (allocated
  // blocks, the prepared next segment included). free + journal is what the
  // journal could grow to if pruning gave all of its space back. Cold: a
  // statvfs, a directory walk and a stat per segment. Error: the errno of
  // statvfs or of reading the directory.
  struct Space {
    std::uint64_t free_bytes = 0;
    std::uint64_t journal_bytes = 0;
  };
  [[nodiscard]] absl::StatusOr<Space> SpaceOnDisk() const;
  // Time from each group's submission until it counted as durable.
  [[nodiscard]] const LatencyHistogram& durable_latency() const noexcept {
    return latency_;
  }
  [[nodiscard]] Durability durability() const noexcept { return durability_; }

 private:
  struct Slot {
    std::byte* buffer = nullptr;
    enum class State : std::uint8_t { kFree, kFilling, kInFlight };
    State state = State::kFree;
    bool header = false;  // a segment header write, no records
    bool synced = true;   // kFdatasync: the sync after the write is done
    std::uint16_t outstanding = 0;  // ops submitted, not completed
    // Sealed, but its write waits for `blocker`'s (see below).
    bool waiting = false;
    std::uint32_t segment = 0;  // index into segments_
    // The framing of the group: GroupFormatOf(its segment's version).
    GroupFormat format = GroupFormatOf(kFormatVersion);
    std::uint64_t offset = 0;  // file offset of the group
    // Bytes in front of the group in the buffer: under O_DIRECT, the old
    // bytes of the block the group starts in (offset % 4096 of them),
    // rewritten identical. The write starts at offset - lead.
    std::uint32_t lead = 0;
    // The slot whose write covers this group's first block and has not
    // completed yet (-1: none); this one's write is submitted only after.
    std::int32_t blocker = -1;
    std::uint32_t used = 0;    // bytes filled: lead + group header + records
    std::uint32_t limit = 0;   // the most `used` may reach
    std::uint32_t length = 0;  // bytes to write from buffer[0], once sealed
    std::uint32_t done = 0;    // bytes of `length` written
    std::uint32_t records = 0;
    std::uint32_t crc = 0;  // the trailer's, once sealed
    std::uint64_t first_index = 0;
    std::uint64_t last_index = 0;
    std::int64_t submit_ns = 0;
  };
  struct SegmentFile {
    base::UniqueFd fd;
    bool active = false;  // the segment groups are appended to
    std::uint16_t version = kFormatVersion;  // its format version
    std::uint32_t users = 0;                 // slots that refer to it
    std::uint64_t first_index = 0;
    std::uint64_t capacity = 0;
    std::string path;
  };
  struct Prepared {
    // kNoSpace: the last attempt found the disk full; the partial file is
    // removed once in_flight is 0, and the next attempt is at retry_ns.
    enum class State : std::uint8_t {
      kNone,
      kZeroing,
      kSyncing,
      kReady,
      kNoSpace
    };
    State state = State::kNone;
    base::UniqueFd fd;
    // Its size: capacity_, or smaller when the disk had no room for that.
    std::uint64_t capacity = 0;
    std::uint32_t chunks = 0;      // zero writes needed
    std::uint32_t next_chunk = 0;  // next zero write to submit
    std::uint32_t chunks_done = 0;
    std::uint32_t in_flight = 0;  // zero writes and the fsync
    std::int64_t retry_ns = 0;    // kNoSpace: monotonic time of the retry
    // Paced zeroing (writer_segments.cc): the active segment's write
    // position when zeroing began; `late` once the schedule is dropped for
    // full speed (the active segment reached its ready-by point, or a
    // rotation or StartSegment needs the segment now).
    std::uint64_t pace_start = 0;
    bool late = false;
    bool counted_wait = false;  // stats_.prepare_waits counted this one
  };

  explicit JournalWriter(const WriterOptions& options);

  // Open's steps: the options checked (writer.cc), then sizes set, the
  // directory created and locked, buffers allocated, I/O set up, the
  // journal recovered, the DURABLE file opened, a checkpoint written.
  absl::Status Init();
  void SetSizes();
  absl::Status CreateDirectory();
  absl::Status AllocateBuffers();
  void OpenDurableMark();
  absl::Status WriteFirstCheckpoint();
  absl::Status Lock();
  // The checkpoint of what is durable now. Writes it, blocking (Open,
  // Close), or starts its publication through the queue (Poll).
  [[nodiscard]] Checkpoint CurrentCheckpoint() const noexcept;
  absl::Status WriteCheckpointNow();
  void MaybeCheckpoint() noexcept;
  void HandleCheckpoint(std::uint32_t tag, std::int32_t result) noexcept;
  void CheckpointFailed(int err) noexcept;
  absl::Status SetUpIo();
  // Recovery at Open (writer_recovery.cc): Recover() runs a Recovery,
  // whose steps set the writer's members.
  class Recovery;
  absl::Status Recover();
  absl::Status CreateFirstSegment(std::uint64_t journal_id);
  // Sets metadata_ from the header block of the active segment (after
  // recovery of an existing journal).
  absl::Status LoadActiveMetadata();
  absl::StatusOr<base::UniqueFd> OpenSegmentFd(const std::string& path,
                                               int flags);

  Slot* OpenGroup(std::size_t need) noexcept;
  AppendStatus Commit(Slot& slot, std::uint32_t used,
                      std::uint64_t last) noexcept;
  void Seal(Slot& slot) noexcept;
  // Fills the 4096-byte `block` with the header of a new segment of
  // `capacity` bytes, and zeros.
  void WriteSegmentHeader(std::uint64_t first_index, std::uint64_t capacity,
                          std::byte* block) const noexcept;
  void SubmitWrite(std::uint32_t id) noexcept;
  // Slot `id`'s write has completed in full: the groups waiting for it may
  // be submitted.
  void WriteLanded(std::uint32_t id) noexcept;
  // Whether a group of `need` record bytes fits in the active segment at
  // write_pos_.
  [[nodiscard]] bool GroupFits(std::size_t need) const noexcept;
  // After recovery: reads the partly filled block write_pos_ is in into
  // tail_block_ (O_DIRECT only).
  absl::Status LoadTailBlock();
  void PushOp(const internal::IoOp& op) noexcept;
  void SubmitPending() noexcept;
  void Reap(bool wait) noexcept;
  void Handle(const internal::IoCompletion& completion) noexcept;
  void HandlePrepared(std::uint64_t id, std::uint32_t tag,
                      std::int32_t result) noexcept;
  void Advance() noexcept;
  void Release(Slot& slot) noexcept;
  bool Rotate() noexcept;
  // Moves the next segment's preparation on: creates it once an eighth of
  // the active segment is used (or retries after a full disk), submits the
  // zero writes the pace allows (all of them, at full speed, with
  // `needed_now`: a rotation waits for it), then its syncs.
  void PumpPrepared(bool needed_now) noexcept;
  // PumpPrepared's steps: creates and allocates the next segment's file
  // (false: it could not, and why is recorded: no space, or the writer
  // failed), then submits its zero writes and its sync.
  bool StartPrepared() noexcept;
  void ZeroPrepared(bool needed_now) noexcept;
  // The write of zeros over chunk `chunk` of the prepared file (the last
  // chunk may be short); the caller sets user_data.
  [[nodiscard]] internal::IoOp ZeroWriteOp(std::uint64_t chunk) const noexcept;
  // Allocates the prepared file `fd`: capacity_ bytes, or the largest of
  // capacity_ / 2, / 4, ... (at least smallest_capacity_) that the disk
  // has room for. Returns the size, or 0 with *err set (the errno of the
  // last failed operation; ENOSPC or EDQUOT when not even the smallest
  // fits).
  std::uint64_t AllocatePrepared(int fd, int* err) noexcept;
  // Preparation found no space (errno ENOSPC or EDQUOT, `what` failed):
  // the partial file is removed (once no op on it is in flight) and a retry
  // is due no_space_retry_ms later.
  void PreparedNoSpace(int err, std::string_view what) noexcept;
  void DiscardPrepared() noexcept;
  void Fail(const absl::Status& status) noexcept;
  absl::Status WaitDurable(std::uint64_t index);
  [[nodiscard]] bool Complete(const Slot& slot) const noexcept;
  [[nodiscard]] std::uint32_t SlotId(const Slot& slot) const noexcept {
    return static_cast<std::uint32_t>(&slot - slots_.data());
  }
  [[nodiscard]] const std::string& PreparedPath() const;

  // Configuration.
  WriterOptions options_;
  Durability durability_;
  bool direct_ = false;  // O_DIRECT + RWF_DSYNC (else fdatasync if durable)
  bool sync_after_write_ = false;  // kFdatasync under kBatch/kSync
  bool prezero_ = false;
  std::uint64_t capacity_ = 0;           // segment size
  std::uint64_t smallest_capacity_ = 0;  // see smallest_segment()
  std::uint32_t group_size_ = 0;
  std::uint32_t buffer_size_ = 0;  // group_size_ + kBlockSize (the lead)
  std::uint16_t format_version_ = kFormatVersion;  // of new segments
  std::uint32_t max_partial_ = 0;
  std::uint64_t journal_id_ = 0;
  std::string prepared_path_;  // directory + "/" + kPreparedFileName
  std::string metadata_;       // for the header of the next segment

  // I/O.
  std::unique_ptr<internal::IoQueue> queue_;
  base::UniqueFd dir_fd_;
  base::UniqueFd lock_fd_;
  // The DURABLE file, for followers (durable_mark.h).
  DurableMarkPublisher durable_mark_;
  base::UniqueFd dir_lock_fd_;  // the directory again, flocked
  bool closed_ = false;
  bool closing_ = false;
  bool submit_pending_ = false;
  std::uint32_t ops_in_flight_ = 0;

  // Buffers, allocated once.
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;  // free slot ids (a stack)
  std::vector<std::uint32_t> fifo_;  // sealed slot ids, in seal order
  std::size_t fifo_head_ = 0;
  std::size_t fifo_count_ = 0;
  std::byte* zeros_ = nullptr;  // kZeroChunk zero bytes
  Slot* filling_ = nullptr;

  // Segments.
  std::vector<SegmentFile> segments_;  // open files; no fd = unused entry
  std::uint32_t active_ = 0;
  std::uint64_t write_pos_ = 0;  // next group offset in the active one
  // O_DIRECT: the bytes [AlignDown(write_pos_), write_pos_) of the active
  // segment, which the next group's write rewrites, and the slot whose
  // write of them has not completed yet (-1: none).
  std::byte* tail_block_ = nullptr;
  std::int32_t tail_writer_ = -1;
  Prepared prepared_;
  std::uint64_t space_needed_ = 0;            // see space_needed()
  std::uint64_t last_prepared_capacity_ = 0;  // see last_prepared_size()
  std::string space_reason_;                  // see space_reason()

  // The checkpoint: the last group that became durable, and the
  // publication through the queue (temp file written and fdatasynced,
  // renamed into place, directory fsynced).
  struct DurableGroup {
    std::uint64_t first_index = 0;
    std::uint64_t segment_first_index = 0;
    std::uint64_t offset = 0;
    std::uint32_t crc = 0;
  };
  DurableGroup durable_group_;
  enum class CheckpointState : std::uint8_t {
    kIdle,
    kSyncingFile,
    kSyncingDir
  };
  CheckpointState checkpoint_state_ = CheckpointState::kIdle;
  base::UniqueFd checkpoint_fd_;
  std::uint32_t checkpoint_ops_ = 0;      // its ops in flight
  int checkpoint_error_ = 0;              // of the publication in flight
  int last_checkpoint_errno_ = 0;         // of the last one that failed
  std::uint64_t checkpointed_index_ = 0;  // published
  std::uint64_t checkpoint_pending_ = 0;  // being published
  std::int64_t next_checkpoint_ns_ = 0;
  std::int64_t checkpoint_interval_ns_ = 0;
  alignas(8) std::byte checkpoint_bytes_[kCheckpointSize] = {};
  std::string checkpoint_path_;
  std::string checkpoint_temp_path_;

  // State.
  std::uint64_t last_index_ = 0;
  std::uint64_t durable_index_ = 0;
  std::size_t max_append_bytes_ = 0;
  absl::Status status_;
  RecoveryReport recovery_;
  std::string io_description_;
  WriterStats stats_;
  LatencyHistogram latency_;
};

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_WRITER_H_
