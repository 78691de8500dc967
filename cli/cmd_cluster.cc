// `orderwire cluster status`: who leads an engine's replicated journal, in
// which epoch, how far the journal stream has come and how far each member
// has applied it (replication/cluster_status.h, docs/REPLICATION.md).
#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "replication/cluster_status.h"

namespace orderwire::cli {
namespace {

const CommandSpec kStatusSpec{
    .name = "status",
    .synopsis = "[--nats URLS] [--engine-name NAME] [--json]",
    .summary = "Show the leader, epoch, stream and each member's lag.",
    .details =
        "Reads, without changing anything, the engine's lease (bucket\n"
        "orderwire_NAME_lease), its journal stream (orderwire_NAME_journal:\n"
        "messages, replicas, and the last message: the last journal index\n"
        "replicated and by which epoch) and the members' reports (bucket\n"
        "orderwire_NAME_members: role, epoch, applied journal index, stream\n"
        "sequence; each member puts its own while it runs). A member's lag is\n"
        "the stream's last journal index minus its applied index; 'heard' is\n"
        "how long ago the NATS server stored its report (by this machine's\n"
        "clock). Errors (exit 1): NATS unreachable, a lease value or stream\n"
        "message that does not parse. A source that NATS does not answer in\n"
        "time (a timeout or no responders: e.g. while the leader of the\n"
        "stream or of a bucket is re-elected, a few seconds) does not hide\n"
        "the others: what could be read is printed, then each source that\n"
        "could not ('unread   members could not be read now: ...'; in JSON\n"
        "\"unread\":[\"members\"]), and the exit status is 1. Each request is\n"
        "bounded by --timeout-ms.",
    .flags = {{.name = "nats",
               .value_name = "URLS",
               .default_value = "nats://127.0.0.1:4222",
               .help = "NATS servers, comma-separated"},
              {.name = "engine-name",
               .value_name = "NAME",
               .default_value = "main",
               .help = "the engine whose cluster to show"},
              {.name = "timeout-ms",
               .value_name = "MS",
               .default_value = "3000",
               .help = "bound on connecting and on each request"},
              {.name = "json", .help = "one JSON object instead of the text"}},
};

absl::Status Status(const Args& args) {
  auto timeout = args.Uint("timeout-ms", 1, 600'000);
  if (!timeout.ok()) return timeout.status();
  auto status = replication::ReadClusterStatus(
      args.String("nats"), args.String("engine-name"),
      std::chrono::milliseconds(*timeout));
  if (!status.ok()) return status.status();
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::string text =
      args.Bool("json")
          ? absl::StrCat(replication::ClusterStatusJson(*status, now), "\n")
          : replication::FormatClusterStatus(*status, now);
  if (absl::Status s = WriteAll(stdout, text, "standard output"); !s.ok()) {
    return s;
  }
  if (!status->unread.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "cluster status of engine ", args.String("engine-name"),
        " is incomplete: ", absl::StrJoin(status->unread, ", "),
        " could not be read (", absl::StrJoin(status->unread_errors, "; "),
        "); what could be read is printed above"));
  }
  return absl::OkStatus();
}

const CommandSpec kClusterSpec{
    .name = "cluster",
    .synopsis = "<command> [flags]",
    .summary = "A replicated engine on NATS JetStream: cluster status.",
};

const Command kClusterSubcommands[] = {{&kStatusSpec, Status}};

}  // namespace

const Command kClusterCommand{&kClusterSpec, nullptr, kClusterSubcommands};

}  // namespace orderwire::cli
