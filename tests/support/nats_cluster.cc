#include "tests/support/nats_cluster.h"

#include <arpa/inet.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace orderwire::test_support {
namespace {

using Clock = std::chrono::steady_clock;

// Binds `count` TCP sockets to 127.0.0.1:0 at the same time (so the ports
// differ), reads their ports and closes them. Another process may take a port
// before nats-server binds it; Start() then retries with fresh ports.
absl::StatusOr<std::vector<int>> PickFreePorts(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status =
          absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = absl::InternalError(
          absl::StrCat("bind 127.0.0.1:0: ", std::strerror(errno)));
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (const int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

std::string Tail(const std::string& path) { return FileTail(path, 2000); }

// The arguments of every nats-server the tests start: loopback, `port`,
// the name (-n) if any, JetStream with its store if `store_dir` is set.
std::vector<std::string> ServerArgs(const std::string& binary, int port,
                                    const std::string& name,
                                    const std::string& store_dir) {
  std::vector<std::string> args = {binary, "-a", "127.0.0.1", "-p",
                                   std::to_string(port)};
  if (!name.empty()) args.insert(args.end(), {"-n", name});
  if (!store_dir.empty()) {
    args.insert(args.end(), {"-js", "--store_dir", store_dir});
  }
  return args;
}

// One JetStream request through `url`: OK when the server (and, in a
// cluster, the meta leader) answers an account-info request.
absl::Status ProbeJetStream(const std::string& url) {
  natsOptions* opts = nullptr;
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  jsAccountInfo* info = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = natsOptions_SetURL(opts, url.c_str());
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 1000);
  if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
  if (s == NATS_OK) s = natsConnection_Connect(&conn, opts);
  jsOptions jo;
  if (s == NATS_OK) s = jsOptions_Init(&jo);
  jo.Wait = 1000;
  if (s == NATS_OK) s = natsConnection_JetStream(&js, conn, &jo);
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (s == NATS_OK) s = js_GetAccountInfo(&info, js, nullptr, &jerr);
  const std::string text =
      s == NATS_OK ? std::string()
                   : absl::StrCat(natsStatus_GetText(s), " (JetStream error ",
                                  static_cast<int>(jerr), ")");
  jsAccountInfo_Destroy(info);
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) return absl::UnavailableError(text);
  return absl::OkStatus();
}

// For a cluster: OK once the meta leader can place an R3 stream (it knows
// all three servers as current peers), which answering account-info
// requests does not yet mean (a stream created too early fails with
// JetStream error 10005, no suitable peers). Creates and deletes a small
// memory stream.
absl::Status ProbeReplicatedPlacement(const std::string& url) {
  natsConnection* conn = nullptr;
  jsCtx* js = nullptr;
  jsStreamInfo* info = nullptr;
  natsStatus s = natsConnection_ConnectTo(&conn, url.c_str());
  jsOptions jo;
  if (s == NATS_OK) s = jsOptions_Init(&jo);
  jo.Wait = 2000;
  if (s == NATS_OK) s = natsConnection_JetStream(&js, conn, &jo);
  jsStreamConfig config;
  if (s == NATS_OK) s = jsStreamConfig_Init(&config);
  const char* subjects[] = {"orderwire-ready-probe"};
  config.Name = "orderwire_ready_probe";
  config.Subjects = subjects;
  config.SubjectsLen = 1;
  config.Storage = js_MemoryStorage;
  config.Replicas = 3;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (s == NATS_OK) s = js_AddStream(&info, js, &config, nullptr, &jerr);
  if (s == NATS_OK) {
    s = js_DeleteStream(js, config.Name, nullptr, &jerr);
  }
  const std::string text =
      s == NATS_OK ? std::string()
                   : absl::StrCat(natsStatus_GetText(s), " (JetStream error ",
                                  static_cast<int>(jerr), ")");
  jsStreamInfo_Destroy(info);
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
  if (s != NATS_OK) return absl::UnavailableError(text);
  return absl::OkStatus();
}

}  // namespace

int NatsCluster::FreeLoopbackPort() {
  absl::StatusOr<std::vector<int>> ports = PickFreePorts(1);
  return ports.ok() ? ports->front() : 0;
}

std::string NatsCluster::LoopbackUrl(int port) {
  return absl::StrCat("nats://127.0.0.1:", port);
}

absl::StatusOr<std::unique_ptr<ChildProcess>> NatsCluster::SpawnServer(
    const LoneServer& server, std::string log_path) {
  absl::StatusOr<std::string> binary = FindServerBinary();
  if (!binary.ok()) return binary.status();
  return ChildProcess::Spawn(
      ServerArgs(*binary, server.port, server.name, server.store_dir),
      std::move(log_path));
}

absl::StatusOr<std::string> NatsCluster::FindServerBinary() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) dirs.push_back(dir);
  }
  dirs.emplace_back("/usr/sbin");
  dirs.emplace_back("/usr/local/sbin");
  for (const auto& dir : dirs) {
    std::string candidate = absl::StrCat(dir, "/nats-server");
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(
      "nats-server not found on PATH or in /usr/sbin: install the Debian "
      "package nats-server (scripts/setup.sh does)");
}

absl::StatusOr<std::unique_ptr<NatsCluster>> NatsCluster::Start(
    int nodes, std::chrono::milliseconds ready_timeout) {
  if (nodes != 1 && nodes != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("NatsCluster: 1 or 3 nodes, not ", nodes));
  }
  absl::StatusOr<std::string> binary = FindServerBinary();
  if (!binary.ok()) return binary.status();

  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::unique_ptr<NatsCluster> cluster(new NatsCluster());
    cluster->dir_ = std::make_unique<ScratchDir>("ow-nats");
    if (cluster->dir_->path().empty()) {
      return absl::InternalError("NatsCluster: cannot create a scratch dir");
    }
    absl::StatusOr<std::vector<int>> ports = PickFreePorts(2 * nodes);
    if (!ports.ok()) return ports.status();
    for (std::size_t i = 0; i < static_cast<std::size_t>(nodes); ++i) {
      Node node;
      node.name = absl::StrCat("n", i);
      node.client_port = (*ports)[2 * i];
      node.cluster_port = (*ports)[2 * i + 1];
      node.log_path = cluster->dir_->Sub(absl::StrCat(node.name, ".log"));
      cluster->nodes_.push_back(std::move(node));
    }
    last = absl::OkStatus();
    for (auto& node : cluster->nodes_) {
      last = cluster->Launch(*binary, node);
      if (!last.ok()) break;
    }
    // Ready when every node answers a JetStream request (in a cluster that
    // needs the meta leader) while every process is still running.
    const auto deadline = Clock::now() + ready_timeout;
    for (std::size_t i = 0; last.ok() && i < cluster->nodes_.size(); ++i) {
      Node& node = cluster->nodes_[i];
      while (true) {
        if (std::optional<int> wstatus = node.process->Exited();
            wstatus.has_value()) {
          node.process.reset();
          last = absl::UnavailableError(absl::StrCat(
              "nats-server ", node.name, " exited (status ", *wstatus,
              ") before it was ready; its log:\n", Tail(node.log_path)));
          break;
        }
        absl::Status probe =
            ProbeJetStream(cluster->NodeUrl(static_cast<int>(i)));
        if (probe.ok()) break;
        if (Clock::now() > deadline) {
          last = absl::DeadlineExceededError(absl::StrCat(
              "nats-server ", node.name, ": JetStream not ready after ",
              ready_timeout.count(), " ms (", probe.message(), "); its log:\n",
              Tail(node.log_path)));
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    while (last.ok() && nodes > 1) {
      absl::Status probe = ProbeReplicatedPlacement(cluster->NodeUrl(0));
      if (probe.ok()) break;
      if (Clock::now() > deadline) {
        last = absl::DeadlineExceededError(
            absl::StrCat("nats cluster: cannot place an R3 stream after ",
                         ready_timeout.count(), " ms (", probe.message(),
                         "); log of n0:\n", Tail(cluster->nodes_[0].log_path)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (last.ok()) return cluster;
    // A port taken between PickFreePorts and the bind: try fresh ports.
  }
  return last;
}

absl::Status NatsCluster::Launch(const std::string& binary, Node& node) {
  std::vector<std::string> args =
      ServerArgs(binary, node.client_port, node.name,
                 dir_->Sub(absl::StrCat(node.name, "-store")));
  if (nodes_.size() > 1) {
    std::vector<std::string> routes;
    for (const auto& other : nodes_) {
      if (&other != &node) {
        routes.push_back(absl::StrCat("nats://127.0.0.1:", other.cluster_port));
      }
    }
    args.insert(args.end(),
                {"--cluster_name", "orderwire-test", "--cluster",
                 absl::StrCat("nats://127.0.0.1:", node.cluster_port),
                 "--routes", absl::StrJoin(routes, ",")});
  }
  auto process = ChildProcess::Spawn(std::move(args), node.log_path);
  if (!process.ok()) return process.status();
  node.process = *std::move(process);
  return absl::OkStatus();
}

NatsCluster::~NatsCluster() { KillAll(); }

void NatsCluster::KillAll() {
  for (auto& node : nodes_) node.process.reset();
}

std::string NatsCluster::ServersUrl() const {
  std::vector<std::string> urls;
  urls.reserve(nodes_.size());
  for (int i = 0; i < node_count(); ++i) urls.push_back(NodeUrl(i));
  return absl::StrJoin(urls, ",");
}

std::string NatsCluster::NodeUrl(int node) const {
  return LoopbackUrl(nodes_.at(static_cast<std::size_t>(node)).client_port);
}

std::string NatsCluster::NodeName(int node) const {
  return nodes_.at(static_cast<std::size_t>(node)).name;
}

int NatsCluster::NodeByName(std::string_view name) const {
  for (int i = 0; i < node_count(); ++i) {
    if (nodes_[static_cast<std::size_t>(i)].name == name) return i;
  }
  return -1;
}

absl::Status NatsCluster::Kill(int node) {
  Node& n = nodes_.at(static_cast<std::size_t>(node));
  if (n.process == nullptr || !n.process->running()) {
    return absl::FailedPreconditionError(
        absl::StrCat("nats-server ", n.name, " is not running"));
  }
  absl::Status killed = n.process->Kill();
  n.process.reset();
  return killed;
}

absl::Status NatsCluster::Pause(int node) {
  const Node& n = nodes_.at(static_cast<std::size_t>(node));
  if (n.process == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("nats-server ", n.name, " is not running"));
  }
  return n.process->Pause();
}

absl::Status NatsCluster::Resume(int node) {
  const Node& n = nodes_.at(static_cast<std::size_t>(node));
  if (n.process == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("nats-server ", n.name, " is not running"));
  }
  return n.process->Resume();
}

absl::Status NatsCluster::WaitForJetStream(const std::string& url,
                                           std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    absl::Status probe = ProbeJetStream(url);
    if (probe.ok()) return probe;
    if (Clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("JetStream at ", url, " not answering after ",
                       timeout.count(), " ms: ", probe.message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::unique_ptr<NatsCluster> StartNatsCluster(int nodes) {
  absl::StatusOr<std::unique_ptr<NatsCluster>> cluster =
      NatsCluster::Start(nodes);
  if (!cluster.ok()) {
    ADD_FAILURE() << "cannot start nats-server: " << cluster.status();
    return nullptr;
  }
  return *std::move(cluster);
}

}  // namespace orderwire::test_support
