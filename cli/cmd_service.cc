// `orderwire serve` and `orderwire submit`: the UDP service and its client.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/io.h"
#include "engine/workload.h"
#include "journal/writer.h"
#include "net/client.h"
#include "net/service.h"
#include "net/service_config.h"

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

const CommandSpec kServeSpec{
    .name = "serve",
    .synopsis =
        "--journal DIR [--listen HOST:PORT] [--durability MODE] "
        "[--config FILE] [--stats-interval S] [--stats-json FILE]",
    .summary = "Run the UDP order-entry service.",
    .details =
        "Receives command datagrams, journals their frames verbatim, and once\n"
        "they are durable under --durability runs them through the engine and\n"
        "sends each report to the session that owns the order. On start it\n"
        "recovers the journal in DIR (a torn tail is cut off and reported;\n"
        "damage in the middle refuses to start) and replays it, so sessions\n"
        "carry on where they were. SIGINT or SIGTERM stops reading, makes\n"
        "everything durable, sends the last reports, prints the counters and\n"
        "exits 0. Without --config: instruments 1-1024, any session may trade\n"
        "for any account from loopback only (see docs/SERVICE.md).",
    .flags =
        {
            {"listen", "HOST:PORT", "127.0.0.1:7400", "address to listen on"},
            {"journal", "DIR", "", "journal directory (created if missing)"},
            {"durability", "MODE", "batch",
             "none | batch | sync: when a command counts as durable"},
            {"config", "FILE", "", "service configuration (docs/SERVICE.md)"},
            {"segment-size", "BYTES", "67108864", "journal segment size"},
            {"stats-interval", "S", "0",
             "print a line of counters every S seconds (0: only at exit)"},
            {"stats-json", "FILE", "",
             "write every counter as JSON to FILE (each interval and at exit)"},
            {"quiet", "", "", "no start-up banner"},
        },
};

absl::Status WriteStatsJson(const std::string& path,
                            const net::Service& service) {
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

absl::Status Serve(const Args& args) {
  if (!args.Has("journal")) {
    return absl::FailedPreconditionError("--journal DIR is required");
  }
  net::ServiceOptions options;
  absl::StatusOr<net::Endpoint> listen =
      net::Endpoint::Parse(args.String("listen"));
  if (!listen.ok()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("--listen: %s", listen.status().message()));
  }
  options.listen = *listen;
  options.journal.directory = args.String("journal");
  absl::StatusOr<journal::Durability> durability =
      journal::ParseDurability(args.String("durability"));
  if (!durability.ok()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("--durability: %s", durability.status().message()));
  }
  options.journal.durability = *durability;
  absl::StatusOr<std::uint64_t> segment =
      args.Uint("segment-size", std::uint64_t{1} << 40);
  if (!segment.ok())
    return absl::FailedPreconditionError(segment.status().message());
  options.journal.segment_size = *segment;
  if (args.Has("config")) {
    absl::StatusOr<net::ServiceConfig> config =
        net::LoadServiceConfig(args.String("config"));
    if (!config.ok()) return config.status();
    options.config = *config;
  }
  absl::StatusOr<double> interval = args.Double("stats-interval", 0, 86400);
  if (!interval.ok())
    return absl::FailedPreconditionError(interval.status().message());
  const std::string stats_json = args.String("stats-json");

  InstallStopHandlers();
  net::Service* service_ptr = nullptr;
  options.interval_s = *interval > 0 ? *interval : (stats_json.empty() ? 0 : 1);
  options.on_interval = [&] {
    if (*interval > 0) {
      std::fprintf(stderr, "orderwire serve: %s\n",
                   service_ptr->StatsLine().c_str());
    }
    if (!stats_json.empty()) (void)WriteStatsJson(stats_json, *service_ptr);
  };
  const net::ServiceConfig config_copy = options.config;
  absl::StatusOr<std::unique_ptr<net::Service>> service =
      net::Service::Start(std::move(options));
  if (!service.ok()) return service.status();
  service_ptr = service->get();
  if (!args.Bool("quiet")) {
    std::fprintf(stderr, "orderwire serve: listening on %s\n  %s\n  %s\n",
                 (*service)->local_endpoint().ToString().c_str(),
                 (*service)->startup_report().c_str(),
                 net::DescribeServiceConfig(config_copy).c_str());
  }
  const absl::Status run = (*service)->Run(g_stop);
  std::fprintf(stderr, "orderwire serve: %s\n%s",
               run.ok() ? "stopped cleanly" : "stopped on an error",
               (*service)->StatsReport().c_str());
  if (!stats_json.empty()) {
    if (absl::Status s = WriteStatsJson(stats_json, **service); !s.ok()) {
      return s;
    }
  }
  return run;
}

const CommandSpec kSubmitSpec{
    .name = "submit",
    .synopsis =
        "--session ID [--target HOST:PORT] (--workload NAME --count N "
        "--seed S | --input FILE) [--rate R] [--window W] "
        "[--reports FILE]",
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
        "--workload, as 'orderwire gen' does, or read from --input).",
    .flags =
        {
            {"target", "HOST:PORT", "127.0.0.1:7400", "the service"},
            {"session", "ID", "", "session id (u32)"},
            {"workload", "NAME", "", "mixed | wl1 (as 'orderwire gen')"},
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
             "save the report frames received, in "
             "order"},
            {"json", "", "", "print the summary as one JSON object"},
        },
};

absl::Status Submit(const Args& args) {
  if (!args.Has("session")) {
    return absl::FailedPreconditionError("--session ID is required");
  }
  if (args.Has("workload") == args.Has("input")) {
    return absl::FailedPreconditionError(
        "give either --workload NAME (with --count and --seed) or --input "
        "FILE");
  }
  net::ClientOptions options;
  absl::StatusOr<net::Endpoint> target =
      net::Endpoint::Parse(args.String("target"));
  if (!target.ok()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("--target: %s", target.status().message()));
  }
  options.target = *target;
  absl::StatusOr<std::uint64_t> session = args.Uint("session", UINT32_MAX);
  if (!session.ok())
    return absl::FailedPreconditionError(session.status().message());
  options.session_id = static_cast<std::uint32_t>(*session);
  absl::StatusOr<double> rate = args.Double("rate", 0, 1e9);
  if (!rate.ok()) return absl::FailedPreconditionError(rate.status().message());
  options.rate = *rate;
  absl::StatusOr<std::uint64_t> window = args.Uint("window", 1 << 20);
  if (!window.ok() || *window == 0) {
    return absl::FailedPreconditionError("--window must be 1 to 1048576");
  }
  options.window = static_cast<std::uint32_t>(*window);
  absl::StatusOr<std::int64_t> timeout = args.Int("timeout-ms", 1, 600'000);
  if (!timeout.ok())
    return absl::FailedPreconditionError(timeout.status().message());
  options.retransmit_timeout_ms = static_cast<int>(*timeout);
  absl::StatusOr<std::int64_t> give_up = args.Int("give-up-ms", 1, 3'600'000);
  if (!give_up.ok())
    return absl::FailedPreconditionError(give_up.status().message());
  options.give_up_ms = static_cast<int>(*give_up);

  std::vector<std::byte> frames;
  if (args.Has("workload")) {
    absl::StatusOr<workload::Workload> workload =
        workload::ParseWorkload(args.String("workload"));
    if (!workload.ok())
      return absl::FailedPreconditionError(workload.status().message());
    absl::StatusOr<std::uint64_t> count = args.Uint("count", 100'000'000);
    if (!count.ok())
      return absl::FailedPreconditionError(count.status().message());
    absl::StatusOr<std::uint64_t> seed = args.Uint("seed", UINT64_MAX);
    if (!seed.ok())
      return absl::FailedPreconditionError(seed.status().message());
    frames =
        workload::EncodeCommands(workload::Generate(*workload, *count, *seed));
  } else {
    std::FILE* in = std::fopen(args.String("input").c_str(), "rb");
    if (in == nullptr) {
      return absl::NotFoundError(absl::StrFormat(
          "cannot open %s: %s", args.String("input"), std::strerror(errno)));
    }
    absl::StatusOr<std::vector<std::byte>> data = ReadAll(in);
    std::fclose(in);
    if (!data.ok()) return data.status();
    frames = std::move(*data);
  }

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> reports(nullptr, std::fclose);
  if (args.Has("reports")) {
    reports.reset(std::fopen(args.String("reports").c_str(), "wb"));
    if (reports == nullptr) {
      return absl::UnavailableError(absl::StrFormat("cannot create %s: %s",
                                                    args.String("reports"),
                                                    std::strerror(errno)));
    }
    options.reports_out = reports.get();
  }
  options.progress = isatty(STDERR_FILENO) != 0;
  InstallStopHandlers();
  absl::StatusOr<net::ClientResult> result =
      net::RunClient(options, frames, g_stop);
  if (!result.ok()) return result.status();
  if (reports != nullptr && std::fflush(reports.get()) != 0) {
    return absl::UnavailableError(absl::StrFormat(
        "writing %s: %s", args.String("reports"), std::strerror(errno)));
  }
  const net::ClientResult& r = *result;
  const double rate_out =
      r.seconds > 0 ? static_cast<double>(r.acknowledged) / r.seconds : 0;
  const auto us = [&](double p) {
    return static_cast<double>(r.latency_ns.Percentile(p)) / 1000.0;
  };
  if (args.Bool("json")) {
    std::printf(
        "{\"commands\":%llu,\"sent\":%llu,\"acknowledged\":%llu,"
        "\"accepted\":%llu,\"rejected\":%llu,\"replaced\":%llu,"
        "\"cancelled\":%llu,\"fills\":%llu,\"reports\":%llu,"
        "\"retransmitted\":%llu,\"sequence_gaps\":%llu,"
        "\"duplicate_reports\":%llu,\"out_of_order_reports\":%llu,"
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
        static_cast<unsigned long long>(r.out_of_order_reports), r.seconds,
        rate_out, us(50), us(90), us(99), us(99.9), us(100),
        static_cast<unsigned long long>(r.report_hash));
  } else {
    std::printf(
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
        static_cast<unsigned long long>(r.out_of_order_reports), rate_out,
        r.seconds, us(50), us(90), us(99), us(99.9), us(100));
  }
  if (r.acknowledged != r.commands) {
    return absl::AbortedError(
        absl::StrFormat("stopped with %d of %d commands acknowledged",
                        r.acknowledged, r.commands));
  }
  return absl::OkStatus();
}

}  // namespace

int RunServe(int argc, char** argv) {
  return RunCommand(kServeSpec, argc, argv, Serve);
}

int RunSubmit(int argc, char** argv) {
  return RunCommand(kSubmitSpec, argc, argv, Submit);
}

}  // namespace orderwire::cli
