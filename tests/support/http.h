// A one-request HTTP/1.0 client over loopback TCP, for the tests of the
// metrics endpoint (service/metrics/metrics_server.h) that run it in-process.
#ifndef ORDERWIRE_TESTS_SUPPORT_HTTP_H_
#define ORDERWIRE_TESTS_SUPPORT_HTTP_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace orderwire::test_support {

// Sends `method path HTTP/1.0` to 127.0.0.1:`port` and returns everything
// the server wrote until it closed the connection (status line, headers,
// body). Errors: DeadlineExceeded when the connection, the request and the
// whole answer took longer than `timeout` (saying which step was waiting);
// Internal when the connect, write or read failed (errno text).
absl::StatusOr<std::string> HttpRequest(
    std::uint16_t port, const std::string& method, const std::string& path,
    std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_HTTP_H_
