// The UDP transport (net/udp.h): endpoints, and batches of datagrams sent
// and received over loopback with sendmmsg/recvmmsg.
#include "net/udp.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "codec/datagram.h"
#include "gtest/gtest.h"

namespace orderwire::net {
namespace {

TEST(Endpoint, ParsesIpv4Ipv6AndNames) {
  const auto v4 = Endpoint::Parse("127.0.0.1:7400");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->port(), 7400);
  EXPECT_EQ(v4->family(), AF_INET);
  EXPECT_EQ(v4->ToString(), "127.0.0.1:7400");
  const auto v6 = Endpoint::Parse("[::1]:9");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->family(), AF_INET6);
  EXPECT_EQ(v6->port(), 9);
  EXPECT_TRUE(*Endpoint::Parse("127.0.0.1:1") ==
              *Endpoint::Parse("127.0.0.1:1"));
  EXPECT_FALSE(*Endpoint::Parse("127.0.0.1:1") ==
               *Endpoint::Parse("127.0.0.1:2"));
}

TEST(Endpoint, SaysItsAddressAndWhetherItIsAMulticastGroup) {
  EXPECT_EQ(Endpoint::Parse("127.0.0.1:7400")->Address(), "127.0.0.1");
  EXPECT_EQ(Endpoint::Parse("[::1]:9")->Address(), "::1");
  EXPECT_EQ(Endpoint::Parse("[::1]:9")->ToString(), "[::1]:9");
  EXPECT_EQ(Endpoint{}.Address(), "?");
  for (const char* group :
       {"224.0.0.1:1", "239.1.2.3:5000", "239.255.255.255:1", "[ff02::1]:1",
        "[ff0e::1234]:9"}) {
    EXPECT_TRUE(Endpoint::Parse(group)->IsMulticast()) << group;
  }
  for (const char* unicast : {"127.0.0.1:1", "223.255.255.255:1", "240.0.0.1:1",
                              "[::1]:1", "[fe80::1]:1"}) {
    EXPECT_FALSE(Endpoint::Parse(unicast)->IsMulticast()) << unicast;
  }
  EXPECT_FALSE(Endpoint{}.IsMulticast());
}

TEST(Endpoint, RejectsWhatIsNotHostPort) {
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999",
                          "127.0.0.1:x", "[::1:7400"}) {
    EXPECT_FALSE(Endpoint::Parse(bad).ok()) << "'" << bad << "'";
  }
}

TEST(UdpSocket, SendsAndReceivesABatchOverLoopback) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto b = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  const Endpoint to = *b->LocalEndpoint();
  const Endpoint from = *a->LocalEndpoint();

  constexpr std::size_t kCount = 8;
  DatagramBatch tx(kCount);
  for (std::size_t i = 0; i < kCount; ++i) {
    const std::span<std::byte> buffer = tx.buffer(i);
    ASSERT_EQ(buffer.size(), codec::kMaxDatagramSize);
    std::memset(buffer.data(), static_cast<int>(i + 1), 10 + i);
    tx.set_length(i, 10 + i);
    tx.set_peer(i, to);
  }
  ASSERT_EQ(a->Send(tx, kCount), static_cast<int>(kCount));

  DatagramBatch rx(kCount);
  std::size_t received = 0;
  while (received < kCount) {
    ASSERT_TRUE(b->WaitReadable(1000)) << "only " << received << " arrived";
    const int n = b->Receive(rx, kCount);
    ASSERT_GT(n, 0);
    for (int k = 0; k < n; ++k, ++received) {
      const auto slot = static_cast<std::size_t>(k);
      ASSERT_EQ(rx.datagram(slot).size(), 10 + received);
      EXPECT_EQ(rx.datagram(slot)[0], static_cast<std::byte>(received + 1));
      EXPECT_FALSE(rx.truncated(slot));
      EXPECT_TRUE(rx.peer(slot) == from);
    }
  }
  // Nothing more: a non-blocking receive says so.
  EXPECT_EQ(b->Receive(rx, kCount), -EAGAIN);
}

TEST(UdpSocket, MarksADatagramLongerThanTheProtocolAllowsAsTruncated) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto b = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok() && b.ok());
  const Endpoint to = *b->LocalEndpoint();
  std::byte big[codec::kMaxDatagramSize + 100] = {};
  ASSERT_EQ(sendto(a->fd(), big, sizeof(big), 0, to.addr(), to.length),
            static_cast<ssize_t>(sizeof(big)));
  DatagramBatch rx(1);
  ASSERT_TRUE(b->WaitReadable(1000));
  ASSERT_EQ(b->Receive(rx, 1), 1);
  EXPECT_TRUE(rx.truncated(0));
}

// What a receiver got: each datagram's bytes, in arrival order.
std::vector<std::vector<std::byte>> ReceiveAll(UdpSocket& socket,
                                               std::size_t count) {
  std::vector<std::vector<std::byte>> got;
  DatagramBatch rx(64);
  while (got.size() < count) {
    if (!socket.WaitReadable(1000)) break;
    const int n = socket.Receive(rx, 64);
    for (int k = 0; k < n; ++k) {
      const auto d = rx.datagram(static_cast<std::size_t>(k));
      EXPECT_FALSE(rx.truncated(static_cast<std::size_t>(k)));
      got.emplace_back(d.begin(), d.end());
    }
  }
  return got;
}

// Fills slot i with `length` bytes that name it (i, then the offset).
void FillSlot(DatagramBatch& batch, std::size_t i, std::size_t length,
              const Endpoint& peer) {
  const std::span<std::byte> buffer = batch.buffer(i);
  for (std::size_t k = 0; k < length; ++k) {
    buffer[k] = static_cast<std::byte>(k == 0 ? i : (i * 7 + k) & 0xff);
  }
  batch.set_length(i, length);
  batch.set_peer(i, peer);
}

TEST(UdpSocket, SegmentedSendsDeliverTheSameDatagramsAsSendmmsg) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto b = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto c = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  std::string why;
  if (!a->SupportsSegmentation(&why)) GTEST_SKIP() << why;
  const Endpoint to_b = *b->LocalEndpoint();
  const Endpoint to_c = *c->LocalEndpoint();
  // Slots 0-7 to b, 8-9 to c. The order interleaves them; the runs are
  // b0-b3 (the shorter b3 ends it), c8-c9, b4 (b5 is longer than the run's
  // size: it starts the next), b5-b7 (b7 shorter): 4 sends.
  const std::size_t lengths[] = {100, 100, 100, 60, 200, 250, 250, 100, 50, 50};
  DatagramBatch tx(10);
  for (std::size_t i = 0; i < 10; ++i) {
    FillSlot(tx, i, lengths[i], i < 8 ? to_b : to_c);
  }
  const std::uint32_t order[] = {0, 1, 2, 3, 8, 9, 4, 5, 6, 7};
  std::size_t messages = 0;
  ASSERT_EQ(a->SendSegmented(tx, order, &messages), 10);
  EXPECT_EQ(messages, 4u);

  const auto at_b = ReceiveAll(*b, 8);
  const auto at_c = ReceiveAll(*c, 2);
  ASSERT_EQ(at_b.size(), 8u);
  ASSERT_EQ(at_c.size(), 2u);
  for (std::size_t i = 0; i < 10; ++i) {
    const std::vector<std::byte>& got = i < 8 ? at_b[i] : at_c[i - 8];
    const std::span<const std::byte> sent = tx.datagram(i);
    EXPECT_EQ(got.size(), sent.size()) << "datagram " << i;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), sent.begin(), sent.end()))
        << "datagram " << i;
  }
  DatagramBatch rest(1);
  EXPECT_EQ(b->Receive(rest, 1), -EAGAIN) << "more than was sent";
}

TEST(UdpSocket, ASegmentedSendStaysWithinTheKernelsLimits) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto b = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok() && b.ok());
  std::string why;
  if (!a->SupportsSegmentation(&why)) GTEST_SKIP() << why;
  const Endpoint to = *b->LocalEndpoint();
  // 70 small datagrams: 64 segments in the first send, 6 in the second.
  // 50 full ones: 44 x 1472 bytes fit in 65507, so 44 + 6.
  for (const auto& [count, length, sends] :
       {std::tuple<std::size_t, std::size_t, std::size_t>{70, 20, 2},
        {50, codec::kMaxDatagramSize, 2}}) {
    DatagramBatch tx(count);
    std::vector<std::uint32_t> order(count);
    for (std::size_t i = 0; i < count; ++i) {
      FillSlot(tx, i, length, to);
      order[i] = static_cast<std::uint32_t>(i);
    }
    std::size_t messages = 0;
    ASSERT_EQ(a->SendSegmented(tx, order, &messages), static_cast<int>(count));
    EXPECT_EQ(messages, sends) << count << " datagrams of " << length;
    const auto got = ReceiveAll(*b, count);
    ASSERT_EQ(got.size(), count);
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(got[i].size(), length);
      EXPECT_EQ(got[i][0], static_cast<std::byte>(i)) << "out of order";
    }
  }
}

TEST(UdpSocket, AGroSocketGetsARunJoinedAndSplitsItIntoTheSentDatagrams) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  auto b = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok() && b.ok());
  std::string why;
  if (!a->SupportsSegmentation(&why)) GTEST_SKIP() << why;
  if (!b->EnableGro(&why)) GTEST_SKIP() << why;
  const Endpoint to = *b->LocalEndpoint();
  // A run of 5 x 1442 + 700, then a datagram of 90 alone.
  DatagramBatch tx(7);
  const std::size_t lengths[] = {1442, 1442, 1442, 1442, 1442, 700, 90};
  std::vector<std::uint32_t> order;
  for (std::size_t i = 0; i < 7; ++i) {
    FillSlot(tx, i, lengths[i], to);
    order.push_back(static_cast<std::uint32_t>(i));
  }
  std::size_t messages = 0;
  ASSERT_EQ(a->SendSegmented(tx, order, &messages), 7);
  EXPECT_EQ(messages, 2u);

  DatagramBatch rx(4, DatagramBatch::Coalesced::kYes);
  std::vector<std::span<const std::byte>> datagrams(64);
  std::size_t count = 0;
  std::size_t joined = 0;
  while (count < 7 && b->WaitReadable(1000)) {
    const int n = b->Receive(rx, 4);
    ASSERT_GT(n, 0);
    for (int k = 0; k < n; ++k) {
      const auto slot = static_cast<std::size_t>(k);
      EXPECT_FALSE(rx.truncated(slot));
      if (rx.segment_size(slot) != 0) ++joined;
      count = rx.SplitDatagrams(slot, datagrams, count);
    }
  }
  ASSERT_EQ(count, 7u);
  EXPECT_GE(joined, 1u) << "the kernel joined nothing: GRO not exercised";
  for (std::size_t i = 0; i < 7; ++i) {
    const std::span<const std::byte> sent = tx.datagram(i);
    ASSERT_EQ(datagrams[i].size(), sent.size()) << "datagram " << i;
    EXPECT_TRUE(std::equal(sent.begin(), sent.end(), datagrams[i].begin()))
        << "datagram " << i;
  }
}

TEST(DatagramBatch, SplitsAJoinedSlotAtItsSegmentSizeAndStopsWhenFull) {
  // Without a kernel: a plain slot is one datagram; SplitDatagrams never
  // writes past the room it is given.
  DatagramBatch batch(1);
  FillSlot(batch, 0, 100, *Endpoint::Parse("127.0.0.1:9"));
  EXPECT_EQ(batch.segment_size(0), 0u);
  std::vector<std::span<const std::byte>> out(2);
  EXPECT_EQ(batch.SplitDatagrams(0, out, 0), 1u);
  EXPECT_EQ(out[0].size(), 100u);
  EXPECT_EQ(batch.SplitDatagrams(0, out, 2), 2u) << "wrote past the room";
}

// The seams: a kernel without UDP_SEGMENT, a path that cannot segment.
int NoSegmentOption(int /*fd*/, int /*level*/, int /*name*/, void* /*value*/,
                    socklen_t* /*length*/) {
  errno = ENOPROTOOPT;
  return -1;
}
int SendFailsWithEio(int /*fd*/, mmsghdr* /*messages*/, unsigned /*count*/,
                     int /*flags*/) {
  errno = EIO;
  return -1;
}

TEST(UdpSocket, SaysWhenTheKernelCannotSegment) {
  auto a = UdpSocket::Bind(*Endpoint::Parse("127.0.0.1:0"));
  ASSERT_TRUE(a.ok());
  const SocketCalls no_gso{.sendmmsg = &SendFailsWithEio,
                           .getsockopt = &NoSegmentOption};
  a->set_calls_for_testing(&no_gso);
  std::string why;
  EXPECT_FALSE(a->SupportsSegmentation(&why));
  EXPECT_NE(why.find("UDP_SEGMENT"), std::string::npos) << why;
  DatagramBatch tx(2);
  FillSlot(tx, 0, 10, *a->LocalEndpoint());
  FillSlot(tx, 1, 10, *a->LocalEndpoint());
  const std::uint32_t order[] = {0, 1};
  EXPECT_EQ(a->SendSegmented(tx, order), -EIO);
}

}  // namespace
}  // namespace orderwire::net
