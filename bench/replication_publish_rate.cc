// replication_publish_rate: JetStream publish rate and acknowledgement
// latency of journal-group-sized messages, on nats-server processes it starts
// itself (tests/support/nats_cluster.h: 1 node for R1, 3 nodes for R3,
// loopback).
//
// Three publishers of the same load, measured in the same run:
//   raw       libnats's own JetStream async publish (js_PublishAsync,
//             PublishAsync.MaxPending = window, no headers): the baseline;
//   raw_headers  the same with Nats-Msg-Id and Nats-Expected-Last-Sequence
//             on each message (the server's cost of the two headers);
//   journal   replication::JournalPublisher (Nats-Msg-Id,
//             Nats-Expected-Last-Sequence, acks in order), with the
//             acknowledgement latency of every message (Publish call to
//             in-order acknowledgement).
// Each on a fresh stream. Prints one line per measurement:
//   replicas=R publisher=P size=B window=W messages=N msgs_per_s=X
//   ack_p50_us=Y ack_p99_us=Z
// (latency only for `journal`).
//
//   replication_publish_rate [--replicas 1|3] [--messages N] [--size BYTES]
//                     [--window W] [--repeat K]
#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "replication/journal_publisher.h"
#include "replication/journal_stream.h"
#include "tests/support/nats_cluster.h"

namespace {

using Clock = std::chrono::steady_clock;
using orderwire::replication::JournalPublisher;
using orderwire::replication::PublishAck;
using orderwire::replication::PublisherOptions;

struct Args {
  int replicas = 1;
  std::uint64_t messages = 20000;
  std::size_t size = 4096;
  std::uint32_t window = 32;
  int repeat = 1;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "replication_publish_rate: %s\nusage: replication_publish_rate "
               "[--replicas "
               "1|3] [--messages N] [--size BYTES] [--window W] [--repeat "
               "K]\n",
               why);
  std::exit(2);
}

Args Parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage(("missing value after " + flag).c_str());
    const long long value = std::strtoll(argv[++i], nullptr, 10);
    if (value <= 0) Usage(("bad value for " + flag).c_str());
    if (flag == "--replicas") {
      args.replicas = static_cast<int>(value);
    } else if (flag == "--messages") {
      args.messages = static_cast<std::uint64_t>(value);
    } else if (flag == "--size") {
      args.size = static_cast<std::size_t>(value);
    } else if (flag == "--window") {
      args.window = static_cast<std::uint32_t>(value);
    } else if (flag == "--repeat") {
      args.repeat = static_cast<int>(value);
    } else {
      Usage(("unknown flag " + flag).c_str());
    }
  }
  if (args.replicas != 1 && args.replicas != 3) Usage("--replicas 1 or 3");
  return args;
}

double Rate(std::uint64_t n, Clock::duration elapsed) {
  return static_cast<double>(n) /
         std::chrono::duration<double>(elapsed).count();
}

// libnats's JetStream async publish, MaxPending = window: the baseline.
// With `headers`, each message also carries the journal publisher's
// Nats-Msg-Id and Nats-Expected-Last-Sequence (publisher=raw_headers): the
// server's share of their cost, without our publisher's client side.
bool RunRaw(const std::string& servers, const std::string& engine,
            const Args& args, const std::vector<std::byte>& payload,
            bool headers) {
  const char* name = headers ? "raw_headers" : "raw";
  orderwire::replication::JournalStreamSpec spec;
  spec.engine_name = engine;
  spec.replicas = args.replicas;
  auto stream = orderwire::replication::EnsureJournalStream(servers, spec);
  if (!stream.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, stream.status().ToString().c_str());
    return false;
  }
  natsConnection* conn = nullptr;
  natsOptions* opts = nullptr;
  jsCtx* js = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  // Any one server of the cluster will do.
  const std::string first_server = servers.substr(0, servers.find(','));
  if (s == NATS_OK) s = natsOptions_SetURL(opts, first_server.c_str());
  if (s == NATS_OK) s = natsOptions_SetSendAsap(opts, true);
  if (s == NATS_OK) s = natsConnection_Connect(&conn, opts);
  jsOptions jo;
  if (s == NATS_OK) s = jsOptions_Init(&jo);
  jo.PublishAsync.MaxPending = args.window;
  jo.PublishAsync.StallWait = 10000;
  if (s == NATS_OK) s = natsConnection_JetStream(&js, conn, &jo);
  const std::string subject = orderwire::replication::JournalSubject(engine);
  const auto start = Clock::now();
  for (std::uint64_t i = 0; i < args.messages && s == NATS_OK; ++i) {
    if (!headers) {
      s = js_PublishAsync(js, subject.c_str(), payload.data(),
                          static_cast<int>(payload.size()), nullptr);
      continue;
    }
    natsMsg* msg = nullptr;
    const std::string msg_id = "1-" + std::to_string(i + 1);
    const std::string expected = std::to_string(i);
    s = natsMsg_Create(&msg, subject.c_str(), nullptr,
                       reinterpret_cast<const char*>(payload.data()),
                       static_cast<int>(payload.size()));
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", msg_id.c_str());
    if (s == NATS_OK) {
      s = natsMsgHeader_Set(msg, "Nats-Expected-Last-Sequence",
                            expected.c_str());
    }
    if (s == NATS_OK) s = js_PublishMsgAsync(js, &msg, nullptr);
    natsMsg_Destroy(msg);  // no-op when the library took it
  }
  jsPubOptions po;
  if (s == NATS_OK) s = jsPubOptions_Init(&po);
  po.MaxWait = 60000;
  if (s == NATS_OK) s = js_PublishAsyncComplete(js, &po);
  const auto elapsed = Clock::now() - start;
  // js_PublishAsyncComplete does not report refused messages (no error
  // handler here): count what the stream holds.
  if (s == NATS_OK) {
    auto after = orderwire::replication::GetJournalStreamState(servers, engine);
    if (!after.ok() || after->last_sequence != args.messages) {
      std::fprintf(stderr, "%s: the stream holds %llu of %llu messages\n", name,
                   static_cast<unsigned long long>(
                       after.ok() ? after->last_sequence : 0),
                   static_cast<unsigned long long>(args.messages));
      s = NATS_ERR;
    }
  }
  if (s == NATS_OK) {
    std::printf(
        "replicas=%d publisher=%s size=%zu window=%u messages=%llu "
        "msgs_per_s=%.0f\n",
        args.replicas, name, args.size, args.window,
        static_cast<unsigned long long>(args.messages),
        Rate(args.messages, elapsed));
  } else {
    std::fprintf(stderr, "%s: %s\n", name, natsStatus_GetText(s));
  }
  jsCtx_Destroy(js);
  natsConnection_Destroy(conn);
  natsOptions_Destroy(opts);
  return s == NATS_OK;
}

bool RunJournal(const std::string& servers, const std::string& engine,
                const Args& args, const std::vector<std::byte>& payload) {
  std::vector<std::int64_t> latencies_ns;
  latencies_ns.reserve(args.messages);
  PublisherOptions options;
  options.servers = servers;
  options.stream.engine_name = engine;
  options.stream.replicas = args.replicas;
  options.epoch = 1;
  options.window = args.window;
  options.ack_timeout = std::chrono::seconds(30);
  options.on_ack = [&latencies_ns](const PublishAck& ack) {
    latencies_ns.push_back(ack.latency.count());
  };
  auto publisher = JournalPublisher::Open(std::move(options));
  if (!publisher.ok()) {
    std::fprintf(stderr, "journal: %s\n",
                 publisher.status().ToString().c_str());
    return false;
  }
  const auto start = Clock::now();
  for (std::uint64_t i = 1; i <= args.messages; ++i) {
    auto sent = (*publisher)->Publish(i, payload);
    if (!sent.ok()) {
      std::fprintf(stderr, "journal: %s\n", sent.status().ToString().c_str());
      return false;
    }
  }
  if (absl::Status flushed = (*publisher)->Flush(std::chrono::seconds(60));
      !flushed.ok()) {
    std::fprintf(stderr, "journal: %s\n", flushed.ToString().c_str());
    return false;
  }
  const auto elapsed = Clock::now() - start;
  publisher->reset();
  std::sort(latencies_ns.begin(), latencies_ns.end());
  auto at = [&](double q) {
    const auto i = static_cast<std::size_t>(
        q * static_cast<double>(latencies_ns.size() - 1));
    return static_cast<double>(latencies_ns[i]) / 1000.0;
  };
  std::printf(
      "replicas=%d publisher=journal size=%zu window=%u messages=%llu "
      "msgs_per_s=%.0f ack_p50_us=%.0f ack_p99_us=%.0f\n",
      args.replicas, args.size, args.window,
      static_cast<unsigned long long>(args.messages),
      Rate(args.messages, elapsed), at(0.50), at(0.99));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  bool ok = true;
  {
    auto cluster =
        orderwire::test_support::NatsCluster::Start(args.replicas == 3 ? 3 : 1);
    if (!cluster.ok()) {
      std::fprintf(stderr, "replication_publish_rate: %s\n",
                   cluster.status().ToString().c_str());
      return 1;
    }
    std::vector<std::byte> payload(args.size);
    for (std::size_t i = 0; i < payload.size(); ++i) {
      payload[i] = static_cast<std::byte>(i * 131 + 7);
    }
    const std::string servers = (*cluster)->ServersUrl();
    for (int r = 0; r < args.repeat && ok; ++r) {
      // Alternate the order so neither side always runs on a warmer server.
      const std::string raw = "bench_raw_" + std::to_string(r);
      const std::string raw_headers = "bench_rawh_" + std::to_string(r);
      const std::string journal = "bench_journal_" + std::to_string(r);
      if (r % 2 == 0) {
        ok = RunRaw(servers, raw, args, payload, false) &&
             RunRaw(servers, raw_headers, args, payload, true) &&
             RunJournal(servers, journal, args, payload);
      } else {
        ok = RunJournal(servers, journal, args, payload) &&
             RunRaw(servers, raw_headers, args, payload, true) &&
             RunRaw(servers, raw, args, payload, false);
      }
      std::fflush(stdout);
    }
  }
  nats_CloseAndWait(5000);
  return ok ? 0 : 1;
}
