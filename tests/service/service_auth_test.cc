// End to end over loopback: keyed sessions (docs/PROTOCOL.md "Authenticated
// datagrams"). After a restart of the service, an impostor without the key
// that speaks first for a keyed session is refused, and the real client on
// a new port continues and trades; missing, bad and unexpected MACs are
// dropped, counted by cause and never answered; a replayed datagram moves
// nothing; every report to a keyed session carries a valid MAC; the
// go-back-N client signs, checks, and explains a silence.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "auth/mac.h"
#include "client/run_client.h"
#include "codec/datagram.h"
#include "codec/messages.h"
#include "config/service_config.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/service.h"
#include "service/session_table.h"
#include "tests/support/bytes.h"
#include "tests/support/files.h"
#include "tests/support/orders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using config::ParseServiceConfig;
using config::ServiceConfig;

using codec::Side;
using test_support::Bytes;
using test_support::Frame;
using test_support::Hex;
using test_support::Limit;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestClient;
using test_support::TestOptions;

constexpr std::string_view kKeyHex =
    "8f2e4c1a9b7d6e5f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071";
constexpr std::uint32_t kKeyed = 7;
constexpr std::uint32_t kUnkeyed = 8;

// Session 7 keyed, session 8 not; the key file in `dir`.
ServiceConfig KeyedConfig(const ScratchDir& dir) {
  const std::string key = dir.Sub("session-7.key");
  test_support::WriteText(key, std::string(kKeyHex) + "\n");
  ::chmod(key.c_str(), 0600);
  absl::StatusOr<ServiceConfig> config = ParseServiceConfig(
      "[sessions.7]\n"
      "accounts = \"any\"\n"
      "key_file = \"" +
      key +
      "\"\n"
      "[sessions.8]\n"
      "accounts = \"any\"\n");
  EXPECT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->warnings.empty());
  return *config;
}

auth::Mac TheMac() { return auth::Mac(*auth::ParseKeyHex(kKeyHex)); }

// A datagram of `session` holding `frames`: signed with `mac`, or with the
// flag and a zero trailer when `forge`, or plain.
Bytes Build(std::uint32_t session, const std::vector<Bytes>& frames,
            const auth::Mac* mac, bool forge = false) {
  Bytes buffer(codec::kMaxDatagramSize);
  codec::DatagramBuilder builder(buffer, session, mac != nullptr || forge);
  for (const Bytes& frame : frames) {
    EXPECT_EQ(builder.AppendFrame(frame), codec::CodecError::kOk);
  }
  std::span<const std::byte> bytes = builder.bytes();
  if (mac != nullptr) {
    bytes = auth::SealDatagram(*mac, builder);
  } else if (forge) {
    const auth::Tag zero{};
    bytes = builder.Seal(zero);
  }
  return Bytes(bytes.begin(), bytes.end());
}

// Receives report datagrams of `session` until `count` frames have come;
// each must carry the flag and a MAC that verifies under `mac`.
std::vector<Bytes> SignedFrames(TestClient& client, std::uint32_t session,
                                std::size_t count, const auth::Mac& mac) {
  std::vector<Bytes> frames;
  while (frames.size() < count) {
    const std::optional<Bytes> datagram = client.Receive(5000);
    if (!datagram.has_value()) {
      ADD_FAILURE() << "timed out with " << frames.size() << " of " << count;
      break;
    }
    EXPECT_LE(datagram->size(), codec::kMaxDatagramSize);
    const auto view =
        codec::DatagramView::Parse(*datagram, codec::FrameFilter::kReports);
    if (!view.ok()) {
      ADD_FAILURE() << "malformed report datagram " << Hex(*datagram);
      break;
    }
    EXPECT_EQ(view->session_id(), session);
    EXPECT_TRUE(view->authenticated()) << Hex(*datagram);
    EXPECT_TRUE(auth::VerifyDatagram(mac, *view))
        << "report datagram without a valid MAC: " << Hex(*datagram);
    for (const codec::FrameView frame : *view) {
      frames.emplace_back(frame.bytes().begin(), frame.bytes().end());
    }
  }
  return frames;
}

std::uint64_t AuthRefused(const ServiceStats& stats, Admission cause) {
  return stats.refused[static_cast<std::size_t>(cause)];
}

// A service on `journal` takes keyed session kKeyed's `datagram` (its
// command 1, signed): Accepted, signed; then it stops.
void JournalAKeyedCommand(const std::string& journal,
                          const ServiceConfig& config, const Bytes& datagram) {
  const auth::Mac mac = TheMac();
  auto service = RunningService::Start(
      TestOptions(journal, journal::Durability::kBatch, config));
  ASSERT_NE(service, nullptr);
  TestClient client(service->endpoint());
  client.Send(datagram);
  const std::vector<Bytes> reports = SignedFrames(client, kKeyed, 1, mac);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(codec::LoadLE<codec::Kind>(reports[0].data() + 8),
            codec::Kind::kAccepted);
  ASSERT_TRUE(service->Stop().ok());
}

TEST(ServiceAuthTest, AfterARestartAnImpostorIsRefusedAndTheClientMovesPorts) {
  ScratchDir dir;
  const ServiceConfig config = KeyedConfig(dir);
  const auth::Mac mac = TheMac();
  const codec::NewLimit first = Limit({.client_order_id = 1,
                                       .instrument_id = 3,
                                       .side = Side::kSell,
                                       .quantity = 10});
  ASSERT_NO_FATAL_FAILURE(JournalAKeyedCommand(
      dir.Sub("journal"), config, Build(kKeyed, {Frame(1, first)}, &mac)));
  // Restart: session 7 is recovered from the journal, pinned to nobody.
  auto service = RunningService::Start(
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch, config));
  ASSERT_NE(service, nullptr);
  // An impostor without the key speaks first: its new command, plain or
  // with a forged trailer, is dropped and never answered.
  TestClient impostor(service->endpoint());
  const codec::NewLimit stolen =
      Limit({.client_order_id = 2, .instrument_id = 3, .quantity = 10});
  impostor.Send(Build(kKeyed, {Frame(2, stolen)}, nullptr));
  impostor.Send(Build(kKeyed, {Frame(2, stolen)}, nullptr, /*forge=*/true));
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.datagrams_in >= 2; }));
  EXPECT_TRUE(impostor.Silent(50));

  // The real client, restarted on a new port, continues with its next
  // command: admitted, and it trades (session 8 takes the other side).
  TestClient client(service->endpoint());
  const codec::NewLimit second = Limit({.client_order_id = 2,
                                        .instrument_id = 3,
                                        .side = Side::kSell,
                                        .price = 101,
                                        .quantity = 10});
  const Bytes second_datagram = Build(kKeyed, {Frame(2, second)}, &mac);
  client.Send(second_datagram);
  std::vector<Bytes> reports = SignedFrames(client, kKeyed, 1, mac);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(
      Hex(reports[0]),
      Hex(Frame(2, codec::Accepted{
                       .order_id = 2,
                       .account_id = 1,
                       .client_order_id = 2,
                       .instrument_id = 3,
                       .side = Side::kSell,
                       .time_in_force = codec::TimeInForce::kGoodTillCancel,
                       .price = 101,
                       .quantity = 10})));
  TestClient buyer(service->endpoint());
  buyer.Send(kUnkeyed, {Frame(1, Limit({.account_id = 2,
                                        .client_order_id = 1,
                                        .instrument_id = 3,
                                        .quantity = 10}))});
  // Accepted for the buyer; the keyed maker gets its Filled, signed.
  reports = SignedFrames(client, kKeyed, 1, mac);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(codec::LoadLE<codec::Kind>(reports[0].data() + 8),
            codec::Kind::kFilled);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(reports[0].data()), 3u);
  // The unkeyed session's reports carry no MAC.
  const std::optional<Bytes> plain = buyer.Receive(5000);
  ASSERT_TRUE(plain.has_value());
  const auto plain_view = codec::DatagramView::Parse(*plain);
  ASSERT_TRUE(plain_view.ok());
  EXPECT_FALSE(plain_view->authenticated());

  // The impostor replays the client's datagram, valid MAC and all, from its
  // own port: a duplicate that moves nothing; it hears nothing.
  impostor.Send(second_datagram);
  // The flag on the unkeyed session, even from its own endpoint: refused.
  buyer.Send(Build(kUnkeyed,
                   {Frame(2, Limit({.account_id = 2,
                                    .client_order_id = 2,
                                    .instrument_id = 3,
                                    .price = 99,
                                    .quantity = 10}))},
                   &mac));
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.datagrams_in >= 6; }));
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_TRUE(impostor.Silent(0));
  EXPECT_TRUE(client.Silent(0));
  EXPECT_TRUE(buyer.Silent(0));
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(AuthRefused(stats, Admission::kMissingMac), 1u);
  EXPECT_EQ(AuthRefused(stats, Admission::kBadMac), 1u);
  EXPECT_EQ(AuthRefused(stats, Admission::kPinnedElsewhere), 1u);
  EXPECT_EQ(AuthRefused(stats, Admission::kUnexpectedMac), 1u);
  EXPECT_EQ(stats.commands_applied, 3u);  // 1 replayed + 2 new
  EXPECT_EQ(stats.replayed, 1u);
}

TEST(ServiceAuthTest, AKeyedClientMovesToANewPortWithItsNextCommand) {
  ScratchDir dir;
  const auth::Mac mac = TheMac();
  auto service = RunningService::Start(TestOptions(
      dir.Sub("journal"), journal::Durability::kNone, KeyedConfig(dir)));
  ASSERT_NE(service, nullptr);
  TestClient before(service->endpoint());
  before.Send(Build(kKeyed,
                    {Frame(1, Limit({.client_order_id = 1,
                                     .instrument_id = 3,
                                     .price = 10,
                                     .quantity = 10}))},
                    &mac));
  ASSERT_EQ(SignedFrames(before, kKeyed, 1, mac).size(), 1u);
  // The client crashes and comes back on a new port, without a restart of
  // the service: its next command moves the session.
  TestClient after(service->endpoint());
  after.Send(Build(kKeyed,
                   {Frame(2, Limit({.client_order_id = 2,
                                    .instrument_id = 3,
                                    .price = 11,
                                    .quantity = 10}))},
                   &mac));
  const std::vector<Bytes> reports = SignedFrames(after, kKeyed, 1, mac);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(codec::LoadLE<std::uint64_t>(reports[0].data()), 2u);
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_TRUE(before.Silent(0));
  EXPECT_EQ(service->final_stats().sessions_moved, 1u);
}

TEST(ServiceAuthTest, TheClientSignsChecksAndFillsFullDatagramsBothWays) {
  ScratchDir dir;
  auto service = RunningService::Start(TestOptions(
      dir.Sub("journal"), journal::Durability::kBatch, KeyedConfig(dir)));
  ASSERT_NE(service, nullptr);
  const std::vector<std::byte> frames = workload::EncodeCommands(
      workload::Generate(workload::Workload::kMixed, 5000, 3));
  client::ClientOptions options;
  options.target = service->endpoint();
  options.session_id = kKeyed;
  options.mac.emplace(*auth::ParseKeyHex(kKeyHex));
  const std::atomic<bool> stop{false};
  const absl::StatusOr<client::ClientResult> result =
      client::RunClient(options, frames, stop);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->acknowledged, 5000u);
  EXPECT_EQ(result->bad_mac_datagrams, 0u);
  EXPECT_EQ(result->bad_datagrams, 0u);
  ASSERT_TRUE(service->Stop().ok());
  const ServiceStats& stats = service->final_stats();
  EXPECT_EQ(stats.commands_applied, 5000u);
  std::uint64_t refused = 0;
  for (std::uint64_t r : stats.refused) refused += r;
  EXPECT_EQ(refused, 0u);
}

TEST(ServiceAuthTest, AClientWithoutTheKeyIsRefusedAndExplainsTheSilence) {
  ScratchDir dir;
  auto service = RunningService::Start(TestOptions(
      dir.Sub("journal"), journal::Durability::kNone, KeyedConfig(dir)));
  ASSERT_NE(service, nullptr);
  const std::vector<std::byte> frames = workload::EncodeCommands(
      workload::Generate(workload::Workload::kMixed, 10, 3));
  client::ClientOptions options;
  options.target = service->endpoint();
  options.session_id = kKeyed;
  options.give_up_ms = 600;
  options.explain_after_ms = 200;
  std::FILE* diagnostics = std::tmpfile();
  ASSERT_NE(diagnostics, nullptr);
  options.diagnostics = diagnostics;
  const std::atomic<bool> stop{false};
  const absl::StatusOr<client::ClientResult> result =
      client::RunClient(options, frames, stop);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(result.status().message().find("MissingMac: give --key-file"),
            std::string::npos)
      << result.status();
  std::rewind(diagnostics);
  std::string written(4096, '\0');
  written.resize(std::fread(written.data(), 1, written.size(), diagnostics));
  std::fclose(diagnostics);
  for (const char* cause :
       {"not running", "UnknownSession", "TooManySessions", "AddressNotAllowed",
        "PinnedElsewhere", "MissingMac"}) {
    EXPECT_NE(written.find(cause), std::string::npos) << cause << "\n"
                                                      << written;
  }
  ASSERT_TRUE(service->Stop().ok());
  EXPECT_GE(AuthRefused(service->final_stats(), Admission::kMissingMac), 1u);
  EXPECT_EQ(service->final_stats().datagrams_out, 0u);
}

TEST(ServiceAuthTest, RefusalsAreLoggedAtMostOncePerCausePerSecond) {
  ScratchDir dir;
  ServiceOptions options = TestOptions(
      dir.Sub("journal"), journal::Durability::kNone, KeyedConfig(dir));
  std::FILE* log = std::tmpfile();
  ASSERT_NE(log, nullptr);
  options.refusal_log = log;
  auto service = RunningService::Start(std::move(options));
  ASSERT_NE(service, nullptr);
  TestClient impostor(service->endpoint());
  for (int i = 0; i < 20; ++i) {
    impostor.Send(Build(kKeyed,
                        {Frame(1, Limit({.client_order_id = 1,
                                         .instrument_id = 3,
                                         .price = 10,
                                         .quantity = 10}))},
                        nullptr, /*forge=*/true));
  }
  impostor.Send(kKeyed, {Frame(1, Limit({.client_order_id = 1,
                                         .instrument_id = 3,
                                         .price = 10,
                                         .quantity = 10}))});
  ASSERT_TRUE(service->WaitFor(
      [](const ServiceStats& s) { return s.datagrams_in >= 21; }));
  ASSERT_TRUE(service->Stop().ok());
  std::rewind(log);
  std::string written(8192, '\0');
  written.resize(std::fread(written.data(), 1, written.size(), log));
  std::fclose(log);
  // One BadMac line (19 suppressed, not yet reported), one MissingMac line.
  std::size_t lines = 0;
  for (char c : written) lines += c == '\n' ? 1 : 0;
  EXPECT_EQ(lines, 2u) << written;
  EXPECT_NE(written.find("session 7 from 127.0.0.1:"), std::string::npos)
      << written;
  EXPECT_NE(written.find("BadMac, the MAC does not verify"), std::string::npos)
      << written;
  EXPECT_NE(written.find("MissingMac"), std::string::npos) << written;
  EXPECT_EQ(AuthRefused(service->final_stats(), Admission::kBadMac), 20u);
}

// A scripted service: answers the client's first datagram with the
// Accepted of its command sealed with another key (the client must drop it
// and count it), then with the same Accepted unsigned (dropped, counted),
// then correctly sealed (acknowledged).
TEST(ServiceAuthTest, TheClientDropsReportsWithAWrongOrMissingMac) {
  absl::StatusOr<net::UdpSocket> server =
      net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(server.ok()) << server.status();
  const codec::NewLimit order = Limit(
      {.client_order_id = 1, .instrument_id = 3, .price = 10, .quantity = 10});
  const Bytes command = Frame(1, order);
  const auth::Mac mac = TheMac();
  client::ClientOptions options;
  options.target = *server->LocalEndpoint();
  options.session_id = kKeyed;
  options.mac.emplace(*auth::ParseKeyHex(kKeyHex));
  options.retransmit_timeout_ms = 20;
  options.give_up_ms = 5000;
  options.quiet_ms = 50;
  const std::atomic<bool> stop{false};
  absl::StatusOr<client::ClientResult> result;
  std::thread client(
      [&] { result = client::RunClient(options, command, stop); });

  net::DatagramBatch rx(4);
  net::DatagramBatch tx(1);
  ASSERT_TRUE(server->WaitReadable(5000));
  ASSERT_GT(server->Receive(rx, 4), 0);
  // The client signed what it sent.
  const auto sent = codec::DatagramView::Parse(rx.datagram(0));
  ASSERT_TRUE(sent.ok());
  EXPECT_TRUE(auth::VerifyDatagram(mac, *sent));
  const Bytes accepted = Frame(
      1, codec::Accepted{.order_id = 1,
                         .account_id = 1,
                         .client_order_id = 1,
                         .instrument_id = 3,
                         .side = Side::kBuy,
                         .time_in_force = codec::TimeInForce::kGoodTillCancel,
                         .price = 10,
                         .quantity = 10});
  const auth::Mac other(*auth::ParseKeyHex(std::string(64, '7')));
  const auto reply = [&](const Bytes& datagram) {
    std::memcpy(tx.buffer(0).data(), datagram.data(), datagram.size());
    tx.set_length(0, datagram.size());
    tx.set_peer(0, rx.peer(0));
    ASSERT_EQ(server->Send(tx, 1), 1);
  };
  reply(Build(kKeyed, {accepted}, &other));
  reply(Build(kKeyed, {accepted}, nullptr));
  reply(Build(kKeyed, {accepted}, &mac));
  client.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->acknowledged, 1u);
  EXPECT_EQ(result->bad_mac_datagrams, 2u);
  EXPECT_EQ(result->reports, 1u);
}

}  // namespace
}  // namespace orderwire::service
