// client::Session's hot loop allocates nothing once it is open: Submit
// (taken and refused with the window full), Poll sending, receiving,
// acknowledging and delivering reports, on the segmented path where the
// kernel has it and on plain sendmmsg, keyed and not. A fake service on the
// same thread answers each command with Accepted (counting is process-wide,
// so nothing else may run meanwhile). tests/support/counting_new.h counts:
// its own binary.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "auth/mac.h"
#include "base/clock.h"
#include "client/session.h"
#include "codec/command.h"
#include "codec/datagram.h"
#include "codec/messages.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "tests/support/counting_new.h"

namespace orderwire::client {
namespace {

struct Case {
  net::SendPath send;
  bool keyed;
};

class SessionAllocations : public ::testing::TestWithParam<Case> {};

TEST_P(SessionAllocations, SubmitAndPollAllocateNothing) {
  const auto key = auth::ParseKeyHex(
      "8f2e4c1a9b7d6e5f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071");
  ASSERT_TRUE(key.ok());
  const auth::Mac mac(*key);
  auto fake = net::UdpSocket::Bind(*net::Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(fake.ok());
  constexpr std::uint32_t kSession = 3;
  std::uint64_t reports = 0;
  SessionOptions options;
  options.target = *fake->LocalEndpoint();
  options.session_id = kSession;
  options.window = 4;
  options.send = GetParam().send;
  if (GetParam().keyed) options.mac = mac;
  options.on_report = [&reports](const codec::FrameView&) { ++reports; };
  auto session = Session::Open(std::move(options));
  ASSERT_TRUE(session.ok()) << session.status();
  Session& s = **session;
  net::DatagramBatch rx(64);
  net::DatagramBatch tx(1);
  std::uint64_t report_sequence = 0;
  std::uint64_t window_full = 0;

  test_support::StartCountingAllocations();
  for (std::uint64_t round = 0; round < 50; ++round) {
    // Five commands a round into a window of four: one is refused.
    for (std::uint64_t i = 0; i < 5; ++i) {
      const absl::StatusOr<std::uint64_t> taken = s.Submit(
          codec::NewLimit{.account_id = 1,
                          .client_order_id = round * 5 + i,
                          .instrument_id = 1,
                          .side = codec::Side::kBuy,
                          .time_in_force = codec::TimeInForce::kGoodTillCancel,
                          .price = 100,
                          .quantity = 1});
      if (!taken.ok()) ++window_full;
    }
    (void)s.Poll(base::MonotonicNs());
    (void)fake->WaitReadable(100);
    // The fake service: Accepted for every command received.
    const int n = fake->Receive(rx, 64);
    for (int d = 0; d < n; ++d) {
      const auto k = static_cast<std::size_t>(d);
      const auto datagram = codec::DatagramView::Parse(
          rx.datagram(k), codec::FrameFilter::kCommands);
      ASSERT_TRUE(datagram.ok());
      codec::DatagramBuilder builder(tx.buffer(0), kSession, GetParam().keyed);
      for (const codec::FrameView frame : *datagram) {
        codec::Command command;
        ASSERT_TRUE(codec::DecodeCommand(frame.bytes(), command).ok());
        ++report_sequence;
        ASSERT_EQ(builder.Append(
                      report_sequence,
                      codec::Accepted{
                          .order_id = report_sequence,
                          .account_id = command.account_id.value(),
                          .client_order_id = command.client_order_id.value(),
                          .instrument_id = command.instrument_id.value(),
                          .side = command.side,
                          .time_in_force = command.time_in_force,
                          .price = command.price.value(),
                          .quantity = command.quantity.value()}),
                  codec::CodecError::kOk);
      }
      tx.set_length(0, GetParam().keyed
                           ? auth::SealDatagram(mac, builder).size()
                           : builder.size());
      tx.set_peer(0, rx.peer(k));
      ASSERT_EQ(fake->SendRange(tx, 0, 1), 1);
    }
    (void)s.Poll(base::MonotonicNs());
  }
  const std::size_t allocations = test_support::StopCountingAllocations();
  EXPECT_EQ(allocations, 0u)
      << "segmented " << s.segmented() << ", gro " << s.gro();
  // The loop did what it claims: commands acknowledged, reports delivered,
  // Submits refused on a full window.
  EXPECT_GT(s.counters().acknowledged, 50u);
  EXPECT_EQ(reports, s.counters().reports);
  EXPECT_GT(window_full, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, SessionAllocations,
    ::testing::Values(Case{net::SendPath::kAuto, false},
                      Case{net::SendPath::kSendmmsg, false},
                      Case{net::SendPath::kSendmmsg, true}));

}  // namespace
}  // namespace orderwire::client
