// `orderwire serve --standby`; see serve_standby.h.
#include "cli/serve_standby.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "journal/format.h"
#include "journal/writer.h"
#include "replication/journal_stream.h"
#include "service/standby.h"

namespace orderwire::cli {
namespace {

// HOSTNAME-PID with every character a NATS key cannot hold made '-', at
// most 64 characters: the default --member-name.
std::string DefaultMemberName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "standby");
  }
  std::string name = absl::StrFormat("%s-%d", host, ::getpid());
  for (char& c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    if (!ok) c = '-';
  }
  if (name.size() > 64) name.erase(0, name.size() - 64);
  return name;
}

}  // namespace

absl::Status ServeStandby(const Args& args, const std::atomic<bool>& stop) {
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  if (absl::Status s = args.Require("nats"); !s.ok()) return s;
  for (const char* flag :
       {"retain", "metrics-listen", "stats-json", "log-refusals", "lease",
        "lease-ms", "replicas", "replication-window", "ack-timeout-ms"}) {
    if (args.Has(flag)) {
      return UsageError(absl::StrFormat(
          "--%s is not available with --standby yet (the standby answers no "
          "client and keeps its journal as it receives it)",
          flag));
    }
  }
  service::StandbyOptions options;
  options.nats_servers = args.String("nats");
  options.engine_name = args.String("engine-name");
  if (absl::Status s = replication::ValidateEngineName(options.engine_name);
      !s.ok()) {
    return FlagError("engine-name", s);
  }
  options.member_name = args.Has("member-name") ? args.String("member-name")
                                                : DefaultMemberName();
  options.journal.directory = args.String("journal");
  absl::StatusOr<journal::Durability> durability =
      journal::ParseDurability(args.String("durability"));
  if (!durability.ok()) return FlagError("durability", durability.status());
  options.journal.durability = *durability;
  absl::StatusOr<std::uint64_t> segment =
      args.Uint("segment-size", journal::kMinSegmentCapacity,
                journal::kMaxSegmentCapacity);
  if (!segment.ok()) return segment.status();
  options.journal.segment_size = *segment;
  options.journal.accept_loss = args.Bool("accept-loss");
  absl::StatusOr<double> interval = args.Double("stats-interval", 0, 86400);
  if (!interval.ok()) return interval.status();
  if (args.Has("config")) {
    absl::StatusOr<service::ServiceConfig> config =
        LoadServiceConfig(args.String("config"));
    if (!config.ok()) return config.status();
    options.config = *config;
  }
  if (args.Has("snapshot-every")) {
    absl::StatusOr<std::uint64_t> every =
        args.Uint("snapshot-every", 1, std::uint64_t{1'000'000'000'000'000});
    if (!every.ok()) {
      return UsageError(absl::StrFormat(
          "--snapshot-every with --standby takes a number of records (e.g. "
          "1000000), not '%s'",
          args.String("snapshot-every")));
    }
    options.snapshot_every_records = *every;
  }
  options.reconfigure = args.Bool("reconfigure");
  options.restart_from_snapshot = !args.Bool("no-snapshot");
  options.rejoin = !args.Bool("no-rejoin");
  for (const std::string& warning : options.config.warnings) {
    std::fprintf(stderr, "orderwire serve: warning: %s\n", warning.c_str());
  }
  service::Standby* standby_ptr = nullptr;
  options.interval_s = *interval;
  options.on_interval = [&] {
    std::fprintf(stderr, "orderwire serve: %s\n",
                 standby_ptr->StatsLine().c_str());
  };
  options.on_event = [](std::string_view line) {
    std::fprintf(stderr, "orderwire serve: standby: %.*s\n",
                 static_cast<int>(line.size()), line.data());
  };
  absl::StatusOr<std::unique_ptr<service::Standby>> standby =
      service::Standby::Start(std::move(options));
  if (!standby.ok()) return standby.status();
  standby_ptr = standby->get();
  if (args.Bool("quiet")) {
    if (!(*standby)->startup_warning().empty()) {
      std::fprintf(stderr, "orderwire serve: %s\n",
                   (*standby)->startup_warning().c_str());
    }
  } else {
    std::fprintf(stderr,
                 "orderwire serve: standby (answering no client)\n  %s\n",
                 (*standby)->startup_report().c_str());
  }
  absl::Status run = (*standby)->Run(stop);
  std::fprintf(stderr, "orderwire serve: standby %s\n  %s\n",
               run.ok() ? "stopped cleanly" : "stopped on an error",
               (*standby)->StatsLine().c_str());
  return run;
}

}  // namespace orderwire::cli
