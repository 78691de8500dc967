// The configuration is part of the journal, end to end: a restart with a
// different configuration is refused naming each difference; --reconfigure
// changes it at the next index, where restart and replay change it too; a
// journal that pins nothing gets the given configuration pinned; a damaged
// configuration is refused.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "codec/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "journal/format.h"
#include "journal/reader.h"
#include "journal/writer.h"
#include "service/service.h"
#include "state/pinned_config.h"
#include "state/state_machine.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using state::EncodePinnedConfig;
using state::FollowSegments;
using state::Output;
using state::PinnedConfig;
using state::PinnedConfigOf;
using state::Record;
using state::StateMachine;
using state::StateMachineOptions;

using config::ServiceConfig;

using test_support::Bytes;
using test_support::Frame;
using test_support::Hex;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestClient;
using test_support::TestOptions;
using ::testing::HasSubstr;

constexpr std::uint32_t kPinningSession = 5;

codec::NewLimit LimitAt(std::uint64_t client_order_id, std::int64_t price) {
  return codec::NewLimit{.account_id = 1,
                         .client_order_id = client_order_id,
                         .instrument_id = 2,
                         .side = codec::Side::kBuy,
                         .time_in_force = codec::TimeInForce::kGoodTillCancel,
                         .price = price,
                         .quantity = 10};
}

codec::Kind PinnedKindOf(const Bytes& frame) {
  return codec::LoadLE<codec::Kind>(frame.data() + codec::kKindOffset);
}

ServiceOptions WithMaxPrice(const std::string& journal, std::int64_t max_price,
                            bool reconfigure = false) {
  ServiceOptions options =
      TestOptions(journal, journal::Durability::kBatch, ServiceConfig{});
  options.config.engine.max_price = max_price;
  options.reconfigure = reconfigure;
  return options;
}

// Sends `limit` as command `sequence` of kPinningSession and returns its
// reports.
std::vector<Bytes> Submit(const ServiceOptions& options, std::uint64_t sequence,
                          const codec::NewLimit& limit) {
  auto service = RunningService::Start(options);
  EXPECT_NE(service, nullptr);
  if (service == nullptr) return {};
  TestClient client(service->endpoint());
  client.Send(kPinningSession, {Frame(sequence, limit)});
  std::vector<Bytes> reports = client.Frames(kPinningSession, 1);
  EXPECT_TRUE(service->Stop().ok());
  return reports;
}

// Every session's reports from replaying the journal as `orderwire replay`
// does, knowing nothing of the configuration it was written with (segments
// that pin none would get the defaults).
std::map<std::uint32_t, std::vector<Bytes>> ReplayBySession(
    const std::string& directory) {
  std::map<std::uint32_t, std::vector<Bytes>> out;
  auto reader = journal::JournalReader::Open(directory);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return out;
  StateMachine machine(StateMachineOptions{});
  std::size_t seen = 0;
  journal::Record record;
  journal::ReadResult result;
  while ((result = (*reader)->Next(record)) == journal::ReadResult::kRecord) {
    const absl::Status followed =
        FollowSegments(**reader, seen, PinnedConfig{}, machine);
    EXPECT_TRUE(followed.ok()) << followed;
    const absl::Status applied = machine.Apply(Record::FromJournal(record));
    EXPECT_TRUE(applied.ok()) << applied;
    for (const Output& o : machine.outputs()) {
      out[o.session_id].emplace_back(o.frame.begin(), o.frame.end());
    }
  }
  EXPECT_EQ(result, journal::ReadResult::kEnd) << (*reader)->status();
  return out;
}

std::size_t PinnedSegmentCount(const std::string& directory) {
  auto reader = journal::JournalReader::Open(directory);
  return reader.ok() ? (*reader)->segment_count() : 0;
}

TEST(ConfigPinning, ARestartWithADifferentConfigurationIsRefusedNamingIt) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  ASSERT_EQ(
      PinnedKindOf(Submit(WithMaxPrice(journal, 1000), 1, LimitAt(1, 500))[0]),
      codec::Kind::kAccepted);
  ServiceOptions different = WithMaxPrice(journal, 5000);
  different.config.max_sessions = 8;
  const absl::StatusOr<std::unique_ptr<Service>> refused =
      Service::Start(different);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("max_price: 1000 -> 5000; max_sessions: 1024 -> 8"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--reconfigure"));
  EXPECT_THAT(refused.status().message(), HasSubstr("from index 2"));
  EXPECT_EQ(PinnedSegmentCount(journal), 1u);  // nothing was journaled
  // The same configuration starts.
  EXPECT_TRUE(Service::Start(WithMaxPrice(journal, 1000)).ok());
}

TEST(ConfigPinning, ReconfigureChangesTheLimitsAtTheNextIndexForReplayToo) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  std::vector<Bytes> live;
  // Under max_price 1000 a price of 2000 is rejected ...
  for (const Bytes& r :
       Submit(WithMaxPrice(journal, 1000), 1, LimitAt(1, 2000)))
    live.push_back(r);
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(PinnedKindOf(live[0]), codec::Kind::kRejected);
  // ... and after --reconfigure to 5000 accepted.
  for (const Bytes& r :
       Submit(WithMaxPrice(journal, 5000, /*reconfigure=*/true), 2,
              LimitAt(2, 2000)))
    live.push_back(r);
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(PinnedKindOf(live[1]), codec::Kind::kAccepted);
  EXPECT_EQ(PinnedSegmentCount(journal), 2u);

  // Replay with no configuration given reproduces both, byte for byte.
  const auto replayed = ReplayBySession(journal);
  ASSERT_EQ(replayed.count(kPinningSession), 1u);
  ASSERT_EQ(replayed.at(kPinningSession).size(), live.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    EXPECT_EQ(Hex(replayed.at(kPinningSession)[i]), Hex(live[i]));
  }

  // A restart with the new configuration replays across the change without
  // a word; the old one is now the different one.
  {
    auto service = RunningService::Start(WithMaxPrice(journal, 5000));
    ASSERT_NE(service, nullptr);
    EXPECT_EQ(service->service().state().engine().live_orders(), 1u);
    EXPECT_THAT(service->service().startup_report(),
                HasSubstr("reconfigured from index 2"));
    TestClient client(service->endpoint());
    // A retransmission of command 1 gets its reports and those after it
    // again, from the history the replay rebuilt across the change: the
    // Rejected and the Accepted, as sent live.
    client.Send(kPinningSession, {Frame(1, LimitAt(1, 2000))});
    const std::vector<Bytes> resent = client.Frames(kPinningSession, 2);
    ASSERT_EQ(resent.size(), 2u);
    EXPECT_EQ(Hex(resent[0]), Hex(live[0]));
    EXPECT_EQ(Hex(resent[1]), Hex(live[1]));
    ASSERT_TRUE(service->Stop().ok());
  }
  const auto old_again = Service::Start(WithMaxPrice(journal, 1000));
  ASSERT_FALSE(old_again.ok());
  EXPECT_THAT(old_again.status().message(),
              HasSubstr("max_price: 5000 -> 1000"));
}

TEST(ConfigPinning, AReconfigurationTheStateCannotTakeChangesNothing) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  ServiceOptions options = WithMaxPrice(journal, 1000);
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  client.Send(kPinningSession,
              {Frame(1, LimitAt(1, 500)), Frame(2, LimitAt(2, 501))});
  ASSERT_EQ(client.Frames(kPinningSession, 2).size(), 2u);
  ASSERT_TRUE(service->Stop().ok());
  options.config.engine.max_live_orders = 1;  // two orders rest
  options.reconfigure = true;
  const auto refused = Service::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("max_live_orders 1 is below the 2 orders live"));
  EXPECT_EQ(PinnedSegmentCount(journal), 1u);
}

// A replicated primary's new configuration would be pinned in its own
// journal only (the stream carries records, not configurations): refused
// before anything is opened, the journal untouched.
TEST(ConfigPinning, AReplicatedServiceRefusesToReconfigure) {
  // A start hook that is never called (no NATS here: the service knows of
  // replication only through service/replication_gate.h).
  class NeverStarted final : public ReplicationStarter {
   public:
    absl::StatusOr<StartedReplication> Start(
        const ReplicationStartContext&) const override {
      ADD_FAILURE() << "the start hook was called";
      return absl::InternalError("not here");
    }
  };
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  ServiceOptions options = WithMaxPrice(journal, 1000);
  options.reconfigure = true;
  options.replication = std::make_shared<NeverStarted>();
  const auto refused = Service::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("the journal stream does not carry configurations"));
  EXPECT_FALSE(std::filesystem::exists(journal));
  options.reconfigure = false;  // the refusal is for the flag, not the mode
  options.replication = nullptr;
  auto service = RunningService::Start(options);
  EXPECT_NE(service, nullptr);
}

TEST(ConfigPinning, AJournalThatPinsNothingGetsTheGivenConfigurationPinned) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  {
    // As `orderwire journal write` (or an older orderwire) writes it.
    journal::WriterOptions o;
    o.directory = journal;
    o.durability = journal::Durability::kNone;
    o.segment_size = std::uint64_t{1} << 20;
    auto writer = journal::JournalWriter::Open(o);
    ASSERT_TRUE(writer.ok()) << writer.status();
    const Bytes frame = Frame(1, LimitAt(1, 2000));
    ASSERT_EQ((*writer)->Append(frame, kPinningSession, 1),
              journal::AppendStatus::kOk);
    ASSERT_TRUE((*writer)->Close().ok());
  }
  ServiceOptions options = WithMaxPrice(journal, 5000);
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  EXPECT_THAT(service->service().startup_report(),
              HasSubstr("pinned no configuration: the one given is pinned "
                        "from index 2"));
  // Applied with the configuration given: 2000 was within 5000.
  EXPECT_EQ(service->service().state().engine().live_orders(), 1u);
  ASSERT_TRUE(service->Stop().ok());
  auto reader = journal::JournalReader::Open(journal);
  ASSERT_TRUE(reader.ok());
  journal::Record r;
  while ((*reader)->Next(r) == journal::ReadResult::kRecord) {
  }
  ASSERT_EQ((*reader)->segments().size(), 2u);
  EXPECT_TRUE((*reader)->segments()[0].metadata.empty());
  EXPECT_EQ((*reader)->segments()[1].metadata,
            EncodePinnedConfig(PinnedConfigOf(options.config)));
}

TEST(ConfigPinning, ADamagedConfigurationInTheJournalIsRefused) {
  ScratchDir dir;
  const std::string journal = dir.Sub("journal");
  Submit(WithMaxPrice(journal, 1000), 1, LimitAt(1, 500));
  const std::string segment = journal + "/" + journal::SegmentFileName(1);
  Bytes bytes = test_support::ReadFile(segment);
  // "max_price = 1000" -> "max_price = 9000": the checksum no longer holds.
  const std::string text(reinterpret_cast<const char*>(bytes.data()),
                         journal::kBlockSize);
  const std::size_t at = text.find("max_price = 1000");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 12] = std::byte{'9'};
  test_support::WriteFile(segment, bytes);
  const auto refused = Service::Start(WithMaxPrice(journal, 1000));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(refused.status().message(), HasSubstr(segment));
  EXPECT_THAT(refused.status().message(), HasSubstr("metadata checksum"));
}

}  // namespace
}  // namespace orderwire::service
