#include "replication/internal/nats_handles.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace orderwire::replication::internal {

absl::Status NatsError(natsStatus status, std::string_view what, int js_error) {
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  return NatsErrorWithDetail(
      status, what, js_error,
      detail != nullptr && last == status ? std::string_view(detail) : "");
}

absl::Status NatsErrorWithDetail(natsStatus status, std::string_view what,
                                 int js_error, std::string_view detail) {
  std::string text = absl::StrCat(absl::string_view(what.data(), what.size()),
                                  ": ", natsStatus_GetText(status));
  if (js_error != 0)
    absl::StrAppend(&text, " (JetStream error ", js_error, ")");
  if (!detail.empty()) {
    absl::StrAppend(&text, ": ",
                    absl::string_view(detail.data(), detail.size()));
  }
  // JetStream's own "temporarily unavailable" (HTTP 503: its meta leader
  // or the stream's leader is being elected) goes away by itself too; the
  // calls that give no code say it in the detail only.
  constexpr std::string_view kNotAvailable = "temporarily unavailable";
  if (js_error == JSClusterNotAvailErr ||
      (js_error == 0 && detail.find(kNotAvailable) != std::string_view::npos)) {
    return absl::UnavailableError(text);
  }
  switch (status) {
    case NATS_TIMEOUT:
      return absl::DeadlineExceededError(text);
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NO_SERVER:
    case NATS_NO_RESPONDERS:
    case NATS_STALE_CONNECTION:
      return absl::UnavailableError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::StatusOr<ConnectionHandle> Connect(const std::string& servers,
                                         std::chrono::milliseconds timeout,
                                         bool send_asap) {
  std::vector<std::string> urls =
      absl::StrSplit(servers, ',', absl::SkipWhitespace());
  if (urls.empty()) {
    return absl::InvalidArgumentError(
        "NATS servers: empty list (expected nats://HOST:PORT[,...])");
  }
  std::vector<const char*> url_ptrs;
  url_ptrs.reserve(urls.size());
  for (const auto& url : urls) url_ptrs.push_back(url.c_str());
  natsOptions* raw_opts = nullptr;
  natsStatus s = natsOptions_Create(&raw_opts);
  OptionsHandle opts(raw_opts);
  if (s == NATS_OK) {
    s = natsOptions_SetServers(opts.get(), url_ptrs.data(),
                               static_cast<int>(url_ptrs.size()));
  }
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts.get(), timeout.count());
  if (s == NATS_OK) s = natsOptions_SetSendAsap(opts.get(), send_asap);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts.get(), 100);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts.get(), 600);
  if (s != NATS_OK) return NatsError(s, "NATS options");
  natsConnection* raw_conn = nullptr;
  s = natsConnection_Connect(&raw_conn, opts.get());
  ConnectionHandle conn(raw_conn);
  if (s == NATS_PROTOCOL_ERROR) {
    // The handshake got no answer: a server paused or going away between
    // its INFO and the PONG ("Expected 'PONG', got ''"). As transient as a
    // timeout; a start waiting for NATS tries again.
    absl::Status error =
        NatsError(s, absl::StrCat("connect to NATS at ", servers));
    return absl::UnavailableError(error.message());
  }
  if (s != NATS_OK) {
    return NatsError(s, absl::StrCat("connect to NATS at ", servers));
  }
  return conn;
}

absl::StatusOr<JetStreamHandle> JetStream(natsConnection* conn,
                                          std::chrono::milliseconds timeout) {
  jsOptions jo;
  natsStatus s = jsOptions_Init(&jo);
  jo.Wait = timeout.count();
  jsCtx* raw = nullptr;
  if (s == NATS_OK) s = natsConnection_JetStream(&raw, conn, &jo);
  JetStreamHandle js(raw);
  if (s != NATS_OK) return NatsError(s, "JetStream context");
  return js;
}

absl::StatusOr<StreamInfoHandle> LookUpStream(jsCtx* js,
                                              const std::string& stream) {
  jsStreamInfo* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetStreamInfo(&raw, js, stream.c_str(), nullptr, &jerr);
  StreamInfoHandle info(raw);
  if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) {
    return absl::NotFoundError(
        absl::StrCat("JetStream stream ", stream, " does not exist"));
  }
  if (s != NATS_OK) {
    return NatsError(s, absl::StrCat("look up JetStream stream ", stream),
                     static_cast<int>(jerr));
  }
  return info;
}

}  // namespace orderwire::replication::internal
