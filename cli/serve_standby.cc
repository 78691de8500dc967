// `orderwire serve --standby`; see serve_standby.h.
#include "cli/serve_standby.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "cluster/cluster_member.h"
#include "cluster/seed.h"
#include "cluster/standby.h"
#include "journal/format.h"
#include "journal/writer.h"
#include "net/udp.h"
#include "replication/journal_stream.h"
#include "service/service.h"
#include "state/pinned_config.h"

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

// The flags a standby refuses: the primary's own, those not available yet,
// and with --no-takeover those of the primary it would become.
absl::Status CheckStandbyFlags(const Args& args, bool takeover) {
  for (const char* flag :
       {"retain", "metrics-listen", "stats-json", "log-refusals"}) {
    if (args.Has(flag)) {
      return UsageError(absl::StrFormat(
          "--%s is not available with --standby yet (the standby answers no "
          "client and keeps its journal as it receives it)",
          flag));
    }
  }
  if (args.Has("lease")) {
    return UsageError(
        "--lease is the primary's: with --standby the lease is taken when the "
        "primary's expires (--lease-ms sets its duration; --no-takeover never "
        "takes it)");
  }
  if (args.Has("nats-start-timeout-s")) {
    return UsageError(
        "--nats-start-timeout-s is the primary's (--durability replicated): "
        "a standby taking over tries a NATS step again for as long as it "
        "holds the lease");
  }
  if (!takeover) {
    for (const char* flag : {"lease-ms", "replication-window", "ack-timeout-ms",
                             "listen", "send"}) {
      if (args.Has(flag)) {
        return UsageError(absl::StrFormat(
            "--%s is for the primary a standby becomes: not with "
            "--no-takeover",
            flag));
      }
    }
  }
  return absl::OkStatus();
}

// The follower's options: the stream, its member name, its journal, its
// configuration and snapshots; *interval from --stats-interval.
absl::Status ParseFollowerFlags(const Args& args,
                                cluster::StandbyOptions& options,
                                double* interval) {
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
  absl::StatusOr<double> stats_interval =
      args.Double("stats-interval", 0, 86400);
  if (!stats_interval.ok()) return stats_interval.status();
  *interval = *stats_interval;
  absl::StatusOr<config::ServiceConfig> config = ServiceConfigFlag(args);
  if (!config.ok()) return config.status();
  options.config = *std::move(config);
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
  if (args.Bool("reconfigure")) {
    return UsageError(kReconfigureNotReplicated);
  }
  options.restart_from_snapshot = !args.Bool("no-snapshot");
  options.rejoin = !args.Bool("no-rejoin");
  return absl::OkStatus();
}

// --seed-snapshot: everything is checked before the journal is made; what
// is refused then is a usage error. nullopt without the flag.
absl::StatusOr<std::optional<cluster::SeedOptions>> CheckSeedFlag(
    const Args& args, const cluster::StandbyOptions& options) {
  if (!args.Has("seed-snapshot")) {
    return std::optional<cluster::SeedOptions>();
  }
  if (!options.restart_from_snapshot) {
    return UsageError(
        "--seed-snapshot with --no-snapshot: a seeded journal starts from "
        "its snapshot");
  }
  cluster::SeedOptions seed{.journal = options.journal,
                            .snapshot = args.String("seed-snapshot"),
                            .given = state::PinnedConfigOf(options.config)};
  if (absl::StatusOr<state::SnapshotInfo> checked = cluster::CheckSeed(seed);
      !checked.ok()) {
    return FlagError("seed-snapshot", checked.status());
  }
  return std::optional<cluster::SeedOptions>(std::move(seed));
}

// The primary it becomes after a takeover: the `replicated` durability
// with the lease taken, on --listen. Returns --lease-ms.
absl::StatusOr<std::uint64_t> ParsePrimaryFlags(
    const Args& args, cluster::ClusterMemberOptions& member_options) {
  const cluster::StandbyOptions& options = member_options.standby;
  service::ServiceOptions& primary = member_options.primary;
  absl::StatusOr<net::Endpoint> listen =
      net::Endpoint::Parse(args.String("listen"));
  if (!listen.ok()) return FlagError("listen", listen.status());
  primary.listen = *listen;
  if (!net::ParseSendPath(args.String("send"), &primary.send)) {
    return FlagError(
        "send", absl::InvalidArgumentError(absl::StrFormat(
                    "'%s' is not auto, sendmmsg or gso", args.String("send"))));
  }
  primary.snapshot_every_records = options.snapshot_every_records;
  if (absl::Status s = ParseMarketDataFlags(args, primary); !s.ok()) {
    return s;
  }
  cluster::ReplicationOptions replication;
  if (absl::Status s = ParseReplicationTuning(args, &replication); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::uint64_t> lease_ms = args.Uint("lease-ms", 120, 3600000);
  if (!lease_ms.ok()) return lease_ms.status();
  // The holder's name is the member's (':' is not in it: NATS keys).
  replication.lease = LeaseForDuration(std::chrono::milliseconds(*lease_ms),
                                       options.member_name);
  member_options.replication = std::move(replication);
  return *lease_ms;
}

// Counters every `interval` seconds and events on standard error, from the
// standby or, once it has taken over, the primary (*member: set once the
// member has started); the primary's banner when it starts.
void ReportMemberProgress(cluster::ClusterMemberOptions& member_options,
                          double interval, bool quiet,
                          cluster::ClusterMember* const* member) {
  cluster::StandbyOptions& options = member_options.standby;
  service::ServiceOptions& primary = member_options.primary;
  options.interval_s = interval;
  options.on_interval = [member] {
    std::fprintf(stderr, "orderwire serve: %s\n",
                 (*member)->standby()->StatsLine().c_str());
  };
  primary.interval_s = interval;
  primary.on_interval = [member] {
    std::fprintf(stderr, "orderwire serve: %s\n",
                 (*member)->primary()->StatsLine().c_str());
  };
  const auto event = [](std::string_view line) {
    std::fprintf(stderr, "orderwire serve: %.*s\n",
                 static_cast<int>(line.size()), line.data());
  };
  options.on_event = event;
  primary.on_event = event;
  member_options.on_primary_started = [quiet,
                                       event](const service::Service& service) {
    if (quiet) {
      if (!service.startup_warning().empty()) event(service.startup_warning());
      return;
    }
    std::fprintf(stderr, "orderwire serve: primary, listening on %s\n  %s\n",
                 service.local_endpoint().ToString().c_str(),
                 service.startup_report().c_str());
  };
}

// The standby's banner, or with --quiet only what its start repaired.
void PrintStandbyBanner(const Args& args, const cluster::Standby& standby,
                        bool takeover, std::uint64_t lease_ms, bool quiet) {
  if (quiet) {
    if (!standby.startup_warning().empty()) {
      std::fprintf(stderr, "orderwire serve: %s\n",
                   standby.startup_warning().c_str());
    }
    return;
  }
  std::fprintf(stderr,
               "orderwire serve: standby (answering no client)\n  %s\n  %s\n",
               takeover ? absl::StrFormat("takes over on %s when the "
                                          "primary's lease (%d ms) expires",
                                          args.String("listen"), lease_ms)
                              .c_str()
                        : "--no-takeover: never takes over",
               standby.startup_report().c_str());
}

// How the member stopped, in the role it had then, with its counters.
void PrintMemberStopped(cluster::ClusterMember& member,
                        const absl::Status& run) {
  if (member.primary() != nullptr) {
    std::fprintf(stderr, "orderwire serve: primary (epoch %llu) %s\n%s",
                 static_cast<unsigned long long>(member.epoch()),
                 run.ok() ? "stopped cleanly" : "stopped on an error",
                 member.primary()->StatsReport().c_str());
    return;
  }
  std::fprintf(
      stderr, "orderwire serve: standby %s\n%s",
      run.ok() ? "stopped cleanly" : "stopped on an error",
      member.standby() != nullptr
          ? absl::StrFormat("  %s\n", member.standby()->StatsLine()).c_str()
          : "");
}

}  // namespace

cluster::LeaseOptions LeaseForDuration(std::chrono::milliseconds d,
                                       std::string holder) {
  // The production ratios of docs/REPLICATION.md (3 s: 500 ms margin,
  // renewed every 250 ms, requests 1 s); a lease held by another member is
  // waited for up to 2 D.
  return cluster::LeaseOptions{.holder = std::move(holder),
                               .duration = d,
                               .safety_margin = d / 6,
                               .renew_interval = d / 12,
                               .request_timeout = d / 3,
                               .acquire_wait = 2 * d};
}

absl::Status ParseReplicationTuning(const Args& args,
                                    cluster::ReplicationOptions* replication) {
  absl::StatusOr<std::uint64_t> replicas = args.Uint("replicas", 1, 3);
  if (!replicas.ok()) return replicas.status();
  if (*replicas == 2) {
    return FlagError("replicas", absl::InvalidArgumentError(
                                     "2: the journal stream has 1 or 3"));
  }
  replication->replicas = static_cast<int>(*replicas);
  absl::StatusOr<std::uint64_t> window =
      args.Uint("replication-window", 1, 4096);
  if (!window.ok()) return window.status();
  replication->window = static_cast<std::uint32_t>(*window);
  absl::StatusOr<std::uint64_t> ack = args.Uint("ack-timeout-ms", 1, 600000);
  if (!ack.ok()) return ack.status();
  replication->ack_timeout = std::chrono::milliseconds(*ack);
  return absl::OkStatus();
}

absl::Status ServeStandby(const Args& args, const std::atomic<bool>& stop) {
  if (absl::Status s = args.Require("journal"); !s.ok()) return s;
  if (absl::Status s = args.Require("nats"); !s.ok()) return s;
  const bool takeover = !args.Bool("no-takeover");
  if (absl::Status s = CheckStandbyFlags(args, takeover); !s.ok()) return s;
  cluster::ClusterMemberOptions member_options;
  member_options.takeover = takeover;
  cluster::StandbyOptions& options = member_options.standby;
  double interval = 0;
  if (absl::Status s = ParseFollowerFlags(args, options, &interval); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::optional<cluster::SeedOptions>> seed =
      CheckSeedFlag(args, options);
  if (!seed.ok()) return seed.status();
  absl::StatusOr<std::uint64_t> lease_ms =
      ParsePrimaryFlags(args, member_options);
  if (!lease_ms.ok()) return lease_ms.status();
  for (const std::string& warning : options.config.warnings) {
    std::fprintf(stderr, "orderwire serve: warning: %s\n", warning.c_str());
  }
  if (seed->has_value()) {
    absl::StatusOr<cluster::SeededJournal> seeded =
        cluster::SeedJournal(**seed);
    if (!seeded.ok()) return seeded.status();
    std::fprintf(stderr, "orderwire serve: %s\n", seeded->report.c_str());
  }
  cluster::ClusterMember* member_ptr = nullptr;
  const bool quiet = args.Bool("quiet");
  ReportMemberProgress(member_options, interval, quiet, &member_ptr);
  absl::StatusOr<std::unique_ptr<cluster::ClusterMember>> member =
      cluster::ClusterMember::Start(std::move(member_options));
  if (!member.ok()) return member.status();
  member_ptr = member->get();
  PrintStandbyBanner(args, *(*member)->standby(), takeover, *lease_ms, quiet);
  absl::Status run = (*member)->Run(stop);
  PrintMemberStopped(**member, run);
  return run;
}

}  // namespace orderwire::cli
