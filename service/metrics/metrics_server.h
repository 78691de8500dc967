// The HTTP endpoint behind `serve --metrics-listen HOST:PORT`: GET /metrics
// answers the service's counters in the Prometheus text format 0.0.4
// (service/metrics/metrics.h), on threads of its own, never the service's: the
// service's thread only publishes into a StatsMirror, and the HTTP worker
// reads it with relaxed loads and formats into its own buffer.
//
// The port is bound and answered from when Bind() returns, so a port that
// cannot be bound fails `serve` at start-up, before the journal is replayed
// or a datagram is taken; until Serve() (while the service recovers its
// journal) GET /metrics answers 503, so a scraper sees the target down
// rather than counters of zero. Anything but GET /metrics is answered 404.
// One request per connection.
//
// A connection that has sent nothing costs the process nothing: the kernel
// keeps it out of the accept queue (TCP_DEFER_ACCEPT) and drops it after
// about 30 s of silence. Two threads. The front accepts every connection
// that has sent bytes at once (epoll) and holds it until its request header
// is complete: only then does the worker see it, and cpp-httplib (Debian's
// libcpp-httplib-dev) parses, routes and answers it. A connection that has
// not sent a whole header 1 s after its accept is closed. At most
// kMaxConnections are held at once, those waiting for their header and
// those with the worker together; a new connection beyond that evicts
// (closes) the oldest one still waiting. So connections that send nothing,
// or half a request, can neither hold the worker nor take more than
// kMaxConnections of the process's descriptors, and a scrape (whose request
// follows its connect at once) is answered beside thousands of them. Only
// when all kMaxConnections are whole requests waiting for the worker does
// the front stop accepting (the kernel's listen backlog holds the rest).
#ifndef ORDERWIRE_SERVICE_METRICS_METRICS_SERVER_H_
#define ORDERWIRE_SERVICE_METRICS_METRICS_SERVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "net/udp.h"
#include "service/metrics/metrics.h"

namespace orderwire::service {

class MetricsServer {
 public:
  // Connections held at once at most (each one descriptor), waiting for
  // their request or being answered.
  static constexpr int kMaxConnections = 64;

  // Binds a TCP listening socket to `endpoint` (port 0: the kernel picks
  // one; local_endpoint() says which) and starts answering (503 until
  // Serve()). The socket does not take SO_REUSEPORT, so a second server on
  // a port in use fails. Errors: Unavailable naming the address and the
  // reason (errno text: "Address already in use", "Cannot assign requested
  // address", "Permission denied"). Starts two threads, with SIGINT and
  // SIGTERM blocked (base/background_thread.h).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Bind(
      const net::Endpoint& endpoint);

  // From now on GET /metrics reads `mirror` (which must outlive this
  // server) and formats it, on the server's worker thread.
  void Serve(const StatsMirror& mirror);

  // Stops answering and joins the threads: the request being answered is
  // finished first (its answer written within the 5 s write timeout), the
  // connections not yet answered are closed.
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

#endif  // ORDERWIRE_SERVICE_METRICS_METRICS_SERVER_H_
