// `orderwire serve` and `orderwire submit`: the UDP service and its client.
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "auth/mac.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/serve_standby.h"
#include "client/run_client.h"
#include "cluster/primary_replication.h"
#include "codec/command.h"
#include "codec/kind_table.h"
#include "codec/messages.h"
#include "codec/types.h"
#include "config/service_config.h"
#include "engine/workload.h"
#include "journal/format.h"
#include "journal/retention.h"
#include "journal/writer.h"
#include "service/metrics/metrics.h"
#include "service/metrics/metrics_server.h"
#include "service/service.h"

namespace orderwire::cli {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

void InstallStopHandlers() {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// --nats-start-timeout-s's default, ReplicationOptions' own.
constexpr std::string_view kNatsStartTimeoutDefault = "30";
static_assert(cluster::kDefaultStartTimeout == std::chrono::seconds(30),
              "kNatsStartTimeoutDefault is cluster::kDefaultStartTimeout");

const CommandSpec kServeSpec{
    .name = "serve",
    .synopsis =
        "--journal DIR [--listen HOST:PORT] [--durability MODE] "
        "[--config FILE] [--reconfigure] [--stats-interval S] "
        "[--stats-json FILE] [--log-refusals] [--accept-loss] "
        "[--snapshot-every RECORDS|DURATION] [--no-snapshot]\n"
        "[--retain SEGMENTS|BYTES|DURATION] [--send auto|sendmmsg|gso] "
        "[--metrics-listen HOST:PORT]\n"
        "[--md-target HOST:PORT[,...] [--md-ttl N] [--md-interface IF] "
        "[--md-heartbeat-ms MS] [--md-request-listen HOST:PORT "
        "[--md-ring-bytes N]]]\n"
        "--standby --nats nats://HOST:PORT[,...] [--engine-name NAME] "
        "--journal DIR "
        "[--durability MODE] [--config FILE] [--stats-interval S] "
        "[--snapshot-every RECORDS] [--member-name NAME] "
        "[--seed-snapshot FILE]\n"
        "[--no-takeover | [--listen HOST:PORT] [--lease-ms MS] "
        "[--replicas 1|3] [--replication-window N] [--ack-timeout-ms MS] "
        "[--send MODE]]",
    .summary = "Run the UDP order-entry service (or its hot standby).",
    .details =
        "Receives command datagrams, journals their frames verbatim, and once\n"
        "they are durable under --durability runs them through the engine and\n"
        "sends each report to the session that owns the order. On start it\n"
        "recovers the journal in DIR (a torn tail is cut off and reported;\n"
        "damage anywhere else refuses to start: every retained record is\n"
        "verified, with a snapshot or without) and replays it, so sessions\n"
        "carry on where they were. Records the journal's checkpoint says\n"
        "were durable that are gone (a truncated, deleted or missing\n"
        "segment) refuse the start, naming the indexes and files, unless\n"
        "--accept-loss: then the journal is cut to its whole prefix, the\n"
        "rest set aside as <segment>.lost, and the loss is printed (even\n"
        "with --quiet). SIGINT or SIGTERM stops reading, makes\n"
        "everything durable, sends the last reports, prints the counters and\n"
        "exits 0. Without --config: instruments 1-1024, any session may trade\n"
        "for any account from loopback only (see docs/SERVICE.md).\n\n"
        "The journal pins the settings that decide how its records apply (the\n"
        "engine's limits and max_sessions): a new journal pins the ones "
        "given.\n"
        "A restart whose --config (or defaults) differs from what the journal\n"
        "pins is refused with each difference named (exit 1), unless\n"
        "--reconfigure is given: then a new segment pins the new settings "
        "from\n"
        "the next index, where a replay changes them too.\n\n"
        "--snapshot-every writes a snapshot of the state to DIR/snapshots\n"
        "(every N records, e.g. 1000000, or every DURATION with new records,\n"
        "e.g. 30s, 5m, 500ms) from a forked child, so the service does not\n"
        "wait for it. A restart starts from the newest snapshot that verifies\n"
        "and replays only the records after it; a damaged one is reported and\n"
        "the previous one (or the whole journal) used. --no-snapshot replays\n"
        "the whole journal instead.\n\n"
        "--retain keeps the journal bounded: at most once a second, a helper\n"
        "thread (never the service loop) removes the oldest whole segments\n"
        "beyond the window (--retain 8: the newest 8 segments; 10GiB: the\n"
        "newest segments up to that size; 7d: segments with records of the\n"
        "last 7 days; units B KB MB GB TB KiB MiB GiB TiB, s m h d w), but\n"
        "only those strictly before the index + 1 of the newest snapshot (in\n"
        "DIR/snapshots) that verifies as a restart would load it: nothing a\n"
        "restart needs is removed, a damaged snapshot is reported and not\n"
        "relied on, and a journal without a valid snapshot is never pruned.\n"
        "Each prune is printed.\n"
        "A pruned journal restarts only from a snapshot.\n\n"
        "--send chooses how report datagrams leave: gso sends each session's\n"
        "datagrams in runs with UDP generic segmentation offload "
        "(UDP_SEGMENT,\n"
        "one trip through the kernel per run), sendmmsg one entry per\n"
        "datagram; auto (the default) takes gso when the kernel has it. The\n"
        "datagrams a client receives are the same either way; the banner and\n"
        "the counters say which path is in use.\n\n"
        "--metrics-listen serves every counter at GET /metrics over HTTP in\n"
        "the Prometheus text format (docs/SERVICE.md \"Metrics\"), from a\n"
        "thread of its own; a port that cannot be bound stops the start.\n\n"
        "--md-target publishes the market-data feed (docs/MARKETDATA.md):\n"
        "every applied record's messages, once durable, in packets to one\n"
        "multicast group (--md-ttl, --md-interface) or to each of a list of\n"
        "unicast HOST:PORTs; a Heartbeat at start and when idle for\n"
        "--md-heartbeat-ms; EndOfSession on a clean stop. A standby\n"
        "publishes once it has taken over, continuing the same feed.\n"
        "--md-request-listen answers retransmission requests for it, on a\n"
        "thread of its own, from a ring of the last --md-ring-bytes of\n"
        "the live feed (per source: 100 requests a second).\n\n"
        "--durability replicated answers a command once it is durable here\n"
        "AND acknowledged by the engine's journal stream on NATS JetStream\n"
        "(--nats). Before it serves, the start takes the lease (--lease),\n"
        "reads the stream's end and publishes the local records it lacks. A\n"
        "step that fails on a transient NATS error (no answer in time, no\n"
        "server, no responders) is printed once (\"waiting for NATS: ...\")\n"
        "and tried again, 100 ms doubling to 1 s, for up to\n"
        "--nats-start-timeout-s in all (then exit 1 naming the step); a\n"
        "refusal (a lease held by another member, a stream with other\n"
        "settings, a node behind the stream, a fence, a permission error)\n"
        "stops the start at once.\n\n"
        "--standby runs the hot standby (docs/REPLICATION.md): it follows the\n"
        "engine's journal stream on NATS JetStream (--nats, --engine-name)\n"
        "from its own journal's last index, writes the primary's records to\n"
        "DIR with the primary's indexes and applies them like the service, so\n"
        "its state is the primary's; it opens no UDP port and answers no\n"
        "client. A gap, a message that does not verify or a local record that\n"
        "differs from the primary's stops it (exit 1), nothing of it "
        "appended.\n"
        "--config must be the primary's.\n"
        "An old primary restarted with --standby on its own journal rejoins:\n"
        "local records the stream never acknowledged, where a new primary's\n"
        "epoch marker took over, are moved to DIR/cut/FIRST-LAST and the\n"
        "standby follows the new primary (--no-rejoin: refuse instead).\n"
        "--seed-snapshot FILE makes a new standby's journal in DIR (missing\n"
        "or empty) from a primary's snapshot at index S (its\n"
        "journal/snapshots/*.ows): the snapshot is verified and copied into\n"
        "DIR/snapshots, the journal starts at S + 1, and the standby starts\n"
        "from the snapshot and follows the stream from S + 1, so the stream\n"
        "need not hold the journal from index 1. Refused (exit 2): a DIR that\n"
        "holds anything, a file that is not a valid snapshot, a snapshot\n"
        "whose configuration differs from --config. A stream that does not\n"
        "reach S, or no longer holds S + 1, stops the start (exit 1). For the\n"
        "first start only: later starts restart from DIR's own journal.\n"
        "It takes over by default: when the primary's lease has not been\n"
        "renewed for --lease-ms (D) on the standby's clock, it takes the\n"
        "lease (epoch + 1), follows the stream to its end, publishes the new\n"
        "epoch's marker (fenced if anyone appended since: it follows again\n"
        "and retries) and serves on --listen as the primary in the\n"
        "replicated durability mode, from its own journal (--replicas,\n"
        "--replication-window, --ack-timeout-ms, --send as for the primary).\n"
        "Each step is printed with the UTC time. It never takes a lease that\n"
        "was never taken (an engine without a leased primary). A NATS error\n"
        "while looking at the lease is printed and following goes on; a\n"
        "transient one while taking over (a timeout, no responders: the\n"
        "stream's leader re-elected) is printed and retried while the lease\n"
        "is held.\n"
        "--no-takeover keeps it a pure follower. SIGINT or SIGTERM stops it\n"
        "cleanly in either role (exit 0).",
    .flags =
        {
            {"listen", "HOST:PORT", "127.0.0.1:7400",
             "address to listen on (--standby: once it has taken over)"},
            {"journal", "DIR", "", "journal directory (created if missing)"},
            {"durability", "MODE", "batch",
             "none | batch | sync | replicated: when a command counts as "
             "durable (replicated: batch on the local disk AND acknowledged "
             "by the NATS JetStream journal stream, see --nats)"},
            {"nats", "nats://HOST:PORT[,...]", "",
             "--durability replicated or --standby: the NATS servers of the "
             "journal stream"},
            {"engine-name", "NAME", "main",
             "--durability replicated or --standby: the stream is "
             "orderwire_NAME_journal ([A-Za-z0-9_-], 1-64)"},
            {"replicas", "1|3", "1",
             "--durability replicated or --standby: the stream's replicas"},
            {"replication-window", "N", "32",
             "--durability replicated or --standby (once primary): messages "
             "in flight, at most (1-4096)"},
            {"ack-timeout-ms", "MS", "5000",
             "--durability replicated or --standby (once primary): a message "
             "not acknowledged within MS of its first send stops the service "
             "(until then it is republished while NATS re-elects the "
             "stream's leader: make MS longer than that re-election)"},
            {"nats-start-timeout-s", "S", kNatsStartTimeoutDefault,
             "--durability replicated: how long the start waits for NATS in "
             "all, trying a step again while it fails on a transient error "
             "(no answer in time, no server, no responders); 0: not at all. "
             "A refusal fails at once"},
            {"lease", "", "",
             "--durability replicated: hold the engine's leadership lease "
             "while serving (refused while another member holds it; "
             "serving stops when it is lost)"},
            {"member-name", "NAME", "",
             "--lease: this member's name (default HOSTNAME:PID); --standby: "
             "its name in `orderwire cluster status` and in the lease once it "
             "takes over (default HOSTNAME-PID)"},
            {"lease-ms", "MS", "3000",
             "--lease or --standby: the lease's duration D (renewed every "
             "D/12, safety margin D/6); a standby takes over D after the "
             "primary's last renewal"},
            {"config", "FILE", "", "service configuration (docs/SERVICE.md)"},
            {"reconfigure", "", "",
             "accept a configuration that differs from the journal's and "
             "pin it from the next index (not with --durability replicated "
             "or --standby)"},
            {"segment-size", "BYTES", "67108864", "journal segment size"},
            {"stats-interval", "S", "0",
             "print a line of counters every S seconds (0: only at exit)"},
            {"stats-json", "FILE", "",
             "write every counter as JSON to FILE (each interval and at exit)"},
            {"accept-loss", "", "",
             "start on a journal that lost durable records (logged)"},
            {"snapshot-every", "RECORDS|DURATION", "",
             "snapshot the state every N records or every DURATION (30s, "
             "5m, 1h, 500ms); off by default"},
            {"no-snapshot", "", "",
             "replay the whole journal at start instead of starting from "
             "the newest snapshot"},
            {"retain", "SEGMENTS|BYTES|DURATION", "",
             "prune segments beyond this window and before the newest "
             "snapshot (never without a snapshot)"},
            {"send", "auto|sendmmsg|gso", "auto",
             "how report datagrams are sent (gso: UDP_SEGMENT; refused "
             "where the kernel lacks it)"},
            {"standby", "", "",
             "run as the hot standby of --engine-name, following its journal "
             "stream at --nats; takes over when the primary's lease expires"},
            {"no-takeover", "", "",
             "--standby: never take the lease over (a pure follower)"},
            {"seed-snapshot", "FILE", "",
             "--standby: make a new standby's journal in an empty --journal "
             "DIR from this snapshot of the primary's (index S) and follow "
             "the stream from S + 1 (see docs/REPLICATION.md \"Seeding a new "
             "standby from a snapshot\")"},
            {"no-rejoin", "", "",
             "--standby: refuse to start instead of cutting a local journal "
             "tail the stream never acknowledged (an old primary's, replaced "
             "by a new primary: see docs/REPLICATION.md \"Rejoining as a "
             "standby\")"},
            {"metrics-listen", "HOST:PORT", "",
             "serve the counters for Prometheus at http://HOST:PORT/metrics "
             "(off by default)"},
            {"md-target", "HOST:PORT[,...]", "",
             "publish the market-data feed to this multicast group, or to "
             "each of these unicast destinations (off by default)"},
            {"md-ttl", "N", "1",
             "--md-target: multicast TTL (IPv6: hop limit), 0-255"},
            {"md-interface", "ADDRESS|NAME", "",
             "--md-target: the interface multicast leaves by (an IPv4 "
             "address of it, or its name); default: by route"},
            {"md-heartbeat-ms", "MS", "1000",
             "--md-target: a Heartbeat when no feed packet went for MS "
             "(1-60000)"},
            {"md-request-listen", "HOST:PORT", "",
             "--md-target: answer the feed's retransmission requests here "
             "(UDP)"},
            {"md-ring-bytes", "N", "67108864",
             "--md-request-listen: the recent feed kept for retransmission "
             "(rounded up to a power of two, 65536 to 4294967296)"},
            {"quiet", "", "",
             "no start-up banner (a torn tail cut off at "
             "recovery is still reported)"},
            {"log-refusals", "", "",
             "write a line to standard error naming each refused datagram's "
             "session, source and cause (at most one per cause per second, "
             "with the count of those not written)"},
        },
};

absl::Status WriteStatsJson(const std::string& path,
                            const service::Service& service) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << service.StatsJson() << "\n";
    if (!out) {
      return absl::UnavailableError(
          absl::StrFormat("writing %s: %s", tmp, std::strerror(errno)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(absl::StrFormat("renaming %s to %s: %s", tmp,
                                                  path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

// --snapshot-every: a count of records ("1000000") or a duration ("30s",
// "5m", "1h", "500ms"). Error: a usage error naming the flag and the forms.
absl::Status ParseSnapshotEvery(std::string_view text,
                                service::ServiceOptions& options) {
  const auto bad = [&] {
    return FlagError("snapshot-every",
                     absl::InvalidArgumentError(absl::StrFormat(
                         "'%s' is neither a number of records (at least 1, "
                         "e.g. 1000000) nor a duration (e.g. 30s, 5m, 1h, "
                         "500ms)",
                         text)));
  };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0 || digits > 15) return bad();
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
  }
  if (value == 0) return bad();
  const std::string_view unit = text.substr(digits);
  if (unit.empty()) {
    options.snapshot_every_records = value;
    return absl::OkStatus();
  }
  double seconds_per_unit = 0;
  if (unit == "ms") {
    seconds_per_unit = 1e-3;
  } else if (unit == "s") {
    seconds_per_unit = 1;
  } else if (unit == "m") {
    seconds_per_unit = 60;
  } else if (unit == "h") {
    seconds_per_unit = 3600;
  } else {
    return bad();
  }
  options.snapshot_every_seconds =
      static_cast<double>(value) * seconds_per_unit;
  if (options.snapshot_every_seconds > 1e9) return bad();
  return absl::OkStatus();
}

// --durability and, for `replicated`, --nats, --engine-name, --replicas,
// --replication-window, --ack-timeout-ms (refused without it).
absl::Status ParseDurabilityFlags(const Args& args,
                                  service::ServiceOptions& options) {
  const std::string mode = args.String("durability");
  constexpr std::string_view kReplicationFlags[] = {"nats",
                                                    "engine-name",
                                                    "replicas",
                                                    "replication-window",
                                                    "ack-timeout-ms",
                                                    "lease",
                                                    "member-name",
                                                    "lease-ms",
                                                    "nats-start-timeout-s"};
  if (mode != "replicated") {
    absl::StatusOr<journal::Durability> durability =
        journal::ParseDurability(mode);
    if (!durability.ok()) {
      return FlagError("durability", absl::InvalidArgumentError(absl::StrFormat(
                                         "%s, or replicated",
                                         durability.status().message())));
    }
    options.journal.durability = *durability;
    for (const std::string_view flag : kReplicationFlags) {
      if (args.Has(flag)) {
        return UsageError(absl::StrFormat(
            "--%s needs --durability replicated (given: %s)", flag, mode));
      }
    }
    return absl::OkStatus();
  }
  if (!args.Has("nats")) {
    return UsageError(
        "--durability replicated needs --nats nats://HOST:PORT[,...] (the "
        "NATS servers of the journal stream)");
  }
  if (args.Bool("reconfigure")) return UsageError(kReconfigureNotReplicated);
  // The local journal commits in groups with a sync; each group is then
  // published (cluster/replication_link.h).
  options.journal.durability = journal::Durability::kBatch;
  cluster::ReplicationOptions replication;
  replication.servers = args.String("nats");
  replication.engine_name = args.String("engine-name");
  if (absl::Status s = ParseReplicationTuning(args, &replication); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::uint64_t> start_timeout =
      args.Uint("nats-start-timeout-s", 0, 3600);
  if (!start_timeout.ok()) return start_timeout.status();
  replication.start_timeout = std::chrono::seconds(*start_timeout);
  if (args.Bool("lease")) {
    absl::StatusOr<std::uint64_t> duration =
        args.Uint("lease-ms", 120, 3600000);
    if (!duration.ok()) return duration.status();
    replication.lease = LeaseForDuration(std::chrono::milliseconds(*duration),
                                         args.String("member-name"));
  } else if (args.Has("member-name") || args.Has("lease-ms")) {
    return UsageError(
        absl::StrFormat("--%s needs --lease",
                        args.Has("member-name") ? "member-name" : "lease-ms"));
  }
  // The start hook (cluster/primary_replication.h). SIGINT or SIGTERM while
  // the start waits for NATS: a clean stop.
  options.replication =
      cluster::ReplicatedDurability(std::move(replication), &g_stop);
  return absl::OkStatus();
}

// --segment-size, --accept-loss and --retain.
absl::Status ParseJournalFlags(const Args& args,
                               service::ServiceOptions& options) {
  absl::StatusOr<std::uint64_t> segment =
      args.Uint("segment-size", journal::kMinSegmentCapacity,
                journal::kMaxSegmentCapacity);
  if (!segment.ok()) return segment.status();
  options.journal.segment_size = *segment;
  options.journal.accept_loss = args.Bool("accept-loss");
  if (args.Has("retain")) {
    absl::StatusOr<journal::RetentionPolicy> retain =
        journal::ParseRetention(args.String("retain"));
    if (!retain.ok()) return FlagError("retain", retain.status());
    options.retain = *retain;
    options.on_retention = [](std::string_view line) {
      std::fprintf(stderr, "orderwire serve: %.*s\n",
                   static_cast<int>(line.size()), line.data());
    };
  }
  return absl::OkStatus();
}

// What `serve` (the primary) is asked to do, from its flags and --config.
struct ServeSettings {
  service::ServiceOptions options;
  double interval = 0;     // --stats-interval
  std::string stats_json;  // --stats-json
  std::optional<net::Endpoint> metrics_listen;
};

// Flags first, then files: a usage error is reported before any is read.
absl::StatusOr<ServeSettings> ParseServeFlags(const Args& args) {
  ServeSettings settings;
  service::ServiceOptions& options = settings.options;
  absl::StatusOr<net::Endpoint> listen =
      net::Endpoint::Parse(args.String("listen"));
  if (!listen.ok()) return FlagError("listen", listen.status());
  options.listen = *listen;
  options.journal.directory = args.String("journal");
  if (absl::Status s = ParseDurabilityFlags(args, options); !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseJournalFlags(args, options); !s.ok()) return s;
  absl::StatusOr<double> interval = args.Double("stats-interval", 0, 86400);
  if (!interval.ok()) return interval.status();
  settings.interval = *interval;
  absl::StatusOr<config::ServiceConfig> config = ServiceConfigFlag(args);
  if (!config.ok()) return config.status();
  options.config = *std::move(config);
  settings.stats_json = args.String("stats-json");
  options.reconfigure = args.Bool("reconfigure");
  if (args.Has("snapshot-every")) {
    if (absl::Status s =
            ParseSnapshotEvery(args.String("snapshot-every"), options);
        !s.ok()) {
      return s;
    }
  }
  options.restart_from_snapshot = !args.Bool("no-snapshot");
  if (args.Bool("log-refusals")) options.refusal_log = stderr;
  if (!net::ParseSendPath(args.String("send"), &options.send)) {
    return FlagError(
        "send", absl::InvalidArgumentError(absl::StrFormat(
                    "'%s' is not auto, sendmmsg or gso", args.String("send"))));
  }
  if (args.Has("metrics-listen")) {
    absl::StatusOr<net::Endpoint> endpoint =
        net::Endpoint::Parse(args.String("metrics-listen"));
    if (!endpoint.ok()) return FlagError("metrics-listen", endpoint.status());
    settings.metrics_listen = *endpoint;
  }
  if (absl::Status s = ParseMarketDataFlags(args, options); !s.ok()) return s;
  return settings;
}

// The --metrics-listen endpoint, bound (nullptr without one). An address
// that is not one (InvalidArgument) is a usage error; a port that cannot be
// bound is a failure.
absl::StatusOr<std::unique_ptr<service::MetricsServer>> BindMetricsServer(
    const std::optional<net::Endpoint>& metrics_listen) {
  if (!metrics_listen.has_value()) {
    return std::unique_ptr<service::MetricsServer>();
  }
  absl::StatusOr<std::unique_ptr<service::MetricsServer>> bound =
      service::MetricsServer::Bind(*metrics_listen);
  if (bound.ok()) return bound;
  if (absl::IsInvalidArgument(bound.status())) {
    return FlagError("metrics-listen", bound.status());
  }
  return absl::FailedPreconditionError(
      absl::StrFormat("--metrics-listen: %s", bound.status().message()));
}

// The start-up banner, or with --quiet only what recovery repaired (never
// hidden).
void PrintServeBanner(const Args& args, const service::Service& service,
                      const service::MetricsServer* metrics_server,
                      const config::ServiceConfig& config) {
  if (args.Bool("quiet")) {
    if (!service.startup_warning().empty()) {
      std::fprintf(stderr, "orderwire serve: %s\n",
                   service.startup_warning().c_str());
    }
    return;
  }
  std::fprintf(
      stderr, "orderwire serve: listening on %s%s\n  %s\n  %s\n",
      service.local_endpoint().ToString().c_str(),
      metrics_server == nullptr
          ? ""
          : absl::StrFormat(", metrics at http://%s/metrics",
                            metrics_server->local_endpoint().ToString())
                .c_str(),
      service.startup_report().c_str(),
      config::DescribeServiceConfig(config).c_str());
}

// Runs the started service until SIGINT or SIGTERM (or an error), then
// prints the counters and writes --stats-json a last time.
absl::Status RunService(const Args& args, service::Service& service,
                        const service::MetricsServer* metrics_server,
                        const config::ServiceConfig& config,
                        const std::string& stats_json) {
  // The counters file is written once now: a path that cannot be written
  // is an error at start, not a silent gap later.
  if (!stats_json.empty()) {
    if (absl::Status s = WriteStatsJson(stats_json, service); !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrFormat("--stats-json %s: %s", stats_json, s.message()));
    }
  }
  PrintServeBanner(args, service, metrics_server, config);
  absl::Status run = service.Run(g_stop);
  std::fprintf(stderr, "orderwire serve: %s\n%s",
               run.ok() ? "stopped cleanly" : "stopped on an error",
               service.StatsReport().c_str());
  if (!stats_json.empty()) {
    if (absl::Status s = WriteStatsJson(stats_json, service); !s.ok()) {
      return s;
    }
  }
  return run;
}

absl::Status Serve(const Args& args) {
  if (args.Bool("standby")) {
    InstallStopHandlers();
    return ServeStandby(args, g_stop);
  }
  if (args.Has("no-rejoin")) return UsageError("--no-rejoin needs --standby");
  if (args.Has("seed-snapshot")) {
    return UsageError(
        "--seed-snapshot needs --standby (a primary starts from its own "
        "journal)");
  }
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  absl::StatusOr<ServeSettings> settings = ParseServeFlags(args);
  if (!settings.ok()) return settings.status();
  service::ServiceOptions& options = settings->options;
  const double interval = settings->interval;
  const std::string& stats_json = settings->stats_json;
  // What the configuration accepted but an operator must see (a key file
  // readable by others), even with --quiet.
  for (const std::string& warning : options.config.warnings) {
    std::fprintf(stderr, "orderwire serve: warning: %s\n", warning.c_str());
  }

  // Bound before the journal is recovered: a port in use stops the start
  // before any traffic is taken (the endpoint answers 503 until the service
  // is up). Stopped (its thread joined) when Serve returns.
  service::StatsMirror metrics;
  absl::StatusOr<std::unique_ptr<service::MetricsServer>> metrics_server =
      BindMetricsServer(settings->metrics_listen);
  if (!metrics_server.ok()) return metrics_server.status();
  if (*metrics_server != nullptr) options.metrics = &metrics;

  InstallStopHandlers();
  service::Service* service_ptr = nullptr;
  options.interval_s = interval > 0 ? interval : (stats_json.empty() ? 0 : 1);
  options.on_interval = [&] {
    if (interval > 0) {
      std::fprintf(stderr, "orderwire serve: %s\n",
                   service_ptr->StatsLine().c_str());
    }
    if (!stats_json.empty()) (void)WriteStatsJson(stats_json, *service_ptr);
  };
  const config::ServiceConfig config_copy = options.config;
  absl::StatusOr<std::unique_ptr<service::Service>> service =
      service::Service::Start(std::move(options));
  if (absl::IsCancelled(service.status()) && g_stop.load()) {
    std::fprintf(stderr, "orderwire serve: %s\n",
                 std::string(service.status().message()).c_str());
    return absl::OkStatus();
  }
  if (!service.ok()) {
    if (service.status().code() == absl::StatusCode::kDataLoss) {
      return absl::DataLossError(absl::StrFormat(
          "%s. To start with what is left, accepting the loss, add "
          "--accept-loss",
          service.status().message()));
    }
    return service.status();
  }
  service_ptr = service->get();
  if (*metrics_server != nullptr) (*metrics_server)->Serve(metrics);
  return RunService(args, **service, metrics_server->get(), config_copy,
                    stats_json);
}

const CommandSpec kSubmitSpec{
    .name = "submit",
    .synopsis =
        "--session ID [--target HOST:PORT[,HOST:PORT...]] (--workload NAME "
        "--count N "
        "--seed S | --input FILE) [--rate R] [--window W] "
        "[--reports FILE] [--key-file FILE] [--send auto|sendmmsg|gso] "
        "[--first-sequence N --first-report R] [--failover-timeout-ms MS] "
        "[--heartbeat-ms MS] [--goodbye ACCOUNT]",
    .summary =
        "Send a session's commands to 'orderwire serve' and check "
        "every report.",
    .details =
        "Sends command frames packed into datagrams, keeps at most W commands\n"
        "unacknowledged (a command is acknowledged by its first report),\n"
        "retransmits go-back-N on SequenceGap or timeout, and prints commands\n"
        "sent, acknowledged, rejected, fills, retransmissions, throughput and\n"
        "round-trip latency percentiles (send to first report) at the end.\n"
        "The input is one session: sequences 1, 2, 3, ... (generated with\n"
        "--workload, as 'orderwire gen' does, or read from --input).\n"
        "With --key-file the session is keyed: every datagram carries a MAC\n"
        "and reports without a valid one are dropped. The service never\n"
        "answers a datagram it refuses: when nothing comes back for a second,\n"
        "submit prints the likely causes on standard error.\n"
        "--send gso sends datagrams with UDP_SEGMENT and receives with\n"
        "UDP_GRO (what the kernel joined is split back into the datagrams\n"
        "the service sent); sendmmsg one datagram per entry; auto (the\n"
        "default) gso where the kernel has it.\n"
        "A session continues where an earlier run left it with\n"
        "--first-sequence N (its next command: --input frames must be\n"
        "numbered N, N+1, ...; --workload commands are renumbered from N) and\n"
        "--first-report R (one past the last report it received). An\n"
        "unkeyed session is pinned to its first address and port until the\n"
        "service restarts (an unlisted one also until it gives its place\n"
        "back, idle); a keyed one may resume from anywhere.\n"
        "Failover: --target A,B,... lists the primary and its hot standbys.\n"
        "When nothing is heard from the current target for\n"
        "--failover-timeout-ms while commands or reports are outstanding,\n"
        "submit moves to the next target (round robin), says so on standard\n"
        "error and resends from the oldest unacknowledged command; reports\n"
        "stay in order and once each. Datagrams from any other address than\n"
        "the current target are then dropped and counted. The summary\n"
        "counts the failovers and names the target in use at the end.\n"
        "After --heartbeat-ms without sending, submit sends a Heartbeat:\n"
        "its answer is hearing the service (an unanswered one is waited\n"
        "for like a command) and names the next report (docs/CONTROLS.md).\n"
        "--goodbye ACCOUNT ends the commands with a Goodbye: the session\n"
        "closes, and with cancel_on_disconnect its orders are cancelled.",
    .flags =
        {
            {"target", "HOST:PORT[,HOST:PORT...]", "127.0.0.1:7400",
             "the service; several: the primary then its standbys, in "
             "failover order"},
            {"session", "ID", "", "session id (u32)"},
            {"workload", "NAME", "",
             "mixed | wl1 | deep | swings | crash | churn (as 'orderwire "
             "gen')"},
            {"count", "N", "1000000", "commands to generate"},
            {"seed", "S", "1", "generator seed"},
            {"input", "FILE", "", "command frames to send instead"},
            {"rate", "R", "0",
             "commands per second (0: as fast as the window "
             "allows)"},
            {"window", "W", "4096", "most commands unacknowledged at once"},
            {"timeout-ms", "MS", "200", "retransmit after MS without progress"},
            {"give-up-ms", "MS", "10000", "fail after MS without any answer"},
            {"reports", "FILE", "",
             "save the report frames received, in order ('-': standard "
             "output, the summary then goes to standard error)"},
            {"json", "", "", "print the summary as one JSON object"},
            {"key-file", "FILE", "",
             "the session's key (64 hex digits, as in the service's "
             "[sessions.<id>] key_file): sign datagrams, check reports"},
            {"send", "auto|sendmmsg|gso", "auto",
             "how datagrams are sent and received (gso: UDP_SEGMENT and "
             "UDP_GRO)"},
            {"first-sequence", "N", "1",
             "resume: the sequence of the first command"},
            {"first-report", "R", "1",
             "resume: the report sequence expected next"},
            {"failover-timeout-ms", "MS", "1500",
             "several targets: move to the next after MS without a word "
             "from the current one while waiting (one target: no effect)"},
            {"heartbeat-ms", "MS", "1000",
             "after MS without sending, send a Heartbeat (docs/CONTROLS.md); "
             "0: none"},
            {"goodbye", "ACCOUNT", "",
             "after the commands, a Goodbye for ACCOUNT: the session closes "
             "(with cancel_on_disconnect its resting orders are cancelled; "
             "docs/CONTROLS.md)"},
        },
};

// --target A[,B...]: the primary, then the standbys in failover order; all
// of one address family, none twice.
absl::Status ParseTargets(const Args& args, client::ClientOptions& options) {
  const std::vector<std::string> target_texts =
      absl::StrSplit(args.String("target"), ',');
  for (std::size_t i = 0; i < target_texts.size(); ++i) {
    absl::StatusOr<net::Endpoint> target =
        net::Endpoint::Parse(target_texts[i]);
    if (!target.ok()) {
      return FlagError("target", absl::InvalidArgumentError(absl::StrFormat(
                                     "target %d of %d ('%s'): %s", i + 1,
                                     target_texts.size(), target_texts[i],
                                     target.status().message())));
    }
    if (i == 0) {
      options.target = *target;
      continue;
    }
    if (target->family() != options.target.family()) {
      return FlagError(
          "target", absl::InvalidArgumentError(absl::StrFormat(
                        "target %d (%s) is not of target 1's address "
                        "family (%s): one socket sends to all of them",
                        i + 1, target->ToString(), options.target.ToString())));
    }
    for (std::size_t j = 0; j < i; ++j) {
      const net::Endpoint& earlier =
          j == 0 ? options.target : options.failover_targets[j - 1];
      if (earlier == *target) {
        return FlagError("target", absl::InvalidArgumentError(absl::StrFormat(
                                       "target %d (%s) repeats target %d",
                                       i + 1, target->ToString(), j + 1)));
      }
    }
    options.failover_targets.push_back(*target);
  }
  return absl::OkStatus();
}

// --failover-timeout-ms, --heartbeat-ms, --session, --rate, --window,
// --timeout-ms, --give-up-ms and --send, in that order.
absl::Status ParseSessionFlags(const Args& args,
                               client::ClientOptions& options) {
  absl::StatusOr<std::int64_t> failover_timeout =
      args.Int("failover-timeout-ms", 1, 600'000);
  if (!failover_timeout.ok()) return failover_timeout.status();
  options.failover_timeout_ms = static_cast<int>(*failover_timeout);
  absl::StatusOr<std::int64_t> heartbeat = args.Int("heartbeat-ms", 0, 600'000);
  if (!heartbeat.ok()) return heartbeat.status();
  options.heartbeat_interval_ms = static_cast<int>(*heartbeat);
  absl::StatusOr<std::uint64_t> session = args.Uint("session", UINT32_MAX);
  if (!session.ok()) return session.status();
  options.session_id = static_cast<std::uint32_t>(*session);
  absl::StatusOr<double> rate = args.Double("rate", 0, 1e9);
  if (!rate.ok()) return rate.status();
  options.rate = *rate;
  absl::StatusOr<std::uint64_t> window = args.Uint("window", 1, 1 << 20);
  if (!window.ok()) return window.status();
  options.window = static_cast<std::uint32_t>(*window);
  absl::StatusOr<std::int64_t> timeout = args.Int("timeout-ms", 1, 600'000);
  if (!timeout.ok()) return timeout.status();
  options.retransmit_timeout_ms = static_cast<int>(*timeout);
  absl::StatusOr<std::int64_t> give_up = args.Int("give-up-ms", 1, 3'600'000);
  if (!give_up.ok()) return give_up.status();
  options.give_up_ms = static_cast<int>(*give_up);
  if (!net::ParseSendPath(args.String("send"), &options.send)) {
    return FlagError(
        "send", absl::InvalidArgumentError(absl::StrFormat(
                    "'%s' is not auto, sendmmsg or gso", args.String("send"))));
  }
  return absl::OkStatus();
}

// --first-sequence and --first-report: where a resumed session carries on.
absl::Status ParseResumeFlags(const Args& args,
                              client::ClientOptions& options) {
  absl::StatusOr<std::uint64_t> first_sequence =
      args.Uint("first-sequence", 1, UINT64_MAX / 2);
  if (!first_sequence.ok()) return first_sequence.status();
  options.first_sequence = *first_sequence;
  absl::StatusOr<std::uint64_t> first_report =
      args.Uint("first-report", 1, UINT64_MAX / 2);
  if (!first_report.ok()) return first_report.status();
  options.first_report_sequence = *first_report;
  if (options.first_sequence > 1 && !args.Has("first-report")) {
    // Commands before N were applied, so their reports exist: a run that
    // expects report 1 would take none of the service's.
    return UsageError(
        "--first-sequence N above 1 resumes a session: give --first-report R "
        "too (one past the last report the session received)");
  }
  return absl::OkStatus();
}

// --key-file: the session's key (a warning about the file is printed).
absl::Status LoadSessionKey(const Args& args, client::ClientOptions& options) {
  if (!args.Has("key-file")) return absl::OkStatus();
  std::string warning;
  absl::StatusOr<auth::Key> key =
      auth::LoadKeyFile(args.String("key-file"), &warning);
  if (!key.ok()) return key.status();
  if (!warning.empty()) {
    std::fprintf(stderr, "orderwire submit: warning: %s\n", warning.c_str());
  }
  options.mac.emplace(*key);
  return absl::OkStatus();
}

// The command frames to send: --workload's, numbered from first_sequence,
// or --input's. Every flag value is checked, even --count and --seed beside
// --input.
absl::StatusOr<std::vector<std::byte>> SubmitFrames(
    const Args& args, std::uint64_t first_sequence) {
  absl::StatusOr<std::uint64_t> count = args.Uint("count", 100'000'000);
  if (!count.ok()) return count.status();
  absl::StatusOr<std::uint64_t> seed = args.Uint("seed", UINT64_MAX);
  if (!seed.ok()) return seed.status();
  if (!args.Has("workload")) return ReadFile("--input", args.String("input"));
  absl::StatusOr<workload::Workload> workload =
      workload::ParseWorkload(args.String("workload"));
  if (!workload.ok()) return FlagError("workload", workload.status());
  std::vector<codec::Command> commands =
      workload::Generate(*workload, *count, *seed);
  for (std::size_t i = 0; i < commands.size(); ++i) {
    commands[i].sequence = first_sequence + i;
  }
  return workload::EncodeCommands(commands);
}

// --goodbye ACCOUNT: a Goodbye after `frames` (numbered from
// first_sequence), its request id its own sequence.
absl::Status AppendGoodbye(const Args& args, std::uint64_t first_sequence,
                           std::vector<std::byte>& frames) {
  if (!args.Has("goodbye")) return absl::OkStatus();
  absl::StatusOr<std::uint64_t> account = args.Uint("goodbye", UINT64_MAX);
  if (!account.ok()) return account.status();
  std::uint64_t count = 0;
  for (std::size_t at = 0; at < frames.size(); ++count) {
    const std::size_t size =
        frames.size() - at < codec::kFrameHeaderSize
            ? 0
            : codec::kCommandFrameSize[std::to_integer<std::uint8_t>(
                  frames[at + codec::kKindOffset])];
    if (size == 0) break;  // RunClient names what is wrong with the input
    at += size;
  }
  const std::uint64_t sequence = first_sequence + count;
  std::array<std::byte, codec::kFrameSize<codec::Goodbye>> frame{};
  (void)codec::EncodeCommand(
      codec::Command::From(sequence, codec::Goodbye{.account_id = *account,
                                                    .request_id = sequence}),
      frame);
  frames.insert(frames.end(), frame.begin(), frame.end());
  return absl::OkStatus();
}

double CommandsPerSecond(const client::ClientResult& r) {
  return r.seconds > 0 ? static_cast<double>(r.acknowledged) / r.seconds : 0;
}

// A round-trip latency percentile, in microseconds.
double LatencyUs(const client::ClientResult& r, double fraction) {
  return static_cast<double>(r.latency_ns.Percentile(fraction)) / 1000.0;
}

// Busy (docs/PROTOCOL.md): the cause of the service's last Busy, "none"
// without one.
std::string BusyCauseName(const client::ClientResult& r) {
  return r.busy == 0 ? std::string("none")
         : codec::Name(static_cast<codec::BusyCause>(r.busy_cause)).empty()
             ? absl::StrFormat("unknown (%d)", r.busy_cause)
             : std::string(
                   codec::Name(static_cast<codec::BusyCause>(r.busy_cause)));
}

// `submit --json`'s summary: one JSON object and a newline.
std::string SubmitSummaryJson(const client::ClientResult& r) {
  const auto us = [&](double fraction) { return LatencyUs(r, fraction); };
  std::string summary = absl::StrFormat(
      "{\"commands\":%llu,\"sent\":%llu,\"acknowledged\":%llu,"
      "\"accepted\":%llu,\"rejected\":%llu,\"replaced\":%llu,"
      "\"cancelled\":%llu,\"fills\":%llu,\"reports\":%llu,"
      "\"retransmitted\":%llu,\"sequence_gaps\":%llu,"
      "\"duplicate_reports\":%llu,\"out_of_order_reports\":%llu,"
      "\"bad_mac_datagrams\":%llu,"
      "\"seconds\":%.6f,\"commands_per_second\":%.0f,"
      "\"latency_us\":{\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,"
      "\"p99.9\":%.1f,\"max\":%.1f},\"report_hash\":\"%016llx\"}\n",
      static_cast<unsigned long long>(r.commands),
      static_cast<unsigned long long>(r.sent),
      static_cast<unsigned long long>(r.acknowledged),
      static_cast<unsigned long long>(r.accepted),
      static_cast<unsigned long long>(r.rejected),
      static_cast<unsigned long long>(r.replaced),
      static_cast<unsigned long long>(r.cancelled),
      static_cast<unsigned long long>(r.fills),
      static_cast<unsigned long long>(r.reports),
      static_cast<unsigned long long>(r.retransmitted),
      static_cast<unsigned long long>(r.sequence_gaps),
      static_cast<unsigned long long>(r.duplicate_reports),
      static_cast<unsigned long long>(r.out_of_order_reports),
      static_cast<unsigned long long>(r.bad_mac_datagrams), r.seconds,
      CommandsPerSecond(r), us(0.50), us(0.90), us(0.99), us(0.999), us(1.0),
      static_cast<unsigned long long>(r.report_hash));
  // ReportsGone (docs/PROTOCOL.md "Reports gone") and the transport.
  summary.resize(summary.size() - 2);  // "}\n"
  absl::StrAppendFormat(&summary,
                        ",\"reports_gone\":%d,\"reports_lost\":%d,"
                        "\"unconfirmed\":%d,\"send\":\"%s\","
                        "\"datagrams_sent\":%d,\"segmented_sends\":%d,"
                        "\"gro\":%s,\"datagrams_received\":%d,"
                        "\"coalesced_receives\":%d,\"gso_fallbacks\":%d}\n",
                        r.reports_gone, r.reports_lost, r.unconfirmed,
                        r.segmented ? "gso" : "sendmmsg", r.datagrams_sent,
                        r.segmented_sends, r.gro ? "true" : "false",
                        r.datagrams_received, r.coalesced_receives,
                        r.gso_fallbacks);
  // Busy, then failover.
  summary.insert(summary.size() - 2,
                 absl::StrFormat(",\"busy\":%d,\"busy_cause\":\"%s\"", r.busy,
                                 BusyCauseName(r)));
  summary.insert(
      summary.size() - 2,
      absl::StrFormat(",\"failovers\":%d,\"target\":\"%s\","
                      "\"other_target_datagrams\":%d,"
                      "\"unreachable_sends\":%d",
                      r.failovers, r.final_target.ToString(),
                      r.other_target_datagrams, r.unreachable_sends));
  return summary;
}

// `submit`'s summary for people: one line per aspect; ReportsGone, Busy
// and failover only when there is something to say.
std::string SubmitSummaryText(const client::ClientResult& r,
                              const client::ClientOptions& options) {
  const auto us = [&](double fraction) { return LatencyUs(r, fraction); };
  std::string summary = absl::StrFormat(
      "orderwire submit: session %u to %s\n"
      "  commands        %llu sent, %llu acknowledged (%llu accepted, "
      "%llu rejected, %llu replaced)\n"
      "  reports         %llu (%llu fills, %llu cancels), hash %016llx\n"
      "  retransmitted   %llu frames (%llu SequenceGap), %llu duplicate and "
      "%llu out-of-order reports dropped\n"
      "  throughput      %.0f commands/s over %.3f s\n"
      "  round trip      p50 %.1f us  p90 %.1f us  p99 %.1f us  p99.9 %.1f "
      "us  max %.1f us\n",
      options.session_id, options.target.ToString().c_str(),
      static_cast<unsigned long long>(r.sent),
      static_cast<unsigned long long>(r.acknowledged),
      static_cast<unsigned long long>(r.accepted),
      static_cast<unsigned long long>(r.rejected),
      static_cast<unsigned long long>(r.replaced),
      static_cast<unsigned long long>(r.reports),
      static_cast<unsigned long long>(r.fills),
      static_cast<unsigned long long>(r.cancelled),
      static_cast<unsigned long long>(r.report_hash),
      static_cast<unsigned long long>(r.retransmitted),
      static_cast<unsigned long long>(r.sequence_gaps),
      static_cast<unsigned long long>(r.duplicate_reports),
      static_cast<unsigned long long>(r.out_of_order_reports),
      CommandsPerSecond(r), r.seconds, us(0.50), us(0.90), us(0.99), us(0.999),
      us(1.0));
  absl::StrAppendFormat(
      &summary,
      "  transport       %s: %d datagrams sent%s; UDP_GRO %s: %d datagrams "
      "received (%d receives held several)%s\n",
      r.segmented ? "gso" : "sendmmsg", r.datagrams_sent,
      r.segmented ? absl::StrFormat(" in %d sends", r.segmented_sends)
                  : std::string(),
      r.gro ? "on" : "off", r.datagrams_received, r.coalesced_receives,
      r.gso_fallbacks == 0
          ? std::string()
          : absl::StrFormat(", %d fallback(s) to sendmmsg", r.gso_fallbacks));
  // ReportsGone (docs/PROTOCOL.md "Reports gone"): reports the service no
  // longer holds, and the commands they would have confirmed.
  if (r.reports_gone != 0) {
    absl::StrAppendFormat(
        &summary,
        "  reports gone    %d ReportsGone: %d reports will never come; %d "
        "commands were applied but are unconfirmed (reconcile them)\n",
        r.reports_gone, r.reports_lost, r.unconfirmed);
  }
  // Busy: the service took no commands for a while (docs/PROTOCOL.md).
  if (r.busy > 0) {
    absl::StrAppendFormat(&summary,
                          "  busy            %d Busy from the service (cause "
                          "%s): backed off and retransmitted\n",
                          r.busy, BusyCauseName(r));
  }
  // Failover (several targets): switches, the target in use at the end,
  // and datagrams from other addresses dropped.
  if (!options.failover_targets.empty()) {
    absl::StrAppendFormat(&summary,
                          "  failover        %d failover(s), ended on %s; %d "
                          "datagrams from other targets dropped, %d not "
                          "sent (target unreachable)\n",
                          r.failovers, r.final_target.ToString(),
                          r.other_target_datagrams, r.unreachable_sends);
  }
  return summary;
}

// The exit of a run: DataLoss for commands applied but unconfirmed,
// Aborted for commands not acknowledged.
absl::Status SubmitOutcome(const client::ClientResult& r) {
  if (r.unconfirmed != 0) {
    return absl::DataLossError(absl::StrFormat(
        "%d of %d commands were applied but are unconfirmed: the service "
        "no longer holds their reports (ReportsGone); reconcile them",
        r.unconfirmed, r.commands));
  }
  if (r.acknowledged != r.commands) {
    return absl::AbortedError(
        absl::StrFormat("stopped with %d of %d commands acknowledged",
                        r.acknowledged, r.commands));
  }
  return absl::OkStatus();
}

absl::Status Submit(const Args& args) {
  if (absl::Status s = args.Require("session"); !s.ok()) return s;
  if (args.Has("workload") == args.Has("input")) {
    return UsageError(
        "give either --workload NAME (with --count and --seed) or --input "
        "FILE");
  }
  client::ClientOptions options;
  if (absl::Status s = ParseTargets(args, options); !s.ok()) return s;
  if (absl::Status s = ParseSessionFlags(args, options); !s.ok()) return s;
  if (absl::Status s = ParseResumeFlags(args, options); !s.ok()) return s;
  if (absl::Status s = LoadSessionKey(args, options); !s.ok()) return s;
  options.diagnostics = stderr;
  absl::StatusOr<std::vector<std::byte>> frames =
      SubmitFrames(args, options.first_sequence);
  if (!frames.ok()) return frames.status();
  if (absl::Status s = AppendGoodbye(args, options.first_sequence, *frames);
      !s.ok()) {
    return s;
  }

  std::optional<ReportSink> reports;
  if (args.Has("reports")) {
    absl::StatusOr<ReportSink> opened = ReportSink::Open(
        "reports", args.String("reports"), ReportFormat::kBinary);
    if (!opened.ok()) return opened.status();
    reports.emplace(*std::move(opened));
    options.reports_out = reports->file();
  }
  // With --reports - the report frames go to standard output, the summary
  // to standard error.
  std::FILE* const out =
      reports.has_value() && reports->is_stdout() ? stderr : stdout;
  options.progress = isatty(STDERR_FILENO) != 0;
  InstallStopHandlers();
  absl::StatusOr<client::ClientResult> result =
      client::RunClient(options, *frames, g_stop);
  if (!result.ok()) return result.status();
  if (reports.has_value()) {
    if (absl::Status s = reports->Finish(); !s.ok()) return s;
  }
  const std::string summary = args.Bool("json")
                                  ? SubmitSummaryJson(*result)
                                  : SubmitSummaryText(*result, options);
  if (absl::Status s = WriteAll(
          out, summary, out == stdout ? "standard output" : "standard error");
      !s.ok()) {
    return s;
  }
  return SubmitOutcome(*result);
}

}  // namespace

const Command kServeCommand{&kServeSpec, Serve};

const Command kSubmitCommand{&kSubmitSpec, Submit};

absl::Status ParseMarketDataFlags(const Args& args,
                                  service::ServiceOptions& options) {
  for (const char* flag :
       {"md-ttl", "md-interface", "md-heartbeat-ms", "md-request-listen"}) {
    if (args.Has(flag) && !args.Has("md-target")) {
      return FlagError(flag, absl::InvalidArgumentError(
                                 "it applies to --md-target, not given"));
    }
  }
  if (!args.Has("md-target")) return absl::OkStatus();
  service::FeedPublisherOptions feed;
  const std::vector<std::string> targets =
      absl::StrSplit(args.String("md-target"), ',', absl::SkipEmpty());
  for (const std::string& target : targets) {
    absl::StatusOr<net::Endpoint> endpoint = net::Endpoint::Parse(target);
    if (!endpoint.ok()) return FlagError("md-target", endpoint.status());
    feed.targets.push_back(*endpoint);
  }
  absl::StatusOr<std::uint64_t> ttl = args.Uint("md-ttl", 0, 255);
  if (!ttl.ok()) return ttl.status();
  feed.multicast_ttl = static_cast<int>(*ttl);
  feed.multicast_interface = args.String("md-interface");
  absl::StatusOr<std::uint64_t> heartbeat_ms =
      args.Uint("md-heartbeat-ms", 1, 60000);
  if (!heartbeat_ms.ok()) return heartbeat_ms.status();
  feed.heartbeat_ns = static_cast<std::int64_t>(*heartbeat_ms) * 1'000'000;
  options.market_data = std::move(feed);
  if (args.Has("md-ring-bytes") && !args.Has("md-request-listen")) {
    return FlagError("md-ring-bytes",
                     absl::InvalidArgumentError(
                         "it applies to --md-request-listen, not given"));
  }
  if (!args.Has("md-request-listen")) return absl::OkStatus();
  service::FeedRequestServerOptions requests;
  absl::StatusOr<net::Endpoint> listen =
      net::Endpoint::Parse(args.String("md-request-listen"));
  if (!listen.ok()) return FlagError("md-request-listen", listen.status());
  requests.listen = *listen;
  absl::StatusOr<std::uint64_t> ring = args.Uint(
      "md-ring-bytes", service::kMinFeedRingBytes, std::uint64_t{1} << 32);
  if (!ring.ok()) return ring.status();
  requests.ring_bytes = *ring;
  options.md_requests = requests;
  return absl::OkStatus();
}

}  // namespace orderwire::cli
