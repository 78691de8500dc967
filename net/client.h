// The order-entry client behind `orderwire submit`: sends a session's command
// frames to the service in datagrams, keeps at most `window` commands
// unacknowledged, retransmits go-back-N, and checks every report it gets.
//
// Acknowledgement. The protocol has no ack frame: a command is acknowledged
// by its first report, which is always its "primary" report: Accepted or
// Rejected for a new order, Cancelled (reason Requested) or Rejected for a
// cancel, Replaced or Rejected for a replace. The service applies a
// session's commands in sequence order, so primaries arrive in command
// order, and the client checks each against the command it acknowledges
// (kind, client_order_id or order_id); a mismatch is a protocol error.
//
// Reports are taken strictly in report-sequence order: an older report is a
// duplicate and skipped; a newer one means one was lost, so it is dropped
// and the client waits for the service to send again (the service resends a
// session's reports when it sees a retransmitted command). Commands are
// retransmitted from the expected sequence on SequenceGap, and from the
// oldest unacknowledged one after `retransmit_timeout_ms` without progress;
// while a report is missing, from the last acknowledged one (the missing
// report may be one of its own, after its primary), so the service's resend
// starts at or before it. The client does not finish while a report is
// known to be missing, unless the service says it is gone (ReportsGone,
// docs/PROTOCOL.md "Reports gone"): the client then continues from the
// report and command it names, and counts the commands it skipped as
// applied but unconfirmed.
//
// On Busy (the service takes no commands for now, e.g.
// its disk is full) the client counts it, sends nothing for a back-off (1 ms,
// doubling while Busy repeats, at most 50 ms; back to 1 ms on the next
// acknowledgement), then retransmits from the Busy's expected sequence. A
// Busy shows the service alive: it does not count towards `give_up_ms`.
//
// Keyed sessions (docs/PROTOCOL.md "Authenticated datagrams"): with a MAC,
// every datagram sent carries the Authenticated flag and its MAC trailer,
// and a report datagram without a valid MAC is dropped and counted
// (bad_mac_datagrams), like any malformed one.
//
// Silence is explained. The service never answers a datagram it refuses
// (unknown session, too many sessions, address not allowed or pinned
// elsewhere, missing or wrong MAC) so as not to be an amplifier; when the
// client hears nothing for `explain_after_ms`, it writes the likely causes
// (ExplainSilence) to `diagnostics`, and the DeadlineExceeded error at the
// end names them too.
//
// Transport (ClientOptions::send): with kSegmented (or kAuto where the
// kernel has UDP_SEGMENT) the client sends its datagrams with SendSegmented
// and receives with UDP_GRO, splitting what the kernel joined back into the
// datagrams the service sent (by the gso_size the kernel reports); with
// kSendmmsg, one datagram per sendmmsg entry and per receive slot. A
// segmented send refused with EIO/EINVAL, or UDP_GRO refused, falls back
// to the plain way, counted in ClientResult.
//
// Cold set-up (the frames, one send time per command) is allocated once;
// the send/receive loop does not allocate.
#ifndef ORDERWIRE_NET_CLIENT_H_
#define ORDERWIRE_NET_CLIENT_H_

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
#include "net/udp.h"

namespace orderwire::net {

struct ClientOptions {
  Endpoint target;
  std::uint32_t session_id = 1;
  double rate = 0;              // commands per second; 0: as fast as allowed
  std::uint32_t window = 4096;  // most commands unacknowledged at once
  int retransmit_timeout_ms = 200;
  int quiet_ms = 200;       // after the last ack, wait this long for the
                            // command's remaining reports
  int give_up_ms = 10'000;  // no progress for this long: fail
  std::FILE* reports_out = nullptr;  // report frames, in sequence order
  bool progress = false;             // a progress bar on stderr
  // First command sequence to send (a client that resumes a session).
  std::uint64_t first_sequence = 1;
  // The session's MAC (from --key-file): sign what is sent, check reports.
  std::optional<auth::Mac> mac;
  // Where to explain a silence (no answer for explain_after_ms); null: not.
  std::FILE* diagnostics = nullptr;
  int explain_after_ms = 1000;
  // How to send and receive (see above; `submit --send`).
  SendPath send = SendPath::kAuto;
  // Tests only: the socket's system calls; null: the real ones.
  const SocketCalls* socket_calls_for_testing = nullptr;
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

// The likely causes of hearing nothing from the service, for a person:
// the service not running or another port, the session not configured,
// max_sessions reached, the address not allowed or the session pinned to
// another endpoint, and for the key: missing (the session is keyed and this
// client has no --key-file) or wrong. Several lines, each starting with
// "  - ".
[[nodiscard]] std::string ExplainSilence(const ClientOptions& options);

// FNV-1a 64 over `bytes`, continuing from `hash` (start: kFnvOffset).
inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
[[nodiscard]] std::uint64_t Fnv1a(std::uint64_t hash,
                                  std::span<const std::byte> bytes);

}  // namespace orderwire::net

#endif  // ORDERWIRE_NET_CLIENT_H_
