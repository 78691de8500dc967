// Where the stream and the hot standby's journal disagree
// (cluster/standby.h), against a real nats-server: a gap, a corrupted
// message or a local record that differs from the primary's stops it with
// DataLoss and nothing of the refused message appended; it remembers each
// epoch and refuses an older one after it, and a marker that does not
// continue its journal. Rejoining as a standby: an old primary's journal
// whose unacknowledged tail a newer epoch replaced is cut (and kept), and
// only then. The helpers are in standby_test_support.h.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cluster/standby.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/cut.h"
#include "replication/group_message.h"
#include "replication/journal_publisher.h"
#include "state/snapshot.h"
#include "tests/cluster/standby_test_support.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::standby_test {
namespace {

TEST(Standby, AGapStopsItAndNothingOfTheMessageIsAppended) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  // Records 1..100, then 111..300: 101..110 never published.
  PublishRecords(*pub, records, 0, 100, 1);
  PublishRecords(*pub, records, 110, 300, 1);
  ScratchDir dir;
  auto standby =
      StartStandby(StandbyOptionsFor(**nats, "main", dir.Sub("standby")));
  ASSERT_NE(standby, nullptr);
  const absl::Status status =
      FollowUntilError(*standby, std::chrono::seconds(10));
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("indexes 101 to 110 are missing"));
  EXPECT_EQ(standby->stats().appended_index, 100u);
  EXPECT_EQ(standby->stats().applied_index, 100u);
  // Every later step says the same.
  EXPECT_EQ(standby->Step(std::chrono::milliseconds(1)), status);
  standby.reset();
  const std::vector<OwnedRecord> held = ReadJournal(dir.Sub("standby"));
  EXPECT_TRUE(held ==
              std::vector<OwnedRecord>(records.begin(), records.begin() + 100));
}

TEST(Standby, ACorruptedMessageStopsItAndNothingOfItIsAppended) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  const std::size_t before = PublishRecords(*pub, records, 0, 100, 1).size();
  // A standby that has followed them (started later, its stream search
  // would read the bad message below and refuse to start, with the same
  // error).
  ScratchDir dir;
  auto standby =
      StartStandby(StandbyOptionsFor(**nats, "main", dir.Sub("standby")));
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, 100).ok());
  // Records 101..150 with one byte of a frame flipped after the checksum
  // was computed.
  replication::GroupMessageBuilder builder;
  builder.Start(1);
  for (std::size_t i = 100; i < 150; ++i) {
    ASSERT_TRUE(builder.Add(records[i].View()).ok());
  }
  const std::span<const std::byte> finished = builder.Finish();
  std::vector<std::byte> bad(finished.begin(), finished.end());
  bad[bad.size() - 3] ^= std::byte{0x40};
  ASSERT_TRUE(pub->Publish(records[100].index, bad).ok());
  PublishRecords(*pub, records, 150, 300, 1);
  const absl::Status status =
      FollowUntilError(*standby, std::chrono::seconds(10));
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrCat("sequence ", before + 1, " ")));
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("nothing of it appended"));
  EXPECT_EQ(standby->stats().appended_index, 100u);
  EXPECT_EQ(standby->stats().applied_index, 100u);
  standby.reset();
  EXPECT_EQ(ReadJournal(dir.Sub("standby")).size(), 100u);
}

TEST(Standby, ALocalRecordThatDiffersFromThePrimarysIsRefused) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  // Engine "old": records 1..100, where record 100 was received at another
  // time than on engine "new" (an old primary's record the new one never
  // had). The standby follows "old" to 100, then is pointed at "new".
  std::vector<OwnedRecord> old_records(records.begin(), records.begin() + 100);
  old_records[99].receive_ns += 1;
  {
    auto pub = OpenPublisher(**nats, "old", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, old_records, 0, 100, 1);
  }
  {
    auto pub = OpenPublisher(**nats, "new", 1);
    ASSERT_NE(pub, nullptr);
    // One message of 91..110: it holds both the differing 100 and 101.
    PublishRecords(*pub, records, 0, 90, 1);
    replication::GroupMessageBuilder builder;
    builder.Start(1);
    for (std::size_t i = 90; i < 110; ++i) {
      ASSERT_TRUE(builder.Add(records[i].View()).ok());
    }
    ASSERT_TRUE(pub->Publish(records[90].index, builder.Finish()).ok());
    ASSERT_TRUE(pub->Flush(std::chrono::seconds(10)).ok());
  }
  ScratchDir dir;
  {
    auto standby =
        StartStandby(StandbyOptionsFor(**nats, "old", dir.Sub("standby")));
    ASSERT_NE(standby, nullptr);
    ASSERT_TRUE(FollowUntil(*standby, 100).ok());
  }
  // The parting (index 100) is inside a stream message: no new primary
  // took over there, so nothing is cut and the start is refused.
  absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
      cluster::Standby::Start(
          StandbyOptionsFor(**nats, "new", dir.Sub("standby")));
  ASSERT_FALSE(standby.ok());
  EXPECT_TRUE(absl::IsDataLoss(standby.status())) << standby.status();
  EXPECT_THAT(std::string(standby.status().message()),
              HasSubstr("diverges from stream new at index 100"));
  EXPECT_THAT(std::string(standby.status().message()),
              HasSubstr("inside a message"));
  EXPECT_TRUE(ReadJournal(dir.Sub("standby")) == old_records);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("standby") + "/cut"));
}

TEST(Standby, RemembersEachEpochAndRefusesAnOlderOneAfterIt) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  {
    // Epoch 1: its marker, then records 1..100.
    auto pub = OpenPublisher(**nats, "main", 1);
    ASSERT_NE(pub, nullptr);
    ASSERT_TRUE(pub->PublishEpochMarker(1).ok()) << pub->failure();
    PublishRecords(*pub, records, 0, 100, 1);
  }
  {
    // Epoch 2 takes over at 101.
    auto pub = OpenPublisher(**nats, "main", 2);
    ASSERT_NE(pub, nullptr);
    ASSERT_TRUE(pub->PublishEpochMarker(101).ok()) << pub->failure();
    PublishRecords(*pub, records, 100, 200, 2);
  }
  ScratchDir dir;
  cluster::StandbyOptions options =
      StandbyOptionsFor(**nats, "main", dir.Sub("standby"));
  std::vector<std::string> events;
  options.on_event = [&](std::string_view line) { events.emplace_back(line); };
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, 200).ok());
  EXPECT_EQ(standby->stats().epoch, 2u);
  EXPECT_EQ(standby->stats().epoch_markers, 2u);
  EXPECT_THAT(events,
              ::testing::Contains(HasSubstr("epoch 2 begins at index 101")));
  {
    // A writer of epoch 1 that was not fenced (it opened after the marker):
    // its records cannot follow epoch 2's.
    auto pub = OpenPublisher(**nats, "main", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, records, 200, 210, 1);
  }
  const absl::Status status =
      FollowUntilError(*standby, std::chrono::seconds(10));
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("epoch 1 after epoch 2"));
  EXPECT_EQ(standby->stats().appended_index, 200u);
}

TEST(Standby, AMarkerThatDoesNotContinueTheLocalJournalIsRefused) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), 300u);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  auto pub = OpenPublisher(**nats, "main", 1);
  ASSERT_NE(pub, nullptr);
  PublishRecords(*pub, records, 0, 100, 1);
  ScratchDir dir;
  auto standby =
      StartStandby(StandbyOptionsFor(**nats, "main", dir.Sub("standby")));
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, 100).ok());
  // A new primary that says its journal ends at 90: the standby holds
  // records it does not have.
  auto next = OpenPublisher(**nats, "main", 2);
  ASSERT_NE(next, nullptr);
  ASSERT_TRUE(next->PublishEpochMarker(91).ok()) << next->failure();
  ASSERT_TRUE(next->Flush(std::chrono::seconds(10)).ok());
  const absl::Status status =
      FollowUntilError(*standby, std::chrono::seconds(10));
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("continues from index 91, but the local journal ends "
                        "at 100"));
  EXPECT_EQ(standby->stats().epoch, 1u);
}

// Rejoining as a standby (cluster/standby.h): an old primary's journal
// holds records 1..150, of which 101..150 the stream never acknowledged;
// a new primary (epoch 2) took over at 101 with an epoch marker and went on
// with records of its own.
constexpr std::size_t kAgreed = 100;   // records 1..100 agree
constexpr std::size_t kOldLast = 150;  // the old primary's last
constexpr std::size_t kNewLast = 200;  // the stream's last

// The old primary's records: the source's, 101..150 received at another
// time.
std::vector<OwnedRecord> OldPrimaryRecords() {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  std::vector<OwnedRecord> old(records.begin(), records.begin() + kOldLast);
  for (std::size_t i = kAgreed; i < kOldLast; ++i) old[i].receive_ns += 1;
  return old;
}

// Writes the old primary's journal in `dir` (a standby follows engine
// "old", where they were published).
void WriteOldPrimaryJournal(const NatsCluster& nats, const std::string& dir) {
  {
    auto pub = OpenPublisher(nats, "old", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, OldPrimaryRecords(), 0, kOldLast, 1);
  }
  auto standby = StartStandby(StandbyOptionsFor(nats, "old", dir));
  ASSERT_NE(standby, nullptr);
  ASSERT_TRUE(FollowUntil(*standby, kOldLast).ok());
}

// Engine "main": epoch 1's records 1..100 (a message ends at 100), then
// `after_agreed`: by default epoch 2's marker at 101 and its records
// 101..200.
enum class AfterAgreed { kNewPrimary, kSameEpochRecords, kOlderMarker };
void PublishMain(const NatsCluster& nats,
                 AfterAgreed after = AfterAgreed::kNewPrimary) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  {
    auto pub = OpenPublisher(nats, "main", 1);
    ASSERT_NE(pub, nullptr);
    PublishRecords(*pub, records, 0, kAgreed, 1);
    if (after == AfterAgreed::kSameEpochRecords) {
      PublishRecords(*pub, records, kAgreed, kNewLast, 1);
      return;
    }
  }
  const std::uint64_t epoch = after == AfterAgreed::kOlderMarker ? 1 : 2;
  auto pub = OpenPublisher(nats, "main", epoch);
  ASSERT_NE(pub, nullptr);
  ASSERT_TRUE(pub->PublishEpochMarker(kAgreed + 1).ok()) << pub->failure();
  PublishRecords(*pub, records, kAgreed, kNewLast, epoch);
}

TEST(StandbyRejoin, CutsTheUnacknowledgedTailAndFollowsTheNewPrimary) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  ASSERT_GT(records.size(), kNewLast);
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  ScratchDir dir;
  const std::string local = dir.Sub("standby");
  WriteOldPrimaryJournal(**nats, local);
  PublishMain(**nats);

  cluster::StandbyOptions options = StandbyOptionsFor(**nats, "main", local);
  std::vector<std::string> events;
  options.on_event = [&](std::string_view line) { events.emplace_back(line); };
  auto standby = StartStandby(options);
  ASSERT_NE(standby, nullptr);
  EXPECT_THAT(events, ::testing::Contains(HasSubstr(
                          "REJOINING AS A STANDBY: cut local records 101..150 "
                          "(never acknowledged by the stream; kept in " +
                          local + "/cut/101-150)")));
  EXPECT_EQ(standby->stats().rejoin_cuts, 1u);
  EXPECT_EQ(standby->stats().records_cut, kOldLast - kAgreed);
  EXPECT_EQ(standby->stats().replayed, kAgreed);
  ASSERT_TRUE(FollowUntil(*standby, kNewLast).ok());
  EXPECT_EQ(standby->stats().epoch, 2u);
  const std::vector<std::byte> state =
      state::EncodeSnapshot(standby->state(), 0, 0);
  standby.reset();
  // Its journal is the stream's, byte for byte, and its state the replay
  // of it.
  const std::vector<OwnedRecord> expected(records.begin(),
                                          records.begin() + kNewLast);
  EXPECT_TRUE(ReadJournal(local) == expected);
  EXPECT_TRUE(ReplayedState(local, SourceJournal::Get().options()) == state);
  // The records cut are kept, byte for byte.
  const std::vector<OwnedRecord> old = OldPrimaryRecords();
  std::vector<OwnedRecord> kept;
  for (const OwnedRecord& r : ReadJournal(local + "/cut/101-150")) {
    if (r.index > kAgreed) kept.push_back(r);
  }
  EXPECT_TRUE(kept ==
              std::vector<OwnedRecord>(old.begin() + kAgreed, old.end()));
}

TEST(StandbyRejoin, NoRejoinRefusesAndCutsNothing) {
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  ScratchDir dir;
  const std::string local = dir.Sub("standby");
  WriteOldPrimaryJournal(**nats, local);
  PublishMain(**nats);
  cluster::StandbyOptions options = StandbyOptionsFor(**nats, "main", local);
  options.rejoin = false;
  absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
      cluster::Standby::Start(options);
  ASSERT_FALSE(standby.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(standby.status())) << standby.status();
  EXPECT_THAT(std::string(standby.status().message()),
              HasSubstr("records 101..150 were never acknowledged"));
  EXPECT_THAT(std::string(standby.status().message()),
              HasSubstr("--no-rejoin"));
  EXPECT_TRUE(ReadJournal(local) == OldPrimaryRecords());
}

TEST(StandbyRejoin, WithoutANewerEpochMarkerNothingIsCut) {
  for (const AfterAgreed after :
       {AfterAgreed::kSameEpochRecords, AfterAgreed::kOlderMarker}) {
    SCOPED_TRACE(static_cast<int>(after));
    auto nats = NatsCluster::Start(1);
    ASSERT_TRUE(nats.ok()) << nats.status();
    ScratchDir dir;
    const std::string local = dir.Sub("standby");
    WriteOldPrimaryJournal(**nats, local);
    PublishMain(**nats, after);
    absl::StatusOr<std::unique_ptr<cluster::Standby>> standby =
        cluster::Standby::Start(StandbyOptionsFor(**nats, "main", local));
    ASSERT_FALSE(standby.ok());
    EXPECT_TRUE(absl::IsDataLoss(standby.status())) << standby.status();
    EXPECT_THAT(std::string(standby.status().message()),
                HasSubstr("diverges from stream main at index 101"));
    EXPECT_TRUE(ReadJournal(local) == OldPrimaryRecords());
  }
}

TEST(StandbyRejoin, AJournalAheadOfAStreamThatSimplyEndsIsNotCut) {
  // The stream holds epoch 1's records 1..100 and nothing after, or nothing
  // at all: no primary went on from there, so nothing is decided at start.
  for (const bool empty : {false, true}) {
    SCOPED_TRACE(empty);
    auto nats = NatsCluster::Start(1);
    ASSERT_TRUE(nats.ok()) << nats.status();
    ScratchDir dir;
    const std::string local = dir.Sub("standby");
    WriteOldPrimaryJournal(**nats, local);
    {
      auto pub = OpenPublisher(**nats, "main", 1);
      ASSERT_NE(pub, nullptr);
      if (!empty) {
        PublishRecords(*pub, SourceJournal::Get().records(), 0, kAgreed, 1);
      }
    }
    auto standby = StartStandby(StandbyOptionsFor(**nats, "main", local));
    ASSERT_NE(standby, nullptr);
    EXPECT_EQ(standby->stats().rejoin_cuts, 0u);
    EXPECT_EQ(standby->stats().appended_index, kOldLast);
    standby.reset();
    EXPECT_TRUE(ReadJournal(local) == OldPrimaryRecords());
    EXPECT_FALSE(std::filesystem::exists(local + "/cut"));
  }
}

TEST(StandbyRejoin, ACutLeftHalfDoneIsFinishedAtTheNextStart) {
  const std::vector<OwnedRecord>& records = SourceJournal::Get().records();
  auto nats = NatsCluster::Start(1);
  ASSERT_TRUE(nats.ok()) << nats.status();
  ScratchDir dir;
  const std::string local = dir.Sub("standby");
  WriteOldPrimaryJournal(**nats, local);
  PublishMain(**nats);
  // A crash in the middle of the rejoin's cut: its intent is written and
  // the segment cut, the rest not done.
  absl::StatusOr<journal::CutReport> crashed =
      journal::CutJournalTail({.directory = local,
                               .keep_through_index = kAgreed,
                               .stop_after = journal::CutStep::kSegmentCut});
  ASSERT_TRUE(absl::IsAborted(crashed.status())) << crashed.status();
  ASSERT_TRUE(std::filesystem::exists(local + "/CUT"));
  auto standby = StartStandby(StandbyOptionsFor(**nats, "main", local));
  ASSERT_NE(standby, nullptr);
  EXPECT_FALSE(std::filesystem::exists(local + "/CUT"));
  EXPECT_EQ(standby->stats().rejoin_cuts, 0u);  // finished, not decided now
  ASSERT_TRUE(FollowUntil(*standby, kNewLast).ok());
  standby.reset();
  EXPECT_TRUE(
      ReadJournal(local) ==
      std::vector<OwnedRecord>(records.begin(), records.begin() + kNewLast));
}

}  // namespace
}  // namespace orderwire::standby_test
