// The feed's session id (docs/MARKETDATA.md "Sequence numbers and
// sessions"): a journal's feed is the session `journal_id` until an
// accepted loss; the first record after such a start begins a new session
// whose id is the 8-byte BLAKE2b hash (libsodium crypto_generichash, no
// key), read little-endian, of journal_id u64 LE || that record's index
// u64 LE. The one place that computes it: the publisher, the request
// server and the tests all call FeedSession().
//
// Errors: none. Cost: one 16-byte BLAKE2b when `start_index` is not 0.
// Thread-safe (libsodium is initialised once, thread-safely).
#ifndef ORDERWIRE_FEED_SESSION_H_
#define ORDERWIRE_FEED_SESSION_H_

#include <cstdint>

namespace orderwire::feed {

// The session of a feed whose current session began at journal record
// `start_index` (state::FeedProducer::session_start()): `journal_id` for 0
// (the journal's own session, from its first record), else the hash above.
[[nodiscard]] std::uint64_t FeedSession(std::uint64_t journal_id,
                                        std::uint64_t start_index) noexcept;

}  // namespace orderwire::feed

#endif  // ORDERWIRE_FEED_SESSION_H_
