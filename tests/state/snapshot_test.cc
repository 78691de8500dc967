// Snapshots (state/snapshot.h): the proof that a snapshot plus the tail
// behaves exactly as the full replay, for every snapshot index, and that a
// damaged file is refused, never half-loaded. Each test fails when the
// guarantee it names breaks.
#include "state/snapshot.h"

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "codec/command.h"
#include "codec/kind_table.h"
#include "codec/testing/random_commands.h"
#include "engine/config.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "state/record_flags.h"
#include "tests/support/bytes.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::state {
namespace {

using test_support::Bytes;
using test_support::GoodbyeInstead;
using test_support::LapseFrame;
using test_support::MassCancelInstead;
using test_support::StatusRequestInstead;

// A journal's worth of records of several sessions that trade with each
// other (the mixed workload of each session on the same 64 accounts,
// interleaved at random), some flagged Unauthorized.
struct Stream {
  std::vector<Bytes> frames;
  std::vector<std::uint32_t> session_ids;
  std::vector<std::uint32_t> flags;

  [[nodiscard]] Record RecordAt(std::size_t i) const {
    return Record{i + 1, 1000 + i, session_ids[i], flags[i], frames[i]};
  }
  [[nodiscard]] std::size_t size() const { return frames.size(); }
};

// The sessions' mixed streams, interleaved; every 64th NewLimit is a
// MassCancel instead, every 97th a Goodbye, every 4th cancel or replace
// an OrderStatusRequest for its order, and lapse records of sessions
// already seen come between (docs/CONTROLS.md); the first session has
// cancel-on-disconnect.
Stream MakeStream(std::uint32_t sessions, std::size_t per_session,
                  std::uint64_t seed) {
  std::vector<std::vector<Bytes>> streams(sessions);
  std::uint64_t new_limits = 0;
  std::uint64_t asked = 0;
  for (std::uint32_t s = 0; s < sessions; ++s) {
    for (codec::Command c : workload::Generate(workload::Workload::kMixed,
                                               per_session, seed + s)) {
      if (c.kind == codec::Kind::kNewLimit && ++new_limits % 64 == 0) {
        c = MassCancelInstead(c, new_limits / 64);
      } else if (c.kind == codec::Kind::kNewLimit && new_limits % 97 == 0) {
        c = GoodbyeInstead(c, new_limits);
      } else if ((c.kind == codec::Kind::kReplace ||
                  c.kind == codec::Kind::kCancelByOrder) &&
                 ++asked % 4 == 0) {
        c = StatusRequestInstead(c);
      }
      Bytes frame(codec::kMaxFrameSize);
      const auto size = codec::EncodeCommand(c, frame);
      EXPECT_TRUE(size.ok());
      frame.resize(*size);
      streams[s].push_back(std::move(frame));
    }
  }
  Stream out;
  std::vector<std::size_t> next(sessions, 0);
  codec::testing::SplitMix64 rng(seed);
  while (out.size() < sessions * per_session) {
    const auto s = static_cast<std::uint32_t>(rng.Below(sessions));
    if (next[s] == per_session) continue;
    const std::uint32_t cancel_on_disconnect =
        s == 0 ? kRecordCancelOnDisconnect : 0;
    const bool lapse = next[s] > 0 && rng.Below(120) == 0;
    if (lapse) {
      out.frames.push_back(LapseFrame());
    } else {
      out.frames.push_back(streams[s][next[s]++]);
    }
    out.session_ids.push_back(500 - 7 * s);  // ids not in index order
    out.flags.push_back(cancel_on_disconnect |
                        (lapse
                             ? kRecordLapse
                             : (rng.Below(50) == 0 ? kRecordUnauthorized : 0)));
  }
  return out;
}

StateMachineOptions SmallOptions() {
  StateMachineOptions options;
  options.engine.max_live_orders = 150;  // BookFull happens
  options.engine.max_instrument = 16;
  options.max_sessions = 8;
  options.report_history = 16;  // histories wrap
  options.history_budget_bytes =
      std::size_t{3} * 16 * ReportHistory::kSlotSize;  // full
  return options;
}

// The configuration a later journal segment pins: a narrower price band
// and quantity range, the capacity raised.
engine::EngineConfig LaterConfig() {
  engine::EngineConfig config = SmallOptions().engine;
  config.min_price = 99'990;
  config.max_quantity = 500;
  config.max_live_orders = 250;
  return config;
}

// Every report of one record, as the sessions receive them.
std::string OutputsOf(const StateMachine& machine) {
  std::string out;
  for (const Output& o : machine.outputs()) {
    out += std::to_string(o.session) + "/" + std::to_string(o.session_id) +
           "/" + std::to_string(o.sequence) + ":";
    out.append(reinterpret_cast<const char*>(o.frame.data()), o.frame.size());
    out += '|';
  }
  return out;
}

// The engine's books, as a test reads them: every live order, and the depth
// of every book.
std::string BookDump(const StateMachine& machine) {
  std::string out;
  machine.engine().ForEachLiveOrder([&](const engine::OrderInfo& o) {
    out += absl::StrFormat("%d %d %d %d %d %d %d %d %d\n", o.order_id.value(),
                           o.account_id.value(), o.client_order_id.value(),
                           o.instrument_id.value(), static_cast<int>(o.side),
                           static_cast<int>(o.time_in_force), o.price.value(),
                           o.leaves_quantity.value(), o.owner);
  });
  const engine::EngineConfig& config = machine.engine().config();
  for (std::uint32_t i = config.min_instrument; i <= config.max_instrument;
       ++i) {
    for (const codec::Side side : {codec::Side::kBuy, codec::Side::kSell}) {
      std::vector<engine::LevelInfo> levels(4096);
      const std::size_t n =
          machine.engine().Book(codec::InstrumentId(i)).Depth(side, levels);
      for (std::size_t l = 0; l < n; ++l) {
        out +=
            absl::StrFormat("book %d side %d: %d x %d (%d)\n", i,
                            static_cast<int>(side), levels[l].price.value(),
                            levels[l].quantity.value(), levels[l].order_count);
      }
    }
  }
  out += absl::StrFormat("next order %d match %d\n",
                         machine.engine().next_order_id().value(),
                         machine.engine().next_match_id());
  return out;
}

// What a session could be sent again: every report each history holds.
std::string HistoryDump(const StateMachine& machine) {
  std::string out;
  for (std::size_t s = 0; s < machine.session_count(); ++s) {
    const SessionState& session =
        machine.session(static_cast<std::uint32_t>(s));
    out += absl::StrFormat("session %d id %d next %d/%d first %d\n", s,
                           session.id, session.next_expected,
                           session.next_report, session.history.first());
    for (std::uint64_t c = 1; c < session.next_expected; ++c) {
      const auto first = session.history.FirstReportOf(c);
      if (!first.has_value()) continue;
      out += absl::StrFormat("  command %d from report %d:", c, *first);
      const auto frame = session.history.Get(*first);
      out.append(reinterpret_cast<const char*>(frame.data()), frame.size());
    }
  }
  return out;
}

constexpr std::uint64_t kJournalId = 0x1234'5678'9ABC'DEF0ull;

// THE PROOF. For every snapshot index k of a random multi-session stream
// (with a reconfiguration at record kChangeAt, as a later segment's pinned
// configuration makes it, and a history released by the service at
// kReleaseAt): Decode(Encode(state at k)) + records k+1.. gives the same
// reports (bytes, session, sequence) for every record, and the same final
// state (the same snapshot bytes, books, histories, stats) as the full
// replay; and the loaded state re-encodes to the very bytes it came from.
TEST(Snapshot, SnapshotAtEveryIndexPlusTheTailIsTheFullReplay) {
  const Stream stream = MakeStream(/*sessions=*/3, /*per_session=*/400, 21);
  const std::size_t n = stream.size();
  const std::size_t kChangeAt = n / 2;   // reconfigured before this record
  const std::size_t kReleaseAt = n / 3;  // history of session 0 released
  const auto apply = [&](StateMachine& machine, std::size_t i) {
    if (i == kChangeAt) {
      ASSERT_TRUE(machine.Reconfigure(LaterConfig(), 6).ok());
    }
    if (i == kReleaseAt && machine.session_count() > 0) {
      (void)machine.ReleaseHistory(0);
    }
    ASSERT_TRUE(machine.Apply(stream.RecordAt(i)).ok()) << "record " << i + 1;
  };

  // The full replay: the snapshot bytes at every k and every record's
  // reports.
  StateMachine full(SmallOptions());
  std::vector<std::vector<std::byte>> snapshots;
  std::vector<std::string> outputs;
  for (std::size_t i = 0; i < n; ++i) {
    snapshots.push_back(EncodeSnapshot(full, kJournalId, 1'000 + i));
    apply(full, i);
    outputs.push_back(OutputsOf(full));
  }
  snapshots.push_back(EncodeSnapshot(full, kJournalId, 1'000 + n));
  const std::vector<std::byte> final_bytes =
      EncodeSnapshot(full, kJournalId, 0);
  const std::string final_books = BookDump(full);
  const std::string final_histories = HistoryDump(full);
  // The stream exercises what it should.
  ASSERT_GT(full.engine().live_orders(), 50u);
  ASSERT_GT(
      full.stats()
          .rejects[static_cast<std::size_t>(codec::RejectReason::kBookFull)],
      0u);
  ASSERT_GT(full.stats().unauthorized, 0u);
  ASSERT_GT(
      full.stats()
          .reports[static_cast<std::uint8_t>(codec::Kind::kMassCancelDone)],
      0u);
  ASSERT_GT(
      full.stats()
          .reports[static_cast<std::uint8_t>(codec::Kind::kSessionClosed)],
      10u);
  ASSERT_GT(full.stats()
                .reports[static_cast<std::uint8_t>(codec::Kind::kOrderStatus)],
            50u);
  ASSERT_EQ(full.session_count(), 3u);
  ASSERT_TRUE(full.engine().CheckInvariants().ok());

  for (std::size_t k = 0; k <= n; ++k) {
    SCOPED_TRACE(testing::Message() << "snapshot at index " << k);
    absl::StatusOr<LoadedSnapshot> loaded =
        DecodeSnapshot(snapshots[k], "memory", kJournalId);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    StateMachine& machine = *loaded->machine;
    ASSERT_EQ(machine.last_index(), k);
    ASSERT_TRUE(machine.engine().CheckInvariants().ok());
    ASSERT_EQ(EncodeSnapshot(machine, kJournalId, 1'000 + k), snapshots[k]);
    for (std::size_t i = k; i < n; ++i) {
      apply(machine, i);
      ASSERT_EQ(OutputsOf(machine), outputs[i]) << "record " << i + 1;
    }
    ASSERT_EQ(EncodeSnapshot(machine, kJournalId, 0), final_bytes);
    ASSERT_EQ(BookDump(machine), final_books);
    ASSERT_EQ(HistoryDump(machine), final_histories);
  }
}

// A larger, default-configured state: the round trip is exact (a loaded
// state re-encodes to the same bytes) and the books are the same.
TEST(Snapshot, LargeStateRoundTripsExactly) {
  const Stream stream = MakeStream(/*sessions=*/4, /*per_session=*/20'000, 5);
  StateMachine machine(StateMachineOptions{});
  for (std::size_t i = 0; i < stream.size(); ++i) {
    ASSERT_TRUE(machine.Apply(stream.RecordAt(i)).ok());
  }
  ASSERT_GT(machine.engine().live_orders(), 1000u);
  const std::vector<std::byte> bytes = EncodeSnapshot(machine, 7, 99);
  absl::StatusOr<LoadedSnapshot> loaded = DecodeSnapshot(bytes, "memory", 7);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(EncodeSnapshot(*loaded->machine, 7, 99), bytes);
  EXPECT_EQ(BookDump(*loaded->machine), BookDump(machine));
  EXPECT_EQ(HistoryDump(*loaded->machine), HistoryDump(machine));
  EXPECT_EQ(loaded->info.sessions, 4u);
  EXPECT_EQ(loaded->info.live_orders, machine.engine().live_orders());
  EXPECT_EQ(loaded->info.index, stream.size());
  EXPECT_EQ(loaded->info.created_ns, 99u);
}

// A small snapshot with every section non-empty, for the damage tests.
std::vector<std::byte> SmallSnapshot() {
  const Stream stream = MakeStream(/*sessions=*/2, /*per_session=*/60, 3);
  StateMachine machine(SmallOptions());
  for (std::size_t i = 0; i < stream.size(); ++i) {
    EXPECT_TRUE(machine.Apply(stream.RecordAt(i)).ok());
  }
  EXPECT_GT(machine.engine().live_orders(), 3u);
  return EncodeSnapshot(machine, kJournalId, 42);
}

SnapshotSectionEntry SectionEntry(const std::vector<std::byte>& bytes,
                                  std::uint32_t kind) {
  return journal::LoadStruct<kSnapshotSectionLayout, SnapshotSectionEntry>(
      bytes.data() + kSnapshotHeaderLayout.kSize +
      (kind - 1) * kSnapshotSectionLayout.kSize);
}

TEST(Snapshot, EachSectionsChecksumIsVerified) {
  const std::vector<std::byte> good = SmallSnapshot();
  for (std::uint32_t kind = 1; kind <= kSnapshotSectionCount; ++kind) {
    const SnapshotSectionEntry entry = SectionEntry(good, kind);
    ASSERT_GT(entry.bytes, 0u) << kind;
    // First, middle and last byte of the section.
    for (const std::uint64_t at : {entry.offset, entry.offset + entry.bytes / 2,
                                   entry.offset + entry.bytes - 1}) {
      std::vector<std::byte> bad = good;
      bad[at] ^= std::byte{0x10};
      const auto loaded = DecodeSnapshot(bad, "f.ows", 0);
      ASSERT_FALSE(loaded.ok()) << "section " << kind << " byte " << at;
      EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_NE(loaded.status().message().find("section crc"),
                std::string::npos)
          << loaded.status();
    }
  }
  // The header and the table are under the header and file checksums.
  for (std::size_t at = 0; at < 64 + 5 * 32; ++at) {
    std::vector<std::byte> bad = good;
    bad[at] ^= std::byte{0x01};
    EXPECT_FALSE(DecodeSnapshot(bad, "f.ows", 0).ok()) << at;
  }
}

TEST(Snapshot, TruncationAtEveryOffsetIsRefused) {
  const std::vector<std::byte> good = SmallSnapshot();
  ASSERT_TRUE(DecodeSnapshot(good, "f", 0).ok());
  for (std::size_t size = 0; size < good.size(); ++size) {
    const auto loaded =
        DecodeSnapshot(std::span<const std::byte>(good).first(size), "f", 0);
    ASSERT_FALSE(loaded.ok()) << size;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  }
  // Extended by a byte: refused too.
  std::vector<std::byte> longer = good;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(DecodeSnapshot(longer, "f", 0).ok());
}

TEST(Snapshot, AnotherJournalsSnapshotIsRefused) {
  const std::vector<std::byte> good = SmallSnapshot();
  EXPECT_TRUE(DecodeSnapshot(good, "f", kJournalId).ok());
  EXPECT_TRUE(DecodeSnapshot(good, "f", 0).ok());  // any journal
  const auto other = DecodeSnapshot(good, "f", kJournalId + 1);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("journal_id"), std::string::npos);
}

// Version 1 (before the market-data feed: its feed sequence unknown) and a
// later version are refused by their version (SNAPSHOT.md "Version 1").
TEST(Snapshot, AnotherVersionIsRefusedByItsVersion) {
  for (const std::uint32_t version : {1u, 5u}) {
    std::vector<std::byte> bad = SmallSnapshot();
    codec::StoreLE(
        bad.data() +
            codec::OffsetOf<kSnapshotHeaderLayout, &SnapshotHeader::version>(),
        version);
    ResealSnapshot(bad);  // so that only the version is wrong
    const auto loaded = DecodeSnapshot(bad, "f", 0);
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(loaded.status().message().find(absl::StrFormat(
                  "version %d; this build reads versions 2 to 4", version)),
              std::string::npos)
        << loaded.status();
  }
}

// `bytes` with the config section's `Member` set to `value`, resealed,
// decoded.
template <auto Member, typename T>
absl::StatusOr<LoadedSnapshot> DecodeWithConfigField(
    std::vector<std::byte> bytes, T value) {
  const std::size_t config_at =
      kSnapshotHeaderLayout.kSize +
      kSnapshotSectionCount * kSnapshotSectionLayout.kSize;
  codec::StoreLE(bytes.data() + config_at +
                     codec::OffsetOf<kSnapshotConfigLayout, Member>(),
                 value);
  ResealSnapshot(bytes);
  return DecodeSnapshot(bytes, "f", 0);
}

// `bytes` with every record of section `kind` cut to its first `size`
// bytes, the sections after it moved up, the header's version set to
// `version`, resealed: how an older version wrote the same state.
std::vector<std::byte> CutRecords(const std::vector<std::byte>& bytes,
                                  std::uint32_t kind, std::size_t size,
                                  std::uint32_t version) {
  const SnapshotSectionEntry cut = SectionEntry(bytes, kind);
  const std::size_t count = cut.count;
  const std::size_t old_size = count == 0 ? size : cut.bytes / count;
  std::vector<std::byte> out(
      bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut.offset));
  for (std::size_t i = 0; i < count; ++i) {
    const auto from =
        bytes.begin() + static_cast<std::ptrdiff_t>(cut.offset + i * old_size);
    out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(size));
  }
  out.insert(
      out.end(),
      bytes.begin() + static_cast<std::ptrdiff_t>(cut.offset + cut.bytes),
      bytes.end());
  const std::uint64_t shrink = count * (old_size - size);
  for (std::uint32_t k = 1; k <= kSnapshotSectionCount; ++k) {
    SnapshotSectionEntry entry = SectionEntry(bytes, k);
    if (k == kind) entry.bytes = count * size;
    if (k > kind) entry.offset -= shrink;
    journal::StoreStruct<kSnapshotSectionLayout>(
        entry, out.data() + kSnapshotHeaderLayout.kSize +
                   (k - 1) * kSnapshotSectionLayout.kSize);
  }
  auto header =
      journal::LoadStruct<kSnapshotHeaderLayout, SnapshotHeader>(out.data());
  header.version = version;
  header.file_bytes = out.size();
  journal::StoreStruct<kSnapshotHeaderLayout>(header, out.data());
  ResealSnapshot(out);
  return out;
}

// This build's snapshot as version 3 wrote it: session records without
// their flags, order records without their executed quantity.
std::vector<std::byte> AsVersion3(const std::vector<std::byte>& v4) {
  return CutRecords(
      CutRecords(v4, kSectionSessions, kSnapshotSessionV3Layout.kSize,
                 kSnapshotVersionWithoutSessionFlags),
      kSectionOrders, kSnapshotOrderV3Layout.kSize,
      kSnapshotVersionWithoutSessionFlags);
}

// As version 2 wrote it: version 3's sessions, and the config record
// without its last field (feed_session_start).
std::vector<std::byte> AsVersion2(const std::vector<std::byte>& v4) {
  return CutRecords(AsVersion3(v4), kSectionConfig, kSnapshotConfigV2Size,
                    kSnapshotVersionWithoutFeedSession);
}

// `v4` with every session's flags 0 (no session closed) and every order's
// executed quantity 0, resealed: what a version 2 or 3 snapshot of the
// same state re-encodes to.
std::vector<std::byte> AsAnOlderVersionKeptIt(std::vector<std::byte> v4) {
  const SnapshotSectionEntry sessions = SectionEntry(v4, kSectionSessions);
  for (std::uint64_t i = 0; i < sessions.count; ++i) {
    codec::StoreLE(v4.data() + sessions.offset +
                       i * kSnapshotSessionLayout.kSize +
                       codec::OffsetOf<kSnapshotSessionLayout,
                                       &SnapshotSessionRecord::flags>(),
                   std::uint64_t{0});
  }
  const SnapshotSectionEntry orders = SectionEntry(v4, kSectionOrders);
  for (std::uint64_t i = 0; i < orders.count; ++i) {
    codec::StoreLE(
        v4.data() + orders.offset + i * kSnapshotOrderLayout.kSize +
            codec::OffsetOf<kSnapshotOrderLayout,
                            &SnapshotOrderRecord::executed_quantity>(),
        std::uint64_t{0});
  }
  ResealSnapshot(v4);
  return v4;
}

// A machine whose feed session began at record 30 (kRecordNewFeedSession):
// the snapshot keeps where (version 3), and restores it.
TEST(Snapshot, TheFeedSessionStartIsKeptAndRestored) {
  const Stream stream = MakeStream(/*sessions=*/2, /*per_session=*/30, 3);
  StateMachine machine(SmallOptions());
  for (std::size_t i = 0; i < stream.size(); ++i) {
    Record record = stream.RecordAt(i);
    if (record.index == 30) record.flags |= kRecordNewFeedSession;
    ASSERT_TRUE(machine.Apply(record).ok());
  }
  ASSERT_EQ(machine.feed_producer().session_start(), 30u);
  const std::vector<std::byte> bytes =
      EncodeSnapshot(machine, kJournalId, machine.last_index());
  const auto loaded = DecodeSnapshot(bytes, "f", kJournalId);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->machine->feed_producer().session_start(), 30u);
  EXPECT_EQ(loaded->machine->feed_producer().next_sequence(),
            machine.feed_producer().next_sequence());
  // A session said to begin after the snapshot's last record is refused.
  const auto later =
      DecodeWithConfigField<&SnapshotConfigRecord::feed_session_start>(
          bytes, machine.last_index() + 1);
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.status().message().find("feed_session_start"),
            std::string::npos)
      << later.status();
}

// A version-2 snapshot loads, its feed session the journal's own (0), the
// rest of its state as version 4 has it (no session closed: version 2 had
// none; no executed quantity: it did not keep one); so does a version-3
// one, with its feed session.
TEST(Snapshot, OlderVersionsLoadWithWhatTheyCouldNotHold) {
  const std::vector<std::byte> v4 = SmallSnapshot();
  const auto loaded4 = DecodeSnapshot(v4, "f", kJournalId);
  ASSERT_TRUE(loaded4.ok()) << loaded4.status();
  const std::size_t records = SectionEntry(v4, kSectionSessions).count +
                              SectionEntry(v4, kSectionOrders).count;
  const std::vector<std::byte> v3 = AsVersion3(v4);
  ASSERT_EQ(v3.size() + 8 * records, v4.size());
  const std::vector<std::byte> v2 = AsVersion2(v4);
  ASSERT_EQ(v2.size() + 8 + 8 * records, v4.size());
  for (const auto& [older, version] : {std::pair{&v3, 3}, std::pair{&v2, 2}}) {
    SCOPED_TRACE(absl::StrFormat("version %d", version));
    const auto loaded = DecodeSnapshot(*older, "f", kJournalId);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->version, static_cast<std::uint32_t>(version));
    EXPECT_EQ(
        loaded->machine->feed_producer().session_start(),
        version == 2 ? 0u : loaded4->machine->feed_producer().session_start());
    EXPECT_EQ(loaded->machine->feed_producer().next_sequence(),
              loaded4->machine->feed_producer().next_sequence());
    EXPECT_EQ(loaded->machine->engine().live_orders(),
              loaded4->machine->engine().live_orders());
    for (std::uint32_t i = 0; i < loaded->machine->session_count(); ++i) {
      EXPECT_FALSE(loaded->machine->session(i).closed);
    }
    // Re-encoded, it is this build's version 4 again, byte for byte, with
    // no session closed and nothing executed.
    EXPECT_EQ(EncodeSnapshot(*loaded->machine, kJournalId, 42),
              AsAnOlderVersionKeptIt(v4));
  }
}

// A closed session stays closed through a snapshot; a flag bit without a
// meaning is damage.
TEST(Snapshot, AClosedSessionIsKeptAndUnknownSessionFlagsAreRefused) {
  const Stream stream = MakeStream(/*sessions=*/2, /*per_session=*/30, 3);
  StateMachine machine(SmallOptions());
  for (std::size_t i = 0; i < stream.size(); ++i) {
    ASSERT_TRUE(machine.Apply(stream.RecordAt(i)).ok());
  }
  const Bytes lapse = LapseFrame();
  ASSERT_TRUE(
      machine
          .Apply(Record{machine.last_index() + 1, 1, 493, kRecordLapse, lapse})
          .ok());
  ASSERT_TRUE(machine.Find(493)->closed);
  const std::vector<std::byte> bytes =
      EncodeSnapshot(machine, kJournalId, machine.last_index());
  const auto loaded = DecodeSnapshot(bytes, "f", kJournalId);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->machine->Find(493)->closed);
  EXPECT_EQ(loaded->machine->Find(500)->closed, machine.Find(500)->closed);
  std::vector<std::byte> bad = bytes;
  const SnapshotSectionEntry sessions = SectionEntry(bad, kSectionSessions);
  codec::StoreLE(bad.data() + sessions.offset +
                     codec::OffsetOf<kSnapshotSessionLayout,
                                     &SnapshotSessionRecord::flags>(),
                 std::uint64_t{2});
  ResealSnapshot(bad);
  const auto refused = DecodeSnapshot(bad, "f", kJournalId);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("flags"), std::string::npos)
      << refused.status();
}

// The feed's state is checked like the rest of the configuration: a
// sequence of 0, a directory announced while nothing was published, an
// impossible directory.
TEST(Snapshot, AnImpossibleFeedStateIsRefused) {
  const std::vector<std::byte> good = SmallSnapshot();
  const auto loaded_good = DecodeSnapshot(good, "f", 0);
  ASSERT_TRUE(loaded_good.ok()) << loaded_good.status();
  ASSERT_GT(loaded_good->machine->feed_producer().next_sequence(), 1u);
  using R = SnapshotConfigRecord;
  for (const auto& bad :
       {DecodeWithConfigField<&R::next_feed_sequence>(good, std::uint64_t{0}),
        DecodeWithConfigField<&R::next_feed_sequence>(good, std::uint64_t{1}),
        DecodeWithConfigField<&R::feed_min_instrument>(good, ~std::uint32_t{0}),
        DecodeWithConfigField<&R::feed_max_price>(good, std::int64_t{0})}) {
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("feed state"), std::string::npos)
        << bad.status();
  }
}

// The feed's directory is checked as a range and bands, not against the
// default capacity: bands the engine takes with a small max_live_orders
// load (a quantity band of 10^13 with 100,000 live orders: 10^18 < 2^63).
// An empty machine's snapshot (index 0) has sequence 1; one with another
// sequence is refused.
TEST(Snapshot, TheFeedStateOfAnyValidConfigurationLoads) {
  StateMachineOptions options;
  options.engine.max_quantity = 10'000'000'000'000;
  options.engine.max_live_orders = 100'000;
  ASSERT_TRUE(engine::ValidateConfig(options.engine).ok());
  StateMachine machine(options);
  const auto empty = DecodeSnapshot(EncodeSnapshot(machine, kJournalId, 1),
                                    "empty", kJournalId);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->machine->feed_producer().next_sequence(), 1u);
  EXPECT_FALSE(DecodeWithConfigField<&SnapshotConfigRecord::next_feed_sequence>(
                   EncodeSnapshot(machine, kJournalId, 1), std::uint64_t{2})
                   .ok());
  ASSERT_TRUE(machine
                  .Apply(Record{1, 1000, 1, 0,
                                test_support::Frame(
                                    1, test_support::Limit(
                                           {.client_order_id = 1,
                                            .price = 100,
                                            .quantity = 5'000'000'000'000}))})
                  .ok());
  const auto loaded = DecodeSnapshot(EncodeSnapshot(machine, kJournalId, 1),
                                     "large", kJournalId);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->machine->feed_producer().next_sequence(),
            machine.feed_producer().next_sequence());
  EXPECT_EQ(loaded->machine->feed_producer().announced().max_quantity,
            10'000'000'000'000u);
}

TEST(Snapshot, AFileNamedForAnotherIndexIsRefused) {
  const std::vector<std::byte> good = SmallSnapshot();
  EXPECT_TRUE(DecodeSnapshot(good, "dir/" + SnapshotFileName(120), 0).ok());
  const auto loaded = DecodeSnapshot(good, "dir/" + SnapshotFileName(119), 0);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("file name says 119"),
            std::string::npos)
      << loaded.status();
}

// Damage behind valid checksums (resealed): the cross-checks refuse it.
struct Mutation {
  std::string name;
  std::uint32_t section;
  std::size_t record;  // which record of the section
  std::size_t field_offset;
  std::uint64_t value;
  std::size_t width;
  std::string expected;  // in the message
};

// The mutations of the test below: each a field of one record of a
// section set to a value that makes the snapshot inconsistent.
std::vector<Mutation> InconsistentMutations() {
  return {
      {"session index not dense", kSectionSessions, 1,
       codec::OffsetOf<kSnapshotSessionLayout, &SnapshotSessionRecord::index>(),
       5, 4, "dense"},
      {"session id twice", kSectionSessions, 1,
       codec::OffsetOf<kSnapshotSessionLayout, &SnapshotSessionRecord::id>(),
       500, 4, "appears twice"},
      {"order owner past the sessions", kSectionOrders, 0,
       codec::OffsetOf<kSnapshotOrderLayout, &SnapshotOrderRecord::owner>(), 2,
       4, "there are 2 sessions"},
      {"order id repeated", kSectionOrders, 1,
       codec::OffsetOf<kSnapshotOrderLayout, &SnapshotOrderRecord::order_id>(),
       0, 8, "order_id is not unique"},
      {"client key repeated", kSectionOrders, 1,
       codec::OffsetOf<kSnapshotOrderLayout,
                       &SnapshotOrderRecord::client_order_id>(),
       0, 8, "client_order_id"},
      {"order of an unknown instrument", kSectionOrders, 0,
       codec::OffsetOf<kSnapshotOrderLayout,
                       &SnapshotOrderRecord::instrument_id>(),
       17, 4, "outside the configured range"},
      {"order side invalid", kSectionOrders, 0,
       codec::OffsetOf<kSnapshotOrderLayout, &SnapshotOrderRecord::side>(), 3,
       1, "neither Buy nor Sell"},
      {"order with no leaves", kSectionOrders, 0,
       codec::OffsetOf<kSnapshotOrderLayout,
                       &SnapshotOrderRecord::leaves_quantity>(),
       0, 8, "leaves_quantity is 0"},
      {"order id not yet issued", kSectionOrders, 0,
       codec::OffsetOf<kSnapshotOrderLayout, &SnapshotOrderRecord::order_id>(),
       1u << 30, 8, "next_order_id"},
      {"reserved bytes", kSectionOrders, 0,
       codec::OffsetOf<kSnapshotOrderLayout, &SnapshotOrderRecord::reserved>(),
       1, 2, "reserved"},
      {"engine config invalid", kSectionConfig, 0,
       codec::OffsetOf<kSnapshotConfigLayout,
                       &SnapshotConfigRecord::max_live_orders>(),
       0, 4, "max_live_orders"},
      {"fewer orders allowed than live", kSectionConfig, 0,
       codec::OffsetOf<kSnapshotConfigLayout,
                       &SnapshotConfigRecord::max_live_orders>(),
       2, 4, "more than max_live_orders"},
      {"history beyond its cap", kSectionSessions, 0,
       codec::OffsetOf<kSnapshotSessionLayout,
                       &SnapshotSessionRecord::history_capacity>(),
       64, 8, "power of two"},
      {"history sequence off", kSectionSessions, 0,
       codec::OffsetOf<kSnapshotSessionLayout,
                       &SnapshotSessionRecord::next_report>(),
       3, 8, "history_first"},
      {"report frame size", kSectionReports, 0,
       codec::OffsetOf<kSnapshotReportLayout, &SnapshotReportRecord::size>(),
       30, 1, "not a whole report frame"},
      {"report of a later command", kSectionReports, 0,
       codec::OffsetOf<kSnapshotReportLayout, &SnapshotReportRecord::command>(),
       1'000'000, 8, "command"},
  };
}

// `m` applied to `bad` (a snapshot; resealed afterwards by the caller).
void ApplyMutation(std::vector<std::byte>& bad, const Mutation& m) {
  const SnapshotSectionEntry entry = SectionEntry(bad, m.section);
  const std::size_t record_size =
      entry.count == 0 ? 0 : entry.bytes / entry.count;
  ASSERT_LT(m.record, entry.count);
  std::byte* at =
      bad.data() + entry.offset + m.record * record_size + m.field_offset;
  if (m.name == "order id repeated") {
    // The second order takes the first one's id.
    std::memcpy(at, bad.data() + entry.offset + m.field_offset, 8);
  } else if (m.name == "client key repeated") {
    // The second order takes the first one's whole client key.
    std::byte* second = bad.data() + entry.offset + record_size;
    const std::byte* first = bad.data() + entry.offset;
    for (const std::size_t field :
         {codec::OffsetOf<kSnapshotOrderLayout,
                          &SnapshotOrderRecord::account_id>(),
          codec::OffsetOf<kSnapshotOrderLayout, &SnapshotOrderRecord::owner>(),
          codec::OffsetOf<kSnapshotOrderLayout,
                          &SnapshotOrderRecord::client_order_id>()}) {
      std::memcpy(second + field, first + field,
                  field == codec::OffsetOf<kSnapshotOrderLayout,
                                           &SnapshotOrderRecord::owner>()
                      ? 4
                      : 8);
    }
  } else {
    switch (m.width) {
      case 1:
        codec::StoreLE(at, static_cast<std::uint8_t>(m.value));
        break;
      case 2:
        codec::StoreLE(at, static_cast<std::uint16_t>(m.value));
        break;
      case 4:
        codec::StoreLE(at, static_cast<std::uint32_t>(m.value));
        break;
      default:
        codec::StoreLE(at, m.value);
    }
  }
  if (m.name == "session id twice") {
    // Session 1 takes session 0's id.
    std::memcpy(at, bad.data() + entry.offset, 4);
  }
}

TEST(Snapshot, InconsistentContentsBehindValidChecksumsAreRefused) {
  const std::vector<std::byte> good = SmallSnapshot();
  for (const Mutation& m : InconsistentMutations()) {
    SCOPED_TRACE(m.name);
    std::vector<std::byte> bad = good;
    ASSERT_NO_FATAL_FAILURE(ApplyMutation(bad, m));
    ResealSnapshot(bad);
    const auto loaded = DecodeSnapshot(bad, "f.ows", 0);
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(loaded.status().message().find(m.expected), std::string::npos)
        << loaded.status();
    EXPECT_NE(loaded.status().message().find("damaged at offset"),
              std::string::npos)
        << loaded.status();
  }
}

// A crossed book (a bid moved above the best ask) is refused.
TEST(Snapshot, ACrossedBookIsRefused) {
  std::vector<std::byte> bad = SmallSnapshot();
  const SnapshotSectionEntry entry = SectionEntry(bad, kSectionOrders);
  bool done = false;
  for (std::size_t i = 0; i + 1 < entry.count && !done; ++i) {
    const std::byte* p = bad.data() + entry.offset;
    const auto a =
        journal::LoadStruct<kSnapshotOrderLayout, SnapshotOrderRecord>(
            p + i * kSnapshotOrderLayout.kSize);
    const auto b =
        journal::LoadStruct<kSnapshotOrderLayout, SnapshotOrderRecord>(
            p + (i + 1) * kSnapshotOrderLayout.kSize);
    // The last bid of a book followed by its first ask: make every bid of
    // the book cross by raising the ask's price below the best bid.
    if (a.instrument_id == b.instrument_id && a.side == 1 && b.side == 2) {
      std::size_t first_bid = i;
      while (first_bid > 0) {
        const auto c =
            journal::LoadStruct<kSnapshotOrderLayout, SnapshotOrderRecord>(
                p + (first_bid - 1) * kSnapshotOrderLayout.kSize);
        if (c.instrument_id != a.instrument_id) break;
        --first_bid;
      }
      const auto best_bid =
          journal::LoadStruct<kSnapshotOrderLayout, SnapshotOrderRecord>(
              p + first_bid * kSnapshotOrderLayout.kSize);
      // Only if the ask side of this book has one level (so order stays
      // canonical).
      codec::StoreLE(bad.data() + entry.offset +
                         (i + 1) * kSnapshotOrderLayout.kSize +
                         codec::OffsetOf<kSnapshotOrderLayout,
                                         &SnapshotOrderRecord::price>(),
                     best_bid.price);
      done = true;
    }
  }
  ASSERT_TRUE(done) << "no book with both sides in the sample";
  ResealSnapshot(bad);
  const auto loaded = DecodeSnapshot(bad, "f.ows", 0);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("crossed"), std::string::npos)
      << loaded.status();
}

// A history ring larger than the reports it holds could make a load
// allocate far more than the file holds: refused.
TEST(Snapshot, AHistoryRingLargerThanItsReportsIsRefused) {
  StateMachineOptions options = SmallOptions();
  options.report_history = 1 << 20;
  options.history_budget_bytes = std::size_t{1} << 40;
  StateMachine machine(options);
  const Stream stream = MakeStream(/*sessions=*/1, /*per_session=*/2, 4);
  for (std::size_t i = 0; i < stream.size(); ++i) {
    ASSERT_TRUE(machine.Apply(stream.RecordAt(i)).ok());
  }
  const std::size_t held = machine.session(0).history.held();
  ASSERT_GE(held, 1u);
  std::vector<std::byte> bytes = EncodeSnapshot(machine, 1, 2);
  ASSERT_TRUE(DecodeSnapshot(bytes, "f", 0).ok());
  const SnapshotSectionEntry sessions = SectionEntry(bytes, kSectionSessions);
  codec::StoreLE(
      bytes.data() + sessions.offset +
          codec::OffsetOf<kSnapshotSessionLayout,
                          &SnapshotSessionRecord::history_capacity>(),
      std::uint64_t{1} << 20);
  ResealSnapshot(bytes);
  const auto loaded = DecodeSnapshot(bytes, "f", 0);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("more than half of its slots"),
            std::string::npos)
      << loaded.status();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

TEST(Snapshot, WriteListLoadNewestAndFallBackPastDamage) {
  test_support::ScratchDir dir;
  const std::string& journal = dir.path();
  const Stream stream = MakeStream(2, 100, 9);
  StateMachine machine(SmallOptions());
  // A missing directory is an empty list.
  auto none = ListSnapshots(journal);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  std::vector<SnapshotInfo> written;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    ASSERT_TRUE(machine.Apply(stream.RecordAt(i)).ok());
    if ((i + 1) % 50 == 0) {
      auto info = WriteSnapshot(machine, kJournalId, journal);
      ASSERT_TRUE(info.ok()) << info.status();
      EXPECT_EQ(info->path,
                SnapshotDirectory(journal) + "/" + SnapshotFileName(i + 1));
      EXPECT_EQ(info->index, i + 1);
      EXPECT_EQ(info->file_bytes, ReadFile(info->path).size());
      EXPECT_FALSE(std::ifstream(info->path + ".tmp").good());
      written.push_back(*info);
    }
  }
  // Not snapshots: ignored.
  WriteFile(SnapshotDirectory(journal) + "/" + SnapshotFileName(999) + ".tmp",
            {});
  WriteFile(SnapshotDirectory(journal) + "/notes.txt", {});
  auto list = ListSnapshots(journal);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 4u);
  EXPECT_EQ((*list)[0].index, 200u);
  EXPECT_EQ((*list)[3].index, 50u);

  std::vector<std::string> skipped;
  auto newest = LoadNewestSnapshot(journal, kJournalId, ~0ull, &skipped);
  ASSERT_TRUE(newest.ok());
  ASSERT_TRUE(newest->has_value());
  EXPECT_EQ((*newest)->info.index, 200u);
  EXPECT_TRUE(skipped.empty());
  EXPECT_EQ(EncodeSnapshot(*(*newest)->machine, kJournalId, 0),
            EncodeSnapshot(machine, kJournalId, 0));

  // Bounded by max_index.
  newest = LoadNewestSnapshot(journal, kJournalId, 149, &skipped);
  ASSERT_TRUE(newest.ok() && newest->has_value());
  EXPECT_EQ((*newest)->info.index, 100u);

  // The newest damaged: reported, the previous one used.
  std::string text = ReadFile(written[3].path);
  text[text.size() / 2] ^= 1;
  WriteFile(written[3].path, std::as_bytes(std::span(text)));
  newest = LoadNewestSnapshot(journal, kJournalId, ~0ull, &skipped);
  ASSERT_TRUE(newest.ok() && newest->has_value());
  EXPECT_EQ((*newest)->info.index, 150u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find(written[3].path), std::string::npos);
  EXPECT_NE(skipped[0].find("damaged at offset"), std::string::npos);
  EXPECT_NE(skipped[0].find("using the previous one"), std::string::npos);

  // Another journal's: none of them.
  skipped.clear();
  newest = LoadNewestSnapshot(journal, kJournalId + 1, ~0ull, &skipped);
  ASSERT_TRUE(newest.ok());
  EXPECT_FALSE(newest->has_value());
  EXPECT_EQ(skipped.size(), 4u);
}

TEST(Snapshot, WriteErrorsNameThePath) {
  test_support::ScratchDir dir;
  StateMachine machine(SmallOptions());
  const std::string file = dir.path() + "/file";
  WriteFile(file, {});
  // The journal "directory" is a file: mkdir of file/snapshots fails.
  const auto info = WriteSnapshot(machine, 1, file);
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.status().message().find(file + "/snapshots"),
            std::string::npos)
      << info.status();
  const auto missing = LoadSnapshot(dir.path() + "/nothing.ows", 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nothing.ows"), std::string::npos);
}

}  // namespace
}  // namespace orderwire::state
