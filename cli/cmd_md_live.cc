// `orderwire md watch`, `md record` and `md print`: the live market-data
// feed through marketdata::Subscriber and FeedSocket (docs/MARKETDATA.md
// "A subscriber"), and the file `md record` writes (cli/md_record_file.h).
//
//   orderwire md watch  --target HOST:PORT --request HOST:PORT
//       [--instrument ID] [--session ID] [--from-start] [--depth N]
//   orderwire md record --target HOST:PORT --request HOST:PORT
//       --output FILE [--json] [--count N] [--duration S] [--from-start]
//   orderwire md print FILE
//
// One thread: poll(2) on the feed socket (10 ms), every datagram to the
// subscriber, its timers, then the command's output. The subscriber fills
// gaps by retransmission and joins by snapshot (or, --from-start, from
// sequence 1 by retransmission); what it applies is printed or recorded
// in sequence order, each message once. SIGINT or SIGTERM stops either
// command: exit status 0, the subscriber's counters on standard error.
// `md record` also stops at --count messages, after --duration seconds, and
// at the feed's EndOfSession once every message before it is recorded.
// A WrongSession refusal (the request server serves another journal) is
// exit status 1. Usage errors: exit status 2. Cold path: a tool.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "base/clock.h"
#include "cli/book_text.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/md_live.h"
#include "cli/md_record_file.h"
#include "feed/kind_table.h"
#include "feed/packet.h"
#include "feed/types.h"
#include "jsonl/jsonl.h"
#include "marketdata/book.h"
#include "marketdata/feed_socket.h"
#include "marketdata/subscriber.h"
#include "net/udp.h"

namespace orderwire::cli {
namespace {

std::atomic<bool> g_md_stop{false};

void OnMdSignal(int) { g_md_stop.store(true); }

void InstallMdStopHandlers() {
  struct sigaction action {};
  action.sa_handler = OnMdSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// The synopsis and help text the two live commands share (literals, so
// that each command's text is one constant).
#define ORDERWIRE_MD_LIVE_SYNOPSIS                                        \
  "--target HOST:PORT --request HOST:PORT [--session ID] [--from-start] " \
  "[--interface ADDRESS] [--heartbeat-ms MS] [--duration S]"

#define ORDERWIRE_MD_LIVE_DETAILS                                          \
  "--target is where the feed arrives: a multicast group (joined, on\n"    \
  "--interface) or this host's address of a unicast target of 'serve\n"    \
  "--md-target'. --request is the request server ('serve\n"                \
  "--md-request-listen'): gaps are filled by retransmission from it,\n"    \
  "asked from the feed socket. By default the subscriber joins by\n"       \
  "snapshot; --from-start follows the feed from sequence 1, asking for\n"  \
  "what it missed (the server retains the feed since it started:\n"        \
  "docs/MARKETDATA.md \"Retransmission\"). --session follows only that\n"  \
  "session (default: the first packet's). --heartbeat-ms is the\n"         \
  "publisher's (staleness after three). --duration S stops after S\n"      \
  "seconds.\n\n"                                                           \
  "SIGINT or SIGTERM stops: exit status 0, the subscriber's counters on\n" \
  "standard error. A WrongSession refusal: exit status 1. Usage errors:\n" \
  "exit status 2."

std::vector<FlagSpec> LiveFlags(std::vector<FlagSpec> own) {
  std::vector<FlagSpec> flags = {
      {"target", "HOST:PORT", "",
       "where the feed arrives: multicast group or unicast address "
       "(required)"},
      {"request", "HOST:PORT", "", "the request server (required)"},
      {"session", "ID", "", "the session to follow (default: the first)"},
      {"from-start", "", "", "follow the feed from sequence 1, not a snapshot"},
      {"interface", "ADDRESS", "", "--target multicast: the interface's IPv4"},
      {"heartbeat-ms", "MS", "1000", "the publisher's heartbeat interval"},
      {"duration", "S", "", "stop after S seconds"}};
  flags.insert(flags.end(), own.begin(), own.end());
  return flags;
}

struct LiveOptions {
  marketdata::FeedSocketOptions socket;
  marketdata::SubscriberOptions subscriber;
  std::optional<std::int64_t> duration_ns;
};

// The numeric address and port of a HOST:PORT flag, and whether the
// address is a multicast group.
struct HostPort {
  std::string address;
  std::uint16_t port = 0;
  bool multicast = false;
  int family = AF_INET;
};

absl::StatusOr<HostPort> ParseHostPort(const Args& args,
                                       std::string_view flag) {
  absl::StatusOr<net::Endpoint> endpoint =
      net::Endpoint::Parse(args.String(flag));
  if (!endpoint.ok()) return FlagError(flag, endpoint.status());
  HostPort out{.address = endpoint->Address(),
               .port = endpoint->port(),
               .multicast = endpoint->IsMulticast(),
               .family = endpoint->family()};
  if (out.port == 0) {
    return FlagError(flag, absl::InvalidArgumentError("port 0"));
  }
  return out;
}

absl::Status SocketFlags(const Args& args, LiveOptions& options) {
  if (absl::Status s = args.Require("target"); !s.ok()) return s;
  if (absl::Status s = args.Require("request"); !s.ok()) return s;
  absl::StatusOr<HostPort> target = ParseHostPort(args, "target");
  if (!target.ok()) return target.status();
  absl::StatusOr<HostPort> request = ParseHostPort(args, "request");
  if (!request.ok()) return request.status();
  if (target->family != request->family) {
    return UsageError("--target and --request: not of one address family");
  }
  marketdata::FeedSocketOptions& socket = options.socket;
  socket.port = target->port;
  if (target->multicast) {
    socket.bind_address = target->family == AF_INET ? "0.0.0.0" : "::";
    socket.multicast_group = target->address;
    socket.multicast_interface = args.String("interface");
  } else {
    if (args.Has("interface")) {
      return UsageError("--interface applies to a multicast --target");
    }
    socket.bind_address = target->address;
  }
  socket.request_address = request->address;
  socket.request_port = request->port;
  return absl::OkStatus();
}

absl::StatusOr<LiveOptions> ParseLiveFlags(const Args& args) {
  LiveOptions options;
  if (absl::Status s = SocketFlags(args, options); !s.ok()) return s;
  marketdata::SubscriberOptions& sub = options.subscriber;
  if (args.Has("session")) {
    absl::StatusOr<std::uint64_t> session =
        args.Uint("session", 1, std::numeric_limits<std::uint64_t>::max());
    if (!session.ok()) return session.status();
    sub.session = *session;
  }
  sub.first_sequence = args.Bool("from-start") ? 1 : 0;
  absl::StatusOr<std::uint64_t> heartbeat = args.Uint("heartbeat-ms", 1, 60000);
  if (!heartbeat.ok()) return heartbeat.status();
  sub.heartbeat_interval_ns = static_cast<std::int64_t>(*heartbeat) * 1'000'000;
  if (args.Has("duration")) {
    absl::StatusOr<double> duration = args.Double("duration", 0.001, 1e7);
    if (!duration.ok()) return duration.status();
    options.duration_ns = static_cast<std::int64_t>(*duration * 1e9);
  }
  return options;
}

// The subscriber's counters and state, one line.
std::string CountersText(std::string_view command,
                         const marketdata::Subscriber& subscriber) {
  const marketdata::SubscriberCounters& c = subscriber.counters();
  std::string text = absl::StrFormat(
      "%s: session %d, state %s, next sequence %d; packets %d, messages "
      "applied %d, duplicates %d, gaps %d (%d messages missing), held "
      "packets %d (%d evicted), heartbeats %d, end of session %d, "
      "retransmit requests %d, replies %d, stale replies %d, snapshot "
      "requests %d, completed %d, contradictions %d, unknown kinds %d, "
      "stale periods %d",
      command, subscriber.session(), marketdata::Name(subscriber.state()),
      subscriber.next_sequence(), c.packets, c.messages_applied, c.duplicates,
      c.gaps, c.messages_missing, c.held_packets, c.hold_overflows,
      c.heartbeats, c.end_of_session, c.retransmit_requests,
      c.retransmit_replies, c.stale_replies, c.snapshot_requests,
      c.snapshots_completed, c.contradictions, c.unknown_kinds,
      c.stale_periods);
  for (std::size_t i = 0; i < c.refused.size(); ++i) {
    if (c.refused[i] == 0) continue;
    const std::string_view name =
        feed::Name(static_cast<feed::RefusedReason>(i));
    absl::StrAppendFormat(&text, ", refused %s %d",
                          name.empty() ? "(other)" : name, c.refused[i]);
  }
  for (std::size_t i = 1; i < c.malformed.size(); ++i) {
    if (c.malformed[i] == 0) continue;
    absl::StrAppendFormat(&text, ", malformed %s %d",
                          feed::Name(static_cast<feed::CheckCause>(i)),
                          c.malformed[i]);
  }
  text.push_back('\n');
  return text;
}

// Sends the subscriber's requests from the feed socket; the commands'
// listeners derive from it.
class LiveListener : public marketdata::SubscriberListener {
 public:
  void SendRequest(std::span<const std::byte> request) override {
    // A request lost is asked again on the subscriber's timer.
    if (socket_ != nullptr) (void)socket_->Send(request);
  }
  void set_socket(marketdata::FeedSocket* socket) { socket_ = socket; }

 private:
  marketdata::FeedSocket* socket_ = nullptr;
};

// Every message before the feed's EndOfSession applied.
bool EndReached(const marketdata::Subscriber& s) {
  return s.end_of_session().has_value() &&
         s.next_sequence() >= *s.end_of_session();
}

// Runs the subscriber until a signal, --duration, or `tick` (called after
// each pass with the time) returns true or an error. WrongSession fails.
absl::Status RunFeed(
    const LiveOptions& options, std::string_view command,
    LiveListener& listener, marketdata::Subscriber& subscriber,
    absl::FunctionRef<absl::StatusOr<bool>(std::int64_t)> tick) {
  absl::StatusOr<marketdata::FeedSocket> socket =
      marketdata::FeedSocket::Open(options.socket);
  if (!socket.ok()) {
    if (absl::IsInvalidArgument(socket.status())) {
      return FlagError("target", socket.status());
    }
    return socket.status();
  }
  listener.set_socket(&*socket);
  InstallMdStopHandlers();
  std::fprintf(stderr, "orderwire %s: receiving on %s:%d, requests to %s:%d\n",
               std::string(command).c_str(),
               options.socket.multicast_group.empty()
                   ? options.socket.bind_address.c_str()
                   : options.socket.multicast_group.c_str(),
               socket->local_port(), options.socket.request_address.c_str(),
               options.socket.request_port);
  const std::int64_t start = base::MonotonicNs();
  absl::Status status;
  while (!g_md_stop.load()) {
    pollfd pfd{.fd = socket->fd(), .events = POLLIN, .revents = 0};
    (void)::poll(&pfd, 1, 10);
    const std::int64_t now = base::MonotonicNs();
    if (absl::StatusOr<int> received = socket->Receive(subscriber, now);
        !received.ok()) {
      status = received.status();
      break;
    }
    subscriber.Poll(now);
    const absl::StatusOr<bool> done = tick(now);
    if (!done.ok()) {
      status = done.status();
      break;
    }
    if (*done) break;
    if (subscriber.state() == marketdata::SubscriberState::kStopped) {
      status = absl::FailedPreconditionError(
          "the request server refused the session followed (WrongSession): "
          "the feed is another journal's");
      break;
    }
    if (options.duration_ns && now - start >= *options.duration_ns) break;
  }
  listener.set_socket(nullptr);
  return status;
}

// ---------------------------------------------------------------------------
// md record

}  // namespace

const CommandSpec kMdRecordSpec{
    .name = "record",
    .synopsis =
        ORDERWIRE_MD_LIVE_SYNOPSIS " --output FILE [--json] [--count N]",
    .summary = "Record the live feed's messages, in sequence order, to FILE.",
    .details =
        "Follows the feed as 'md watch' does and writes each message the\n"
        "subscriber applies, in sequence order after gaps are filled, to\n"
        "FILE: with --json as JSON Lines, the text of 'md from-journal'\n"
        "(docs/MARKETDATA.md \"Text form\"), so the two can be compared;\n"
        "without, in the binary form of docs/OPERATIONS.md \"Recording the\n"
        "feed\" ('md print FILE' shows it as JSON Lines). Stops at --count N\n"
        "messages, after --duration, on a signal, or at the feed's\n"
        "EndOfSession once every message before it is "
        "recorded.\n\n" ORDERWIRE_MD_LIVE_DETAILS,
    .flags = LiveFlags({{"output", "FILE", "", "the file written (required)"},
                        {"json", "", "", "JSON Lines, not the binary form"},
                        {"count", "N", "", "stop after N messages"}}),
};

namespace {

class Recorder : public LiveListener {
 public:
  Recorder(bool json, std::uint64_t limit) : json_(json), limit_(limit) {}

  void OnMessage(std::uint64_t sequence, feed::MessageBlock message) override {
    if (recorded_ >= limit_) return;
    if (json_) {
      out_ += jsonl::FeedMessageToJson(sequence, message);
      out_.push_back('\n');
    } else {
      AppendRecordedMessage(out_, sequence, message);
    }
    if (recorded_ == 0) first_ = sequence;
    last_ = sequence;
    ++recorded_;
  }

  // Writes what was recorded since the last call.
  absl::Status Flush(std::FILE* file, const std::string& path) {
    if (out_.empty()) return absl::OkStatus();
    absl::Status s = WriteAll(file, out_, path);
    out_.clear();
    return s;
  }
  [[nodiscard]] bool full() const { return recorded_ >= limit_; }
  [[nodiscard]] std::uint64_t recorded() const { return recorded_; }
  [[nodiscard]] std::uint64_t first() const { return first_; }
  [[nodiscard]] std::uint64_t last() const { return last_; }

 private:
  bool json_;
  std::uint64_t limit_;
  std::uint64_t recorded_ = 0;
  std::uint64_t first_ = 0;
  std::uint64_t last_ = 0;
  std::string out_;
};

}  // namespace

absl::Status MdRecord(const Args& args) {
  absl::StatusOr<LiveOptions> options = ParseLiveFlags(args);
  if (!options.ok()) return options.status();
  if (absl::Status s = args.Require("output"); !s.ok()) return s;
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
  if (args.Has("count")) {
    absl::StatusOr<std::uint64_t> count =
        args.Uint("count", 1, std::numeric_limits<std::uint64_t>::max());
    if (!count.ok()) return count.status();
    limit = *count;
  }
  const std::string path = args.String("output");
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrFormat("--output %s: cannot open: %s",
                                               path, std::strerror(errno)));
  }
  const bool json = args.Bool("json");
  Recorder recorder(json, limit);
  marketdata::Subscriber subscriber(options->subscriber, recorder);
  absl::Status status =
      json ? absl::OkStatus() : WriteAll(file, kRecordFileMagic, path);
  std::string why = "stopped";
  if (status.ok()) {
    status =
        RunFeed(*options, "md record", recorder, subscriber,
                [&](std::int64_t) -> absl::StatusOr<bool> {
                  if (absl::Status s = recorder.Flush(file, path); !s.ok()) {
                    return s;
                  }
                  if (recorder.full()) why = "--count reached";
                  if (EndReached(subscriber)) why = "end of session";
                  return recorder.full() || EndReached(subscriber);
                });
  }
  if (absl::Status s = recorder.Flush(file, path); status.ok()) status = s;
  if (std::fclose(file) != 0 && status.ok()) {
    status = absl::UnavailableError(
        absl::StrFormat("%s: closing: %s", path, std::strerror(errno)));
  }
  std::string summary = absl::StrFormat("md record: %d messages recorded to %s",
                                        recorder.recorded(), path);
  if (recorder.recorded() > 0) {
    absl::StrAppendFormat(&summary, " (sequences %d to %d)", recorder.first(),
                          recorder.last());
  }
  absl::StrAppendFormat(&summary, "; %s\n", why);
  summary += CountersText("md record", subscriber);
  if (absl::Status s = WriteAll(stderr, summary, "standard error");
      status.ok()) {
    status = s;
  }
  return status;
}

// ---------------------------------------------------------------------------
// md watch

const CommandSpec kMdWatchSpec{
    .name = "watch",
    .synopsis =
        ORDERWIRE_MD_LIVE_SYNOPSIS " [--instrument ID] [--depth N] [--book N]",
    .summary = "Follow the live feed: book ladder, best prices, trades.",
    .details =
        "On a terminal: a ladder of --depth price levels a side (quantity\n"
        "and orders per level), the best bid and offer and the last trades\n"
        "of one instrument (--instrument, or the one that changed last),\n"
        "redrawn in place at most ten times a second. Otherwise one line per\n"
        "change of an instrument's best prices and per trade\n"
        "(docs/OPERATIONS.md \"Watching the feed\"):\n"
        "  bbo seq=S instrument=I bid=QTY@PRICE ask=QTY@PRICE  ('-': none)\n"
        "  trade seq=S instrument=I price=P quantity=Q maker=buy|sell "
        "match=M\n"
        "  snapshot seq=S | state from=A to=B | end seq=S\n"
        "--instrument ID keeps that instrument's lines. --book N prints, at\n"
        "the end, the top N levels of every instrument with resting orders\n"
        "to standard error, in the text of 'replay --book N', so a\n"
        "subscriber's books and the journal's compare with "
        "diff.\n\n" ORDERWIRE_MD_LIVE_DETAILS,
    .flags =
        LiveFlags({{"instrument", "ID", "", "only this instrument"},
                   {"depth", "N", "10", "levels a side in the ladder (1-50)"},
                   {"book", "N", "0", "depth table of every book at the end"}}),
};

namespace {

constexpr std::size_t kMaxDepth = 50;
// --book: levels a side in the final depth tables, at most.
constexpr std::uint64_t kMaxBookLevels = 1'000'000;
constexpr std::size_t kTradesShown = 10;
constexpr std::int64_t kRedrawNs = 100'000'000;

std::string LevelText(const std::optional<marketdata::LevelInfo>& level) {
  if (!level.has_value()) return "-";
  return absl::StrFormat("%d@%d", level->quantity.value(),
                         level->price.value());
}

std::string_view SideName(codec::Side side) {
  return side == codec::Side::kBuy ? "buy" : "sell";
}

class Watcher : public LiveListener {
 public:
  Watcher(std::optional<std::uint32_t> instrument, std::size_t depth,
          bool terminal)
      : filter_(instrument), depth_(depth), terminal_(terminal) {
    if (instrument.has_value()) focus_ = *instrument;
  }

  void OnMessage(std::uint64_t sequence, feed::MessageBlock) override {
    sequence_ = sequence;
    dirty_ = true;
  }
  void OnTrade(std::uint64_t sequence,
               const feed::OrderExecuted& trade) override {
    if (!Wanted(trade.instrument_id)) return;
    std::string line = absl::StrFormat(
        "trade seq=%d instrument=%d price=%d quantity=%d maker=%s match=%d",
        sequence, trade.instrument_id, trade.price, trade.quantity,
        SideName(trade.side), trade.match_id);
    if (!filter_.has_value()) focus_ = trade.instrument_id;
    if (terminal_) {
      trades_.push_front(std::move(line));
      if (trades_.size() > kTradesShown) trades_.pop_back();
    } else {
      Line(line);
    }
  }
  void OnBestPrices(codec::InstrumentId instrument_id,
                    const marketdata::BestPrices& best) override {
    if (!Wanted(instrument_id.value())) return;
    if (!filter_.has_value()) focus_ = instrument_id.value();
    dirty_ = true;
    if (terminal_) return;
    Line(absl::StrFormat("bbo seq=%d instrument=%d bid=%s ask=%s", sequence_,
                         instrument_id.value(), LevelText(best.bid),
                         LevelText(best.ask)));
  }
  void OnSnapshot(std::uint64_t feed_sequence) override {
    sequence_ = feed_sequence;
    Line(absl::StrFormat("snapshot seq=%d", feed_sequence));
  }
  void OnStateChange(marketdata::SubscriberState from,
                     marketdata::SubscriberState to) override {
    Line(absl::StrFormat("state from=%s to=%s", marketdata::Name(from),
                         marketdata::Name(to)));
  }
  void OnEnd(std::uint64_t sequence) {
    Line(absl::StrFormat("end seq=%d", sequence));
  }

  // Writes the lines since the last call, or redraws the terminal (at
  // most every kRedrawNs, when something changed).
  absl::Status Output(const marketdata::Subscriber& subscriber,
                      std::int64_t now_ns) {
    if (terminal_ && (dirty_ || now_ns - drawn_ns_ >= 10 * kRedrawNs) &&
        now_ns - drawn_ns_ >= kRedrawNs) {
      Draw(subscriber);
      drawn_ns_ = now_ns;
      dirty_ = false;
    }
    if (out_.empty()) return absl::OkStatus();
    absl::Status s = WriteAll(stdout, out_);
    out_.clear();
    return s;
  }

 private:
  [[nodiscard]] bool Wanted(std::uint32_t instrument) const {
    return !filter_.has_value() || *filter_ == instrument;
  }
  void Line(std::string_view line) {
    if (terminal_) {
      events_.push_front(std::string(line));
      if (events_.size() > 3) events_.pop_back();
      return;
    }
    out_.append(line);
    out_.push_back('\n');
  }
  void Draw(const marketdata::Subscriber& subscriber);

  std::optional<std::uint32_t> filter_;
  std::size_t depth_;
  bool terminal_;
  std::uint32_t focus_ = 0;
  std::uint64_t sequence_ = 0;
  bool dirty_ = true;
  std::int64_t drawn_ns_ = 0;
  std::deque<std::string> trades_;
  std::deque<std::string> events_;
  std::string out_;
};

// The screen: home, each line cleared to its end, the rest cleared.
void Watcher::Draw(const marketdata::Subscriber& subscriber) {
  const marketdata::Book& book = subscriber.book();
  const codec::InstrumentId id(focus_);
  std::array<marketdata::LevelInfo, kMaxDepth> asks{};
  std::array<marketdata::LevelInfo, kMaxDepth> bids{};
  const std::size_t n_asks =
      book.Depth(id, codec::Side::kSell, std::span(asks.data(), depth_));
  const std::size_t n_bids =
      book.Depth(id, codec::Side::kBuy, std::span(bids.data(), depth_));
  std::string screen = "\x1b[H";
  const auto row = [&screen](const std::string& text) {
    screen += text;
    screen += "\x1b[K\n";
  };
  row(absl::StrFormat(
      "orderwire md watch   session %d   %s   next %d   "
      "instrument %d",
      subscriber.session(), marketdata::Name(subscriber.state()),
      subscriber.next_sequence(), focus_));
  row(absl::StrFormat("%12s %14s %8s", "", "quantity", "orders"));
  for (std::size_t i = n_asks; i-- > 0;) {
    row(absl::StrFormat("ask %8d %14d %8d", asks[i].price.value(),
                        asks[i].quantity.value(), asks[i].order_count));
  }
  row("------------------------------------");
  for (std::size_t i = 0; i < n_bids; ++i) {
    row(absl::StrFormat("bid %8d %14d %8d", bids[i].price.value(),
                        bids[i].quantity.value(), bids[i].order_count));
  }
  row("");
  row("last trades:");
  for (const std::string& trade : trades_) row("  " + trade);
  for (const std::string& event : events_) row(event);
  const marketdata::SubscriberCounters& c = subscriber.counters();
  row(
      absl::StrFormat("packets %d  messages %d  gaps %d  retransmit "
                      "requests %d  snapshots %d",
                      c.packets, c.messages_applied, c.gaps,
                      c.retransmit_requests, c.snapshots_completed));
  screen += "\x1b[J";
  out_ += screen;
}

}  // namespace

absl::Status MdWatch(const Args& args) {
  absl::StatusOr<LiveOptions> options = ParseLiveFlags(args);
  if (!options.ok()) return options.status();
  std::optional<std::uint32_t> instrument;
  if (args.Has("instrument")) {
    absl::StatusOr<std::uint64_t> id =
        args.Uint("instrument", 1, std::numeric_limits<std::uint32_t>::max());
    if (!id.ok()) return id.status();
    instrument = static_cast<std::uint32_t>(*id);
  }
  absl::StatusOr<std::uint64_t> depth = args.Uint("depth", 1, kMaxDepth);
  if (!depth.ok()) return depth.status();
  absl::StatusOr<std::uint64_t> book_levels =
      args.Uint("book", 0, kMaxBookLevels);
  if (!book_levels.ok()) return book_levels.status();
  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  Watcher watcher(instrument, *depth, terminal);
  marketdata::Subscriber subscriber(options->subscriber, watcher);
  bool end_told = false;
  if (terminal) (void)WriteAll(stdout, std::string_view("\x1b[2J"));
  absl::Status status =
      RunFeed(*options, "md watch", watcher, subscriber,
              [&](std::int64_t now) -> absl::StatusOr<bool> {
                if (!end_told && EndReached(subscriber)) {
                  watcher.OnEnd(*subscriber.end_of_session());
                  end_told = true;
                }
                if (absl::Status s = watcher.Output(subscriber, now); !s.ok()) {
                  return s;
                }
                return false;
              });
  std::string text;
  if (*book_levels > 0) text = DepthTables(subscriber.book(), *book_levels);
  text += CountersText("md watch", subscriber);
  if (absl::Status s = WriteAll(stderr, text, "standard error"); status.ok()) {
    status = s;
  }
  return status;
}

// ---------------------------------------------------------------------------
// md print

const CommandSpec kMdPrintSpec{
    .name = "print",
    .synopsis = "FILE",
    .summary = "Print a file 'md record' wrote (binary) as JSON Lines.",
    .details =
        "Prints each message of FILE (docs/OPERATIONS.md \"Recording the\n"
        "feed\") as 'md from-journal' prints it (docs/MARKETDATA.md \"Text\n"
        "form\"). A file that is not one, or is cut inside a record: the\n"
        "messages before it are printed, then an error naming the byte\n"
        "offset, exit status 1.",
    .positional = "FILE",
};

absl::Status MdPrint(const Args& args) {
  if (args.positional().size() != 1) {
    return UsageError("one FILE is required");
  }
  const std::string& path = args.positional()[0];
  absl::StatusOr<std::vector<std::byte>> bytes = ReadFile("md print", path);
  if (!bytes.ok()) return bytes.status();
  std::string out;
  const absl::Status parsed = ForEachRecordedMessage(
      *bytes, [&](std::uint64_t sequence, feed::MessageBlock message) {
        out += jsonl::FeedMessageToJson(sequence, message);
        out.push_back('\n');
      });
  if (absl::Status s = WriteAll(stdout, out); !s.ok()) return s;
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s", path, parsed.message()));
  }
  return absl::OkStatus();
}

}  // namespace orderwire::cli
