// The pinned configuration's canonical text (round trip, strict decoding,
// differences) and StateMachine::Reconfigure.
#include "state/pinned_config.h"

#include <string>

#include "codec/command.h"
#include "codec/frame.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "state/state_machine.h"

namespace orderwire::state {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PinnedConfigTest, TheDefaultsEncodeToTheDocumentedText) {
  EXPECT_EQ(EncodePinnedConfig(PinnedConfig{}),
            "orderwire pinned configuration 1\n"
            "min_instrument = 1\n"
            "max_instrument = 1024\n"
            "min_price = 1\n"
            "max_price = 1000000000\n"
            "min_quantity = 1\n"
            "max_quantity = 1000000000\n"
            "max_live_orders = 1048576\n"
            "max_sessions = 1024\n");
}

TEST(PinnedConfigTest, RoundTripsEveryKey) {
  PinnedConfig config;
  config.engine.min_instrument = 3;
  config.engine.max_instrument = 70;
  config.engine.min_price = -500;
  config.engine.max_price = 9000;
  config.engine.min_quantity = 2;
  config.engine.max_quantity = 300;
  config.engine.max_live_orders = 4096;
  config.max_sessions = 17;
  absl::StatusOr<PinnedConfig> back =
      DecodePinnedConfig(EncodePinnedConfig(config));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == config);
  EXPECT_EQ(EncodePinnedConfig(*back), EncodePinnedConfig(config));
}

TEST(PinnedConfigTest, OnlyTheCanonicalTextDecodes) {
  const std::string good = EncodePinnedConfig(PinnedConfig{});
  ASSERT_TRUE(DecodePinnedConfig(good).ok());
  struct Case {
    std::string text;
    absl::StatusCode code;
    std::string says;
  };
  std::string missing = good;
  missing.erase(missing.find("max_sessions"));
  std::string spaced = good;
  spaced.replace(spaced.find("min_price = 1"), 13, "min_price =  1");
  std::string reordered = good;
  reordered.replace(reordered.find("min_instrument = 1\nmax_instrument = 1024"),
                    40, "max_instrument = 1024\nmin_instrument = 1");
  const Case cases[] = {
      {"", absl::StatusCode::kDataLoss, "first line"},
      {"orderwire pinned configuration 2\n", absl::StatusCode::kUnimplemented,
       "version '2'"},
      {missing, absl::StatusCode::kDataLoss, "max_sessions missing"},
      {good + "extra = 1\n", absl::StatusCode::kDataLoss, "unknown key"},
      {good + "\n", absl::StatusCode::kDataLoss, "canonical"},
      {spaced, absl::StatusCode::kDataLoss, "canonical"},
      {reordered, absl::StatusCode::kDataLoss, "canonical"},
      {good.substr(0, good.size() - 5) + "0\n", absl::StatusCode::kDataLoss,
       "max_sessions"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const absl::StatusOr<PinnedConfig> decoded = DecodePinnedConfig(c.text);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.status().code(), c.code) << decoded.status();
    EXPECT_THAT(decoded.status().message(), HasSubstr(c.says));
  }
}

TEST(PinnedConfigTest, DifferencesNameEachKeyFromAndTo) {
  PinnedConfig from;
  PinnedConfig to = from;
  EXPECT_TRUE(PinnedConfigDifferences(from, to).empty());
  to.engine.max_price = 5000;
  to.max_sessions = 8;
  EXPECT_THAT(
      PinnedConfigDifferences(from, to),
      ElementsAre("max_price: 1000000000 -> 5000", "max_sessions: 1024 -> 8"));
  EXPECT_EQ(DescribeDifferences(from, to),
            "max_price: 1000000000 -> 5000; max_sessions: 1024 -> 8");
}

TEST(PinnedConfigTest, ASegmentWithoutMetadataTakesTheUnpinnedConfiguration) {
  journal::SegmentInfo segment;
  segment.path = "/j/00000000000000000001.owj";
  PinnedConfig unpinned;
  unpinned.max_sessions = 3;
  absl::StatusOr<PinnedConfig> config = SegmentConfig(segment, unpinned);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->max_sessions, 3u);
  segment.metadata = "not a configuration";
  config = SegmentConfig(segment, unpinned);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(config.status().message(), HasSubstr(segment.path));
}

TEST(StateMachineReconfigureTest,
     MaxSessionsIsTheCapNotARefusalOfSessionsSeen) {
  StateMachineOptions options;
  options.engine.max_live_orders = 1024;
  options.max_sessions = 4;
  StateMachine machine(options);
  // Two sessions appear.
  for (std::uint32_t session : {7u, 8u}) {
    std::byte frame[codec::kMaxFrameSize];
    const auto size = codec::EncodeCommand(
        codec::Command::From(
            1, codec::CancelByOrder{.account_id = 1, .order_id = 99}),
        frame);
    ASSERT_TRUE(size.ok());
    ASSERT_TRUE(machine
                    .Apply(Record{.index = machine.last_index() + 1,
                                  .receive_ns = 0,
                                  .session_id = session,
                                  .flags = 0,
                                  .frame = {frame, *size}})
                    .ok());
  }
  // 0 is no cap at all: refused, nothing changed.
  const absl::Status refused = machine.Reconfigure(options.engine, 0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(machine.options().max_sessions, 4u);
  // Below the sessions seen (listed sessions are outside the cap): taken,
  // and the sessions stay.
  ASSERT_TRUE(machine.Reconfigure(options.engine, 1).ok());
  EXPECT_EQ(machine.options().max_sessions, 1u);
  EXPECT_EQ(machine.session_count(), 2u);
  engine::EngineConfig engine = options.engine;
  engine.max_price = 77;
  ASSERT_TRUE(machine.Reconfigure(engine, 100).ok());
  EXPECT_EQ(machine.engine().config().max_price, 77);
  EXPECT_EQ(PinnedConfigOf(machine).max_sessions, 100u);
}

}  // namespace
}  // namespace orderwire::state
