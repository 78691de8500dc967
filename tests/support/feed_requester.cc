#include "tests/support/feed_requester.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/status/statusor.h"
#include "base/clock.h"
#include "codec/wire.h"
#include "feed/builder.h"
#include "feed/messages.h"
#include "feed/packet.h"
#include "gtest/gtest.h"

namespace orderwire::test_support {

FeedRequester::FeedRequester(const net::Endpoint& server,
                             const net::Endpoint& local)
    : server_(server), rx_(64) {
  absl::StatusOr<net::UdpSocket> socket = net::UdpSocket::Bind(local);
  EXPECT_TRUE(socket.ok()) << socket.status();
  if (socket.ok()) socket_.emplace(*std::move(socket));
}

void FeedRequester::Send(std::span<const std::byte> bytes) {
  ASSERT_TRUE(socket_.has_value());
  net::DatagramBatch tx(1);
  std::copy(bytes.begin(), bytes.end(), tx.buffer(0).begin());
  tx.set_length(0, bytes.size());
  tx.set_peer(0, server_);
  ASSERT_EQ(socket_->Send(tx, 1), 1);
}

void FeedRequester::Retransmit(std::uint64_t session, std::uint64_t first,
                               std::uint16_t count, std::uint16_t token) {
  std::array<std::byte, feed::kPacketHeaderSize> out;
  const auto size =
      feed::EncodeRetransmitRequest(out, session, first, count, token);
  ASSERT_TRUE(size.ok());
  Send(std::span(out).first(*size));
}

std::vector<Bytes> FeedRequester::Await(
    const std::function<bool(const std::vector<Bytes>&)>& done, int settle_ms) {
  std::vector<Bytes> replies;
  if (!socket_.has_value()) return replies;
  const std::int64_t deadline = base::MonotonicNs() + 10'000'000'000;
  while (!done(replies) && base::MonotonicNs() < deadline) Read(100, replies);
  if (settle_ms > 0) {
    while (Read(settle_ms, replies)) {
    }
  }
  return replies;
}

std::vector<Bytes> FeedRequester::Replies(std::size_t n) {
  return Await([n](const std::vector<Bytes>& r) { return r.size() >= n; });
}

std::vector<Bytes> FeedRequester::Messages(std::size_t messages) {
  return Await([messages](const std::vector<Bytes>& replies) {
    std::size_t n = 0;
    for (const Bytes& r : replies) {
      n += codec::LoadLE<std::uint16_t>(r.data() + 20);
    }
    return n >= messages;
  });
}

std::vector<Bytes> FeedRequester::MessagesOrRefused(std::size_t messages) {
  return Await(
      [messages](const std::vector<Bytes>& replies) {
        std::size_t got = 0;
        for (const Bytes& r : replies) {
          const auto view =
              feed::PacketView::Parse(r, feed::SessionFilter::Any());
          if (!view.ok()) continue;
          if (view->type() == feed::PacketType::kRefused) return true;
          got += view->count();
        }
        return got >= messages;
      },
      /*settle_ms=*/0);
}

std::vector<Bytes> FeedRequester::Snapshot() {
  return Await([](const std::vector<Bytes>& replies) {
    std::uint64_t want = 0;
    std::uint64_t got = 0;
    for (const Bytes& r : replies) {
      const auto view = feed::PacketView::Parse(r, feed::SessionFilter::Any());
      if (!view.ok()) continue;
      if (view->type() == feed::PacketType::kRefused) return true;
      if (view->type() != feed::PacketType::kSnapshot) continue;
      got += view->count();
      if (view->sequence() == 1) {
        want = codec::LoadLE<std::uint32_t>(
            r.data() + feed::kPacketHeaderSize + feed::kBlockLengthSize +
            feed::MessageOffsetOf<&feed::SnapshotStart::message_count>());
      }
    }
    return want != 0 && got >= want;
  });
}

std::vector<Bytes> FeedRequester::RepliesFor(int ms) {
  std::vector<Bytes> replies;
  if (!socket_.has_value()) return replies;
  const std::int64_t end = base::MonotonicNs() + std::int64_t{ms} * 1'000'000;
  for (std::int64_t now = base::MonotonicNs(); now < end;
       now = base::MonotonicNs()) {
    Read(static_cast<int>((end - now) / 1'000'000) + 1, replies);
  }
  return replies;
}

bool FeedRequester::Read(int timeout_ms, std::vector<Bytes>& replies) {
  if (!socket_->WaitReadable(timeout_ms)) return false;
  const int n = socket_->Receive(rx_, rx_.capacity());
  for (int i = 0; i < n; ++i) {
    const auto d = rx_.datagram(static_cast<std::size_t>(i));
    replies.emplace_back(d.begin(), d.end());
  }
  return n > 0;
}

}  // namespace orderwire::test_support
