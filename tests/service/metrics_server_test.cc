// MetricsServer (service/metrics_server.h) in-process: what a scraper sees
// before the service has recovered its journal (503 with the reason), after
// (200, the Prometheus text of the mirror), and for anything but
// GET /metrics.
#include "service/metrics_server.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/udp.h"
#include "service/metrics.h"
#include "service/service.h"
#include "tests/support/http.h"

namespace orderwire::service {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Get(const MetricsServer& server, const std::string& path,
                const std::string& method = "GET") {
  auto answer =
      test_support::HttpRequest(server.local_endpoint().port(), method, path);
  EXPECT_TRUE(answer.ok()) << answer.status();
  return answer.ok() ? *answer : "";
}

TEST(MetricsServer, AnswersUnavailableUntilTheServiceServesThenTheCounters) {
  auto endpoint = net::Endpoint::Parse("127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto server = MetricsServer::Bind(*endpoint);
  ASSERT_TRUE(server.ok()) << server.status();

  // Bound, journal still recovering: 503 saying why, and no samples.
  const std::string starting = Get(**server, "/metrics");
  EXPECT_THAT(starting, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(starting, HasSubstr("is starting (recovering its journal)"));
  EXPECT_THAT(starting, ::testing::Not(HasSubstr("orderwire_")));

  StatsMirror mirror;
  ServiceStats stats;
  stats.datagrams_in = 1234;
  mirror.Publish(stats);
  (*server)->Serve(mirror);
  const std::string serving = Get(**server, "/metrics");
  EXPECT_THAT(serving, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(serving, HasSubstr("orderwire_datagrams_received_total 1234"));
}

TEST(MetricsServer, AnswersNotFoundForOtherPathsAndNoOtherMethod) {
  auto endpoint = net::Endpoint::Parse("127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  auto server = MetricsServer::Bind(*endpoint);
  ASSERT_TRUE(server.ok()) << server.status();
  StatsMirror mirror;
  (*server)->Serve(mirror);
  for (const char* path : {"/", "/metric", "/metrics/x", "/healthz"}) {
    EXPECT_THAT(Get(**server, path), StartsWith("HTTP/1.1 404")) << path;
  }
  const std::string post = Get(**server, "/metrics", "POST");
  EXPECT_THAT(post, StartsWith("HTTP/1.1 4")) << post;  // refused, no metrics
  EXPECT_THAT(post, ::testing::Not(HasSubstr("orderwire_")));
}

}  // namespace
}  // namespace orderwire::service
