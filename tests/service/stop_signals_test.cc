// The service's helper threads never take SIGINT or SIGTERM
// (base/background_thread.h): serve's stop signals must reach the service's
// own thread, whose blocking wait they interrupt. Each test compares the
// threads of the process that let the stop signals in before and after the
// helper starts: a helper started with a plain std::thread adds one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/metrics.h"
#include "service/metrics_server.h"
#include "service/retention.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/threads.h"

namespace orderwire::service {
namespace {

using test_support::ThreadsTakingStopSignals;

TEST(StopSignals, TheRetentionThreadBlocksThem) {
  test_support::ScratchDir dir;
  const auto before = ThreadsTakingStopSignals();
  const std::size_t threads_before = test_support::ThreadCount();
  RetentionOptions options;
  options.directory = dir.path();
  options.interval_ms = 60'000;
  options.on_event = [](std::string_view) {};
  RetentionWorker worker(options);
  ASSERT_EQ(test_support::ThreadCount(), threads_before + 1)
      << "the worker runs on a thread of its own";
  EXPECT_EQ(ThreadsTakingStopSignals(), before);
}

TEST(StopSignals, TheMetricsThreadsBlockThem) {
  const auto before = ThreadsTakingStopSignals();
  const std::size_t threads_before = test_support::ThreadCount();
  auto endpoint = net::Endpoint::Parse("127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto server = MetricsServer::Bind(*endpoint);
  ASSERT_TRUE(server.ok()) << server.status();
  StatsMirror mirror;
  (*server)->Serve(mirror);
  // One request, so that the worker beside the accept thread exists too.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons((*server)->local_endpoint().port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                      sizeof(address)),
            0);
  const std::string request = "GET /metrics HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::write(fd, request.data(), request.size()),
            static_cast<ssize_t>(request.size()));
  char answer[16] = {};
  ASSERT_GT(::read(fd, answer, sizeof(answer)), 0);
  ::close(fd);
  EXPECT_EQ(std::string(answer, 12), "HTTP/1.1 200");
  EXPECT_GE(test_support::ThreadCount(), threads_before + 2)
      << "the accept thread and its worker";
  EXPECT_EQ(ThreadsTakingStopSignals(), before);
}

}  // namespace
}  // namespace orderwire::service
