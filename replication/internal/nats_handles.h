// Internal to replication/: owning handles for libnats objects and the
// conversion of a libnats status into an absl::Status. Not API; do not
// include from outside replication/ (and its tests).
#ifndef ORDERWIRE_REPLICATION_INTERNAL_NATS_HANDLES_H_
#define ORDERWIRE_REPLICATION_INTERNAL_NATS_HANDLES_H_

#include <nats/nats.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace orderwire::replication::internal {

struct NatsDeleter {
  void operator()(natsOptions* p) const { natsOptions_Destroy(p); }
  void operator()(natsConnection* p) const { natsConnection_Destroy(p); }
  void operator()(jsCtx* p) const { jsCtx_Destroy(p); }
  void operator()(natsMsg* p) const { natsMsg_Destroy(p); }
  void operator()(natsSubscription* p) const { natsSubscription_Destroy(p); }
  void operator()(jsStreamInfo* p) const { jsStreamInfo_Destroy(p); }
  void operator()(jsMsgMetaData* p) const { jsMsgMetaData_Destroy(p); }
  void operator()(kvStore* p) const { kvStore_Destroy(p); }
  void operator()(kvEntry* p) const { kvEntry_Destroy(p); }
};
using OptionsHandle = std::unique_ptr<natsOptions, NatsDeleter>;
using ConnectionHandle = std::unique_ptr<natsConnection, NatsDeleter>;
using JetStreamHandle = std::unique_ptr<jsCtx, NatsDeleter>;
using MessageHandle = std::unique_ptr<natsMsg, NatsDeleter>;
using SubscriptionHandle = std::unique_ptr<natsSubscription, NatsDeleter>;
using StreamInfoHandle = std::unique_ptr<jsStreamInfo, NatsDeleter>;
using MetaDataHandle = std::unique_ptr<jsMsgMetaData, NatsDeleter>;
using KvStoreHandle = std::unique_ptr<kvStore, NatsDeleter>;
using KvEntryHandle = std::unique_ptr<kvEntry, NatsDeleter>;

// "`what`: <libnats status text> (<libnats last error>)", as a status of the
// matching kind (timeouts are DeadlineExceeded, no server, no responders,
// lost connections and JetStream error 10008 "temporarily unavailable"
// Unavailable, the rest Internal): the kinds that
// IsTransientNatsError (replication/nats_error.h) reads. `js_error` adds
// the JetStream error code. The calls that give no code (js_KeyValue,
// js_CreateKeyValue) report 10008 only as its text, "JetStream system
// temporarily unavailable", in libnats's last error: Unavailable too.
absl::Status NatsError(natsStatus status, std::string_view what,
                       int js_error = 0);
// NatsError's classification, with libnats's last error given as
// `detail` (tests).
absl::Status NatsErrorWithDetail(natsStatus status, std::string_view what,
                                 int js_error, std::string_view detail);

// Connects to `servers` (comma-separated nats:// URLs; any one will do, the
// client reconnects to another if its server goes away). `send_asap` turns
// off libnats's up-to-1-ms batching of small publishes. Errors: NatsError's,
// except that a protocol error in the handshake (a server that stopped
// answering between its INFO and the PONG) is Unavailable: transient.
absl::StatusOr<ConnectionHandle> Connect(const std::string& servers,
                                         std::chrono::milliseconds timeout,
                                         bool send_asap);

// A JetStream context on `conn` whose API requests wait up to `timeout`.
absl::StatusOr<JetStreamHandle> JetStream(natsConnection* conn,
                                          std::chrono::milliseconds timeout);

// The stream's info (js_GetStreamInfo). NotFound: no such stream; else
// NatsError's kinds, with the JetStream error code.
absl::StatusOr<StreamInfoHandle> LookUpStream(jsCtx* js,
                                              const std::string& stream);

}  // namespace orderwire::replication::internal

#endif  // ORDERWIRE_REPLICATION_INTERNAL_NATS_HANDLES_H_
