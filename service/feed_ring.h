// FeedRing: the recent live feed, written by the service's loop and read by
// the request server's thread without a lock (docs/MARKETDATA.md
// "Retransmission": "recent packets come from a bounded in-memory ring").
//
// The loop appends each Data packet it sends: its first sequence, its
// message count and its blocks (length-prefixed messages, as in the
// packet). The ring keeps the newest packets that fit `bytes` (and at most
// bytes / 64 packets); older ones are overwritten. Retained() says which
// messages it holds, [first_retained, next_sequence). Copy() gives a reader
// the blocks from a sequence on. Commit() marks the end of what the writer
// appended as a record boundary (the publisher calls it once a pass's
// packets are sent): Committed() is the next sequence there, so a reader
// that stops there (the snapshot replica, feed_replica.h) sees whole
// records only.
//
// Threading: one writer (Append; Reset only before readers start) and any
// number of readers (Copy, Retained) on other threads. The writer never waits:
// before it overwrites bytes or a packet's entry it raises a low-water mark; a
// reader copies, then checks the mark (a fence between, as in a seqlock), and a
// copy the writer overtook is refused as not retained. Copy() and Retained()
// may say a message is retained that is gone by the time the reader uses it;
// what they copied is whole and correct. The bytes are copied with plain memcpy
// while the writer may overwrite them (the seqlock pattern: a copy the
// validation refuses is never used); a thread sanitizer would report it.
//
// Cost: Append is one copy of the blocks and a few stores, no allocation
// and no page fault; Copy a binary search over the packets and one copy.
// Memory: `bytes` plus 24 bytes per packet entry (one per 64 bytes), in
// base::HugePageArray (2 MiB pages where the kernel gives them: fewer page
// table entries for a snapshot's fork() to copy) populated at construction,
// so all of it is resident from the start and the loop never faults a page
// in while it publishes. Faulting the default 64 MiB in on first touch, 4
// KiB at a time, cost the loop ~190 ms on the VM of
// docs/BENCHMARKS-MARKETDATA.md, 8% of its time at the highest rate; the
// ring and its entries (88 MiB) now take ~20 ms at start. Throws
// std::bad_alloc if the memory cannot be had.
#ifndef ORDERWIRE_SERVICE_FEED_RING_H_
#define ORDERWIRE_SERVICE_FEED_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/huge_page_array.h"

namespace orderwire::service {

// The default `--md-ring-bytes`: 64 MiB, about a million messages.
inline constexpr std::size_t kDefaultFeedRingBytes = std::size_t{64} << 20;
// The least ring: 64 KiB.
inline constexpr std::size_t kMinFeedRingBytes = std::size_t{64} << 10;

class FeedRing {
 public:
  // `bytes` is rounded up to a power of two, at least kMinFeedRingBytes.
  explicit FeedRing(std::size_t bytes);

  FeedRing(const FeedRing&) = delete;
  FeedRing& operator=(const FeedRing&) = delete;

  // Writer, before any reader: the ring is empty and the next packet
  // appended carries `next_sequence` first.
  void Reset(std::uint64_t next_sequence) noexcept;
  // Writer: a Data packet's blocks (at most the packet's size), its first
  // sequence (the ring's next) and its message count (>= 1).
  void Append(std::uint64_t first_sequence, std::uint16_t count,
              std::span<const std::byte> blocks) noexcept;
  // Writer: every message appended so far ends a record and was sent.
  void Commit() noexcept {
    committed_.store(writer_next_, std::memory_order_release);
  }

  struct Range {
    std::uint64_t first_retained;  // F
    std::uint64_t next_sequence;   // the next message the live feed sends
  };
  // Any thread: what the ring holds now; {0, 0} when the writer overtook
  // this reader every time it tried (counted in overtaken()).
  [[nodiscard]] Range Retained() const noexcept;
  // Reads that gave up because the writer kept overwriting what they read.
  [[nodiscard]] std::uint64_t overtaken() const noexcept {
    return overtaken_.load(std::memory_order_relaxed);
  }
  // Any thread: the sequence after the last Commit() (the Reset's
  // next_sequence before any); the messages below it were appended.
  [[nodiscard]] std::uint64_t Committed() const noexcept {
    return committed_.load(std::memory_order_acquire);
  }

  // Any thread: copies into `out` (cleared first) the blocks of the packets
  // from the one holding `first` on, until they hold at least `max`
  // messages from `first` or the ring ends; returns the sequence of the
  // first block copied (<= first), or 0 when `first` is not retained
  // (below F, overwritten meanwhile, or at or beyond the next sequence).
  // Allocates only when `out` must grow.
  std::uint64_t Copy(std::uint64_t first, std::size_t max,
                     std::vector<std::byte>& out) const;

  [[nodiscard]] std::size_t capacity_bytes() const noexcept {
    return data_size_;
  }

 private:
  // A packet's place; written by the writer, read under validation, each
  // field through std::atomic_ref (Load, Store): plain integers, so the
  // entries can be zeroed memory.
  struct Entry {
    std::uint64_t first_sequence;
    std::uint64_t position;  // absolute byte position
    std::uint32_t length;
    std::uint32_t count;
  };
  template <typename T>
  [[nodiscard]] static T Load(T& field) noexcept {
    return std::atomic_ref<T>(field).load(std::memory_order_relaxed);
  }
  template <typename T>
  static void Store(T& field, T value) noexcept {
    std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
  }
  [[nodiscard]] Entry& entry(std::uint64_t index) const noexcept {
    return entries_[index & entry_mask_];
  }

  std::size_t data_size_;
  base::HugePageArray<std::byte> data_;
  std::size_t data_mask_;
  // Mutable: readers' entry() hands std::atomic_ref a non-const field.
  mutable base::HugePageArray<Entry> entries_;
  std::size_t entry_mask_;
  // The writer's own: the byte position of the next packet, packets
  // appended, and the oldest entry still whole.
  std::uint64_t write_position_ = 0;
  std::uint64_t written_ = 0;
  std::uint64_t oldest_ = 0;
  std::uint64_t writer_next_ = 1;  // the sequence after the last appended
  // Published: packets appended since Reset, the oldest entry whose slot
  // and bytes are not overwritten (raised before they are), and the next
  // sequence of an empty ring.
  std::atomic<std::uint64_t> entries_written_{0};
  std::atomic<std::uint64_t> low_water_{0};
  std::atomic<std::uint64_t> empty_next_{1};
  mutable std::atomic<std::uint64_t> overtaken_{0};
  std::atomic<std::uint64_t> committed_{1};
};

}  // namespace orderwire::service

#endif  // ORDERWIRE_SERVICE_FEED_RING_H_
