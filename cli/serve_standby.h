// `orderwire serve --standby`: the hot standby (service/standby.h), run by
// `serve` when --standby is given (cli/cmd_service.cc holds the flag table).
#ifndef ORDERWIRE_CLI_SERVE_STANDBY_H_
#define ORDERWIRE_CLI_SERVE_STANDBY_H_

#include <atomic>

#include "absl/status/status.h"
#include "cli/common.h"

namespace orderwire::cli {

// Follows the engine's journal stream at --nats into --journal until `stop`
// is set (SIGINT/SIGTERM) or an error, reporting itself as --member-name
// (default HOSTNAME-PID) to `orderwire cluster status`, with a snapshot
// every --snapshot-every records. Usage errors: --nats missing,
// --snapshot-every that is not a number of records, and the serve flags the
// standby does not take yet (--retain, --metrics-listen, --stats-json,
// --log-refusals).
absl::Status ServeStandby(const Args& args, const std::atomic<bool>& stop);

}  // namespace orderwire::cli

#endif  // ORDERWIRE_CLI_SERVE_STANDBY_H_
