// Snapshots: the whole state of a StateMachine at one journal index, in one
// file, so that a restart or a replay applies only the journal's tail.
//
// A snapshot holds everything a later record's effect depends on (the
// engine's configuration, live orders in price-time order and id counters;
// every session in order of first appearance with its sequences and its
// report history, so a resend after a restart is byte-identical; the pinned
// configuration and the history sizes in force; the statistics), and
// nothing that is a matter of memory layout. The format is
// docs/SNAPSHOT.md, byte for byte: a header (magic, version, journal_id,
// index, created_ns), a section table, five sections each under its own
// CRC32C, and a trailer with the CRC32C of the whole file; little-endian,
// every fixed structure declared once below as a codec::Layout.
//
// Files live in <journal dir>/snapshots/, named by the index of the last
// record they include ("%020llu.ows"), and are published atomically: written
// as "<name>.tmp", fsynced, renamed, the directory fsynced. A reader never
// sees a partial file under the final name.
//
// Loading reads the whole file and verifies everything before it builds
// anything (magic, version, sizes, counts, every checksum, every range and
// cross-reference: orders' books, levels and owners, unique ids, dense
// session indexes, report histories), so a damaged file is refused with the
// file, the offset and the field, and never half-loaded. A file that loads
// re-encodes to the same bytes (the encoding is canonical).
//
// Cold path throughout: nothing here runs per command.
#ifndef ORDERWIRE_STATE_SNAPSHOT_H_
#define ORDERWIRE_STATE_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "codec/layout.h"
#include "state/state_machine.h"

namespace orderwire::state {

// ---------------------------------------------------------------------------
// The API (shared with the service, which writes snapshots while serving).

// <journal_dir>/snapshots
[[nodiscard]] std::string SnapshotDirectory(const std::string& journal_dir);
// "%020llu.ows"
[[nodiscard]] std::string SnapshotFileName(std::uint64_t index);
// The index named by a snapshot file name, if `name` is one (exactly 20
// digits and ".ows").
[[nodiscard]] std::optional<std::uint64_t> ParseSnapshotFileName(
    std::string_view name);

struct SnapshotInfo {
  std::string path;
  std::uint64_t index = 0;       // last journal record included
  std::uint64_t journal_id = 0;  // the journal it belongs to
  std::uint64_t created_ns = 0;  // CLOCK_REALTIME when written
  std::uint64_t file_bytes = 0;
  std::uint32_t sessions = 0;
  std::uint64_t live_orders = 0;
};

// Writes the state of `machine` (everything up to machine.last_index())
// as <SnapshotDirectory(journal_dir)>/<SnapshotFileName(index)>,
// atomically (.tmp, fsync, rename, directory fsync); creates the
// directory. Safe to call in a forked child (no threads needed; may
// allocate). Errors: the errno of the file operation, naming the path.
absl::StatusOr<SnapshotInfo> WriteSnapshot(const StateMachine& machine,
                                           std::uint64_t journal_id,
                                           const std::string& journal_dir);

// Copies the snapshot file `path` into the snapshots of the journal in
// `journal_dir`, named by its index, for a new member's journal seeded from
// it (seed.h): the file is read whole, verified as LoadSnapshot verifies it
// (expected_journal_id as there) and those very bytes are published as
// WriteSnapshot publishes its own (.tmp, fsync, rename, directory fsync).
// Returns the copy's info. Errors: LoadSnapshot's (the original named), the
// errno of a file operation naming the path.
absl::StatusOr<SnapshotInfo> CopySnapshot(const std::string& path,
                                          const std::string& journal_dir,
                                          std::uint64_t expected_journal_id);

// One section of a loaded file, for `orderwire snapshot inspect`.
struct SnapshotSection {
  std::uint32_t kind = 0;
  std::string_view name;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
  std::uint32_t crc = 0;
};

// Reads and verifies a snapshot file in full (magic, version, checksums,
// every count and cross-reference) before building anything; a damaged
// file is refused (DataLoss/InvalidArgument naming file, offset, field),
// never half-loaded. expected_journal_id 0 = any.
struct LoadedSnapshot {
  std::unique_ptr<StateMachine> machine;
  SnapshotInfo info;
  // Added for inspection: the section table and the whole-file CRC32C.
  std::vector<SnapshotSection> sections;
  std::uint32_t file_crc = 0;
  std::uint32_t version = 0;  // the header's (kSnapshotVersion, 3 or 2)
};
absl::StatusOr<LoadedSnapshot> LoadSnapshot(const std::string& path,
                                            std::uint64_t expected_journal_id);

// The snapshot files in <journal_dir>/snapshots, newest (highest index)
// first, from their names only (cheap; nothing verified; file_bytes from
// stat). A missing directory is an empty list. Errors: the errno of
// reading the directory, naming it.
absl::StatusOr<std::vector<SnapshotInfo>> ListSnapshots(
    const std::string& journal_dir);

// The newest snapshot with index <= max_index that loads, belongs to
// journal_id and, when `usable` is given, whose state it accepts; each one
// that does not load is described in *skipped ("snapshot FILE: damaged at
// offset N: why; using the previous one"), one `usable` refuses is passed
// over silently. nullopt: none (start from the journal's beginning).
absl::StatusOr<std::optional<LoadedSnapshot>> LoadNewestSnapshot(
    const std::string& journal_dir, std::uint64_t journal_id,
    std::uint64_t max_index, std::vector<std::string>* skipped,
    const std::function<bool(const StateMachine&)>& usable = nullptr);

// ---------------------------------------------------------------------------
// The encoding itself, for tests, the fuzz target and tools.

// The bytes of the snapshot of `machine`, with these header fields.
[[nodiscard]] std::vector<std::byte> EncodeSnapshot(const StateMachine& machine,
                                                    std::uint64_t journal_id,
                                                    std::uint64_t created_ns);

// Verifies and loads the bytes of a snapshot file; `name` is what errors
// call it (the path). info.path is `name`; info.file_bytes is bytes.size().
// When `name`'s last component is a snapshot file name, the header's index
// must be the one it names.
absl::StatusOr<LoadedSnapshot> DecodeSnapshot(
    std::span<const std::byte> bytes, const std::string& name,
    std::uint64_t expected_journal_id);

// Recomputes every checksum of a snapshot's bytes (each section's CRC as
// its table entry places it, where the entry lies inside the file, then the
// header's and the whole file's), so that tests and the fuzz target can
// reach the checks behind the checksums. Bytes too short for a header and a
// trailer are left alone. Never reads or writes outside `bytes`.
void ResealSnapshot(std::span<std::byte> bytes);

// ---------------------------------------------------------------------------
// The fixed structures of the format (docs/SNAPSHOT.md).

inline constexpr std::uint64_t kSnapshotMagic = 0x4853'5041'4E53'574Full;
inline constexpr std::uint32_t kSnapshotTrailerMagic = 0x4553'574Fu;
inline constexpr std::uint32_t kSnapshotVersion = 4;
// The version before a session record had its flags (64 bytes, no session
// closed) and an order record its executed quantity (52 bytes, 0): still
// read (docs/SNAPSHOT.md).
inline constexpr std::uint32_t kSnapshotVersionWithoutSessionFlags = 3;
// The version before the feed's session start was in section 1 (its config
// record 8 bytes shorter): still read, as a feed session that began at the
// journal's first record (docs/SNAPSHOT.md).
inline constexpr std::uint32_t kSnapshotVersionWithoutFeedSession = 2;

struct SnapshotHeader {
  std::uint64_t magic;  // "OWSNAPSH"
  std::uint32_t version;
  std::uint32_t header_size;  // 64
  std::uint64_t journal_id;
  std::uint64_t index;
  std::uint64_t created_ns;
  std::uint64_t file_bytes;
  std::uint32_t section_count;  // 5
  std::uint32_t flags;          // 0
  std::uint32_t reserved;       // 0
  std::uint32_t crc;            // CRC32C of the 60 bytes before it
};
inline constexpr auto kSnapshotHeaderLayout = codec::MakeLayout(
    codec::Field{"magic", &SnapshotHeader::magic},
    codec::Field{"version", &SnapshotHeader::version},
    codec::Field{"header_size", &SnapshotHeader::header_size},
    codec::Field{"journal_id", &SnapshotHeader::journal_id},
    codec::Field{"index", &SnapshotHeader::index},
    codec::Field{"created_ns", &SnapshotHeader::created_ns},
    codec::Field{"file_bytes", &SnapshotHeader::file_bytes},
    codec::Field{"section_count", &SnapshotHeader::section_count},
    codec::Field{"flags", &SnapshotHeader::flags},
    codec::Field{"reserved", &SnapshotHeader::reserved},
    codec::Field{"crc", &SnapshotHeader::crc});
static_assert(kSnapshotHeaderLayout.kSize == 64);

struct SnapshotSectionEntry {
  std::uint32_t kind;
  std::uint32_t crc;  // CRC32C of the section's bytes
  std::uint64_t offset;
  std::uint64_t bytes;
  std::uint64_t count;  // records in the section
};
inline constexpr auto kSnapshotSectionLayout =
    codec::MakeLayout(codec::Field{"kind", &SnapshotSectionEntry::kind},
                      codec::Field{"crc", &SnapshotSectionEntry::crc},
                      codec::Field{"offset", &SnapshotSectionEntry::offset},
                      codec::Field{"bytes", &SnapshotSectionEntry::bytes},
                      codec::Field{"count", &SnapshotSectionEntry::count});
static_assert(kSnapshotSectionLayout.kSize == 32);

// Section kinds, in the order they appear (all five always present).
inline constexpr std::uint32_t kSectionConfig = 1;
inline constexpr std::uint32_t kSectionStats = 2;
inline constexpr std::uint32_t kSectionSessions = 3;
inline constexpr std::uint32_t kSectionReports = 4;
inline constexpr std::uint32_t kSectionOrders = 5;
inline constexpr std::uint32_t kSnapshotSectionCount = 5;

// Section 1: the options in force, the engine's id counters and the
// market-data feed's state (state/feed_producer.h: its next sequence, the
// directory it announced, all 0 while the sequence is 1, and the record its
// session began at, 0: the journal's own; absent from version 2).
struct SnapshotConfigRecord {
  std::uint32_t min_instrument;
  std::uint32_t max_instrument;
  std::int64_t min_price;
  std::int64_t max_price;
  std::uint64_t min_quantity;
  std::uint64_t max_quantity;
  std::uint32_t max_live_orders;
  std::uint32_t max_sessions;
  std::uint64_t report_history;
  std::uint64_t history_budget_bytes;
  std::uint64_t next_order_id;
  std::uint64_t next_match_id;
  std::uint64_t next_feed_sequence;
  std::uint32_t feed_min_instrument;
  std::uint32_t feed_max_instrument;
  std::int64_t feed_min_price;
  std::int64_t feed_max_price;
  std::uint64_t feed_min_quantity;
  std::uint64_t feed_max_quantity;
  std::uint64_t feed_session_start;
};
inline constexpr auto kSnapshotConfigLayout = codec::MakeLayout(
    codec::Field{"min_instrument", &SnapshotConfigRecord::min_instrument},
    codec::Field{"max_instrument", &SnapshotConfigRecord::max_instrument},
    codec::Field{"min_price", &SnapshotConfigRecord::min_price},
    codec::Field{"max_price", &SnapshotConfigRecord::max_price},
    codec::Field{"min_quantity", &SnapshotConfigRecord::min_quantity},
    codec::Field{"max_quantity", &SnapshotConfigRecord::max_quantity},
    codec::Field{"max_live_orders", &SnapshotConfigRecord::max_live_orders},
    codec::Field{"max_sessions", &SnapshotConfigRecord::max_sessions},
    codec::Field{"report_history", &SnapshotConfigRecord::report_history},
    codec::Field{"history_budget_bytes",
                 &SnapshotConfigRecord::history_budget_bytes},
    codec::Field{"next_order_id", &SnapshotConfigRecord::next_order_id},
    codec::Field{"next_match_id", &SnapshotConfigRecord::next_match_id},
    codec::Field{"next_feed_sequence",
                 &SnapshotConfigRecord::next_feed_sequence},
    codec::Field{"feed_min_instrument",
                 &SnapshotConfigRecord::feed_min_instrument},
    codec::Field{"feed_max_instrument",
                 &SnapshotConfigRecord::feed_max_instrument},
    codec::Field{"feed_min_price", &SnapshotConfigRecord::feed_min_price},
    codec::Field{"feed_max_price", &SnapshotConfigRecord::feed_max_price},
    codec::Field{"feed_min_quantity", &SnapshotConfigRecord::feed_min_quantity},
    codec::Field{"feed_max_quantity", &SnapshotConfigRecord::feed_max_quantity},
    codec::Field{"feed_session_start",
                 &SnapshotConfigRecord::feed_session_start});
static_assert(kSnapshotConfigLayout.kSize == 136);
// Version 2's config record: the fields above but feed_session_start.
inline constexpr std::size_t kSnapshotConfigV2Size = 128;

// Section 2: StateMachineStats, as 2 + 256 + 256 + 16 u64 (records,
// unauthorized, commands by kind, reports by kind, rejects by reason).
inline constexpr std::size_t kSnapshotStatsSize =
    std::size_t{8} * (2 + 256 + 256 + 16);

// Section 3: one per session, in order of first appearance.
struct SnapshotSessionRecord {
  std::uint32_t id;
  std::uint32_t index;  // its position: 0, 1, 2, ...
  std::uint64_t next_expected;
  std::uint64_t next_report;
  std::uint64_t history_capacity;
  std::uint64_t history_first;
  std::uint64_t history_next;
  std::uint64_t history_lost_command;
  std::uint64_t history_last_command;
  std::uint64_t flags;  // kSnapshotSessionClosed; version 4
};
// SnapshotSessionRecord::flags: SessionState::closed.
inline constexpr std::uint64_t kSnapshotSessionClosed = 1;
// Versions 2 and 3: the record without its flags.
inline constexpr auto kSnapshotSessionV3Layout = codec::MakeLayout(
    codec::Field{"id", &SnapshotSessionRecord::id},
    codec::Field{"index", &SnapshotSessionRecord::index},
    codec::Field{"next_expected", &SnapshotSessionRecord::next_expected},
    codec::Field{"next_report", &SnapshotSessionRecord::next_report},
    codec::Field{"history_capacity", &SnapshotSessionRecord::history_capacity},
    codec::Field{"history_first", &SnapshotSessionRecord::history_first},
    codec::Field{"history_next", &SnapshotSessionRecord::history_next},
    codec::Field{"history_lost_command",
                 &SnapshotSessionRecord::history_lost_command},
    codec::Field{"history_last_command",
                 &SnapshotSessionRecord::history_last_command});
inline constexpr auto kSnapshotSessionLayout = codec::MakeLayout(
    codec::Field{"id", &SnapshotSessionRecord::id},
    codec::Field{"index", &SnapshotSessionRecord::index},
    codec::Field{"next_expected", &SnapshotSessionRecord::next_expected},
    codec::Field{"next_report", &SnapshotSessionRecord::next_report},
    codec::Field{"history_capacity", &SnapshotSessionRecord::history_capacity},
    codec::Field{"history_first", &SnapshotSessionRecord::history_first},
    codec::Field{"history_next", &SnapshotSessionRecord::history_next},
    codec::Field{"history_lost_command",
                 &SnapshotSessionRecord::history_lost_command},
    codec::Field{"history_last_command",
                 &SnapshotSessionRecord::history_last_command},
    codec::Field{"flags", &SnapshotSessionRecord::flags});
static_assert(kSnapshotSessionV3Layout.kSize == 64);
static_assert(kSnapshotSessionLayout.kSize == 72);

// Section 4: the reports the histories hold, session by session, oldest
// first: the command sequence, the frame's size, the frame padded with
// zeros to 71 bytes.
struct SnapshotReportRecord {
  std::uint64_t command;
  std::uint8_t size;
};
inline constexpr auto kSnapshotReportLayout =
    codec::MakeLayout(codec::Field{"command", &SnapshotReportRecord::command},
                      codec::Field{"size", &SnapshotReportRecord::size});
inline constexpr std::size_t kSnapshotReportSize =
    kSnapshotReportLayout.kSize + codec::kMaxFrameSize;
static_assert(kSnapshotReportSize == 80);

// Section 5: the live orders, in ForEachLiveOrder's order (book by book,
// bids then asks, best price first, oldest first).
struct SnapshotOrderRecord {
  std::uint64_t order_id;
  std::uint64_t account_id;
  std::uint64_t client_order_id;
  std::int64_t price;
  std::uint64_t leaves_quantity;
  std::uint32_t instrument_id;
  std::uint32_t owner;  // the session index (engine owner tag)
  std::uint8_t side;
  std::uint8_t time_in_force;
  std::uint16_t reserved;           // 0
  std::uint64_t executed_quantity;  // version 4
};
// Versions 2 and 3: the record without executed_quantity.
inline constexpr auto kSnapshotOrderV3Layout = codec::MakeLayout(
    codec::Field{"order_id", &SnapshotOrderRecord::order_id},
    codec::Field{"account_id", &SnapshotOrderRecord::account_id},
    codec::Field{"client_order_id", &SnapshotOrderRecord::client_order_id},
    codec::Field{"price", &SnapshotOrderRecord::price},
    codec::Field{"leaves_quantity", &SnapshotOrderRecord::leaves_quantity},
    codec::Field{"instrument_id", &SnapshotOrderRecord::instrument_id},
    codec::Field{"owner", &SnapshotOrderRecord::owner},
    codec::Field{"side", &SnapshotOrderRecord::side},
    codec::Field{"time_in_force", &SnapshotOrderRecord::time_in_force},
    codec::Field{"reserved", &SnapshotOrderRecord::reserved});
inline constexpr auto kSnapshotOrderLayout = codec::MakeLayout(
    codec::Field{"order_id", &SnapshotOrderRecord::order_id},
    codec::Field{"account_id", &SnapshotOrderRecord::account_id},
    codec::Field{"client_order_id", &SnapshotOrderRecord::client_order_id},
    codec::Field{"price", &SnapshotOrderRecord::price},
    codec::Field{"leaves_quantity", &SnapshotOrderRecord::leaves_quantity},
    codec::Field{"instrument_id", &SnapshotOrderRecord::instrument_id},
    codec::Field{"owner", &SnapshotOrderRecord::owner},
    codec::Field{"side", &SnapshotOrderRecord::side},
    codec::Field{"time_in_force", &SnapshotOrderRecord::time_in_force},
    codec::Field{"reserved", &SnapshotOrderRecord::reserved},
    codec::Field{"executed_quantity", &SnapshotOrderRecord::executed_quantity});
static_assert(kSnapshotOrderV3Layout.kSize == 52);
static_assert(kSnapshotOrderLayout.kSize == 60);

// The trailer: CRC32C of every byte before it, then "OWSE".
inline constexpr std::size_t kSnapshotTrailerSize = 8;

}  // namespace orderwire::state

#endif  // ORDERWIRE_STATE_SNAPSHOT_H_
