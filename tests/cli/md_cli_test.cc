// `orderwire md from-journal` as a user runs it: the real binary on a
// journal written here, text and exit status out. The golden journal of
// docs/MARKETDATA-GOLDEN.md gives the golden feed as its exact
// JSON Lines (typed from the document); --from, --count and --instrument
// select from it; usage and journal errors give the CLI's exit statuses;
// and on a random journal of many segments, with snapshots, the output is
// the concatenation of a StateMachine's feed() over the same records: the
// command drops and repeats nothing at segment or snapshot boundaries.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codec/command.h"
#include "codec/frame.h"
#include "engine/workload.h"
#include "feed/packet.h"
#include "feed/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "jsonl/jsonl.h"
#include "state/pinned_config.h"
#include "state/record_flags.h"
#include "state/snapshot.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"

namespace orderwire::cli::md_cli_test {
namespace {

using test_support::Bytes;
using test_support::ScratchDir;
using ::testing::HasSubstr;
using ::testing::Not;
using Outcome = test_support::ShellOutcome;

constexpr std::uint64_t kT1 = 1700000000000000000;
constexpr std::uint64_t kT2 = 1700000000000250000;

Outcome Md(const ScratchDir& dir, const std::string& flags) {
  return test_support::RunShell(
      dir.path(), absl::StrCat("'", ORDERWIRE_BINARY, "' md ", flags));
}

struct JournalRecord {
  std::uint32_t session;
  Bytes frame;
  std::uint64_t receive_ns;
  std::uint32_t flags = 0;  // state/record_flags.h
};

// Writes `records` as a new journal in `dir` pinning `pinned`, a group
// every `group` records, in segments of `segment_size` bytes. Returns its
// id.
std::uint64_t WriteJournal(const std::string& dir,
                           const state::PinnedConfig& pinned,
                           const std::vector<JournalRecord>& records,
                           std::size_t group = 1,
                           std::uint64_t segment_size = std::uint64_t{1}
                                                        << 20) {
  journal::WriterOptions options;
  options.directory = dir;
  options.durability = journal::Durability::kNone;
  options.segment_size = segment_size;
  options.metadata = state::EncodePinnedConfig(pinned);
  auto writer = journal::JournalWriter::Open(options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  if (!writer.ok()) return 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const JournalRecord& r = records[i];
    journal::AppendStatus status;
    while ((status =
                (*writer)->Append(r.frame, r.session, r.receive_ns, r.flags)) ==
           journal::AppendStatus::kFull) {
      EXPECT_TRUE((*writer)->Wait().ok());
    }
    EXPECT_EQ(status, journal::AppendStatus::kOk) << "record " << i + 1;
    if ((i + 1) % group == 0) {
      EXPECT_TRUE((*writer)->Flush().ok());
    }
  }
  const std::uint64_t id = (*writer)->journal_id();
  EXPECT_TRUE((*writer)->Close().ok());
  return id;
}

// MARKETDATA-GOLDEN.md: instrument 42 only, default bands.
state::PinnedConfig GoldenPinned() {
  state::PinnedConfig pinned;
  pinned.engine.min_instrument = 42;
  pinned.engine.max_instrument = 42;
  return pinned;
}

// MARKETDATA-GOLDEN.md's records: record 1 at T1 a buy of 300 at 10050,
// record 2 at T2 a sell of 400 at 10040 (another session and account).
std::vector<JournalRecord> GoldenRecords() {
  return {
      {1,
       test_support::Frame(1, test_support::Limit({.account_id = 1,
                                                   .client_order_id = 1,
                                                   .instrument_id = 42,
                                                   .side = codec::Side::kBuy,
                                                   .price = 10050,
                                                   .quantity = 300})),
       kT1},
      {2,
       test_support::Frame(1, test_support::Limit({.account_id = 2,
                                                   .client_order_id = 1,
                                                   .instrument_id = 42,
                                                   .side = codec::Side::kSell,
                                                   .price = 10040,
                                                   .quantity = 400})),
       kT2}};
}

// The golden journal: GoldenRecords() pinning GoldenPinned().
void WriteGoldenJournal(const std::string& dir) {
  WriteJournal(dir, GoldenPinned(), GoldenRecords());
}

// The golden feed, messages 1 to 6, as MARKETDATA-GOLDEN.md lists it.
const std::vector<std::string> kGoldenLines = {
    R"({"sequence":1,"kind":"SystemEvent","timestamp":1700000000000000000,)"
    R"("event":1})",
    R"({"sequence":2,"kind":"InstrumentDirectory",)"
    R"("timestamp":1700000000000000000,"instrument_id":42,"min_price":1,)"
    R"("max_price":1000000000,"min_quantity":1,"max_quantity":1000000000})",
    R"({"sequence":3,"kind":"TradingStatus","timestamp":1700000000000000000,)"
    R"("instrument_id":42,"state":1})",
    R"({"sequence":4,"kind":"OrderAdded","timestamp":1700000000000000000,)"
    R"("order_id":1,"instrument_id":42,"side":1,"price":10050,)"
    R"("quantity":300})",
    R"({"sequence":5,"kind":"OrderExecuted","timestamp":1700000000000250000,)"
    R"("order_id":1,"instrument_id":42,"side":1,"match_id":1,"price":10050,)"
    R"("quantity":300})",
    R"({"sequence":6,"kind":"OrderAdded","timestamp":1700000000000250000,)"
    R"("order_id":2,"instrument_id":42,"side":2,"price":10040,)"
    R"("quantity":100})",
};

// Lines first..last (1-based feed sequences) of the golden feed, each
// ending in a newline.
std::string GoldenText(std::size_t first, std::size_t last) {
  std::string out;
  for (std::size_t s = first; s <= last; ++s) {
    absl::StrAppend(&out, kGoldenLines[s - 1], "\n");
  }
  return out;
}

TEST(MdFromJournalCli, GoldenJournalGivesTheGoldenFeed) {
  ScratchDir dir;
  WriteGoldenJournal(dir.Sub("j"));
  const Outcome md = Md(dir, "from-journal --journal j");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, GoldenText(1, 6));
  EXPECT_THAT(md.err, HasSubstr("6 messages printed; 2 records applied"));
  EXPECT_THAT(md.err, HasSubstr("the feed's next sequence 7"));
}

TEST(MdFromJournalCli, FromAndCountSelectFeedSequences) {
  ScratchDir dir;
  WriteGoldenJournal(dir.Sub("j"));
  Outcome md = Md(dir, "from-journal --journal j --from 4 --count 2");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, GoldenText(4, 5));
  md = Md(dir, "from-journal --journal j --from 5");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, GoldenText(5, 6));
  md = Md(dir, "from-journal --journal j --count 1");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, GoldenText(1, 1));
  // The range is reached within record 1: record 2 is not applied.
  EXPECT_THAT(md.err, HasSubstr("1 records applied"));
  // Past the end of the feed: nothing, and no error.
  md = Md(dir, "from-journal --journal j --from 7");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, "");
}

TEST(MdFromJournalCli, InstrumentKeepsThatInstrumentsMessages) {
  ScratchDir dir;
  WriteGoldenJournal(dir.Sub("j"));
  // Every message but SystemEvent names instrument 42.
  Outcome md = Md(dir, "from-journal --journal j --instrument 42");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, GoldenText(2, 6));
  // --from and --count count every sequence, the filter applies within.
  md = Md(dir, "from-journal --journal j --instrument 42 --from 1 --count 3");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, GoldenText(2, 3));
  md = Md(dir, "from-journal --journal j --instrument 43");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, "");
}

TEST(MdFromJournalCli, UsageErrorsExitTwoJournalErrorsOne) {
  ScratchDir dir;
  WriteGoldenJournal(dir.Sub("j"));
  for (const std::string flags :
       {"from-journal", "from-journal --journal j --from 0",
        "from-journal --journal j --count 0",
        "from-journal --journal j --instrument 0",
        "from-journal --journal j --from x", "from-journal --journal j extra",
        "from-journal --journal j --no-such-flag"}) {
    const Outcome md = Md(dir, flags);
    EXPECT_EQ(md.status, 2) << flags << "\n" << md.err;
    EXPECT_EQ(md.out, "") << flags;
  }
  const Outcome missing = Md(dir, "from-journal --journal nowhere");
  EXPECT_EQ(missing.status, 1) << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("orderwire md from-journal: "));
}

// MARKETDATA.md "Sequence numbers and sessions": the golden journal, then
// a record flagged NewFeedSession (the first after an accepted loss) and
// one more: the golden feed 1 to 6, then the new session from 1:
// StartOfFeed, the directory, then the records' messages, as a
// StateMachine applying the same records makes them.
TEST(MdFromJournalCli, ANewFeedSessionPrintsFromSequenceOneAgain) {
  ScratchDir dir;
  const state::PinnedConfig pinned = GoldenPinned();
  constexpr std::uint64_t kT3 = kT2 + 1000;
  const auto buy = [](std::uint64_t sequence, std::int64_t price) {
    return test_support::Frame(sequence,
                               test_support::Limit({.account_id = 1,
                                                    .client_order_id = sequence,
                                                    .instrument_id = 42,
                                                    .side = codec::Side::kBuy,
                                                    .price = price,
                                                    .quantity = 5}));
  };
  std::vector<JournalRecord> records = GoldenRecords();
  records.push_back({1, buy(2, 10000), kT3, state::kRecordNewFeedSession});
  records.push_back({1, buy(3, 10001), kT3 + 1});
  const std::uint64_t journal_id = WriteJournal(dir.Sub("j"), pinned, records);
  // The reference: the same records through a StateMachine, as text.
  state::StateMachineOptions options;
  options.engine = pinned.engine;
  state::StateMachine machine(options);
  std::string expected;
  std::uint64_t index = 0;
  for (const JournalRecord& r : records) {
    ++index;
    ASSERT_TRUE(machine
                    .Apply(state::Record{index, r.receive_ns, r.session,
                                         r.flags, r.frame})
                    .ok());
    for (const state::FeedMessage& m : machine.feed()) {
      expected += jsonl::FeedMessageToJson(
          m.sequence,
          feed::MessageBlock(m.bytes.data(),
                             static_cast<std::uint16_t>(m.bytes.size())));
      expected += "\n";
    }
  }
  ASSERT_EQ(machine.feed_producer().session_start(), 3u);
  const Outcome md = Md(dir, "from-journal --journal j");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, expected);
  EXPECT_EQ(md.out.substr(0, GoldenText(1, 6).size()), GoldenText(1, 6));
  EXPECT_THAT(md.out, HasSubstr(absl::StrCat(
                          R"({"sequence":1,"kind":"SystemEvent",)",
                          R"("timestamp":)", kT3, R"(,"event":1})")));
  EXPECT_THAT(md.err, HasSubstr("the feed's next sequence 6"));

  // A snapshot after it keeps where the session began (SNAPSHOT.md version
  // 3), and `snapshot inspect` names the session.
  const Outcome written = test_support::RunShell(
      dir.path(),
      absl::StrCat("'", ORDERWIRE_BINARY, "' snapshot --journal j && '",
                   ORDERWIRE_BINARY, "' snapshot inspect j/snapshots/*.ows"));
  ASSERT_EQ(written.status, 0) << written.err;
  EXPECT_THAT(written.out, HasSubstr("format version 4"));
  EXPECT_THAT(written.out,
              HasSubstr(absl::StrFormat(
                  "market-data feed session: began at record 3 (after an "
                  "accepted loss), id %016x",
                  feed::FeedSession(journal_id, 3))));
}

// A journal cut in its last record: the messages before it are printed,
// then the damage fails the command, unless --accept-loss.
TEST(MdFromJournalCli, DamagedTailFailsUnlessTheLossIsAccepted) {
  ScratchDir dir;
  WriteGoldenJournal(dir.Sub("j"));
  // Record 2 corrupted in place: a byte of its frame's price (10040, then
  // the quantity 400, little-endian) changed, so its checksum fails.
  const std::string segment = dir.Sub("j/00000000000000000001.owj");
  std::string bytes = test_support::ReadText(segment);
  const std::string price_quantity("\x38\x27\0\0\0\0\0\0\x90\x01\0\0", 12);
  const std::size_t at = bytes.find(price_quantity);
  ASSERT_NE(at, std::string::npos) << "record 2's price and quantity";
  bytes[at] = '\x39';
  test_support::WriteText(segment, bytes);
  Outcome md = Md(dir, "from-journal --journal j");
  EXPECT_EQ(md.status, 1) << md.err;
  EXPECT_EQ(md.out, GoldenText(1, 4));
  md = Md(dir, "from-journal --journal j --accept-loss");
  EXPECT_EQ(md.status, 0) << md.err;
  EXPECT_EQ(md.out, GoldenText(1, 4));
  EXPECT_THAT(md.err, HasSubstr("DATA LOSS ACCEPTED (--accept-loss)"));
}

// A random journal: two sessions of the mixed workload, many segments;
// snapshots at a few indexes. The reference is a StateMachine applied to
// the journal's records, its feed() of each in turn, as text.
class RandomJournal {
 public:
  static constexpr std::uint64_t kRecords = 3000;

  explicit RandomJournal(const std::string& dir) : dir_(dir) {
    pinned_.engine.min_instrument = 1;
    pinned_.engine.max_instrument = 8;
    std::vector<std::vector<codec::Command>> commands;
    for (std::uint64_t s = 0; s < 2; ++s) {
      commands.push_back(
          workload::Generate(workload::Workload::kMixed, kRecords / 2, 11 + s));
    }
    std::vector<JournalRecord> records;
    for (std::uint64_t i = 0; i < kRecords; ++i) {
      Bytes frame(codec::kMaxFrameSize);
      const auto size = codec::EncodeCommand(commands[i % 2][i / 2], frame);
      EXPECT_TRUE(size.ok());
      frame.resize(*size);
      records.push_back(
          {static_cast<std::uint32_t>(40 + i % 2), frame, 5000 + i * 7});
    }
    journal_id_ =
        WriteJournal(dir, pinned_, records, 4, journal::kMinSegmentCapacity);
  }

  // The feed's lines, and snapshots written at `snapshots_at`; the feed's
  // next sequence at each snapshot is appended to `snapshot_sequences`.
  std::vector<std::string> Reference(
      const std::vector<std::uint64_t>& snapshots_at,
      std::vector<std::uint64_t>* snapshot_sequences) {
    state::StateMachineOptions options;
    options.engine = pinned_.engine;
    options.max_sessions = pinned_.max_sessions;
    state::StateMachine machine(options);
    std::vector<std::string> lines;
    auto reader = journal::JournalReader::Open(dir_);
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return lines;
    journal::Record record;
    while ((*reader)->Next(record) == journal::ReadResult::kRecord) {
      EXPECT_TRUE(machine.Apply(state::Record::FromJournal(record)).ok());
      for (const state::FeedMessage& m : machine.feed()) {
        lines.push_back(jsonl::FeedMessageToJson(
            m.sequence,
            feed::MessageBlock(m.bytes.data(),
                               static_cast<std::uint16_t>(m.bytes.size()))));
      }
      for (const std::uint64_t at : snapshots_at) {
        if (at != record.index) continue;
        EXPECT_TRUE(state::WriteSnapshot(machine, journal_id_, dir_).ok());
        snapshot_sequences->push_back(machine.feed_producer().next_sequence());
      }
    }
    EXPECT_EQ(machine.last_index(), kRecords);
    return lines;
  }

 private:
  std::string dir_;
  state::PinnedConfig pinned_;
  std::uint64_t journal_id_ = 0;
};

std::string Joined(const std::vector<std::string>& lines, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < lines.size(); ++i) {
    absl::StrAppend(&out, lines[i], "\n");
  }
  return out;
}

TEST(MdFromJournalCli, RandomJournalGivesTheStateMachinesFeedAcrossBoundaries) {
  ScratchDir dir;
  RandomJournal journal(dir.Sub("j"));
  std::vector<std::uint64_t> sequences;
  const std::vector<std::uint64_t> snapshot_indexes = {700, 1900};
  const std::vector<std::string> lines =
      journal.Reference(snapshot_indexes, &sequences);
  std::size_t segments = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.Sub("j"))) {
    if (entry.path().extension() == ".owj") ++segments;
  }
  EXPECT_GE(segments, 3u) << "the journal should cross segment boundaries";
  ASSERT_EQ(sequences.size(), 2u);
  ASSERT_GT(lines.size(), RandomJournal::kRecords / 2);
  ASSERT_LT(sequences[1], lines.size());

  // The whole feed: no snapshot starts it (each skips messages).
  Outcome md = Md(dir, "from-journal --journal j");
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_TRUE(md.out == Joined(lines, 0)) << "the whole feed differs";
  EXPECT_THAT(md.err, Not(HasSubstr("after snapshot")));

  // From each snapshot's next sequence: that snapshot is started from.
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    md =
        Md(dir, absl::StrCat("from-journal --journal j --from ", sequences[i]));
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_TRUE(md.out == Joined(lines, sequences[i] - 1))
        << "from snapshot " << i;
    EXPECT_THAT(md.err, HasSubstr("after snapshot j/snapshots/"));
    EXPECT_THAT(md.err,
                HasSubstr(absl::StrCat("(index ", snapshot_indexes[i], ")")));
    // The same without snapshots.
    const Outcome whole =
        Md(dir, absl::StrCat("from-journal --journal j --no-snapshot --from ",
                             sequences[i]));
    ASSERT_EQ(whole.status, 0) << whole.err;
    EXPECT_TRUE(whole.out == md.out);
    EXPECT_THAT(whole.err, Not(HasSubstr("after snapshot")));
  }
}

}  // namespace
}  // namespace orderwire::cli::md_cli_test
