// The HTTP endpoint behind `serve --metrics-listen HOST:PORT`: GET /metrics
// answers the service's counters in the Prometheus text format 0.0.4
// (service/metrics.h), served by cpp-httplib (Debian's libcpp-httplib-dev)
// on threads of its own, never the service's: the service's thread only
// publishes into a StatsMirror, and the HTTP thread reads it with relaxed
// loads and formats into its own buffer.
//
// The port is bound and answered from when Bind() returns, so a port that
// cannot be bound fails `serve` at start-up, before the journal is replayed
// or a datagram is taken; until Serve() (while the service recovers its
// journal) GET /metrics answers 503, so a scraper sees the target down
// rather than counters of zero. Anything but GET /metrics is answered 404;
// a connection that sends no request is dropped after 1 second. One
// request per connection, one worker thread beside the accept thread, and
// at most 4 connections waiting for it: beyond that the accept thread
// serves one itself and accepts nothing meanwhile, so a flood of idle
// connections waits in the kernel's backlog instead of holding the
// process's descriptors.
#ifndef ORDERWIRE_SERVICE_METRICS_SERVER_H_
#define ORDERWIRE_SERVICE_METRICS_SERVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "net/udp.h"
#include "service/metrics.h"

namespace orderwire::service {

class MetricsServer {
 public:
  // Binds a TCP listening socket to `endpoint` (port 0: the kernel picks
  // one; local_endpoint() says which) and starts answering (503 until
  // Serve()). The socket does not take
  // SO_REUSEPORT, so a second server on a port in use fails. Errors:
  // Unavailable naming the address and the reason (errno text: "Address
  // already in use", "Cannot assign requested address", "Permission
  // denied").
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Bind(
      const net::Endpoint& endpoint);

  // From now on GET /metrics reads `mirror` (which must outlive this
  // server) and formats it, on the server's thread.
  void Serve(const StatsMirror& mirror);

  // Stops answering and joins the thread (a request being answered is
  // finished first).
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The bound address, with the port the kernel chose for port 0.
  [[nodiscard]] const net::Endpoint& local_endpoint() const;

 private:
  class Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_METRICS_SERVER_H_
