// FeedRequester: a subscriber's UDP socket on loopback for tests of the
// feed's request server (service/feed_request_server.h; docs/MARKETDATA.md
// "Retransmission"): it sends requests (RetransmitRequests, or any bytes)
// to one server and reads the replies, each reply datagram as it came.
//
// Waiting: Await() and the calls built on it read until a condition on the
// replies so far holds or 10 s pass (the caller's expectations then fail;
// nothing here asserts on the replies), then whatever else arrives until
// `settle_ms` pass without a datagram. RepliesFor() reads for a fixed time.
// A socket that cannot be bound or a send that fails is a gtest failure.
//
// Threading: one thread at a time. Part of orderwire::test_support_service.
#ifndef ORDERWIRE_TESTS_SUPPORT_FEED_REQUESTER_H_
#define ORDERWIRE_TESTS_SUPPORT_FEED_REQUESTER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "net/udp.h"
#include "tests/support/bytes.h"

namespace orderwire::test_support {

class FeedRequester {
 public:
  // A socket bound to `local` (an ephemeral loopback port by default) that
  // sends to `server`.
  explicit FeedRequester(
      const net::Endpoint& server,
      const net::Endpoint& local = *net::Endpoint::Parse("127.0.0.1:0"));

  // Sends `bytes` as one datagram to the server.
  void Send(std::span<const std::byte> bytes);
  // Sends a RetransmitRequest for `count` messages of `session` from
  // `first`, with `token`.
  void Retransmit(std::uint64_t session, std::uint64_t first,
                  std::uint16_t count, std::uint16_t token);

  // Replies until `done` holds for them (or 10 s pass), then whatever else
  // arrives until `settle_ms` pass without a datagram (none read if 0).
  std::vector<Bytes> Await(
      const std::function<bool(const std::vector<Bytes>&)>& done,
      int settle_ms = 20);
  // `n` replies (more if they come at once).
  std::vector<Bytes> Replies(std::size_t n = 1);
  // Replies until their packets' headers count `messages` messages.
  std::vector<Bytes> Messages(std::size_t messages);
  // Replies until a Refused, or until the packets count `messages`
  // messages; nothing read after that.
  std::vector<Bytes> MessagesOrRefused(std::size_t messages);
  // Replies until a whole snapshot came (its packets hold SnapshotStart's
  // message_count messages) or a Refused did.
  std::vector<Bytes> Snapshot();
  // Every reply of the next `ms` milliseconds.
  std::vector<Bytes> RepliesFor(int ms);

 private:
  // Appends what one receive gets within `timeout_ms`; whether it got any.
  bool Read(int timeout_ms, std::vector<Bytes>& replies);

  net::Endpoint server_;
  std::optional<net::UdpSocket> socket_;
  net::DatagramBatch rx_;
};

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_FEED_REQUESTER_H_
