// md_flood: a hostile neighbour of the market-data request server
// (docs/MARKETDATA.md "Retransmission"), for scripts/bench_service.sh
// FLOOD_RATE: it sends requests as fast as asked, from many source
// addresses, for a while, and never reads a reply.
//
//   md_flood --target HOST:PORT --session ID [--rate N] [--seconds S]
//            [--sources K]
//
// Each second, N datagrams (default 200,000), paced in batches of 64 each
// millisecond or so, round robin over K sources (default 1,024): sockets
// bound to 127.1.<k / 250>.<k % 250 + 1>, so each is its own source
// address with its own budget (the whole of 127/8 is loopback on Linux),
// none of them 127.0.0.1, the subscribers' own.
// The datagrams cycle through what a request server must refuse or answer:
// a RetransmitRequest of the feed's session from sequence 1 for 1,024
// messages (answered while the source's budget lasts, then Refused
// RateLimited once a second, then dropped), the same of another session
// (WrongSession), a SnapshotRequest (RateLimited after 6 a minute), and 24
// bytes of garbage (BadMagic). At the end it prints `md_flood: sent N
// datagrams in S s (R/s), K sources` and exits 0; 1 if nothing could be
// sent, 2 on a usage error.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "feed/builder.h"
#include "net/udp.h"

namespace {

using orderwire::net::Endpoint;

struct Options {
  std::string target;
  std::uint64_t session = 0;
  double rate = 200'000;
  double seconds = 10;
  int sources = 1024;
};

int Usage(const char* why) {
  std::fprintf(stderr,
               "md_flood: %s\nusage: md_flood --target HOST:PORT --session "
               "ID [--rate N] [--seconds S] [--sources K]\n",
               why);
  return 2;
}

bool ParseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--target") {
      o.target = value;
    } else if (flag == "--session") {
      o.session = std::strtoull(value, nullptr, 0);
    } else if (flag == "--rate") {
      o.rate = std::strtod(value, nullptr);
    } else if (flag == "--seconds") {
      o.seconds = std::strtod(value, nullptr);
    } else if (flag == "--sources") {
      o.sources = std::atoi(value);
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !o.target.empty() && o.rate > 0 && o.seconds > 0 &&
         o.sources >= 1 && o.sources <= 65'000;
}

// The four datagrams the flood cycles through.
std::vector<std::vector<std::byte>> Datagrams(std::uint64_t session) {
  namespace feed = orderwire::feed;
  std::vector<std::vector<std::byte>> out;
  std::array<std::byte, 64> buffer{};
  const auto add = [&](std::size_t n) {
    out.emplace_back(buffer.begin(), buffer.begin() + static_cast<long>(n));
  };
  add(*feed::EncodeRetransmitRequest(buffer, session, 1, 1024, 1));
  add(*feed::EncodeRetransmitRequest(buffer, session ^ 1, 1, 1024, 2));
  add(*feed::EncodeSnapshotRequest(buffer, session, 3, 0));
  std::memset(buffer.data(), 0x5a, 24);
  add(24);
  return out;
}

// One socket per source address, 127.1.x.y.
std::vector<int> Sources(int count) {
  std::vector<int> fds;
  for (int k = 0; k < count; ++k) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl((127u << 24) | (1u << 16) |
                                 (static_cast<unsigned>(k / 250) << 8) |
                                 static_cast<unsigned>(k % 250 + 1));
    if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&addr),
                         sizeof(addr)) != 0) {
      std::fprintf(stderr, "md_flood: source %d: %s\n", k,
                   std::strerror(errno));
      if (fd >= 0) ::close(fd);
      break;
    }
    fds.push_back(fd);
  }
  return fds;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, o)) return Usage("bad or missing flags");
  const auto target = Endpoint::Parse(o.target);
  if (!target.ok() || target->family() != AF_INET) {
    return Usage("--target must be an IPv4 HOST:PORT");
  }
  const std::vector<std::vector<std::byte>> datagrams = Datagrams(o.session);
  const std::vector<int> fds = Sources(o.sources);
  if (fds.empty()) return 1;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(o.seconds));
  std::uint64_t sent = 0;
  std::uint64_t attempted = 0;
  constexpr int kBatch = 64;
  for (Clock::time_point now = start; now < end; now = Clock::now()) {
    // Behind the schedule by a batch or more: send one; else wait.
    const double due =
        std::chrono::duration<double>(now - start).count() * o.rate;
    if (static_cast<double>(attempted) + kBatch > due) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    for (int i = 0; i < kBatch; ++i, ++attempted) {
      const std::vector<std::byte>& d = datagrams[attempted % datagrams.size()];
      const int fd = fds[attempted % fds.size()];
      if (::sendto(fd, d.data(), d.size(), 0, target->addr(), target->length) >=
          0) {
        ++sent;
      }
    }
  }
  const double elapsed =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("md_flood: sent %llu datagrams in %.1f s (%.0f/s), %zu sources\n",
              static_cast<unsigned long long>(sent), elapsed,
              static_cast<double>(sent) / elapsed, fds.size());
  for (const int fd : fds) ::close(fd);
  return sent > 0 ? 0 : 1;
}
