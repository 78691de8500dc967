// The service's helper threads never take SIGINT or SIGTERM
// (base/background_thread.h): serve's stop signals must reach the service's
// own thread, whose blocking wait they interrupt. Each test compares the
// threads of the process that let the stop signals in before and after the
// helper starts: a helper started with a plain std::thread adds one.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/metrics/metrics.h"
#include "service/metrics/metrics_server.h"
#include "service/retention.h"
#include "tests/support/http.h"
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
  // One request, so that both threads (the front and the worker) have run.
  auto answer = test_support::HttpRequest((*server)->local_endpoint().port(),
                                          "GET", "/metrics");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->substr(0, 12), "HTTP/1.1 200");
  EXPECT_GE(test_support::ThreadCount(), threads_before + 2)
      << "the front and its worker";
  EXPECT_EQ(ThreadsTakingStopSignals(), before);
}

}  // namespace
}  // namespace orderwire::service
