// net_bench: the UDP transport under `orderwire serve`, measured alone on
// loopback, as the baseline for the service's end-to-end figures
// (scripts/bench_service.sh, docs/BENCHMARKS.md "Service"): how fast one
// thread takes in datagrams of the service's sizes with recvmmsg(2) and with
// io_uring, how fast they can be echoed, and what one round trip costs.
//
// Datagrams carry frames of the `mixed` workload (seed 1), packed as the
// client packs them: <frames> frames each, 0 meaning as many as fit in 1472
// bytes (~34 frames, ~1,360 bytes); 1 is the size of a single command at a
// low rate (12 + 25..49 bytes). The receive side reads the frame count from
// each datagram's header (items = frames); it does not parse the frames, so
// these figures are the transport's alone.
//
// Threads and CPUs: the "server" side (receiver, echo) runs on the first CPU
// the process may use and the "client" side (sender, pinger) on the second,
// as bench_service.sh pins `serve` to CPU 0 and `submit` to CPU 1. With one
// CPU allowed (`taskset -c 1`, scripts/bench.sh) both share it, and the
// figures mean something else: the JSON context says which.
//
//   BM_OneWay/<rx>/<frames>      a sender thread streams 50,000 datagrams
//                                per iteration with sendmmsg(2) in batches
//                                of 64; the benchmark thread receives them
//                                with <rx>; timed from the first datagram
//                                received to the last. <rx>:
//                                  recvmmsg  non-blocking recvmmsg(2) of up
//                                            to 64, poll(2) when none waits
//                                            (what the service does)
//                                  uring     64 IORING_OP_RECVMSG over 64
//                                            fixed buffers, each re-armed
//                                            when it completes; waits in
//                                            io_uring_enter(2)
//                                  multishot one multishot IORING_OP_RECVMSG
//                                            over a ring of 512 provided
//                                            buffers
//   BM_Drain/<rx>/<frames>       the receive side alone: 2,048 datagrams
//                                queued in the socket with the clock
//                                stopped, then received with <rx>: the
//                                receive cost per datagram with no sender
//                                running at the same time
//   BM_PingPong/<mode>/<frames>  one datagram in flight: the benchmark
//                                thread sends it, an echo thread sends it
//                                back; one iteration is one round trip.
//                                <mode>:
//                                  block  both sides recvmmsg, poll(2) when
//                                         nothing waits (the service and
//                                         the client)
//                                  spin   both sides spin on recvmmsg
//                                         (MSG_DONTWAIT): no sleep, no
//                                         wake-up (skipped with one CPU)
//                                  uring  the echo side with io_uring
//                                         (RECVMSG, then SENDMSG and the
//                                         next RECVMSG in one enter),
//                                         waiting in io_uring_enter(2)
//   BM_EchoWindow/<frames>       echo throughput: the client keeps up to 256
//                                datagrams unanswered, the echo thread
//                                answers with recvmmsg/sendmmsg batches of
//                                64; 20,000 datagrams per iteration: the
//                                ceiling of a service that did nothing but
//                                answer
//
// Counters: items_per_second = frames/s (wall clock); dgrams_per_s;
// rx_cpu_ns_per_dgram / tx_cpu_ns_per_dgram (the receiving / sending
// thread's CPU time per datagram, CLOCK_THREAD_CPUTIME_ID); lost (sent but
// never received: socket buffer overflow); frames_per_dgram; for ping-pong
// p50_us, p90_us, p99_us, p999_us, max_us (log-bucketed, <= 3% high).
#include <benchmark/benchmark.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "base/latency_histogram.h"
#include "codec/datagram.h"
#include "codec/wire.h"
#include "engine/workload.h"
#include "net/udp.h"

namespace orderwire::net {
namespace {

constexpr std::uint32_t kSession = 1;
constexpr std::size_t kBatch = 64;  // ServiceOptions::batch, the client's
constexpr std::size_t kOneWayDatagrams = 50'000;
constexpr std::size_t kDrainDatagrams = 2'048;
constexpr std::size_t kWindow = 256;
constexpr std::size_t kEchoDatagrams = 20'000;
constexpr unsigned kMultishotBuffers = 512;  // a power of two
constexpr unsigned kMultishotBufferSize = 2048;
constexpr std::size_t kHeaderOnly = codec::kDatagramHeaderSize;

std::int64_t WallNs() { return base::MonotonicNs(); }

std::int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// ---------------------------------------------------------------------------
// CPUs.

// The CPUs this process was allowed at start (read once, before any thread
// is pinned).
const std::vector<int>& AllowedCpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      for (std::size_t c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) out.push_back(static_cast<int>(c));
      }
    }
    return out;
  }();
  return cpus;
}

int ServerCpu() { return AllowedCpus().empty() ? -1 : AllowedCpus()[0]; }
int ClientCpu() {
  const std::vector<int>& cpus = AllowedCpus();
  if (cpus.empty()) return -1;
  return cpus.size() > 1 ? cpus[1] : cpus[0];
}

void PinThisThread(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<std::size_t>(cpu), &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// ---------------------------------------------------------------------------
// Datagrams.

// Up to kBatch datagrams of the mixed workload, `frames` frames each (0: as
// many as fit), laid out in the slots of a DatagramBatch addressed to `to`.
struct Payload {
  std::vector<std::vector<std::byte>> datagrams;
  double frames_per_datagram = 0;
};

Payload MakePayload(std::size_t frames) {
  const std::vector<std::byte> stream = workload::EncodeCommands(
      workload::Generate(workload::Workload::kMixed, 4096, 1));
  Payload payload;
  std::array<std::byte, codec::kMaxDatagramSize> buffer;
  std::size_t pos = 0;
  std::size_t total_frames = 0;
  while (payload.datagrams.size() < kBatch && pos < stream.size()) {
    codec::DatagramBuilder builder(buffer, kSession);
    while (pos < stream.size() &&
           (frames == 0 || builder.frame_count() < frames)) {
      const std::size_t size =
          codec::kKindTable[codec::LoadLE<std::uint8_t>(stream.data() + pos +
                                                        codec::kKindOffset)]
              .frame_size;
      if (!builder.Fits(size)) break;
      (void)builder.AppendFrame(std::span(stream).subspan(pos, size));
      pos += size;
    }
    total_frames += builder.frame_count();
    payload.datagrams.emplace_back(builder.bytes().begin(),
                                   builder.bytes().end());
  }
  payload.frames_per_datagram = static_cast<double>(total_frames) /
                                static_cast<double>(payload.datagrams.size());
  return payload;
}

// Fills every slot of `batch` (cycling through the payload) for `to`.
void Load(DatagramBatch& batch, const Payload& payload, const Endpoint& to) {
  for (std::size_t i = 0; i < batch.capacity(); ++i) {
    const std::vector<std::byte>& d =
        payload.datagrams[i % payload.datagrams.size()];
    std::memcpy(batch.buffer(i).data(), d.data(), d.size());
    batch.set_length(i, d.size());
    batch.set_peer(i, to);
  }
}

std::size_t FrameCount(std::span<const std::byte> datagram) {
  constexpr std::size_t kCount =
      codec::DatagramOffsetOf<&codec::DatagramHeader::frame_count>();
  return datagram.size() < kHeaderOnly
             ? 0
             : codec::LoadLE<std::uint16_t>(datagram.data() + kCount);
}

// Sends slots [0, count) of `batch`, retrying while the socket is busy.
// Returns how many were sent.
std::size_t SendAll(UdpSocket& socket, DatagramBatch& batch,
                    std::size_t count) {
  std::size_t sent = 0;
  int attempts = 0;
  while (sent < count && attempts < 100'000) {
    const int n = socket.SendRange(batch, sent, count - sent);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else {
      ++attempts;
    }
  }
  return sent;
}

// A header-only datagram: the end-of-stream marker of these benchmarks.
void SendMarker(UdpSocket& socket, const Endpoint& to) {
  DatagramBatch one(1);
  codec::DatagramBuilder builder(one.buffer(0), 0);
  one.set_length(0, builder.size());
  one.set_peer(0, to);
  (void)socket.Send(one, 1);
}

struct Sockets {
  UdpSocket server;
  UdpSocket client;
  Endpoint server_end;
  Endpoint client_end;
};

absl::StatusOr<Sockets> MakeSockets() {
  absl::StatusOr<Endpoint> any = Endpoint::Parse("127.0.0.1:0");
  if (!any.ok()) return any.status();
  absl::StatusOr<UdpSocket> server = UdpSocket::Bind(*any);
  if (!server.ok()) return server.status();
  absl::StatusOr<UdpSocket> client = UdpSocket::Bind(*any);
  if (!client.ok()) return client.status();
  absl::StatusOr<Endpoint> server_end = server->LocalEndpoint();
  if (!server_end.ok()) return server_end.status();
  absl::StatusOr<Endpoint> client_end = client->LocalEndpoint();
  if (!client_end.ok()) return client_end.status();
  return Sockets{std::move(*server), std::move(*client), *server_end,
                 *client_end};
}

// ---------------------------------------------------------------------------
// Receivers. Each Receive(block, on_datagram) takes what is waiting (with
// `block`, first waits up to 10 ms for something) and calls
// on_datagram(bytes) for each datagram; it returns how many, or -errno.

class RecvmmsgReceiver {
 public:
  static constexpr const char* kName = "recvmmsg";
  explicit RecvmmsgReceiver(UdpSocket& socket)
      : socket_(socket), batch_(kBatch) {}
  absl::Status Init() { return absl::OkStatus(); }

  template <typename F>
  int Receive(bool block, F&& on_datagram) {
    const int n = socket_.Receive(batch_, kBatch);
    if (n == -EAGAIN || n == -EINTR) {
      if (block) (void)socket_.WaitReadable(10);
      return 0;
    }
    if (n < 0) return n;
    for (int i = 0; i < n; ++i) {
      on_datagram(batch_.datagram(static_cast<std::size_t>(i)));
    }
    return n;
  }

 private:
  UdpSocket& socket_;
  DatagramBatch batch_;
};

// Sets up a ring for one thread that waits for its own completions
// (DEFER_TASKRUN: completion work runs when the thread enters the kernel to
// wait, not as an interrupting task_work), falling back to a plain ring on
// kernels without it.
absl::Status InitRing(io_uring& ring, unsigned entries) {
  io_uring_params params{};
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int rc = io_uring_queue_init_params(entries, &ring, &params);
  if (rc == -EINVAL) rc = io_uring_queue_init(entries, &ring, 0);
  if (rc < 0) {
    return absl::UnavailableError(
        absl::StrFormat("io_uring_queue_init: %s", std::strerror(-rc)));
  }
  return absl::OkStatus();
}

class UringBatchReceiver {
 public:
  static constexpr const char* kName = "uring";
  explicit UringBatchReceiver(UdpSocket& socket)
      : socket_(socket),
        buffers_(kBatch * codec::kMaxDatagramSize),
        iovecs_(kBatch),
        headers_(kBatch),
        names_(kBatch) {}
  UringBatchReceiver(const UringBatchReceiver&) = delete;
  UringBatchReceiver& operator=(const UringBatchReceiver&) = delete;
  ~UringBatchReceiver() {
    if (ready_) io_uring_queue_exit(&ring_);
  }

  absl::Status Init() {
    if (absl::Status s = InitRing(ring_, 2 * kBatch); !s.ok()) return s;
    ready_ = true;
    for (std::size_t i = 0; i < kBatch; ++i) Arm(i);
    return absl::OkStatus();
  }

  template <typename F>
  int Receive(bool block, F&& on_datagram) {
    const int rc =
        block ? io_uring_submit_and_wait(&ring_, 1) : io_uring_submit(&ring_);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) return rc;
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    int n = 0;
    int error = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      const auto slot = static_cast<std::size_t>(cqe->user_data);
      if (cqe->res >= 0) {
        on_datagram(std::span<const std::byte>(
            buffers_.data() + slot * codec::kMaxDatagramSize,
            static_cast<std::size_t>(cqe->res)));
        ++n;
      } else if (cqe->res != -EAGAIN && cqe->res != -EINTR) {
        error = cqe->res;
      }
      Arm(slot);
    }
    io_uring_cq_advance(&ring_, seen);
    return error != 0 ? error : n;
  }

 private:
  void Arm(std::size_t slot) {
    iovecs_[slot] = {buffers_.data() + slot * codec::kMaxDatagramSize,
                     codec::kMaxDatagramSize};
    headers_[slot] = {};
    headers_[slot].msg_name = &names_[slot];
    headers_[slot].msg_namelen = sizeof(names_[slot]);
    headers_[slot].msg_iov = &iovecs_[slot];
    headers_[slot].msg_iovlen = 1;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_recvmsg(sqe, socket_.fd(), &headers_[slot], 0);
    io_uring_sqe_set_data64(sqe, slot);
  }

  UdpSocket& socket_;
  io_uring ring_{};
  bool ready_ = false;
  std::vector<std::byte> buffers_;
  std::vector<iovec> iovecs_;
  std::vector<msghdr> headers_;
  std::vector<sockaddr_storage> names_;
};

class MultishotReceiver {
 public:
  static constexpr const char* kName = "multishot";
  explicit MultishotReceiver(UdpSocket& socket) : socket_(socket) {}
  MultishotReceiver(const MultishotReceiver&) = delete;
  MultishotReceiver& operator=(const MultishotReceiver&) = delete;
  ~MultishotReceiver() {
    if (ready_) io_uring_queue_exit(&ring_);
    std::free(ring_memory_);
    std::free(buffers_);
  }

  absl::Status Init() {
    if (absl::Status s = InitRing(ring_, 2 * kBatch); !s.ok()) return s;
    ready_ = true;
    if (posix_memalign(&ring_memory_, 4096,
                       kMultishotBuffers * sizeof(io_uring_buf)) != 0 ||
        posix_memalign(reinterpret_cast<void**>(&buffers_), 4096,
                       std::size_t{kMultishotBuffers} * kMultishotBufferSize) !=
            0) {
      return absl::ResourceExhaustedError("posix_memalign");
    }
    buf_ring_ = static_cast<io_uring_buf_ring*>(ring_memory_);
    io_uring_buf_ring_init(buf_ring_);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<std::uint64_t>(ring_memory_);
    reg.ring_entries = kMultishotBuffers;
    reg.bgid = kGroup;
    if (const int rc = io_uring_register_buf_ring(&ring_, &reg, 0); rc < 0) {
      return absl::UnavailableError(absl::StrFormat(
          "io_uring_register_buf_ring: %s", std::strerror(-rc)));
    }
    for (unsigned i = 0; i < kMultishotBuffers; ++i) {
      io_uring_buf_ring_add(buf_ring_, Buffer(i), kMultishotBufferSize,
                            static_cast<unsigned short>(i), Mask(),
                            static_cast<int>(i));
    }
    io_uring_buf_ring_advance(buf_ring_, static_cast<int>(kMultishotBuffers));
    header_.msg_namelen = sizeof(sockaddr_in6);
    Arm();
    return absl::OkStatus();
  }

  template <typename F>
  int Receive(bool block, F&& on_datagram) {
    const int rc =
        block ? io_uring_submit_and_wait(&ring_, 1) : io_uring_submit(&ring_);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) return rc;
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    int returned = 0;
    int n = 0;
    int error = 0;
    bool rearm = false;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      if ((cqe->flags & IORING_CQE_F_MORE) == 0) rearm = true;
      if (cqe->res < 0) {
        if (cqe->res != -ENOBUFS && cqe->res != -EAGAIN && cqe->res != -EINTR) {
          error = cqe->res;
        }
        continue;
      }
      if ((cqe->flags & IORING_CQE_F_BUFFER) == 0) continue;
      const auto id =
          static_cast<unsigned short>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
      std::byte* buffer = Buffer(id);
      io_uring_recvmsg_out* out =
          io_uring_recvmsg_validate(buffer, cqe->res, &header_);
      if (out != nullptr) {
        const auto* payload = static_cast<const std::byte*>(
            io_uring_recvmsg_payload(out, &header_));
        const unsigned length =
            io_uring_recvmsg_payload_length(out, cqe->res, &header_);
        on_datagram(std::span<const std::byte>(payload, length));
        ++n;
      }
      io_uring_buf_ring_add(buf_ring_, buffer, kMultishotBufferSize, id, Mask(),
                            returned++);
    }
    io_uring_buf_ring_advance(buf_ring_, returned);
    io_uring_cq_advance(&ring_, seen);
    if (rearm) Arm();
    return error != 0 ? error : n;
  }

 private:
  static constexpr unsigned short kGroup = 7;
  static int Mask() { return io_uring_buf_ring_mask(kMultishotBuffers); }
  std::byte* Buffer(unsigned i) {
    return buffers_ + std::size_t{i} * kMultishotBufferSize;
  }
  void Arm() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_recvmsg_multishot(sqe, socket_.fd(), &header_, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = kGroup;
    io_uring_sqe_set_data64(sqe, 1);
  }

  UdpSocket& socket_;
  io_uring ring_{};
  bool ready_ = false;
  void* ring_memory_ = nullptr;
  io_uring_buf_ring* buf_ring_ = nullptr;
  std::byte* buffers_ = nullptr;
  msghdr header_{};
};

// ---------------------------------------------------------------------------
// BM_OneWay: a sender thread streams, the benchmark thread receives.

template <typename Receiver>
void BM_OneWay(benchmark::State& state, std::size_t frames) {
  PinThisThread(ServerCpu());
  absl::StatusOr<Sockets> sockets = MakeSockets();
  if (!sockets.ok()) {
    state.SkipWithError(std::string(sockets.status().message()).c_str());
    return;
  }
  Receiver receiver(sockets->server);
  if (absl::Status s = receiver.Init(); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  const Payload payload = MakePayload(frames);
  std::uint64_t datagrams = 0;
  std::uint64_t frames_in = 0;
  std::uint64_t sent_total = 0;
  std::int64_t rx_cpu = 0;
  std::int64_t tx_cpu = 0;
  double seconds = 0;
  for (auto _ : state) {
    std::atomic<bool> done{false};
    std::size_t sent = 0;
    std::int64_t sender_cpu = 0;
    std::thread sender([&] {
      PinThisThread(ClientCpu());
      DatagramBatch tx(kBatch);
      Load(tx, payload, sockets->server_end);
      const std::int64_t cpu0 = ThreadCpuNs();
      while (sent < kOneWayDatagrams) {
        sent += SendAll(sockets->client, tx,
                        std::min(kBatch, kOneWayDatagrams - sent));
      }
      sender_cpu = ThreadCpuNs() - cpu0;
      while (!done.load(std::memory_order_acquire)) {
        SendMarker(sockets->client, sockets->server_end);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    std::uint64_t received = 0;
    std::int64_t first_ns = 0;
    std::int64_t last_ns = 0;
    bool end = false;
    const std::int64_t cpu0 = ThreadCpuNs();
    while (!end) {
      const int n = receiver.Receive(true, [&](std::span<const std::byte> d) {
        if (d.size() <= kHeaderOnly) {
          end = true;
          return;
        }
        if (received == 0) first_ns = WallNs();
        ++received;
        frames_in += FrameCount(d);
      });
      if (n < 0) {
        done.store(true, std::memory_order_release);
        sender.join();
        state.SkipWithError(
            absl::StrFormat("receive: %s", std::strerror(-n)).c_str());
        return;
      }
      if (n > 0 && !end) last_ns = WallNs();
    }
    rx_cpu += ThreadCpuNs() - cpu0;
    done.store(true, std::memory_order_release);
    sender.join();
    // Drain the markers still queued.
    for (int i = 0; i < 3; ++i) (void)receiver.Receive(false, [](auto) {});
    tx_cpu += sender_cpu;
    sent_total += sent;
    datagrams += received;
    const double s = static_cast<double>(last_ns - first_ns) * 1e-9;
    seconds += s;
    state.SetIterationTime(s > 0 ? s : 1e-9);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(frames_in));
  state.counters["dgrams_per_s"] = static_cast<double>(datagrams) / seconds;
  state.counters["frames_per_dgram"] = payload.frames_per_datagram;
  state.counters["rx_cpu_ns_per_dgram"] =
      static_cast<double>(rx_cpu) / static_cast<double>(datagrams);
  state.counters["tx_cpu_ns_per_dgram"] =
      static_cast<double>(tx_cpu) / static_cast<double>(sent_total);
  state.counters["lost"] = static_cast<double>(sent_total - datagrams);
}

// ---------------------------------------------------------------------------
// BM_Drain: the receive side alone, on a full socket queue.

template <typename Receiver>
void BM_Drain(benchmark::State& state, std::size_t frames) {
  PinThisThread(ServerCpu());
  absl::StatusOr<Sockets> sockets = MakeSockets();
  if (!sockets.ok()) {
    state.SkipWithError(std::string(sockets.status().message()).c_str());
    return;
  }
  Receiver receiver(sockets->server);
  if (absl::Status s = receiver.Init(); !s.ok()) {
    state.SkipWithError(std::string(s.message()).c_str());
    return;
  }
  const Payload payload = MakePayload(frames);
  DatagramBatch tx(kBatch);
  Load(tx, payload, sockets->server_end);
  std::uint64_t datagrams = 0;
  std::uint64_t frames_in = 0;
  std::int64_t rx_cpu = 0;
  double seconds = 0;
  for (auto _ : state) {
    for (std::size_t sent = 0; sent < kDrainDatagrams; sent += kBatch) {
      (void)SendAll(sockets->client, tx, kBatch);
    }
    std::size_t received = 0;
    const std::int64_t wall0 = WallNs();
    const std::int64_t cpu0 = ThreadCpuNs();
    std::int64_t idle_since = 0;
    while (received < kDrainDatagrams) {
      const int n = receiver.Receive(true, [&](std::span<const std::byte> d) {
        ++received;
        frames_in += FrameCount(d);
      });
      if (n < 0) {
        state.SkipWithError(
            absl::StrFormat("receive: %s", std::strerror(-n)).c_str());
        return;
      }
      if (n > 0) {
        idle_since = 0;
      } else if (idle_since == 0) {
        idle_since = WallNs();
      } else if (WallNs() - idle_since > 200'000'000) {
        state.SkipWithError(
            absl::StrFormat("only %d of %d datagrams queued: the socket "
                            "buffer is too small for the drain",
                            received, kDrainDatagrams)
                .c_str());
        return;
      }
    }
    const double s = static_cast<double>(WallNs() - wall0) * 1e-9;
    rx_cpu += ThreadCpuNs() - cpu0;
    datagrams += received;
    seconds += s;
    state.SetIterationTime(s);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(frames_in));
  state.counters["dgrams_per_s"] = static_cast<double>(datagrams) / seconds;
  state.counters["frames_per_dgram"] = payload.frames_per_datagram;
  state.counters["rx_cpu_ns_per_dgram"] =
      static_cast<double>(rx_cpu) / static_cast<double>(datagrams);
}

// ---------------------------------------------------------------------------
// Echo servers: answer every datagram to its sender until a marker arrives.

enum class EchoMode { kBlock, kSpin, kUring };

const char* Name(EchoMode mode) {
  switch (mode) {
    case EchoMode::kBlock:
      return "block";
    case EchoMode::kSpin:
      return "spin";
    case EchoMode::kUring:
      return "uring";
  }
  return "?";
}

// recvmmsg/sendmmsg echo. Returns the thread's CPU time.
std::int64_t EchoMmsg(UdpSocket& socket, bool spin) {
  PinThisThread(ServerCpu());
  const std::int64_t cpu0 = ThreadCpuNs();
  DatagramBatch batch(kBatch);
  while (true) {
    const int n = socket.Receive(batch, kBatch);
    if (n <= 0) {
      if (!spin) (void)socket.WaitReadable(10);
      continue;
    }
    std::size_t answer = 0;
    bool end = false;
    for (int i = 0; i < n; ++i) {
      const auto slot = static_cast<std::size_t>(i);
      const std::size_t length = batch.datagram(slot).size();
      if (length <= kHeaderOnly) {
        end = true;
        break;
      }
      batch.set_length(slot, length);  // peer: the sender, set by Receive
      ++answer;
    }
    (void)SendAll(socket, batch, answer);
    if (end) break;
  }
  return ThreadCpuNs() - cpu0;
}

// io_uring echo: one RECVMSG armed; on its completion a SENDMSG of the same
// bytes and the next RECVMSG (into the other buffer) go in with one enter.
std::int64_t EchoUring(UdpSocket& socket, std::atomic<int>& failed) {
  PinThisThread(ServerCpu());
  const std::int64_t cpu0 = ThreadCpuNs();
  io_uring ring{};
  if (!InitRing(ring, 8).ok()) {
    failed.store(1);
    return 0;
  }
  struct Buffer {
    std::array<std::byte, codec::kMaxDatagramSize> bytes;
    iovec iov;
    msghdr header;
    sockaddr_storage name;
  };
  std::array<Buffer, 2> buffers{};
  const auto arm = [&](std::size_t b) {
    Buffer& x = buffers[b];
    x.iov = {x.bytes.data(), x.bytes.size()};
    x.header = {};
    x.header.msg_name = &x.name;
    x.header.msg_namelen = sizeof(x.name);
    x.header.msg_iov = &x.iov;
    x.header.msg_iovlen = 1;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_recvmsg(sqe, socket.fd(), &x.header, 0);
    io_uring_sqe_set_data64(sqe, b);
  };
  std::size_t current = 0;
  arm(current);
  bool end = false;
  while (!end) {
    if (io_uring_submit_and_wait(&ring, 1) < 0 && errno != EINTR) {
      // keep going: a signal or a transient error
    }
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      if (cqe->user_data >= 2) continue;  // a send completed
      const std::size_t b = cqe->user_data;
      if (cqe->res < 0) {
        if (cqe->res != -EAGAIN && cqe->res != -EINTR) failed.store(1);
        arm(b);
        continue;
      }
      if (static_cast<std::size_t>(cqe->res) <= kHeaderOnly) {
        end = true;
        continue;
      }
      Buffer& x = buffers[b];
      x.iov.iov_len = static_cast<std::size_t>(cqe->res);
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_sendmsg(sqe, socket.fd(), &x.header, 0);
      io_uring_sqe_set_data64(sqe, 2);
      current ^= 1;
      arm(current);
    }
    io_uring_cq_advance(&ring, seen);
  }
  io_uring_queue_exit(&ring);
  return ThreadCpuNs() - cpu0;
}

// ---------------------------------------------------------------------------
// BM_PingPong: one datagram in flight.

void BM_PingPong(benchmark::State& state, EchoMode mode, std::size_t frames) {
  PinThisThread(ClientCpu());
  absl::StatusOr<Sockets> sockets = MakeSockets();
  if (!sockets.ok()) {
    state.SkipWithError(std::string(sockets.status().message()).c_str());
    return;
  }
  if (mode == EchoMode::kSpin && ServerCpu() == ClientCpu()) {
    // Two spinning threads on one CPU measure the scheduler, and under
    // SCHED_FIFO (scripts/bench.sh) the echo thread would never run.
    state.SkipWithError("spin needs two CPUs: run with taskset -c 0,1");
    return;
  }
  const Payload payload = MakePayload(frames);
  std::atomic<int> failed{0};
  std::int64_t echo_cpu = 0;
  std::thread echo([&] {
    echo_cpu = mode == EchoMode::kUring
                   ? EchoUring(sockets->server, failed)
                   : EchoMmsg(sockets->server, mode == EchoMode::kSpin);
  });
  DatagramBatch tx(kBatch);
  Load(tx, payload, sockets->server_end);
  DatagramBatch rx(kBatch);
  LatencyHistogram rtt;
  std::size_t next = 0;
  std::uint64_t frames_out = 0;
  std::uint64_t lost = 0;
  const std::int64_t cpu0 = ThreadCpuNs();
  for (auto _ : state) {
    const std::size_t slot = next++ % tx.capacity();
    const std::int64_t t0 = WallNs();
    while (sockets->client.SendRange(tx, slot, 1) != 1) {
    }
    frames_out += FrameCount(tx.datagram(slot));
    while (true) {
      const int n = sockets->client.Receive(rx, kBatch);
      if (n > 0) break;
      if (mode != EchoMode::kSpin) (void)sockets->client.WaitReadable(100);
      if (WallNs() - t0 > 100'000'000) {  // lost (or the echo is starved)
        ++lost;
        break;
      }
      if (failed.load(std::memory_order_relaxed) != 0) break;
    }
    rtt.Record(static_cast<std::uint64_t>(WallNs() - t0));
    if (failed.load(std::memory_order_relaxed) != 0) break;
  }
  const std::int64_t client_cpu = ThreadCpuNs() - cpu0;
  SendMarker(sockets->client, sockets->server_end);
  echo.join();
  if (failed.load() != 0) {
    state.SkipWithError("the echo thread's io_uring failed");
    return;
  }
  const auto us = [&](double fraction) {
    return static_cast<double>(rtt.Percentile(fraction)) / 1000.0;
  };
  state.SetItemsProcessed(static_cast<std::int64_t>(frames_out));
  state.counters["frames_per_dgram"] = payload.frames_per_datagram;
  state.counters["p50_us"] = us(0.50);
  state.counters["p90_us"] = us(0.90);
  state.counters["p99_us"] = us(0.99);
  state.counters["p999_us"] = us(0.999);
  state.counters["max_us"] = static_cast<double>(rtt.max()) / 1000.0;
  state.counters["lost"] = static_cast<double>(lost);
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["client_cpu_ns_per_rtt"] =
      static_cast<double>(client_cpu) / iterations;
  state.counters["echo_cpu_ns_per_rtt"] =
      static_cast<double>(echo_cpu) / iterations;
}

// ---------------------------------------------------------------------------
// BM_EchoWindow: echo throughput with kWindow datagrams outstanding.

void BM_EchoWindow(benchmark::State& state, std::size_t frames) {
  PinThisThread(ClientCpu());
  absl::StatusOr<Sockets> sockets = MakeSockets();
  if (!sockets.ok()) {
    state.SkipWithError(std::string(sockets.status().message()).c_str());
    return;
  }
  const Payload payload = MakePayload(frames);
  std::int64_t echo_cpu = 0;
  std::thread echo([&] { echo_cpu = EchoMmsg(sockets->server, false); });
  DatagramBatch tx(kBatch);
  Load(tx, payload, sockets->server_end);
  DatagramBatch rx(kBatch);
  std::uint64_t datagrams = 0;
  std::uint64_t frames_in = 0;
  std::uint64_t lost = 0;
  double seconds = 0;
  const std::int64_t cpu0 = ThreadCpuNs();
  for (auto _ : state) {
    std::size_t sent = 0;
    std::size_t answered = 0;
    std::size_t outstanding = 0;
    const std::int64_t t0 = WallNs();
    std::int64_t last_answer_ns = t0;
    while (answered + lost < kEchoDatagrams ||
           (sent < kEchoDatagrams && outstanding == 0)) {
      const std::size_t room =
          std::min({kBatch, kWindow - outstanding, kEchoDatagrams - sent});
      if (room > 0) {
        const std::size_t n = SendAll(sockets->client, tx, room);
        sent += n;
        outstanding += n;
      }
      const int n = sockets->client.Receive(rx, kBatch);
      if (n > 0) {
        for (int i = 0; i < n; ++i) {
          frames_in += FrameCount(rx.datagram(static_cast<std::size_t>(i)));
        }
        answered += static_cast<std::size_t>(n);
        outstanding -= std::min(outstanding, static_cast<std::size_t>(n));
        last_answer_ns = WallNs();
        continue;
      }
      if (outstanding == kWindow || sent == kEchoDatagrams) {
        (void)sockets->client.WaitReadable(1);
        if (WallNs() - last_answer_ns > 100'000'000) {
          lost += outstanding;  // never coming back
          outstanding = 0;
          last_answer_ns = WallNs();
          if (sent == kEchoDatagrams) break;
        }
      }
    }
    const double s = static_cast<double>(last_answer_ns - t0) * 1e-9;
    datagrams += answered;
    seconds += s;
    state.SetIterationTime(s);
  }
  const std::int64_t client_cpu = ThreadCpuNs() - cpu0;
  SendMarker(sockets->client, sockets->server_end);
  echo.join();
  state.SetItemsProcessed(static_cast<std::int64_t>(frames_in));
  state.counters["dgrams_per_s"] = static_cast<double>(datagrams) / seconds;
  state.counters["frames_per_dgram"] = payload.frames_per_datagram;
  state.counters["client_cpu_ns_per_dgram"] =
      static_cast<double>(client_cpu) / static_cast<double>(datagrams);
  state.counters["echo_cpu_ns_per_dgram"] =
      static_cast<double>(echo_cpu) / static_cast<double>(datagrams);
  state.counters["lost"] = static_cast<double>(lost);
}

}  // namespace
}  // namespace orderwire::net

int main(int argc, char** argv) {
  // NOLINTNEXTLINE(google-build-using-namespace): main() registers the
  // benchmarks of orderwire::net's anonymous namespace.
  using namespace orderwire::net;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const std::vector<int>& cpus = AllowedCpus();
  benchmark::AddCustomContext(
      "net_bench_cpus",
      absl::StrFormat("server side on CPU %d, client side on CPU %d%s",
                      ServerCpu(), ClientCpu(),
                      cpus.size() > 1 ? "" : " (one CPU allowed: shared)"));

  const auto frames_name = [](std::size_t frames) {
    return frames == 0 ? std::string("full") : absl::StrFormat("%d", frames);
  };
  for (const std::size_t frames : {std::size_t{1}, std::size_t{0}}) {
    const std::string f = frames_name(frames);
    benchmark::RegisterBenchmark(("BM_OneWay/recvmmsg/" + f).c_str(),
                                 BM_OneWay<RecvmmsgReceiver>, frames)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_OneWay/uring/" + f).c_str(),
                                 BM_OneWay<UringBatchReceiver>, frames)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_OneWay/multishot/" + f).c_str(),
                                 BM_OneWay<MultishotReceiver>, frames)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
  }
  for (const std::size_t frames : {std::size_t{1}, std::size_t{0}}) {
    const std::string f = frames_name(frames);
    benchmark::RegisterBenchmark(("BM_Drain/recvmmsg/" + f).c_str(),
                                 BM_Drain<RecvmmsgReceiver>, frames)
        ->UseManualTime()
        ->Iterations(100)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_Drain/uring/" + f).c_str(),
                                 BM_Drain<UringBatchReceiver>, frames)
        ->UseManualTime()
        ->Iterations(100)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_Drain/multishot/" + f).c_str(),
                                 BM_Drain<MultishotReceiver>, frames)
        ->UseManualTime()
        ->Iterations(100)
        ->Unit(benchmark::kMicrosecond);
  }
  for (const EchoMode mode :
       {EchoMode::kBlock, EchoMode::kSpin, EchoMode::kUring}) {
    for (const std::size_t frames : {std::size_t{1}, std::size_t{0}}) {
      benchmark::RegisterBenchmark(
          absl::StrFormat("BM_PingPong/%s/%s", Name(mode), frames_name(frames))
              .c_str(),
          BM_PingPong, mode, frames)
          ->UseRealTime()
          ->Iterations(20'000)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const std::size_t frames : {std::size_t{1}, std::size_t{0}}) {
    benchmark::RegisterBenchmark(
        ("BM_EchoWindow/" + frames_name(frames)).c_str(), BM_EchoWindow, frames)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
