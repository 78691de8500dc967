// UDP sockets that receive and send datagrams in batches, into and out of
// preallocated buffers (recvmmsg / sendmmsg), and send with UDP generic
// segmentation offload (UDP_SEGMENT) where the kernel has it.
//
// A DatagramBatch owns `capacity` buffers of kMaxDatagramSize bytes, with
// their iovecs, msghdrs and peer addresses, allocated once. Receive() fills
// as many as are waiting (without blocking) and records each one's length
// and source address; Send() transmits the first `count` buffers to the
// addresses set on them. Neither allocates, and neither blocks unless the
// socket was opened blocking. Set-up errors are absl::Status with the
// address and errno text; per-call errors on the hot path are a negative
// errno.
//
// Segmented sending (SendSegmented): datagrams to the same peer, listed one
// after another, go out as one sendmmsg entry with a UDP_SEGMENT control
// message when they are all gso_size bytes but the last, which may be
// shorter; the kernel cuts the buffer into exactly those datagrams. The
// datagrams the peer receives (bytes and boundaries) are the same as with
// Send(); only the number of trips through the stack changes.
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

// The system calls the send path makes, replaceable by tests (a kernel
// without UDP_SEGMENT, a send that fails with EIO). Defaults: the real ones.
struct SocketCalls {
  int (*sendmmsg)(int fd, mmsghdr* messages, unsigned count,
                  int flags) = &::sendmmsg;
  int (*getsockopt)(int fd, int level, int name, void* value,
                    socklen_t* length) = &::getsockopt;
};

// At most this many datagrams in one segmented send (the kernel's
// UDP_MAX_SEGMENTS was 64 before 6.13), and at most this many bytes (an
// IPv4 datagram's largest payload).
inline constexpr std::size_t kMaxSegmentsPerSend = 64;
inline constexpr std::size_t kMaxSegmentedBytes = 65507;

// How a sender sends: every datagram its own sendmmsg entry, or runs of
// datagrams to one peer as UDP_SEGMENT sends (SendSegmented); kAuto: the
// latter when the kernel has it.
enum class SendPath { kAuto, kSendmmsg, kSegmented };
// "auto", "sendmmsg", "gso" (the --send names); ParseSendPath is the
// inverse (false: none of them).
[[nodiscard]] std::string_view SendPathName(SendPath path);
[[nodiscard]] bool ParseSendPath(std::string_view name, SendPath* path);

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
  // The numeric address alone ("127.0.0.1", "::1"); "?" for no address.
  [[nodiscard]] std::string Address() const;
  // "ADDRESS:PORT", "[ADDRESS]:PORT" for IPv6.
  [[nodiscard]] std::string ToString() const;
  // A multicast group (224.0.0.0/4, ff00::/8).
  [[nodiscard]] bool IsMulticast() const;
  // Same family, address and port.
  [[nodiscard]] bool operator==(const Endpoint& other) const;
};

// A fixed set of datagram buffers and their message headers.
class DatagramBatch {
 public:
  // For receiving on a socket with UDP_GRO (UdpSocket::EnableGro): slots of
  // kMaxCoalescedBytes, with room for the kernel's gso_size.
  enum class Coalesced { kNo, kYes };
  // The largest buffer the kernel hands a UDP_GRO socket at once.
  static constexpr std::size_t kMaxCoalescedBytes = 65535;

  explicit DatagramBatch(std::size_t capacity,
                         Coalesced coalesced = Coalesced::kNo);
  DatagramBatch(const DatagramBatch&) = delete;
  DatagramBatch& operator=(const DatagramBatch&) = delete;
  ~DatagramBatch();

  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  // The whole buffer of slot i (kMaxDatagramSize bytes; a Coalesced batch's
  // are kMaxCoalescedBytes).
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
  // A Coalesced batch: the size of the datagrams the kernel joined into
  // slot i (each that long but the last, which may be shorter), or 0 when
  // the slot holds one datagram.
  [[nodiscard]] std::size_t segment_size(std::size_t i) const;
  // Appends the datagrams received in slot i to `out` (slot i cut every
  // segment_size(i) bytes; the whole slot when 0), at most out.size() in
  // all from `used` on. Returns the new `used`.
  [[nodiscard]] std::size_t SplitDatagrams(
      std::size_t i, std::span<std::span<const std::byte>> out,
      std::size_t used) const;

 private:
  friend class UdpSocket;
  struct Storage;

  std::size_t capacity_;
  std::size_t slot_bytes_;
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

  // Whether the kernel takes UDP_SEGMENT on this socket (getsockopt). When
  // not, `why` (if given) says what it answered.
  [[nodiscard]] bool SupportsSegmentation(std::string* why = nullptr) const;
  // Sends the slots of `batch` listed in `order` (each at most once; at most
  // batch.capacity() entries), in that order, with UDP_SEGMENT: a run of
  // adjacent entries with the same peer, each as long as the first but the
  // last (which may be shorter), at most kMaxSegmentsPerSend datagrams and
  // kMaxSegmentedBytes bytes, is one sendmmsg entry; a run of one is an
  // ordinary datagram. Returns how many entries of `order` were sent (the
  // runs the kernel took, whole), or -errno when it took none (-EIO or
  // -EINVAL: the path cannot segment, e.g. no checksum offload towards the
  // peer or a smaller MTU; send those with Send()). `messages`, if given,
  // is set to the number of sendmmsg entries taken. Hot path: one
  // sendmmsg, no allocation.
  int SendSegmented(DatagramBatch& batch, std::span<const std::uint32_t> order,
                    std::size_t* messages = nullptr);

  // Tests: the system calls to use from now on (null: the real ones). The
  // pointee must outlive the socket.
  void set_calls_for_testing(const SocketCalls* calls);

  // Asks the kernel to hand over datagrams of a segmented send (UDP_GRO)
  // joined, up to 64 KiB at once: receive them into a Coalesced batch and
  // split them with SplitDatagrams. False (with `why`) when the kernel
  // refuses; the socket then receives datagrams one by one, as before.
  bool EnableGro(std::string* why = nullptr);

  // Waits until the socket is readable or `timeout_ms` passes (-1: forever).
  // Returns true if readable. Interrupted by a signal: false.
  bool WaitReadable(int timeout_ms);

 private:
  explicit UdpSocket(int fd) : fd_(fd) {}
  int fd_ = -1;
  const SocketCalls* calls_ = nullptr;  // null: the real ones
};

}  // namespace orderwire::net

#endif  // ORDERWIRE_NET_UDP_H_
