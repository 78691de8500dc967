// Snapshots of the StateMachine; see snapshot.h and docs/SNAPSHOT.md.
#include "state/snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/unique_fd.h"
#include "codec/frame.h"
#include "codec/wire.h"
#include "engine/engine.h"
#include "journal/crc32c.h"
#include "journal/format.h"

namespace orderwire::state {

namespace {

constexpr std::size_t kHeaderSize = kSnapshotHeaderLayout.kSize;
constexpr std::size_t kSectionEntrySize = kSnapshotSectionLayout.kSize;
constexpr std::size_t kTableSize = kSnapshotSectionCount * kSectionEntrySize;
constexpr std::size_t kHeaderCrcOffset =
    codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::crc>();
// The largest report_history a snapshot may pin (its rounding up to a power
// of two must not overflow, and no history is anywhere near it).
constexpr std::uint64_t kMaxReportHistory = std::uint64_t{1} << 40;

constexpr std::string_view SectionName(std::uint32_t kind) {
  switch (kind) {
    case kSectionConfig:
      return "config";
    case kSectionStats:
      return "stats";
    case kSectionSessions:
      return "sessions";
    case kSectionReports:
      return "reports";
    case kSectionOrders:
      return "orders";
    default:
      return "?";
  }
}

// Record size of each section kind (index kind - 1).
constexpr std::size_t kRecordSize[kSnapshotSectionCount] = {
    kSnapshotConfigLayout.kSize, kSnapshotStatsSize,
    kSnapshotSessionLayout.kSize, kSnapshotReportSize,
    kSnapshotOrderLayout.kSize};

std::span<const std::byte> Bytes(const std::vector<std::byte>& v,
                                 std::size_t offset, std::size_t size) {
  return std::span<const std::byte>(v).subspan(offset, size);
}

std::uint64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

absl::Status Errno(int err, std::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(err, absl::StrFormat("%s %s", what, path));
}

absl::Status WriteAll(int fd, std::span<const std::byte> bytes,
                      const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(errno, "write", path);
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status FsyncDirectory(const std::string& dir) {
  const base::UniqueFd fd(
      ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Errno(errno, "open", dir);
  if (::fsync(fd.get()) != 0) return Errno(errno, "fsync", dir);
  return absl::OkStatus();
}

// A file's bytes, read whole into memory that is not zeroed first (a
// million-order snapshot is 53 MB: zeroing it before read() overwrites it
// cost more than the read).
struct FileBytes {
  std::unique_ptr<std::byte[]> data;
  std::size_t size = 0;
  [[nodiscard]] std::span<const std::byte> span() const noexcept {
    return {data.get(), size};
  }
};

absl::StatusOr<FileBytes> ReadWholeFile(const std::string& path) {
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Errno(errno, "open", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Errno(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("snapshot %s: not a regular file", path));
  }
  const auto capacity = static_cast<std::size_t>(st.st_size);
  FileBytes bytes;
  // Default-initialized: no zeroing.
  bytes.data = std::make_unique_for_overwrite<std::byte[]>(capacity);
  while (bytes.size < capacity) {
    const ssize_t n =
        ::read(fd.get(), bytes.data.get() + bytes.size, capacity - bytes.size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(errno, "read", path);
    }
    if (n == 0) break;  // shrank while read: verification refuses it
    bytes.size += static_cast<std::size_t>(n);
  }
  return bytes;
}

}  // namespace

namespace {

// Where each section of a snapshot goes, from the number of records of each.
struct SectionPlan {
  std::uint64_t counts[kSnapshotSectionCount];
  // offsets[k]: where section k + 1 starts; offsets[kSnapshotSectionCount]:
  // the trailer.
  std::uint64_t offsets[kSnapshotSectionCount + 1];
  std::uint64_t file_bytes;

  [[nodiscard]] std::uint64_t Offset(std::uint32_t kind) const {
    return offsets[kind - 1];
  }
};

SectionPlan PlanSections(std::uint64_t sessions, std::uint64_t reports,
                         std::uint64_t orders) {
  SectionPlan plan{.counts = {1, 1, sessions, reports, orders},
                   .offsets = {},
                   .file_bytes = 0};
  plan.offsets[0] = kHeaderSize + kTableSize;
  for (std::size_t k = 0; k < kSnapshotSectionCount; ++k) {
    plan.offsets[k + 1] = plan.offsets[k] + plan.counts[k] * kRecordSize[k];
  }
  plan.file_bytes = plan.offsets[kSnapshotSectionCount] + kSnapshotTrailerSize;
  return plan;
}

// Section 1: the configuration, the engine's id counters and the feed's
// state.
void EncodeConfig(const StateMachineOptions& options,
                  const engine::Engine& engine, const FeedProducer& feed,
                  std::byte* out) {
  const FeedDirectory& announced = feed.announced();
  const SnapshotConfigRecord config{
      .min_instrument = options.engine.min_instrument,
      .max_instrument = options.engine.max_instrument,
      .min_price = options.engine.min_price,
      .max_price = options.engine.max_price,
      .min_quantity = options.engine.min_quantity,
      .max_quantity = options.engine.max_quantity,
      .max_live_orders = options.engine.max_live_orders,
      .max_sessions = options.max_sessions,
      .report_history = options.report_history,
      .history_budget_bytes = options.history_budget_bytes,
      .next_order_id = engine.next_order_id().value(),
      .next_match_id = engine.next_match_id(),
      .next_feed_sequence = feed.next_sequence(),
      .feed_min_instrument = announced.min_instrument,
      .feed_max_instrument = announced.max_instrument,
      .feed_min_price = announced.min_price,
      .feed_max_price = announced.max_price,
      .feed_min_quantity = announced.min_quantity,
      .feed_max_quantity = announced.max_quantity,
      .feed_session_start = feed.session_start()};
  journal::StoreStruct<kSnapshotConfigLayout>(config, out);
}

// Section 2: the statistics.
void EncodeStats(const StateMachineStats& stats, std::byte* out) {
  std::byte* p = out;
  const auto put = [&](std::uint64_t v) {
    codec::StoreLE(p, v);
    p += 8;
  };
  put(stats.records);
  put(stats.unauthorized);
  for (const std::uint64_t v : stats.commands) put(v);
  for (const std::uint64_t v : stats.reports) put(v);
  for (const std::uint64_t v : stats.rejects) put(v);
}

// Section 3: the sessions, by index.
void EncodeSessions(const std::vector<std::unique_ptr<SessionState>>& sessions,
                    std::byte* out) {
  for (const auto& session : sessions) {
    const ReportHistory::State h = session->history.state();
    const SnapshotSessionRecord record{
        .id = session->id,
        .index = session->index,
        .next_expected = session->next_expected,
        .next_report = session->next_report,
        .history_capacity = h.capacity,
        .history_first = h.first,
        .history_next = h.next,
        .history_lost_command = h.lost_command,
        .history_last_command = h.last_command,
        .flags = session->closed ? kSnapshotSessionClosed : 0};
    journal::StoreStruct<kSnapshotSessionLayout>(record, out);
    out += kSnapshotSessionLayout.kSize;
  }
}

// Section 4: the reports the sessions' histories hold, session by session,
// oldest first.
void EncodeReports(const std::vector<std::unique_ptr<SessionState>>& sessions,
                   std::byte* out) {
  for (const auto& session : sessions) {
    const ReportHistory::State h = session->history.state();
    if (h.first == 0) continue;
    for (std::uint64_t seq = h.first; seq < h.next; ++seq) {
      const std::span<const std::byte> frame = session->history.Get(seq);
      const SnapshotReportRecord report{
          .command = session->history.CommandOf(seq),
          .size = static_cast<std::uint8_t>(frame.size())};
      journal::StoreStruct<kSnapshotReportLayout>(report, out);
      std::memcpy(out + kSnapshotReportLayout.kSize, frame.data(),
                  frame.size());
      out += kSnapshotReportSize;
    }
  }
}

// Section 5: the live orders, in the engine's price-time order.
void EncodeOrders(const engine::Engine& engine, std::byte* out) {
  engine.ForEachLiveOrder([&](const engine::OrderInfo& o) {
    const SnapshotOrderRecord record{
        .order_id = o.order_id.value(),
        .account_id = o.account_id.value(),
        .client_order_id = o.client_order_id.value(),
        .price = o.price.value(),
        .leaves_quantity = o.leaves_quantity.value(),
        .instrument_id = o.instrument_id.value(),
        .owner = o.owner,
        .side = static_cast<std::uint8_t>(o.side),
        .time_in_force = static_cast<std::uint8_t>(o.time_in_force),
        .reserved = 0,
        .executed_quantity = o.executed_quantity.value()};
    journal::StoreStruct<kSnapshotOrderLayout>(record, out);
    out += kSnapshotOrderLayout.kSize;
  });
}

// Once every section is written: the section table with their CRCs, then
// the header with its CRC, then the trailer with the whole file's CRC.
void SealSnapshot(const SectionPlan& plan, std::uint64_t journal_id,
                  std::uint64_t index, std::uint64_t created_ns,
                  std::vector<std::byte>& out) {
  std::byte* const base = out.data();
  const std::uint64_t* const offsets = plan.offsets;
  for (std::uint32_t k = 0; k < kSnapshotSectionCount; ++k) {
    const SnapshotSectionEntry entry{
        .kind = k + 1,
        .crc = journal::Crc32c(
            Bytes(out, offsets[k], offsets[k + 1] - offsets[k])),
        .offset = offsets[k],
        .bytes = offsets[k + 1] - offsets[k],
        .count = plan.counts[k]};
    journal::StoreStruct<kSnapshotSectionLayout>(
        entry, base + kHeaderSize + k * kSectionEntrySize);
  }
  const SnapshotHeader header{.magic = kSnapshotMagic,
                              .version = kSnapshotVersion,
                              .header_size = kHeaderSize,
                              .journal_id = journal_id,
                              .index = index,
                              .created_ns = created_ns,
                              .file_bytes = plan.file_bytes,
                              .section_count = kSnapshotSectionCount,
                              .flags = 0,
                              .reserved = 0,
                              .crc = 0};
  journal::StoreStruct<kSnapshotHeaderLayout>(header, base);
  codec::StoreLE(base + kHeaderCrcOffset,
                 journal::Crc32c(Bytes(out, 0, kHeaderCrcOffset)));
  const std::size_t trailer = plan.file_bytes - kSnapshotTrailerSize;
  codec::StoreLE(base + trailer, journal::Crc32c(Bytes(out, 0, trailer)));
  codec::StoreLE(base + trailer + 4, kSnapshotTrailerMagic);
}

// The section table of a snapshot, once every entry and every section's
// checksum is verified.
struct SectionTable {
  SnapshotSectionEntry entries[kSnapshotSectionCount]{};
  std::vector<SnapshotSection> sections;  // for inspection
};

// Every part of a snapshot, each verified, before anything is built from
// them.
struct VerifiedSnapshot {
  SnapshotHeader header{};
  SectionTable table;
  std::uint32_t file_crc = 0;
  SnapshotConfigRecord config{};
  StateMachineStats stats;
  std::vector<SnapshotSessionRecord> sessions;
  std::vector<ReportHistory::Slot> reports;  // the sessions' in their order
  std::vector<engine::OrderInfo> orders;
};

engine::EngineConfig EngineConfigOf(const SnapshotConfigRecord& config) {
  return engine::EngineConfig{.min_instrument = config.min_instrument,
                              .max_instrument = config.max_instrument,
                              .min_price = config.min_price,
                              .max_price = config.max_price,
                              .min_quantity = config.min_quantity,
                              .max_quantity = config.max_quantity,
                              .max_live_orders = config.max_live_orders};
}

FeedDirectory FeedDirectoryOf(const SnapshotConfigRecord& config) {
  return FeedDirectory{.min_instrument = config.feed_min_instrument,
                       .max_instrument = config.feed_max_instrument,
                       .min_price = config.feed_min_price,
                       .max_price = config.feed_max_price,
                       .min_quantity = config.feed_min_quantity,
                       .max_quantity = config.feed_max_quantity};
}

// Why the feed's state in `config` cannot be the state after record
// `index`, or empty: the first record always starts the feed, so the
// sequence is 1 exactly when no record was applied; the directory is all
// zero then, else a valid range with valid bands.
std::string FeedStateProblem(const SnapshotConfigRecord& config,
                             std::uint64_t index) {
  const FeedDirectory directory = FeedDirectoryOf(config);
  if (config.next_feed_sequence == 0) return "next_feed_sequence 0";
  if ((index == 0) != (config.next_feed_sequence == 1)) {
    return absl::StrFormat(
        "next_feed_sequence %d after record %d (1 exactly when no record "
        "was applied: the first one starts the feed)",
        config.next_feed_sequence, index);
  }
  if (config.next_feed_sequence == 1) {
    return directory == FeedDirectory{}
               ? std::string()
               : "a directory announced while the sequence is 1";
  }
  // The range and the bands as the engine checks them; the capacity is not
  // the feed's (1: no capacity bound on the bands).
  engine::EngineConfig announced;
  announced.max_live_orders = 1;
  announced.min_instrument = directory.min_instrument;
  announced.max_instrument = directory.max_instrument;
  announced.min_price = directory.min_price;
  announced.max_price = directory.max_price;
  announced.min_quantity = directory.min_quantity;
  announced.max_quantity = directory.max_quantity;
  if (absl::Status s = engine::ValidateConfig(announced); !s.ok()) {
    return absl::StrFormat("the directory announced: %s", s.message());
  }
  return std::string();
}

StateMachineOptions OptionsOf(const SnapshotConfigRecord& config) {
  StateMachineOptions options;
  options.engine = EngineConfigOf(config);
  options.max_sessions = config.max_sessions;
  options.report_history = config.report_history;
  options.history_budget_bytes = config.history_budget_bytes;
  return options;
}

// Reads the bytes of one snapshot file part by part, each part verified
// (and the parts it refers to before it). Every refusal is DataLoss naming
// the file, the offset and the field, except a snapshot of another journal
// (InvalidArgument).
class SnapshotReader {
 public:
  SnapshotReader(std::span<const std::byte> bytes, const std::string& name)
      : bytes_(bytes), name_(name) {}

  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  // "snapshot NAME: damaged at offset N (FIELD): WHY".
  [[nodiscard]] absl::Status Damaged(std::uint64_t offset,
                                     std::string_view field,
                                     const std::string& why) const {
    return absl::DataLossError(
        absl::StrFormat("snapshot %s: damaged at offset %d (%s): %s", name_,
                        offset, field, why));
  }

  // The header: the file's size, magic, version, CRC, fixed fields and
  // file_bytes, the journal it belongs to (expected_journal_id 0 = any) and
  // the index its file name says.
  absl::StatusOr<SnapshotHeader> Header(
      std::uint64_t expected_journal_id) const;
  // The section table: each entry's kind, offset, size and count, and each
  // section's CRC32C; the sections end where the trailer starts.
  absl::StatusOr<SectionTable> Sections() const;
  // The trailer: its magic and the whole-file CRC32C, which it returns.
  absl::StatusOr<std::uint32_t> Trailer() const;
  // Section 1: the engine's configuration, the pinned settings, the id
  // counters and the feed's state after record `index`, in range.
  absl::StatusOr<SnapshotConfigRecord> Config(const SnapshotSectionEntry& entry,
                                              std::uint64_t index) const;
  // Section 2: the statistics (any values).
  [[nodiscard]] StateMachineStats Stats(
      const SnapshotSectionEntry& entry) const;
  // Section 3: the sessions, each consistent on its own, with dense indexes
  // and unique ids, within the history budget, holding as many reports as
  // section 4 has. `index` is the header's.
  absl::StatusOr<std::vector<SnapshotSessionRecord>> Sessions(
      const SectionTable& table, std::uint64_t index,
      const SnapshotConfigRecord& config) const;
  // Section 4: the reports the sessions' histories hold, in session order.
  absl::StatusOr<std::vector<ReportHistory::Slot>> Reports(
      const SnapshotSectionEntry& entry,
      std::span<const SnapshotSessionRecord> sessions) const;
  // Section 5: the live orders, each owned by one of the sessions (the
  // engine checks them as a whole when they are restored).
  absl::StatusOr<std::vector<engine::OrderInfo>> Orders(
      const SnapshotSectionEntry& entry, std::uint64_t session_count) const;

  // All of the above, in that order.
  absl::StatusOr<VerifiedSnapshot> Verify(
      std::uint64_t expected_journal_id) const;

 private:
  // A header index other than the one the file's name says, if it has a
  // snapshot file name.
  absl::Status CheckIndexAgainstName(std::uint64_t index) const;
  // Session #i (at offset `at`) on its own; returns how many reports it
  // holds.
  absl::StatusOr<std::uint64_t> Session(std::uint64_t i, std::uint64_t at,
                                        const SnapshotSessionRecord& s,
                                        std::uint64_t ring_cap) const;
  // ids: (session id, position), one per session.
  absl::Status CheckUniqueSessionIds(
      std::uint64_t sessions_at,
      std::vector<std::pair<std::uint32_t, std::uint32_t>> ids) const;
  // Report `seq` of session #i (record s), at offset `at`, made at a command
  // no earlier than `previous`, into *slot.
  absl::Status Report(std::uint64_t at, std::uint64_t i, std::uint64_t seq,
                      const SnapshotSessionRecord& s, std::uint64_t previous,
                      ReportHistory::Slot* slot) const;

  // The header's version (read once Header() accepted it).
  [[nodiscard]] std::uint32_t version() const noexcept {
    return codec::LoadLE<std::uint32_t>(
        bytes_.data() +
        codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::version>());
  }
  // The record size of section kind k + 1 in this file's version.
  [[nodiscard]] std::size_t RecordSize(std::uint32_t k) const noexcept {
    if (k + 1 == kSectionConfig &&
        version() == kSnapshotVersionWithoutFeedSession) {
      return kSnapshotConfigV2Size;
    }
    if (version() <= kSnapshotVersionWithoutSessionFlags) {
      if (k + 1 == kSectionSessions) return kSnapshotSessionV3Layout.kSize;
      if (k + 1 == kSectionOrders) return kSnapshotOrderV3Layout.kSize;
    }
    return kRecordSize[k];
  }
  // Order record #i of the orders section at `section_at`, and where.
  [[nodiscard]] std::pair<SnapshotOrderRecord, std::uint64_t> OrderAt(
      std::uint64_t section_at, std::uint64_t i) const noexcept {
    const std::uint64_t at = section_at + i * RecordSize(kSectionOrders - 1);
    return {
        version() <= kSnapshotVersionWithoutSessionFlags
            ? journal::LoadStruct<kSnapshotOrderV3Layout, SnapshotOrderRecord>(
                  bytes_.data() + at)
            : journal::LoadStruct<kSnapshotOrderLayout, SnapshotOrderRecord>(
                  bytes_.data() + at),
        at};
  }
  // Session record #i of the sessions section at `section_at`, and where.
  [[nodiscard]] std::pair<SnapshotSessionRecord, std::uint64_t> SessionAt(
      std::uint64_t section_at, std::uint64_t i) const noexcept {
    const std::uint64_t at = section_at + i * RecordSize(kSectionSessions - 1);
    return {
        version() <= kSnapshotVersionWithoutSessionFlags
            ? journal::LoadStruct<kSnapshotSessionV3Layout,
                                  SnapshotSessionRecord>(bytes_.data() + at)
            : journal::LoadStruct<kSnapshotSessionLayout,
                                  SnapshotSessionRecord>(bytes_.data() + at),
        at};
  }

  std::span<const std::byte> bytes_;
  const std::string& name_;
};

absl::StatusOr<SnapshotHeader> SnapshotReader::Header(
    std::uint64_t expected_journal_id) const {
  const std::uint64_t size = bytes_.size();
  if (size < kHeaderSize + kTableSize + kSnapshotTrailerSize) {
    return Damaged(
        size, "file_bytes",
        absl::StrFormat("the file is %d bytes, shorter than a "
                        "header, a section table and a trailer "
                        "(%d)",
                        size, kHeaderSize + kTableSize + kSnapshotTrailerSize));
  }
  const auto header =
      journal::LoadStruct<kSnapshotHeaderLayout, SnapshotHeader>(bytes_.data());
  if (header.magic != kSnapshotMagic) {
    return Damaged(0, "magic", "not a snapshot file (magic is not OWSNAPSH)");
  }
  if (header.version < kSnapshotVersionWithoutFeedSession ||
      header.version > kSnapshotVersion) {
    return Damaged(
        codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::version>(),
        "version",
        absl::StrFormat("version %d; this build reads versions %d to %d",
                        header.version, kSnapshotVersionWithoutFeedSession,
                        kSnapshotVersion));
  }
  const std::uint32_t header_crc =
      journal::Crc32c(bytes_.subspan(0, kHeaderCrcOffset));
  if (header.crc != header_crc) {
    return Damaged(kHeaderCrcOffset, "crc",
                   absl::StrFormat("header CRC32C is 0x%08x, its bytes give "
                                   "0x%08x",
                                   header.crc, header_crc));
  }
  if (header.header_size != kHeaderSize || header.flags != 0 ||
      header.reserved != 0 || header.section_count != kSnapshotSectionCount) {
    return Damaged(
        codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::header_size>(),
        "header_size/section_count/flags/reserved",
        absl::StrFormat("%d/%d/%d/%d, expected %d/%d/0/0", header.header_size,
                        header.section_count, header.flags, header.reserved,
                        kHeaderSize, kSnapshotSectionCount));
  }
  if (header.file_bytes != size) {
    return Damaged(
        codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::file_bytes>(),
        "file_bytes",
        absl::StrFormat("the header says %d bytes, the file has %d (cut "
                        "short or extended)",
                        header.file_bytes, size));
  }
  if (expected_journal_id != 0 && header.journal_id != expected_journal_id) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "snapshot %s: offset %d (journal_id): it belongs to journal %016x, "
        "not to this journal (%016x)",
        name_,
        codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::journal_id>(),
        header.journal_id, expected_journal_id));
  }
  if (absl::Status s = CheckIndexAgainstName(header.index); !s.ok()) return s;
  return header;
}

absl::Status SnapshotReader::CheckIndexAgainstName(std::uint64_t index) const {
  const std::size_t slash = name_.find_last_of('/');
  const std::string_view file_name = std::string_view(name_).substr(
      slash == std::string::npos ? 0 : slash + 1);
  if (const auto named = ParseSnapshotFileName(file_name);
      named.has_value() && *named != index) {
    return Damaged(
        codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::index>(),
        "index",
        absl::StrFormat("the header says index %d, the file name says %d",
                        index, *named));
  }
  return absl::OkStatus();
}

absl::StatusOr<SectionTable> SnapshotReader::Sections() const {
  SectionTable table;
  std::uint64_t expected_offset = kHeaderSize + kTableSize;
  const std::uint64_t sections_end = bytes_.size() - kSnapshotTrailerSize;
  for (std::uint32_t k = 0; k < kSnapshotSectionCount; ++k) {
    const std::uint64_t entry_at = kHeaderSize + k * kSectionEntrySize;
    const auto e =
        journal::LoadStruct<kSnapshotSectionLayout, SnapshotSectionEntry>(
            bytes_.data() + entry_at);
    const std::string_view section = SectionName(k + 1);
    if (e.kind != k + 1) {
      return Damaged(entry_at, "section kind",
                     absl::StrFormat("section %d has kind %d, expected %d (%s)",
                                     k, e.kind, k + 1, section));
    }
    if (e.offset != expected_offset) {
      return Damaged(entry_at + 8, "section offset",
                     absl::StrFormat("section %s at %d, expected %d", section,
                                     e.offset, expected_offset));
    }
    const std::uint64_t room = sections_end - expected_offset;
    const std::uint64_t record = RecordSize(k);
    const bool single = k + 1 == kSectionConfig || k + 1 == kSectionStats;
    if ((single && e.count != 1) || e.count > room / record ||
        e.bytes != e.count * record) {
      return Damaged(
          entry_at + 16, "section bytes/count",
          absl::StrFormat("section %s: %d bytes for %d records of %d bytes "
                          "(%d bytes left in the file)",
                          section, e.bytes, e.count, record, room));
    }
    const std::uint32_t crc =
        journal::Crc32c(bytes_.subspan(e.offset, e.bytes));
    if (crc != e.crc) {
      return Damaged(e.offset, "section crc",
                     absl::StrFormat("section %s (%d bytes at %d): CRC32C is "
                                     "0x%08x, the table says 0x%08x",
                                     section, e.bytes, e.offset, crc, e.crc));
    }
    table.entries[k] = e;
    table.sections.push_back(SnapshotSection{.kind = e.kind,
                                             .name = section,
                                             .offset = e.offset,
                                             .bytes = e.bytes,
                                             .count = e.count,
                                             .crc = e.crc});
    expected_offset += e.bytes;
  }
  if (expected_offset != sections_end) {
    return Damaged(expected_offset, "sections",
                   absl::StrFormat("the sections end at %d, the trailer starts "
                                   "at %d",
                                   expected_offset, sections_end));
  }
  return table;
}

absl::StatusOr<std::uint32_t> SnapshotReader::Trailer() const {
  const std::byte* const base = bytes_.data();
  const std::uint64_t sections_end = bytes_.size() - kSnapshotTrailerSize;
  if (codec::LoadLE<std::uint32_t>(base + sections_end + 4) !=
      kSnapshotTrailerMagic) {
    return Damaged(sections_end + 4, "trailer magic",
                   "not OWSE: the file does not end where its header says");
  }
  const std::uint32_t file_crc =
      journal::Crc32c(bytes_.subspan(0, sections_end));
  if (codec::LoadLE<std::uint32_t>(base + sections_end) != file_crc) {
    return Damaged(
        sections_end, "file crc",
        absl::StrFormat("the whole-file CRC32C is 0x%08x, the "
                        "trailer says 0x%08x",
                        file_crc,
                        codec::LoadLE<std::uint32_t>(base + sections_end)));
  }
  return file_crc;
}

absl::StatusOr<SnapshotConfigRecord> SnapshotReader::Config(
    const SnapshotSectionEntry& entry, std::uint64_t index) const {
  const std::uint64_t config_at = entry.offset;
  // Version 2 has no feed_session_start: its feed session is the journal's
  // own (0).
  std::array<std::byte, kSnapshotConfigLayout.kSize> record{};
  std::copy_n(bytes_.data() + config_at, RecordSize(kSectionConfig - 1),
              record.data());
  const auto config =
      journal::LoadStruct<kSnapshotConfigLayout, SnapshotConfigRecord>(
          record.data());
  if (absl::Status s = engine::ValidateConfig(EngineConfigOf(config));
      !s.ok()) {
    return Damaged(config_at, "config", std::string(s.message()));
  }
  if (config.max_sessions == 0) {
    return Damaged(
        config_at + codec::OffsetOf<kSnapshotConfigLayout,
                                    &SnapshotConfigRecord::max_sessions>(),
        "max_sessions", "0 (at least 1)");
  }
  if (config.report_history == 0 || config.report_history > kMaxReportHistory) {
    return Damaged(
        config_at + codec::OffsetOf<kSnapshotConfigLayout,
                                    &SnapshotConfigRecord::report_history>(),
        "report_history",
        absl::StrFormat("%d is not in 1..2^40", config.report_history));
  }
  if (config.next_order_id == 0 || config.next_match_id == 0) {
    return Damaged(
        config_at + codec::OffsetOf<kSnapshotConfigLayout,
                                    &SnapshotConfigRecord::next_order_id>(),
        "next_order_id/next_match_id",
        absl::StrFormat("%d/%d: both must be at least 1", config.next_order_id,
                        config.next_match_id));
  }
  if (config.feed_session_start > index) {
    return Damaged(
        config_at +
            codec::OffsetOf<kSnapshotConfigLayout,
                            &SnapshotConfigRecord::feed_session_start>(),
        "feed_session_start",
        absl::StrFormat("the feed session began at record %d, after the "
                        "snapshot's record %d",
                        config.feed_session_start, index));
  }
  if (const std::string problem = FeedStateProblem(config, index);
      !problem.empty()) {
    return Damaged(
        config_at +
            codec::OffsetOf<kSnapshotConfigLayout,
                            &SnapshotConfigRecord::next_feed_sequence>(),
        "feed state", problem);
  }
  return config;
}

StateMachineStats SnapshotReader::Stats(
    const SnapshotSectionEntry& entry) const {
  StateMachineStats stats;
  const std::byte* p = bytes_.data() + entry.offset;
  const auto get = [&] {
    const auto v = codec::LoadLE<std::uint64_t>(p);
    p += 8;
    return v;
  };
  stats.records = get();
  stats.unauthorized = get();
  for (std::uint64_t& v : stats.commands) v = get();
  for (std::uint64_t& v : stats.reports) v = get();
  for (std::uint64_t& v : stats.rejects) v = get();
  return stats;
}

absl::StatusOr<std::vector<SnapshotSessionRecord>> SnapshotReader::Sessions(
    const SectionTable& table, std::uint64_t index,
    const SnapshotConfigRecord& config) const {
  const SnapshotSectionEntry& entry = table.entries[2];
  const std::uint64_t session_count = entry.count;
  if (session_count > 0xFFFF'FFFFu) {
    return Damaged(kHeaderSize + 2 * kSectionEntrySize + 16, "sessions count",
                   "more than 2^32-1 sessions");
  }
  if (index == 0 && session_count != 0) {
    return Damaged(
        codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::index>(),
        "index", "index 0 (no record applied) but the snapshot has sessions");
  }
  const std::uint64_t ring_cap = std::bit_ceil(config.report_history);
  std::vector<SnapshotSessionRecord> sessions(session_count);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ids(session_count);
  std::uint64_t held_total = 0;
  std::uint64_t budget_used = 0;
  for (std::uint64_t i = 0; i < session_count; ++i) {
    const auto [s, at] = SessionAt(entry.offset, i);
    const absl::StatusOr<std::uint64_t> held = Session(i, at, s, ring_cap);
    if (!held.ok()) return held.status();
    held_total += *held;
    budget_used += s.history_capacity * ReportHistory::kSlotSize;
    sessions[i] = s;
    ids[i] = {s.id, static_cast<std::uint32_t>(i)};
  }
  if (budget_used > config.history_budget_bytes) {
    return Damaged(entry.offset, "history_capacity",
                   absl::StrFormat("the histories take %d bytes, more than "
                                   "the budget of %d",
                                   budget_used, config.history_budget_bytes));
  }
  if (absl::Status s = CheckUniqueSessionIds(entry.offset, std::move(ids));
      !s.ok()) {
    return s;
  }
  if (held_total != table.entries[3].count) {
    return Damaged(kHeaderSize + 3 * kSectionEntrySize + 16, "reports count",
                   absl::StrFormat("%d reports, the histories hold %d",
                                   table.entries[3].count, held_total));
  }
  return sessions;
}

absl::StatusOr<std::uint64_t> SnapshotReader::Session(
    std::uint64_t i, std::uint64_t at, const SnapshotSessionRecord& s,
    std::uint64_t ring_cap) const {
  const auto why = [&](std::string_view field, const std::string& text) {
    return Damaged(at, absl::StrFormat("session #%d %s", i, field),
                   absl::StrFormat("session id %d: %s", s.id, text));
  };
  if (s.index != i) {
    return why("index", absl::StrFormat("index %d at position %d (session "
                                        "indexes are dense: 0, 1, 2, ...)",
                                        s.index, i));
  }
  if (s.next_expected == 0 || s.next_report == 0) {
    return why("next_expected/next_report", "must be at least 1");
  }
  if ((s.flags & ~kSnapshotSessionClosed) != 0) {
    return why("flags",
               absl::StrFormat("0x%x: bits 0x%x have no meaning", s.flags,
                               s.flags & ~kSnapshotSessionClosed));
  }
  const std::uint64_t cap = s.history_capacity;
  if (cap != 0 && (!std::has_single_bit(cap) || cap > ring_cap)) {
    return why("history_capacity",
               absl::StrFormat("%d is not 0 or a power of two up to %d", cap,
                               ring_cap));
  }
  std::uint64_t held = 0;
  if (s.history_first != 0) {
    if (s.history_next <= s.history_first ||
        s.history_next - s.history_first > cap ||
        s.history_next != s.next_report) {
      return why(
          "history_first/history_next",
          absl::StrFormat("reports %d..%d held in a ring of %d, the "
                          "next report being %d",
                          s.history_first, s.history_next, cap, s.next_report));
    }
    held = s.history_next - s.history_first;
  }
  if (s.history_last_command >= s.next_expected ||
      s.history_lost_command > s.history_last_command) {
    return why("history_lost_command/history_last_command",
               absl::StrFormat("%d/%d with commands applied up to %d",
                               s.history_lost_command, s.history_last_command,
                               s.next_expected - 1));
  }
  // A ring grows (doubling from 2) only when full, and is freed whole:
  // it holds at least one report, and more than half of it once past 2
  // slots. So a ring never takes more memory than twice the reports this
  // file holds for it.
  const bool ring_consistent =
      cap == 0 ? s.history_first == 0 : held >= (cap == 2 ? 1 : cap / 2 + 1);
  if (!ring_consistent) {
    return why("history_capacity",
               absl::StrFormat("a ring of %d slots holding %d reports (a "
                               "ring holds more than half of its slots)",
                               cap, held));
  }
  return held;
}

absl::Status SnapshotReader::CheckUniqueSessionIds(
    std::uint64_t sessions_at,
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ids) const {
  std::sort(ids.begin(), ids.end());
  for (std::size_t k = 1; k < ids.size(); ++k) {
    if (ids[k].first == ids[k - 1].first) {
      return Damaged(
          SessionAt(sessions_at, ids[k].second).second, "session id",
          absl::StrFormat("session id %d appears twice", ids[k].first));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ReportHistory::Slot>> SnapshotReader::Reports(
    const SnapshotSectionEntry& entry,
    std::span<const SnapshotSessionRecord> sessions) const {
  std::vector<ReportHistory::Slot> slots(entry.count);
  std::uint64_t r = 0;
  for (std::uint64_t i = 0; i < sessions.size(); ++i) {
    const SnapshotSessionRecord& s = sessions[i];
    if (s.history_first == 0) continue;
    std::uint64_t previous = s.history_lost_command;
    for (std::uint64_t seq = s.history_first; seq < s.history_next;
         ++seq, ++r) {
      const std::uint64_t at = entry.offset + r * kSnapshotReportSize;
      if (absl::Status st = Report(at, i, seq, s, previous, &slots[r]);
          !st.ok()) {
        return st;
      }
      previous = slots[r].command;
    }
  }
  return slots;
}

absl::Status SnapshotReader::Report(std::uint64_t at, std::uint64_t i,
                                    std::uint64_t seq,
                                    const SnapshotSessionRecord& s,
                                    std::uint64_t previous,
                                    ReportHistory::Slot* slot) const {
  const auto report =
      journal::LoadStruct<kSnapshotReportLayout, SnapshotReportRecord>(
          bytes_.data() + at);
  const std::span<const std::byte> padded =
      bytes_.subspan(at + kSnapshotReportLayout.kSize, codec::kMaxFrameSize);
  const auto why = [&](const std::string& text) {
    return Damaged(at, absl::StrFormat("report %d of session #%d", seq, i),
                   text);
  };
  if (report.command < previous || report.command > s.history_last_command) {
    return why(absl::StrFormat(
        "command %d is not in %d..%d (non-decreasing, within the "
        "history's commands)",
        report.command, previous, s.history_last_command));
  }
  if (seq + 1 == s.history_next && report.command != s.history_last_command) {
    return why(absl::StrFormat(
        "the newest report was made at command %d, the history says "
        "%d",
        report.command, s.history_last_command));
  }
  if (report.size > codec::kMaxFrameSize) {
    return why(absl::StrFormat("frame size %d > %d", report.size,
                               codec::kMaxFrameSize));
  }
  const auto frame = codec::FrameView::Parse(padded.first(report.size));
  if (!frame.ok() || frame->size() != report.size ||
      frame->info().kind_class != codec::KindClass::kReport ||
      frame->sequence() != seq) {
    return why(absl::StrFormat(
        "not a whole report frame of %d bytes numbered %d", report.size, seq));
  }
  for (std::size_t b = report.size; b < padded.size(); ++b) {
    if (padded[b] != std::byte{0}) {
      return why("the padding after the frame is not zero");
    }
  }
  slot->command = report.command;
  slot->size = report.size;
  slot->frame.fill(std::byte{0});
  std::memcpy(slot->frame.data(), padded.data(), report.size);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<engine::OrderInfo>> SnapshotReader::Orders(
    const SnapshotSectionEntry& entry, std::uint64_t session_count) const {
  const std::uint64_t order_count = entry.count;
  std::vector<engine::OrderInfo> orders;
  orders.reserve(order_count);  // no zeroing: every element is written once
  for (std::uint64_t i = 0; i < order_count; ++i) {
    const auto [o, at] = OrderAt(entry.offset, i);
    if (o.reserved != 0) {
      return Damaged(at, absl::StrFormat("order #%d reserved", i), "not 0");
    }
    if (o.owner >= session_count) {
      return Damaged(at, absl::StrFormat("order #%d owner", i),
                     absl::StrFormat("order_id %d belongs to session #%d; "
                                     "there are %d sessions",
                                     o.order_id, o.owner, session_count));
    }
    orders.push_back(engine::OrderInfo{
        .order_id = codec::OrderId(o.order_id),
        .account_id = codec::AccountId(o.account_id),
        .client_order_id = codec::ClientOrderId(o.client_order_id),
        .instrument_id = codec::InstrumentId(o.instrument_id),
        .side = static_cast<codec::Side>(o.side),
        .time_in_force = static_cast<codec::TimeInForce>(o.time_in_force),
        .price = codec::Price(o.price),
        .leaves_quantity = codec::Quantity(o.leaves_quantity),
        .owner = o.owner,
        .executed_quantity = codec::Quantity(o.executed_quantity)});
  }
  return orders;
}

absl::StatusOr<VerifiedSnapshot> SnapshotReader::Verify(
    std::uint64_t expected_journal_id) const {
  VerifiedSnapshot v;
  absl::StatusOr<SnapshotHeader> header = Header(expected_journal_id);
  if (!header.ok()) return header.status();
  v.header = *header;
  absl::StatusOr<SectionTable> table = Sections();
  if (!table.ok()) return table.status();
  v.table = *std::move(table);
  absl::StatusOr<std::uint32_t> file_crc = Trailer();
  if (!file_crc.ok()) return file_crc.status();
  v.file_crc = *file_crc;
  const SnapshotSectionEntry* const entries = v.table.entries;
  absl::StatusOr<SnapshotConfigRecord> config =
      Config(entries[0], v.header.index);
  if (!config.ok()) return config.status();
  v.config = *config;
  v.stats = Stats(entries[1]);
  absl::StatusOr<std::vector<SnapshotSessionRecord>> sessions =
      Sessions(v.table, v.header.index, v.config);
  if (!sessions.ok()) return sessions.status();
  v.sessions = *std::move(sessions);
  absl::StatusOr<std::vector<ReportHistory::Slot>> reports =
      Reports(entries[3], v.sessions);
  if (!reports.ok()) return reports.status();
  v.reports = *std::move(reports);
  absl::StatusOr<std::vector<engine::OrderInfo>> orders =
      Orders(entries[4], v.sessions.size());
  if (!orders.ok()) return orders.status();
  v.orders = *std::move(orders);
  return v;
}

}  // namespace

// Reads and restores the private state of a StateMachine (a friend of it).
class SnapshotCodec {
 public:
  static std::vector<std::byte> Encode(const StateMachine& machine,
                                       std::uint64_t journal_id,
                                       std::uint64_t created_ns);
  static absl::StatusOr<LoadedSnapshot> Decode(
      std::span<const std::byte> bytes, const std::string& name,
      std::uint64_t expected_journal_id);

 private:
  // A new machine in the state of a verified snapshot; nothing escapes
  // unless all of it succeeds.
  static absl::StatusOr<std::unique_ptr<StateMachine>> Build(
      const SnapshotReader& reader, const VerifiedSnapshot& snapshot);
  // The live orders into the machine's engine, which checks them as a
  // whole; one it refuses is named by its place in the orders section.
  static absl::Status RestoreOrders(const SnapshotReader& reader,
                                    const VerifiedSnapshot& snapshot,
                                    StateMachine& machine);
  // The sessions, their sequences and their report histories.
  static absl::Status RestoreSessions(const std::string& name,
                                      const VerifiedSnapshot& snapshot,
                                      StateMachine& machine);
};

std::vector<std::byte> SnapshotCodec::Encode(const StateMachine& machine,
                                             std::uint64_t journal_id,
                                             std::uint64_t created_ns) {
  const engine::Engine& engine = *machine.engine_;
  std::uint64_t report_count = 0;
  for (const auto& session : machine.sessions_) {
    report_count += session->history.held();
  }
  const SectionPlan plan = PlanSections(machine.sessions_.size(), report_count,
                                        engine.live_orders());
  std::vector<std::byte> out(plan.file_bytes);  // zero-filled: padding is zero
  std::byte* const base = out.data();
  EncodeConfig(machine.options_, engine, machine.feed_,
               base + plan.Offset(kSectionConfig));
  EncodeStats(machine.stats_, base + plan.Offset(kSectionStats));
  EncodeSessions(machine.sessions_, base + plan.Offset(kSectionSessions));
  EncodeReports(machine.sessions_, base + plan.Offset(kSectionReports));
  EncodeOrders(engine, base + plan.Offset(kSectionOrders));
  SealSnapshot(plan, journal_id, machine.last_index_, created_ns, out);
  return out;
}

absl::StatusOr<LoadedSnapshot> SnapshotCodec::Decode(
    std::span<const std::byte> bytes, const std::string& name,
    std::uint64_t expected_journal_id) {
  const SnapshotReader reader(bytes, name);
  absl::StatusOr<VerifiedSnapshot> verified =
      reader.Verify(expected_journal_id);
  if (!verified.ok()) return verified.status();
  absl::StatusOr<std::unique_ptr<StateMachine>> machine =
      Build(reader, *verified);
  if (!machine.ok()) return machine.status();
  LoadedSnapshot loaded;
  loaded.info = SnapshotInfo{
      .path = name,
      .index = verified->header.index,
      .journal_id = verified->header.journal_id,
      .created_ns = verified->header.created_ns,
      .file_bytes = bytes.size(),
      .sessions = static_cast<std::uint32_t>(verified->sessions.size()),
      .live_orders = verified->orders.size()};
  loaded.sections = std::move(verified->table.sections);
  loaded.file_crc = verified->file_crc;
  loaded.version = verified->header.version;
  loaded.machine = *std::move(machine);
  return loaded;
}

absl::StatusOr<std::unique_ptr<StateMachine>> SnapshotCodec::Build(
    const SnapshotReader& reader, const VerifiedSnapshot& snapshot) {
  auto machine = std::make_unique<StateMachine>(OptionsOf(snapshot.config));
  if (absl::Status s = RestoreOrders(reader, snapshot, *machine); !s.ok()) {
    return s;
  }
  if (absl::Status s = RestoreSessions(reader.name(), snapshot, *machine);
      !s.ok()) {
    return s;
  }
  machine->last_index_ = snapshot.header.index;
  machine->stats_ = snapshot.stats;
  machine->feed_.Restore(snapshot.config.next_feed_sequence,
                         FeedDirectoryOf(snapshot.config),
                         snapshot.config.feed_session_start);
  return machine;
}

absl::Status SnapshotCodec::RestoreOrders(const SnapshotReader& reader,
                                          const VerifiedSnapshot& snapshot,
                                          StateMachine& machine) {
  std::size_t bad_order = 0;
  // An order the engine refuses: named by its place in the orders section.
  const auto bad_order_error = [&](const absl::Status& why) {
    const SnapshotSectionEntry& orders = snapshot.table.entries[4];
    // bad_order is an order of the section, so it holds at least one.
    return reader.Damaged(
        orders.offset + bad_order * (orders.bytes /
                                     std::max<std::uint64_t>(orders.count, 1)),
        absl::StrFormat("order #%d", bad_order), std::string(why.message()));
  };
  const SnapshotConfigRecord& config = snapshot.config;
  if (absl::Status s = machine.engine_->CheckRestorable(
          snapshot.orders, config.next_order_id, config.next_match_id,
          &bad_order);
      !s.ok()) {
    return bad_order_error(s);
  }
  if (absl::Status s =
          machine.engine_->Restore(snapshot.orders, config.next_order_id,
                                   config.next_match_id, &bad_order);
      !s.ok()) {
    return bad_order_error(s);
  }
  return absl::OkStatus();
}

absl::Status SnapshotCodec::RestoreSessions(const std::string& name,
                                            const VerifiedSnapshot& snapshot,
                                            StateMachine& machine) {
  const std::span<const ReportHistory::Slot> reports(snapshot.reports);
  std::uint64_t r = 0;
  machine.sessions_.reserve(snapshot.sessions.size());
  for (const SnapshotSessionRecord& s : snapshot.sessions) {
    auto state = std::make_unique<SessionState>();
    state->id = s.id;
    state->index = s.index;
    state->next_expected = s.next_expected;
    state->next_report = s.next_report;
    state->closed = (s.flags & kSnapshotSessionClosed) != 0;
    const std::uint64_t held =
        s.history_first == 0 ? 0 : s.history_next - s.history_first;
    const ReportHistory::State history{.capacity = s.history_capacity,
                                       .first = s.history_first,
                                       .next = s.history_next,
                                       .lost_command = s.history_lost_command,
                                       .last_command = s.history_last_command};
    if (!state->history.Restore(history, reports.subspan(r, held),
                                machine.history_budget_)) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "snapshot %s: no memory for the report history of session %d", name,
          s.id));
    }
    r += held;
    machine.by_id_.emplace(s.id, s.index);
    machine.sessions_.push_back(std::move(state));
  }
  return absl::OkStatus();
}

std::string SnapshotDirectory(const std::string& journal_dir) {
  return journal_dir + "/snapshots";
}

std::string SnapshotFileName(std::uint64_t index) {
  return absl::StrFormat("%020d.ows", index);
}

std::optional<std::uint64_t> ParseSnapshotFileName(std::string_view name) {
  if (name.size() != 24 || name.substr(20) != ".ows") return std::nullopt;
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 20; ++i) {
    const char c = name[i];
    if (c < '0' || c > '9') return std::nullopt;
    const std::uint64_t digit = static_cast<std::uint64_t>(c - '0');
    if (value > (~std::uint64_t{0} - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

std::vector<std::byte> EncodeSnapshot(const StateMachine& machine,
                                      std::uint64_t journal_id,
                                      std::uint64_t created_ns) {
  return SnapshotCodec::Encode(machine, journal_id, created_ns);
}

absl::StatusOr<LoadedSnapshot> DecodeSnapshot(
    std::span<const std::byte> bytes, const std::string& name,
    std::uint64_t expected_journal_id) {
  return SnapshotCodec::Decode(bytes, name, expected_journal_id);
}

void ResealSnapshot(std::span<std::byte> bytes) {
  const std::size_t size = bytes.size();
  if (size < kHeaderSize + kTableSize + kSnapshotTrailerSize) return;
  const std::size_t sections_end = size - kSnapshotTrailerSize;
  for (std::size_t k = 0; k < kSnapshotSectionCount; ++k) {
    std::byte* entry = bytes.data() + kHeaderSize + k * kSectionEntrySize;
    const auto e =
        journal::LoadStruct<kSnapshotSectionLayout, SnapshotSectionEntry>(
            entry);
    if (e.offset > sections_end || e.bytes > sections_end - e.offset) continue;
    codec::StoreLE(entry + codec::OffsetOf<kSnapshotSectionLayout,
                                           &SnapshotSectionEntry::crc>(),
                   journal::Crc32c(bytes.subspan(e.offset, e.bytes)));
  }
  codec::StoreLE(bytes.data() + kHeaderCrcOffset,
                 journal::Crc32c(bytes.subspan(0, kHeaderCrcOffset)));
  codec::StoreLE(bytes.data() + sections_end,
                 journal::Crc32c(bytes.subspan(0, sections_end)));
}

namespace {

// Publishes `bytes` as <SnapshotDirectory(journal_dir)>/<SnapshotFileName(
// index)>: written as .tmp, fsynced, renamed, the directory fsynced; the
// directory created if missing. Returns the path.
absl::StatusOr<std::string> PublishSnapshotFile(
    std::span<const std::byte> bytes, std::uint64_t index,
    const std::string& journal_dir) {
  const std::string dir = SnapshotDirectory(journal_dir);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Errno(errno, "mkdir", dir);
  }
  const std::string path = dir + "/" + SnapshotFileName(index);
  const std::string tmp = path + ".tmp";
  {
    const base::UniqueFd fd(
        ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid()) return Errno(errno, "open", tmp);
    if (absl::Status s = WriteAll(fd.get(), bytes, tmp); !s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    if (::fsync(fd.get()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      return Errno(err, "fsync", tmp);
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return Errno(err, "rename to " + path, tmp);
  }
  if (absl::Status s = FsyncDirectory(dir); !s.ok()) return s;
  return path;
}

}  // namespace

absl::StatusOr<SnapshotInfo> WriteSnapshot(const StateMachine& machine,
                                           std::uint64_t journal_id,
                                           const std::string& journal_dir) {
  const std::vector<std::byte> bytes =
      EncodeSnapshot(machine, journal_id, RealtimeNs());
  absl::StatusOr<std::string> path =
      PublishSnapshotFile(bytes, machine.last_index(), journal_dir);
  if (!path.ok()) return path.status();
  return SnapshotInfo{
      .path = *std::move(path),
      .index = machine.last_index(),
      .journal_id = journal_id,
      .created_ns = codec::LoadLE<std::uint64_t>(
          bytes.data() + codec::OffsetOf<kSnapshotHeaderLayout,
                                         &SnapshotHeader::created_ns>()),
      .file_bytes = bytes.size(),
      .sessions = static_cast<std::uint32_t>(machine.session_count()),
      .live_orders = machine.engine().live_orders()};
}

absl::StatusOr<LoadedSnapshot> LoadSnapshot(const std::string& path,
                                            std::uint64_t expected_journal_id) {
  absl::StatusOr<FileBytes> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return DecodeSnapshot(bytes->span(), path, expected_journal_id);
}

absl::StatusOr<SnapshotInfo> CopySnapshot(const std::string& path,
                                          const std::string& journal_dir,
                                          std::uint64_t expected_journal_id) {
  absl::StatusOr<FileBytes> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<LoadedSnapshot> loaded =
      DecodeSnapshot(bytes->span(), path, expected_journal_id);
  if (!loaded.ok()) return loaded.status();
  absl::StatusOr<std::string> copy =
      PublishSnapshotFile(bytes->span(), loaded->info.index, journal_dir);
  if (!copy.ok()) return copy.status();
  SnapshotInfo info = loaded->info;
  info.path = *std::move(copy);
  return info;
}

absl::StatusOr<std::vector<SnapshotInfo>> ListSnapshots(
    const std::string& journal_dir) {
  const std::string dir = SnapshotDirectory(journal_dir);
  std::vector<SnapshotInfo> list;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return list;
    return Errno(errno, "opendir", dir);
  }
  errno = 0;
  while (const dirent* entry = ::readdir(d)) {
    const std::optional<std::uint64_t> index =
        ParseSnapshotFileName(entry->d_name);
    if (!index.has_value()) continue;
    SnapshotInfo info;
    info.path = dir + "/" + entry->d_name;
    info.index = *index;
    struct stat st {};
    if (::stat(info.path.c_str(), &st) == 0) {
      info.file_bytes = static_cast<std::uint64_t>(st.st_size);
    }
    list.push_back(std::move(info));
    errno = 0;
  }
  const int err = errno;
  ::closedir(d);
  if (err != 0) return Errno(err, "readdir", dir);
  std::sort(list.begin(), list.end(),
            [](const SnapshotInfo& a, const SnapshotInfo& b) {
              return a.index > b.index;
            });
  return list;
}

absl::StatusOr<std::optional<LoadedSnapshot>> LoadNewestSnapshot(
    const std::string& journal_dir, std::uint64_t journal_id,
    std::uint64_t max_index, std::vector<std::string>* skipped,
    const std::function<bool(const StateMachine&)>& usable) {
  absl::StatusOr<std::vector<SnapshotInfo>> list = ListSnapshots(journal_dir);
  if (!list.ok()) return list.status();
  for (const SnapshotInfo& candidate : *list) {
    if (candidate.index > max_index) continue;
    absl::StatusOr<LoadedSnapshot> loaded =
        LoadSnapshot(candidate.path, journal_id);
    if (loaded.ok()) {
      if (usable && !usable(*loaded->machine)) continue;
      return std::optional<LoadedSnapshot>(std::move(*loaded));
    }
    if (skipped != nullptr) {
      // The messages of Decode name the file already.
      std::string why(loaded.status().message());
      if (why.rfind("snapshot ", 0) != 0) {
        why = absl::StrFormat("snapshot %s: %s", candidate.path, why);
      }
      skipped->push_back(absl::StrCat(why, "; using the previous one"));
    }
  }
  return std::optional<LoadedSnapshot>();
}

}  // namespace orderwire::state
