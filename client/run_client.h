// The order-entry client behind `orderwire submit`: sends a file of command
// frames over one client::Session (client/session.h) and waits until every
// command is acknowledged. The protocol (go-back-N window, retransmission on
// SequenceGap and timeout, Busy back-off, ReportsGone, keyed sessions, the
// GSO/GRO send paths, silence explained) is the Session's; this loop adds
// what a batch run needs around it:
//
// - pacing: first transmissions at most `rate` per second (the loop submits
//   a command only when the rate allows; retransmissions are not paced);
// - the end: every command acknowledged (or unconfirmed after ReportsGone),
//   no report known to be missing, and `quiet_ms` without an
//   acknowledgement (the last command's remaining reports, e.g. fills);
// - giving up: no progress for `give_up_ms` is DeadlineExceeded, and names
//   the likely causes (ExplainSilence) when nothing was heard at all; a Busy
//   is progress (the service is alive); a failover is not (a run whose
//   targets are all dead gives up);
// - failover: with several targets, the Session's switches (session.h
//   "Failover"), each one line on `diagnostics`; a silence is explained
//   only once every target has been tried;
// - output: the reports in sequence order to `reports_out`, their FNV-1a
//   hash, a progress bar, and the silence explained on `diagnostics` each
//   time the Session reports one.
//
// It waits for the socket (poll(2), 1 ms) only when the Session has nothing
// it may send. Cold set-up (indexing the frames) allocates; the loop does
// not.
#ifndef ORDERWIRE_CLIENT_RUN_CLIENT_H_
#define ORDERWIRE_CLIENT_RUN_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "auth/mac.h"
#include "base/latency_histogram.h"
#include "client/session.h"
#include "net/udp.h"

namespace orderwire::client {

struct ClientOptions {
  net::Endpoint target;
  // The hot standbys after `target`, in failover order (`submit --target
  // A,B,...`), and how long the current target may be silent before the
  // session moves on: SessionOptions says the same.
  std::vector<net::Endpoint> failover_targets;
  int failover_timeout_ms = 1500;
  // SessionOptions::heartbeat_interval_ms (0: none).
  int heartbeat_interval_ms = 1000;
  std::uint32_t session_id = 1;
  double rate = 0;              // commands per second; 0: as fast as allowed
  std::uint32_t window = 4096;  // most commands unacknowledged at once
  int retransmit_timeout_ms = 200;
  int quiet_ms = 200;       // after the last ack, wait this long for the
                            // command's remaining reports
  int give_up_ms = 10'000;  // no progress for this long: fail
  std::FILE* reports_out = nullptr;  // report frames, in sequence order
  bool progress = false;             // a progress bar on stderr
  // A client that resumes a session: the sequence of its first command,
  // and the report sequence it expects next (one past the last report it
  // already holds). SessionOptions says the same.
  std::uint64_t first_sequence = 1;
  std::uint64_t first_report_sequence = 1;
  // The session's MAC (from --key-file): sign what is sent, check reports.
  std::optional<auth::Mac> mac;
  // Where to explain a silence (no answer for explain_after_ms); null: not.
  std::FILE* diagnostics = nullptr;
  int explain_after_ms = 1000;
  // How to send and receive (see above; `submit --send`).
  net::SendPath send = net::SendPath::kAuto;
  // Tests only: the socket's system calls; null: the real ones.
  const net::SocketCalls* socket_calls_for_testing = nullptr;
};

struct ClientResult {
  std::uint64_t commands = 0;       // commands in the input
  std::uint64_t sent = 0;           // first transmissions
  std::uint64_t retransmitted = 0;  // frames sent again
  std::uint64_t acknowledged = 0;
  std::uint64_t accepted = 0;
  std::uint64_t rejected = 0;
  std::uint64_t replaced = 0;
  std::uint64_t cancelled = 0;  // Cancelled reports, any reason
  std::uint64_t fills = 0;      // Filled reports
  std::uint64_t reports = 0;    // reports taken in order
  std::uint64_t report_bytes = 0;
  std::uint64_t duplicate_reports = 0;
  std::uint64_t out_of_order_reports = 0;  // dropped, waited for again
  std::uint64_t sequence_gaps = 0;         // SequenceGap frames received
  std::uint64_t busy = 0;                  // Busy frames received
  std::uint8_t busy_cause = 0;             // the cause of the last Busy
  // ReportsGone frames that told something new, the reports they said are
  // gone, and the commands applied whose acknowledgement was among them
  // (their results are unknown: reconcile them).
  std::uint64_t reports_gone = 0;
  std::uint64_t reports_lost = 0;
  std::uint64_t unconfirmed = 0;
  std::uint64_t datagrams_sent = 0;
  std::uint64_t datagrams_received = 0;
  // The transport used: segmented sends (and the sendmmsg entries they
  // took), UDP_GRO on the socket (and the receive slots that held several
  // datagrams), and the times the segmented path was given up.
  bool segmented = false;
  std::uint64_t segmented_sends = 0;
  bool gro = false;
  std::uint64_t coalesced_receives = 0;
  std::uint64_t gso_fallbacks = 0;
  std::uint64_t bad_datagrams = 0;      // malformed or for another session
  std::uint64_t bad_mac_datagrams = 0;  // keyed: MAC missing or wrong
  std::uint64_t silences_explained = 0;
  // Several targets: switches to the next target, datagrams dropped for
  // coming from another address than the current target, datagrams not
  // sent because the kernel could not reach the target, and the target in
  // use at the end.
  std::uint64_t failovers = 0;
  std::uint64_t other_target_datagrams = 0;
  std::uint64_t unreachable_sends = 0;
  net::Endpoint final_target;
  double seconds = 0;
  LatencyHistogram latency_ns;    // send to primary report
  std::uint64_t report_hash = 0;  // FNV-1a 64 of the report frames
};

// Sends `frames` (command frames back to back, sequences first_sequence,
// first_sequence + 1, ...) and waits for every acknowledgement. Stops early,
// with what it has, when `stop` becomes true. Errors: Unavailable for socket
// failures, DataLoss for a report that contradicts its command,
// DeadlineExceeded when the service stops answering.
absl::StatusOr<ClientResult> RunClient(const ClientOptions& options,
                                       std::span<const std::byte> frames,
                                       const std::atomic<bool>& stop);

// client::ExplainSilence (session.h) for the target, session and key of
// `options`.
[[nodiscard]] std::string ExplainSilence(const ClientOptions& options);

// FNV-1a 64 over `bytes`, continuing from `hash` (start: kFnvOffset).
inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
[[nodiscard]] std::uint64_t Fnv1a(std::uint64_t hash,
                                  std::span<const std::byte> bytes);

}  // namespace orderwire::client

#endif  // ORDERWIRE_CLIENT_RUN_CLIENT_H_
