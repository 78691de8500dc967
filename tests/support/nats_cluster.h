// NatsCluster: real nats-server processes for the replication tests and
// benchmarks. Starts 1 or 3 servers on free loopback ports with JetStream on
// and their stores in a scratch directory, waits until JetStream answers
// (for 3 nodes: until the cluster has a JetStream meta leader that can place
// an R3 stream, checked by creating and deleting one), and
// can kill, stop (SIGSTOP) or continue (SIGCONT) one node. The destructor
// kills and reaps every node still running and removes the stores, so a
// failed assertion leaves no process behind; each child also gets
// PR_SET_PDEATHSIG, so a crashed test process takes its servers with it.
//
// For a test: StartNatsCluster (a cluster, or a test failure that says why
// not) and SharedNatsClusterTest (a suite whose tests share one cluster).
//
// nats-server is looked up on PATH, then in /usr/sbin (Debian's package puts
// it there); scripts/setup.sh installs it. A missing binary is an error that
// names the package, not a skip: CI installs it.
#ifndef ORDERWIRE_TESTS_SUPPORT_NATS_CLUSTER_H_
#define ORDERWIRE_TESTS_SUPPORT_NATS_CLUSTER_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/support/child_process.h"
#include "tests/support/scratch_dir.h"

namespace orderwire::test_support {

class NatsCluster {
 public:
  // Starts `nodes` servers (1 or 3) and waits up to `ready_timeout` for
  // JetStream to answer on every node. Failure: the server's exit and the
  // tail of its log, or which readiness check timed out.
  static absl::StatusOr<std::unique_ptr<NatsCluster>> Start(
      int nodes,
      std::chrono::milliseconds ready_timeout = std::chrono::seconds(30));

  NatsCluster(const NatsCluster&) = delete;
  NatsCluster& operator=(const NatsCluster&) = delete;
  ~NatsCluster();

  [[nodiscard]] int node_count() const {
    return static_cast<int>(nodes_.size());
  }
  // "nats://127.0.0.1:P0,nats://127.0.0.1:P1,...": every node's client URL.
  [[nodiscard]] std::string ServersUrl() const;
  [[nodiscard]] std::string NodeUrl(int node) const;
  // The server name given with -n: "n0", "n1", "n2" (JetStream reports the
  // stream leader by this name).
  [[nodiscard]] std::string NodeName(int node) const;
  // The node called `name`, or -1.
  [[nodiscard]] int NodeByName(std::string_view name) const;

  // SIGKILL the node and reap it. Error if it is not running.
  absl::Status Kill(int node);
  // SIGSTOP the node and wait until it has stopped; SIGCONT it.
  absl::Status Pause(int node);
  absl::Status Resume(int node);

  // Waits until a JetStream request (account info) answers through
  // `url`, or `timeout` passes.
  static absl::Status WaitForJetStream(const std::string& url,
                                       std::chrono::milliseconds timeout);

  // A loopback TCP port free now (the kernel's pick for port 0), or 0. For
  // a test that starts a server of its own (SpawnServer).
  static int FreeLoopbackPort();
  // "nats://127.0.0.1:`port`".
  static std::string LoopbackUrl(int port);

  // A lone nats-server that a test starts itself, for what a cluster does
  // not give: a server without JetStream, or one stopped and started again
  // on the same port and store.
  struct LoneServer {
    // The client port, on 127.0.0.1 (FreeLoopbackPort()).
    int port = 0;
    // The server's name (-n); empty: nats-server's own.
    std::string name{};
    // JetStream on (-js), its store in this directory; empty: JetStream off.
    std::string store_dir{};
  };
  // Spawns nats-server (FindServerBinary) as `server` says, its output to
  // `log_path`. Returns once the process is started, not once it answers
  // (WaitForJetStream). Errors: no nats-server, the spawn's.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> SpawnServer(
      const LoneServer& server, std::string log_path);

  // Path of nats-server, or an error naming the package to install.
  static absl::StatusOr<std::string> FindServerBinary();

 private:
  struct Node {
    std::string name;
    int client_port = 0;
    int cluster_port = 0;
    std::unique_ptr<ChildProcess> process;  // null: not running
    std::string log_path;
  };
  NatsCluster() = default;
  absl::Status Launch(const std::string& binary, Node& node);
  void KillAll();

  std::unique_ptr<ScratchDir> dir_;
  std::vector<Node> nodes_;
};

// NatsCluster::Start(nodes) for a test: the cluster, or null after a
// failure of the test that says why (for the test to stop on with
// ASSERT_NE(cluster, nullptr)).
std::unique_ptr<NatsCluster> StartNatsCluster(int nodes);

// A test suite whose tests share one cluster of `kNodes` nodes, cluster_:
// started before its first test and killed after its last. Each test fails
// at its start when the cluster could not be started.
template <int kNodes>
class SharedNatsClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = StartNatsCluster(kNodes).release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static inline NatsCluster* cluster_ = nullptr;
};

}  // namespace orderwire::test_support

#endif  // ORDERWIRE_TESTS_SUPPORT_NATS_CLUSTER_H_
