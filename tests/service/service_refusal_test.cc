// End-to-end tests of the UDP service over loopback (service_test.cc says
// how): what it refuses. Malformed datagrams are counted by cause, never
// answered, never applied; a command for an account its session may not
// trade is rejected Unauthorized (and journaled so); sessions not listed,
// from an address not allowed or pinned to another port are dropped
// silently (docs/PROTOCOL.md "Admission"); options that cannot work are
// refused at start. The helpers are in service_test_support.h.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/datagram.h"
#include "codec/error.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "codec/wire.h"
#include "config/service_config.h"
#include "engine/config.h"
#include "gtest/gtest.h"
#include "service/sequencer.h"
#include "service/service.h"
#include "service/session_table.h"
#include "state/record_flags.h"
#include "tests/service/service_test_support.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service::end_to_end {
namespace {

// ---------------------------------------------------------------------------
// Malformed datagrams: counted by cause, never answered, never applied.

// A datagram of `session` for each cause of malformed datagram, from the
// valid datagram of one frame of `order` (sequence 1): the cause, the bytes.
// Two truncated ones; the last is the oversize one.
std::vector<std::pair<CodecError, Bytes>> MalformedDatagrams(
    std::uint32_t session, const codec::NewLimit& order) {
  const Bytes command = Frame(1, order);
  const Bytes valid = Datagram(session, {command});
  const auto with = [&](std::size_t offset, std::uint8_t value) {
    Bytes d = valid;
    d[offset] = std::byte{value};
    return d;
  };
  const auto header_with_count = [&](std::uint16_t count) {
    Bytes d(valid.begin(), valid.begin() + codec::kDatagramHeaderSize);
    codec::StoreLE<std::uint16_t>(
        d.data() +
            codec::DatagramOffsetOf<&codec::DatagramHeader::frame_count>(),
        count);
    return d;
  };

  std::vector<std::pair<CodecError, Bytes>> cases;
  cases.emplace_back(CodecError::kBadMagic, with(0, 'X'));
  cases.emplace_back(CodecError::kBadVersion, with(2, 2));
  cases.emplace_back(CodecError::kBadFlags, with(3, 0x80));
  cases.emplace_back(CodecError::kBadReserved, with(11, 1));
  cases.emplace_back(CodecError::kZeroFrameCount, header_with_count(0));
  {
    Bytes d = header_with_count(2);  // two announced, one present
    d.insert(d.end(), command.begin(), command.end());
    cases.emplace_back(CodecError::kCountMismatch, d);
  }
  {
    Bytes d = valid;
    d.push_back(std::byte{0});
    cases.emplace_back(CodecError::kTrailingBytes, d);
  }
  // Truncated: a frame cut short, and a datagram shorter than its header.
  cases.emplace_back(CodecError::kTruncated,
                     Bytes(valid.begin(), valid.end() - 5));
  cases.emplace_back(CodecError::kTruncated,
                     Bytes(valid.begin(), valid.begin() + 7));
  cases.emplace_back(
      CodecError::kUnknownKind,
      with(codec::kDatagramHeaderSize + codec::kKindOffset, 0x0A));
  cases.emplace_back(CodecError::kNotACommand,
                     Datagram(session, {AcceptedFor(1, 1, order)}));
  {
    // 32 NewLimit frames: 1516 bytes, more than the 1472-byte buffer, so the
    // kernel truncates it and says so.
    Bytes d = header_with_count(32);
    for (std::uint64_t i = 1; i <= 32; ++i) {
      const Bytes f = Frame(i, order);
      d.insert(d.end(), f.begin(), f.end());
    }
    cases.emplace_back(CodecError::kOversize, d);
  }
  return cases;
}

TEST(ServiceEndToEnd, EveryMalformedDatagramIsCountedByCauseAndNotAnswered) {
  ScratchDir dir;
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone));
  ASSERT_NE(service, nullptr);
  TestClient bad(service->endpoint());
  constexpr std::uint32_t kSession = 21;
  const codec::NewLimit order = Limit({.account_id = 4,
                                       .client_order_id = 9,
                                       .instrument_id = 2,
                                       .price = 77,
                                       .quantity = 5});
  const Bytes command = Frame(1, order);
  const Bytes valid = Datagram(kSession, {command});
  const std::vector<std::pair<CodecError, Bytes>> cases =
      MalformedDatagrams(kSession, order);
  // The last: more than the 1472-byte buffer.
  ASSERT_GT(cases.back().second.size(), codec::kMaxDatagramSize);
  // Each really is malformed for that cause.
  for (const auto& [error, bytes] : cases) {
    if (error == CodecError::kOversize) continue;
    EXPECT_EQ(codec::DatagramView::Parse(bytes, codec::FrameFilter::kCommands)
                  .error(),
              error)
        << codec::Name(error);
  }
  for (const auto& [error, bytes] : cases) bad.Send(bytes);

  // The service keeps serving: a valid order, from another socket (a
  // malformed datagram pins nothing), is Accepted as report 1 with order
  // id 1: nothing of the malformed ones was applied.
  TestClient good(service->endpoint());
  good.Send(valid);
  const std::vector<Bytes> reports = good.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, order));
  // Nothing was answered: anything sent to `bad` would already be there.
  EXPECT_TRUE(bad.Silent(0));
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_TRUE(bad.Silent(0));
  EXPECT_TRUE(good.Silent(0));

  const ServiceStats& stats = service->final_stats();
  std::array<std::uint64_t, codec::kCodecErrorCount> expected{};
  for (const auto& [error, bytes] : cases) {
    ++expected[static_cast<std::size_t>(error)];
  }
  for (int e = 0; e < codec::kCodecErrorCount; ++e) {
    const auto error = static_cast<CodecError>(e);
    EXPECT_EQ(Malformed(stats, error), expected[static_cast<std::size_t>(e)])
        << codec::Name(error);
  }
  EXPECT_EQ(Malformed(stats, CodecError::kTruncated), 2u);
  EXPECT_EQ(stats.truncated_by_kernel, 1u);
  EXPECT_EQ(stats.datagrams_in, cases.size() + 1);
  EXPECT_EQ(stats.datagrams_out, 1u);
  EXPECT_EQ(stats.commands_applied, 1u);
  EXPECT_EQ(stats.sessions, 1u);
  EXPECT_EQ(Sum(stats.refused), 0u);
  EXPECT_EQ(stats.duplicates, 0u);
  EXPECT_EQ(stats.gaps, 0u);
  ExpectJournalHolds(ReplayJournal(dir.Sub("journal"), engine::EngineConfig{}),
                     kSession, {command});
}

// ---------------------------------------------------------------------------
// Authorization, admission and pinning.

TEST(ServiceEndToEnd, ACommandForAnotherAccountIsRejectedUnauthorized) {
  ScratchDir dir;
  absl::StatusOr<ServiceConfig> config =
      ParseServiceConfig("[sessions.7]\naccounts = [\"7-8\"]\n");
  ASSERT_TRUE(config.ok()) << config.status();
  const ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch, *config);
  const engine::EngineConfig engine_config = options.config.engine;
  auto service = RunningService::Start(options);
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  constexpr std::uint32_t kSession = 7;

  const codec::NewLimit own = Limit({.account_id = 7,
                                     .client_order_id = 1,
                                     .instrument_id = 42,
                                     .quantity = 10});
  const codec::NewLimit foreign = Limit({.account_id = 9,
                                         .client_order_id = 2,
                                         .instrument_id = 42,
                                         .quantity = 10});
  const codec::NewLimit also_own = Limit({.account_id = 8,
                                          .client_order_id = 3,
                                          .instrument_id = 42,
                                          .side = Side::kSell,
                                          .price = 200,
                                          .quantity = 10});
  const std::vector<Bytes> commands = {
      Frame(1, own),
      // One datagram mixing allowed and foreign accounts.
      Frame(2, foreign),
      Frame(3, also_own),
      Frame(4, codec::CancelByOrder{.account_id = 9, .order_id = 1}),
      Frame(5, codec::CancelByOrder{.account_id = 7, .order_id = 1}),
  };
  client.Send(kSession, {commands[0]});
  std::vector<Bytes> reports = client.Frames(kSession, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, own));

  client.Send(kSession, {commands[1], commands[2], commands[3], commands[4]});
  const std::vector<Bytes> more = client.Frames(kSession, 4);
  reports.insert(reports.end(), more.begin(), more.end());
  ASSERT_EQ(reports.size(), 5u);
  EXPECT_FRAME_EQ(
      reports[1],
      Frame(2, codec::Rejected{.account_id = 9,
                               .client_order_id = 2,
                               .order_id = 0,
                               .command_kind = Kind::kNewLimit,
                               .reason = codec::RejectReason::kUnauthorized}));
  EXPECT_FRAME_EQ(reports[2], AcceptedFor(3, 2, also_own));
  EXPECT_FRAME_EQ(
      reports[3],
      Frame(4, codec::Rejected{.account_id = 9,
                               .client_order_id = 0,
                               .order_id = 1,
                               .command_kind = Kind::kCancelByOrder,
                               .reason = codec::RejectReason::kUnauthorized}));
  EXPECT_EQ(KindOf(reports[4]), Kind::kCancelled);  // its own order
  ASSERT_TRUE(service->Stop().ok());

  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.rejects[11], 2u);
  EXPECT_EQ(stats.commands_applied, 5u);
  // The journal keeps the service's decision, and replaying it reproduces
  // the very reports the client received.
  const Replay replay = ReplayJournal(dir.Sub("journal"), engine_config);
  ExpectJournalHolds(replay, kSession, commands);
  ASSERT_EQ(replay.records.size(), 5u);
  EXPECT_EQ(replay.records[0].flags, 0u);
  EXPECT_EQ(replay.records[1].flags, kRecordUnauthorized);
  EXPECT_EQ(replay.records[2].flags, 0u);
  EXPECT_EQ(replay.records[3].flags, kRecordUnauthorized);
  EXPECT_EQ(replay.records[4].flags, 0u);
  ASSERT_EQ(replay.reports.size(), reports.size());
  for (std::size_t i = 0; i < reports.size(); ++i) {
    EXPECT_FRAME_EQ(replay.reports[i], reports[i]);
  }
}

// max_sessions bounds unlisted sessions only (docs/PROTOCOL.md
// "Admission"): here every session is listed, so a third one fits.
TEST(ServiceEndToEnd, UnlistedAndFarAwaySessionsAreRefusedSilently) {
  ScratchDir dir;
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(
      "[service]\n"
      "max_sessions = 2\n"
      "[sessions.5]\n"
      "accounts = \"any\"\n"
      "[sessions.7]\n"
      "accounts = [\"7-8\"]\n"
      "[sessions.8]\n"
      "accounts = \"any\"\n"
      "addresses = [\"10.0.0.1\"]\n"
      "[sessions.9]\n"
      "accounts = \"any\"\n");
  ASSERT_TRUE(config.ok()) << config.status();
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kNone, *config));
  ASSERT_NE(service, nullptr);
  const codec::NewLimit order =
      Limit({.account_id = 7, .client_order_id = 1, .price = 10});

  TestClient unlisted(service->endpoint());
  unlisted.Send(6, {Frame(1, order)});
  TestClient far(service->endpoint());
  far.Send(8, {Frame(1, order)});  // only 10.0.0.1 may use session 8

  TestClient first(service->endpoint());
  first.Send(5, {Frame(1, order)});
  std::vector<Bytes> reports = first.Frames(5, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 1, order));

  // Session 5 is pinned to `first`: the same session from another socket
  // (another port) is dropped, whatever it holds.
  TestClient hijacker(service->endpoint());
  const codec::NewLimit other =
      Limit({.account_id = 7, .client_order_id = 2, .price = 11});
  hijacker.Send(5, {Frame(2, other)});

  TestClient second(service->endpoint());
  const codec::NewLimit second_order =
      Limit({.account_id = 8, .client_order_id = 1, .price = 10});
  second.Send(7, {Frame(1, second_order)});
  reports = second.Frames(7, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 2, second_order));

  // max_sessions = 2, but a listed session is never refused for the cap.
  TestClient third(service->endpoint());
  third.Send(9, {Frame(1, order)});
  reports = third.Frames(9, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(1, 3, order));

  // Session 5 carries on from `first`: sequence 2 was not taken by the
  // hijacker's datagram.
  const codec::NewLimit next =
      Limit({.account_id = 7, .client_order_id = 3, .price = 12});
  first.Send(5, {Frame(2, next)});
  reports = first.Frames(5, 1);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FRAME_EQ(reports[0], AcceptedFor(2, 4, next));

  ASSERT_TRUE(service->Stop().ok());
  for (TestClient* c : {&unlisted, &far, &first, &hijacker, &second, &third}) {
    EXPECT_TRUE(c->Silent(0));
  }
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(Refused(stats, Admission::kUnknownSession), 1u);
  EXPECT_EQ(Refused(stats, Admission::kAddressNotAllowed), 1u);
  EXPECT_EQ(Refused(stats, Admission::kPinnedElsewhere), 1u);
  EXPECT_EQ(Refused(stats, Admission::kTooManySessions), 0u);
  EXPECT_EQ(Refused(stats, Admission::kOk), 0u);
  EXPECT_EQ(stats.sessions, 3u);
  EXPECT_EQ(stats.commands_applied, 4u);
  EXPECT_EQ(stats.datagrams_in, 7u);
  EXPECT_EQ(stats.datagrams_out, 4u);
  const Replay replay =
      ReplayJournal(dir.Sub("journal"), engine::EngineConfig{});
  ASSERT_EQ(replay.records.size(), 4u);
  EXPECT_EQ(replay.records[0].session_id, 5u);
  EXPECT_EQ(replay.records[1].session_id, 7u);
  EXPECT_EQ(replay.records[2].session_id, 9u);
  EXPECT_EQ(replay.records[3].session_id, 5u);
  EXPECT_FRAME_EQ(replay.records[3].frame, Frame(2, next));
}

TEST(ServiceEndToEnd, OptionsThatCannotWorkAreRefusedAtStart) {
  ScratchDir dir;
  ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kNone);
  options.max_pending = kMinPending - 1;
  const auto service = Service::Start(options);
  ASSERT_FALSE(service.ok());
  EXPECT_EQ(service.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(service.status().message().find("max_pending"), std::string::npos);
  options = TestOptions(dir.Sub("journal"), journal::Durability::kNone);
  options.report_history = 0;
  EXPECT_FALSE(Service::Start(options).ok());
}

}  // namespace
}  // namespace orderwire::service::end_to_end
