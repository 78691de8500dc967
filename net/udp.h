// UDP sockets that receive and send datagrams in batches, into and out of
// preallocated buffers (recvmmsg / sendmmsg).
//
// A DatagramBatch owns `capacity` buffers of kMaxDatagramSize bytes, with
// their iovecs, msghdrs and peer addresses, allocated once. Receive() fills
// as many as are waiting (without blocking) and records each one's length
// and source address; Send() transmits the first `count` buffers to the
// addresses set on them. Neither allocates, and neither blocks unless the
// socket was opened blocking. Set-up errors are absl::Status with the
// address and errno text; per-call errors on the hot path are a negative
// errno.
#ifndef ORDERWIRE_NET_UDP_H_
#define ORDERWIRE_NET_UDP_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::net {

// An IPv4 or IPv6 endpoint.
struct Endpoint {
  sockaddr_storage storage{};
  socklen_t length = 0;

  // Parses "HOST:PORT" ("127.0.0.1:7400", "[::1]:7400", "localhost:7400").
  // Host names are resolved once, at start-up (getaddrinfo).
  static absl::StatusOr<Endpoint> Parse(std::string_view host_port);

  [[nodiscard]] const sockaddr* addr() const {
    return reinterpret_cast<const sockaddr*>(&storage);
  }
  [[nodiscard]] int family() const { return storage.ss_family; }
  [[nodiscard]] std::uint16_t port() const;
  [[nodiscard]] std::string ToString() const;
  // Same family, address and port.
  [[nodiscard]] bool operator==(const Endpoint& other) const;
};

// A fixed set of datagram buffers and their message headers.
class DatagramBatch {
 public:
  explicit DatagramBatch(std::size_t capacity);
  DatagramBatch(const DatagramBatch&) = delete;
  DatagramBatch& operator=(const DatagramBatch&) = delete;
  ~DatagramBatch();

  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  // The whole buffer of slot i (kMaxDatagramSize bytes).
  [[nodiscard]] std::span<std::byte> buffer(std::size_t i);
  // The received (or to-be-sent) bytes of slot i.
  [[nodiscard]] std::span<const std::byte> datagram(std::size_t i) const;
  // Sets the length to send from slot i.
  void set_length(std::size_t i, std::size_t length);
  // The peer of slot i: where it came from, or where it goes.
  [[nodiscard]] const Endpoint& peer(std::size_t i) const;
  void set_peer(std::size_t i, const Endpoint& peer);
  // Whether the kernel truncated slot i (it was longer than the buffer).
  [[nodiscard]] bool truncated(std::size_t i) const;

 private:
  friend class UdpSocket;
  struct Storage;

  std::size_t capacity_;
  std::unique_ptr<Storage> storage_;
};

class UdpSocket {
 public:
  struct Options {
    int receive_buffer_bytes = 8 << 20;  // SO_RCVBUF; 8 MiB avoids loss
    int send_buffer_bytes = 8 << 20;     // SO_SNDBUF
    bool non_blocking = true;
  };

  // A socket bound to `local` (port 0 picks a free port).
  static absl::StatusOr<UdpSocket> Bind(const Endpoint& local,
                                        const Options& options);
  static absl::StatusOr<UdpSocket> Bind(const Endpoint& local) {
    return Bind(local, Options{});
  }

  UdpSocket(UdpSocket&& other) noexcept;
  UdpSocket& operator=(UdpSocket&& other) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;
  ~UdpSocket();

  [[nodiscard]] int fd() const { return fd_; }
  // The bound address (with the port the kernel chose).
  [[nodiscard]] absl::StatusOr<Endpoint> LocalEndpoint() const;

  // Receives up to `max` (<= batch.capacity()) waiting datagrams into
  // `batch`, slots 0..n-1. Returns n >= 0, or -errno (-EAGAIN: none
  // waiting). Hot path: one recvmmsg, no allocation.
  int Receive(DatagramBatch& batch, std::size_t max);
  // Sends slots 0..count-1 of `batch` to their peers. Returns how many were
  // sent (a short count means the socket buffer is full), or -errno. Hot
  // path: one sendmmsg, no allocation.
  int Send(DatagramBatch& batch, std::size_t count);
  // Sends slots first..first+count-1. Same results as Send().
  int SendRange(DatagramBatch& batch, std::size_t first, std::size_t count);

  // Waits until the socket is readable or `timeout_ms` passes (-1: forever).
  // Returns true if readable. Interrupted by a signal: false.
  bool WaitReadable(int timeout_ms);

 private:
  explicit UdpSocket(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace orderwire::net

#endif  // ORDERWIRE_NET_UDP_H_
