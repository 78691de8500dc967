// `orderwire serve --standby`: the hot standby (cluster/standby.h), run by
// `serve` when --standby is given (cli/cmd_service.cc holds the flag table).
#ifndef ORDERWIRE_CLI_SERVE_STANDBY_H_
#define ORDERWIRE_CLI_SERVE_STANDBY_H_

#include <atomic>
#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "cli/common.h"
#include "cluster/replication_options.h"
#include "service/service.h"

namespace orderwire::cli {

// Follows the engine's journal stream at --nats into --journal until `stop`
// is set (SIGINT/SIGTERM) or an error, reporting itself as --member-name
// (default HOSTNAME-PID) to `orderwire cluster status`, with a snapshot
// every --snapshot-every records; with --seed-snapshot, first makes its new
// journal from a primary's snapshot (cluster/seed.h); unless --no-takeover,
// takes over when the primary's lease (--lease-ms) expires and serves on
// --listen as the primary (cluster/cluster_member.h), until `stop`. Usage
// errors: --nats missing, --snapshot-every that is not a number of records,
// --lease (the primary's), the primary's flags with --no-takeover,
// --seed-snapshot refused (cluster::CheckSeed: a directory that holds
// anything, a file that is not a valid snapshot, another configuration; or
// with --no-snapshot), and the serve flags the standby does not take yet
// (--retain, --metrics-listen, --stats-json, --log-refusals).
absl::Status ServeStandby(const Args& args, const std::atomic<bool>& stop);

// Why --reconfigure is refused with --durability replicated and --standby.
inline constexpr const char* kReconfigureNotReplicated =
    "--reconfigure is not available with --durability replicated or "
    "--standby: a new configuration is pinned in this node's own journal "
    "only (the journal stream does not carry configurations), so the other "
    "members would apply the records after it under the old one. Start "
    "with the configuration the journal pins (docs/REPLICATION.md, "
    "\"Configuration changes\")";

// The lease of duration `d` with the production ratios (margin D/6, renewed
// every D/12, requests D/3, a held lease waited for 2 D): `--lease-ms`, for
// the primary and for the primary a standby becomes.
cluster::LeaseOptions LeaseForDuration(std::chrono::milliseconds d,
                                       std::string holder);

// Reads the journal stream's tuning flags into `replication`, for the
// primary and for the primary a standby becomes: --replicas (1 or 3),
// --replication-window (1-4096 messages) and --ack-timeout-ms
// (1-600000). A flag error names the flag.
// --md-target, --md-ttl, --md-interface, --md-heartbeat-ms into
// options.market_data (cmd_service.cc): the primary's and, once it takes
// over, a standby's. Errors: a usage error naming the flag.
absl::Status ParseMarketDataFlags(const Args& args,
                                  service::ServiceOptions& options);

absl::Status ParseReplicationTuning(const Args& args,
                                    cluster::ReplicationOptions* replication);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_SERVE_STANDBY_H_
