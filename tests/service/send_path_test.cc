// The two ways the service sends reports (ServiceOptions::send, `serve
// --send`): one sendmmsg entry per datagram, or each session's datagrams in
// UDP_SEGMENT runs. What a client receives must be the same on both, bytes
// and datagram boundaries; a kernel without UDP_SEGMENT and a segmented
// send the kernel refuses fall back to sendmmsg, counted, losing nothing.
// docs/SERVICE.md "Sending reports" is the behaviour under test.
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "client/run_client.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "engine/workload.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/service.h"
#include "tests/support/bytes.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/service_harness.h"

namespace orderwire::service {
namespace {

using test_support::Bytes;
using test_support::Hex;
using test_support::RunningService;
using test_support::ScratchDir;
using test_support::TestClient;
using test_support::TestOptions;

constexpr std::uint32_t kSendPathSession = 7;

// 600 resting buys (600 Accepted reports of one size: full datagrams of
// equal length, the runs a segmented send takes whole), then 400 `mixed`
// commands (fills, cancels, rejects: datagrams of every length), as command
// datagrams of at most 25 frames.
struct SendStream {
  std::vector<Bytes> datagrams;
  std::size_t commands = 0;
};

SendStream MakeStream() {
  std::vector<codec::Command> commands;
  for (std::uint64_t i = 0; i < 600; ++i) {
    codec::Command c{};
    c.sequence = i + 1;
    c.kind = codec::Kind::kNewLimit;
    c.account_id = codec::AccountId{1};
    c.client_order_id = codec::ClientOrderId{100'000 + i};
    c.instrument_id = codec::InstrumentId{1};
    c.side = codec::Side::kBuy;
    c.time_in_force = codec::TimeInForce::kGoodTillCancel;
    c.price = codec::Price{static_cast<std::int64_t>(1000 - i)};
    c.quantity = codec::Quantity{1};
    commands.push_back(c);
  }
  for (codec::Command c :
       workload::Generate(workload::Workload::kMixed, 400, 5)) {
    c.sequence += 600;
    commands.push_back(c);
  }
  const std::vector<std::byte> frames = workload::EncodeCommands(commands);
  SendStream stream;
  stream.commands = commands.size();
  std::vector<Bytes> batch;
  for (std::size_t pos = 0; pos < frames.size();) {
    const std::size_t size =
        codec::Info(static_cast<codec::Kind>(std::to_integer<std::uint8_t>(
                        frames[pos + codec::kKindOffset])))
            .frame_size;
    batch.emplace_back(
        frames.begin() + static_cast<std::ptrdiff_t>(pos),
        frames.begin() + static_cast<std::ptrdiff_t>(pos + size));
    pos += size;
    if (batch.size() == 25 || pos == frames.size()) {
      stream.datagrams.push_back(
          test_support::Datagram(kSendPathSession, batch));
      batch.clear();
    }
  }
  return stream;
}

// What one client saw of one service: the report frames of the live run
// (their datagram boundaries depend on when groups became durable), and the
// datagrams of the resend of every report that a retransmission of the
// first command datagram asks for (their boundaries depend only on the
// service: the same reports, packed the same way).
struct Capture {
  std::vector<Bytes> live_frames;
  std::vector<Bytes> resent_datagrams;
  ServiceStats stats;
  std::string startup_report;
};

Capture Serve(SendPath path, const net::SocketCalls* calls,
              const SendStream& stream) {
  Capture capture;
  ScratchDir dir;
  ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch);
  options.send = path;
  options.socket_calls_for_testing = calls;
  auto service = RunningService::Start(options);
  if (service == nullptr) {
    ADD_FAILURE() << "the service did not start";
    return capture;
  }
  capture.startup_report = service->service().startup_report();
  TestClient client(service->endpoint());
  for (const Bytes& datagram : stream.datagrams) client.Send(datagram);
  EXPECT_TRUE(service->WaitFor(
      [&](const ServiceStats& s) {
        return s.commands_applied == stream.commands;
      },
      20'000))
      << "not every command was applied";
  capture.live_frames = client.Drain(kSendPathSession, 300);
  client.Send(stream.datagrams.front());
  while (std::optional<Bytes> datagram = client.Receive(300)) {
    capture.resent_datagrams.push_back(*datagram);
  }
  EXPECT_TRUE(service->Stop().ok());
  capture.stats = service->final_stats();
  return capture;
}

std::vector<Bytes> FramesOf(const std::vector<Bytes>& datagrams) {
  std::vector<Bytes> frames;
  for (const Bytes& d : datagrams) {
    TestClient::AppendFrames(kSendPathSession, d, frames);
  }
  return frames;
}

void ExpectSameDatagrams(const std::vector<Bytes>& expected,
                         const std::vector<Bytes>& got) {
  ASSERT_EQ(got.size(), expected.size()) << "a different number of datagrams";
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(got[i].size(), expected[i].size()) << "datagram " << i;
    EXPECT_EQ(Hex(got[i]), Hex(expected[i])) << "datagram " << i;
  }
}

bool Segmentation() {
  auto socket = net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  return socket.ok() && socket->SupportsSegmentation();
}

TEST(SendPath, ClientsReceiveTheSameDatagramsOnBothPaths) {
  if (!Segmentation()) GTEST_SKIP() << "this kernel has no UDP_SEGMENT";
  const SendStream stream = MakeStream();
  const Capture each = Serve(SendPath::kSendmmsg, nullptr, stream);
  const Capture runs = Serve(SendPath::kSegmented, nullptr, stream);

  EXPECT_NE(each.startup_report.find("send path: sendmmsg (--send sendmmsg)"),
            std::string::npos)
      << each.startup_report;
  EXPECT_NE(runs.startup_report.find("send path: gso"), std::string::npos)
      << runs.startup_report;
  EXPECT_FALSE(each.stats.send_segmented);
  EXPECT_EQ(each.stats.segmented_sends, 0u);
  EXPECT_TRUE(runs.stats.send_segmented);
  EXPECT_EQ(runs.stats.gso_fallbacks, 0u);
  // Runs were taken whole: fewer sends than datagrams.
  EXPECT_GT(runs.stats.segmented_datagrams, runs.stats.segmented_sends);
  EXPECT_EQ(runs.stats.segmented_datagrams, runs.stats.datagrams_out);

  // Live: the same report frames, in the same order.
  ASSERT_FALSE(each.live_frames.empty());
  ASSERT_EQ(runs.live_frames.size(), each.live_frames.size());
  for (std::size_t i = 0; i < each.live_frames.size(); ++i) {
    ASSERT_EQ(Hex(runs.live_frames[i]), Hex(each.live_frames[i]))
        << "report frame " << i;
  }
  // The resend: every report again, datagram for datagram, byte for byte.
  ExpectSameDatagrams(each.resent_datagrams, runs.resent_datagrams);
  const std::vector<Bytes> resent = FramesOf(runs.resent_datagrams);
  ASSERT_EQ(resent.size(), runs.live_frames.size());
  for (std::size_t i = 0; i < resent.size(); ++i) {
    ASSERT_EQ(Hex(resent[i]), Hex(runs.live_frames[i])) << "frame " << i;
  }
  // The resend held full datagrams of equal length (the 600 Accepted) and
  // datagrams of other lengths (the mixed part).
  std::size_t equal_neighbours = 0;
  std::size_t different_neighbours = 0;
  for (std::size_t i = 1; i < runs.resent_datagrams.size(); ++i) {
    (runs.resent_datagrams[i].size() == runs.resent_datagrams[i - 1].size()
         ? equal_neighbours
         : different_neighbours)++;
  }
  EXPECT_GT(equal_neighbours, 10u);
  EXPECT_GT(different_neighbours, 5u);
}

// A segmented send refused with EIO (the path cannot segment), as the
// kernel does without checksum offload towards the peer: the first entry
// with a UDP_SEGMENT control message fails, the entries before it go out.
std::atomic<int> segmented_refusals{0};
int RefuseSegmentedSends(int fd, mmsghdr* messages, unsigned count, int flags) {
  unsigned plain = 0;
  while (plain < count && messages[plain].msg_hdr.msg_controllen == 0) ++plain;
  if (plain == count) return ::sendmmsg(fd, messages, count, flags);
  if (plain > 0) return ::sendmmsg(fd, messages, plain, flags);
  ++segmented_refusals;
  errno = EIO;
  return -1;
}

TEST(SendPath, ASegmentedSendRefusedWithEioFallsBackToSendmmsgLosingNothing) {
  if (!Segmentation()) GTEST_SKIP() << "this kernel has no UDP_SEGMENT";
  const SendStream stream = MakeStream();
  const Capture each = Serve(SendPath::kSendmmsg, nullptr, stream);
  segmented_refusals = 0;
  const net::SocketCalls refusing{.sendmmsg = &RefuseSegmentedSends};
  const Capture fell_back = Serve(SendPath::kSegmented, &refusing, stream);

  EXPECT_EQ(segmented_refusals.load(), 1) << "it kept trying to segment";
  EXPECT_EQ(fell_back.stats.gso_fallbacks, 1u);
  EXPECT_FALSE(fell_back.stats.send_segmented);
  EXPECT_EQ(fell_back.stats.send_failures, 0u);
  ASSERT_EQ(fell_back.live_frames.size(), each.live_frames.size());
  for (std::size_t i = 0; i < each.live_frames.size(); ++i) {
    ASSERT_EQ(Hex(fell_back.live_frames[i]), Hex(each.live_frames[i]))
        << "report frame " << i;
  }
  ExpectSameDatagrams(each.resent_datagrams, fell_back.resent_datagrams);
}

// `count` resting buys of one session, encoded: one report each, all
// Accepted (runs of full datagrams of one length).
std::vector<std::byte> RestingBuys(std::size_t count) {
  std::vector<codec::Command> commands;
  for (std::uint64_t i = 0; i < count; ++i) {
    codec::Command c{};
    c.sequence = i + 1;
    c.kind = codec::Kind::kNewLimit;
    c.account_id = codec::AccountId{2};
    c.client_order_id = codec::ClientOrderId{i + 1};
    c.instrument_id = codec::InstrumentId{2};
    c.side = codec::Side::kBuy;
    c.time_in_force = codec::TimeInForce::kGoodTillCancel;
    c.price = codec::Price{static_cast<std::int64_t>(10'000 - i)};
    c.quantity = codec::Quantity{1};
    commands.push_back(c);
  }
  return workload::EncodeCommands(commands);
}

// `orderwire submit`'s client against a service on `path`, sending with
// `client_path` (and `calls`); its result.
absl::StatusOr<client::ClientResult> Submit(
    SendPath path, SendPath client_path, const net::SocketCalls* calls,
    const std::vector<std::byte>& frames) {
  ScratchDir dir;
  ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch);
  options.send = path;
  auto service = RunningService::Start(options);
  if (service == nullptr) return absl::InternalError("no service");
  client::ClientOptions client;
  client.target = service->endpoint();
  client.session_id = 9;
  client.window = 4096;
  client.send = client_path;
  client.socket_calls_for_testing = calls;
  std::atomic<bool> stop{false};
  absl::StatusOr<client::ClientResult> result =
      client::RunClient(client, frames, stop);
  EXPECT_TRUE(service->Stop().ok());
  return result;
}

TEST(SendPath, TheClientSplitsWhatUdpGroJoinedAndGetsTheSameReports) {
  if (!Segmentation()) GTEST_SKIP() << "this kernel has no UDP_SEGMENT";
  const std::vector<std::byte> frames = RestingBuys(3000);
  const absl::StatusOr<client::ClientResult> plain =
      Submit(SendPath::kSendmmsg, SendPath::kSendmmsg, nullptr, frames);
  const absl::StatusOr<client::ClientResult> joined =
      Submit(SendPath::kSegmented, SendPath::kSegmented, nullptr, frames);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(joined.ok()) << joined.status();
  EXPECT_FALSE(plain->segmented);
  EXPECT_FALSE(plain->gro);
  EXPECT_TRUE(joined->segmented);
  EXPECT_TRUE(joined->gro);
  EXPECT_GT(joined->coalesced_receives, 0u) << "no run came joined";
  EXPECT_EQ(joined->acknowledged, 3000u);
  EXPECT_EQ(joined->reports, plain->reports);
  EXPECT_EQ(joined->report_hash, plain->report_hash);
  EXPECT_EQ(joined->bad_datagrams, 0u);
  EXPECT_EQ(joined->out_of_order_reports, 0u);
}

TEST(SendPath, TheClientFallsBackToSendmmsgWhenASegmentedSendGetsEio) {
  if (!Segmentation()) GTEST_SKIP() << "this kernel has no UDP_SEGMENT";
  const std::vector<std::byte> frames = RestingBuys(3000);
  segmented_refusals = 0;
  const net::SocketCalls refusing{.sendmmsg = &RefuseSegmentedSends};
  const absl::StatusOr<client::ClientResult> result =
      Submit(SendPath::kSegmented, SendPath::kSegmented, &refusing, frames);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(segmented_refusals.load(), 1);
  EXPECT_EQ(result->gso_fallbacks, 1u);
  EXPECT_FALSE(result->segmented);
  EXPECT_EQ(result->acknowledged, 3000u);
}

int NoUdpSegment(int /*fd*/, int /*level*/, int /*name*/, void* /*value*/,
                 socklen_t* /*length*/) {
  errno = ENOPROTOOPT;
  return -1;
}

TEST(SendPath, AKernelWithoutUdpSegmentGetsSendmmsgOrARefusalWhenGsoIsAsked) {
  const net::SocketCalls old_kernel{.getsockopt = &NoUdpSegment};
  const SendStream stream = MakeStream();
  const Capture auto_path = Serve(SendPath::kAuto, &old_kernel, stream);
  EXPECT_NE(auto_path.startup_report.find(
                "send path: sendmmsg (auto: no UDP_SEGMENT"),
            std::string::npos)
      << auto_path.startup_report;
  EXPECT_FALSE(auto_path.stats.send_segmented);
  EXPECT_EQ(auto_path.stats.gso_fallbacks, 1u);
  EXPECT_EQ(auto_path.stats.segmented_sends, 0u);
  EXPECT_EQ(auto_path.stats.commands_applied, stream.commands);
  EXPECT_FALSE(auto_path.resent_datagrams.empty());

  ScratchDir dir;
  ServiceOptions options =
      TestOptions(dir.Sub("journal"), journal::Durability::kBatch);
  options.send = SendPath::kSegmented;
  options.socket_calls_for_testing = &old_kernel;
  const absl::StatusOr<std::unique_ptr<Service>> refused =
      Service::Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("--send gso"), std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("UDP_SEGMENT"), std::string::npos)
      << refused.status();
}

}  // namespace
}  // namespace orderwire::service
