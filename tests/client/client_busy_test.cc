// The go-back-N client on Busy (docs/PROTOCOL.md "Busy"): a fake service
// answers every datagram with Busy(expected_sequence 1, JournalFull), at
// most once per 2 ms as the service does. The client must count the Busy,
// keep the cause, not give up (Busy shows the service alive), and back off:
// 1 ms doubling to 50 ms between rounds, so over 400 ms it sends a few
// rounds, not one per Busy (about 200 without the back-off).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "client/run_client.h"
#include "codec/datagram.h"
#include "codec/frame.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "net/udp.h"

namespace orderwire::client {
namespace {

using net::DatagramBatch;
using net::Endpoint;
using net::UdpSocket;

TEST(ClientBusy, BacksOffAndRetransmitsWithoutGivingUp) {
  auto fake = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(fake.ok()) << fake.status();
  constexpr std::uint32_t kSession = 5;
  // Ten commands: one datagram per round.
  std::vector<std::byte> frames;
  for (std::uint64_t seq = 1; seq <= 10; ++seq) {
    std::byte frame[codec::kFrameSize<codec::CancelByOrder>];
    ASSERT_TRUE(
        codec::EncodeFrame(
            seq, codec::CancelByOrder{.account_id = 1, .order_id = seq}, frame)
            .ok());
    frames.insert(frames.end(), std::begin(frame), std::end(frame));
  }
  ClientOptions options;
  options.target = *fake->LocalEndpoint();
  options.session_id = kSession;
  options.window = 16;
  options.retransmit_timeout_ms = 100;
  options.give_up_ms = 200;  // shorter than the test: Busy must count as life
  std::atomic<bool> stop{false};
  absl::StatusOr<ClientResult> result = absl::UnknownError("not run");
  std::thread client([&] { result = RunClient(options, frames, stop); });

  // The fake service: Busy for every datagram, at most one per 2 ms.
  DatagramBatch rx(64);
  DatagramBatch tx(1);
  std::uint64_t datagrams = 0;
  std::uint64_t busy_sent = 0;
  const auto start = std::chrono::steady_clock::now();
  auto last_busy = start - std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() - start <
         std::chrono::milliseconds(400)) {
    if (!fake->WaitReadable(5)) continue;
    const int n = fake->Receive(rx, 64);
    for (int i = 0; i < n; ++i) {
      ++datagrams;
      const auto now = std::chrono::steady_clock::now();
      if (now - last_busy < std::chrono::milliseconds(2)) continue;
      last_busy = now;
      codec::DatagramBuilder builder(tx.buffer(0), kSession);
      ASSERT_EQ(builder.Append(
                    0, codec::Busy{.expected_sequence = 1,
                                   .cause = codec::BusyCause::kJournalFull}),
                codec::CodecError::kOk);
      tx.set_length(0, builder.size());
      tx.set_peer(0, rx.peer(static_cast<std::size_t>(i)));
      ASSERT_EQ(fake->SendRange(tx, 0, 1), 1);
      ++busy_sent;
    }
  }
  stop.store(true);
  client.join();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->acknowledged, 0u);
  EXPECT_GE(result->busy, 5u);
  // Every Busy counts, except that the client may stop (stop above) before
  // it reads the one sent last.
  EXPECT_LE(result->busy, busy_sent);
  EXPECT_GE(result->busy + 1, busy_sent);
  EXPECT_EQ(result->busy_cause,
            static_cast<std::uint8_t>(codec::BusyCause::kJournalFull));
  // 1 + 2 + 4 + 8 + 16 + 32 ms, then 50 ms each: about 14 rounds in 400 ms.
  EXPECT_LE(datagrams, 30u) << busy_sent << " Busy sent";
  // Every datagram sent was received, except one the client may send
  // between the fake's last read and `stop`.
  EXPECT_GE(result->datagrams_sent, datagrams);
  EXPECT_LE(result->datagrams_sent, datagrams + 1);
}

}  // namespace
}  // namespace orderwire::client
