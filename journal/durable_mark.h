// The DURABLE file: how far the journal is durable, published by the
// running writer for readers in other processes (JournalFollower), without a
// system call on the writer's hot path.
//
// `DURABLE` in the journal directory, 64 bytes, shared through mmap by the
// writer (read-write) and its followers (read-only), in the host's byte
// order, which must be little-endian (static_assert below):
//
//   0 magic "OWDURABL" u64 | 8 version u16 | 10 size u16 | 12 flags u32 0
//   16 journal_id u64 | 24 generation u64 | 32 durable_index u64
//   40..63 zeros
//
// The writer creates or takes over the file at Open (generation + 1, its
// journal id, the recovered last index), then stores durable_index with
// release order each time the durable index advances; a follower loads it
// with acquire order, so every byte of the records up to it, written
// before the store, is visible to the follower's reads of the segments.
// The file is a live hint, not a witness: it is never fsynced, and after a
// crash it may lag the journal (never lead it: it is stored after the
// records are durable). The checkpoint (checkpoint.h) is the witness.
#ifndef ORDERWIRE_JOURNAL_DURABLE_MARK_H_
#define ORDERWIRE_JOURNAL_DURABLE_MARK_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "journal/format.h"

namespace orderwire::journal {

static_assert(std::endian::native == std::endian::little,
              "the DURABLE file is shared memory in host order");

inline constexpr std::string_view kDurableFileName = "DURABLE";
inline constexpr std::size_t kDurableFileSize = 64;
inline constexpr std::uint16_t kDurableVersion = 1;
inline constexpr std::uint64_t kDurableMagic =
    MagicOf<std::uint64_t>("OWDURABL");
inline constexpr std::size_t kDurableJournalIdOffset = 16;
inline constexpr std::size_t kDurableGenerationOffset = 24;
inline constexpr std::size_t kDurableIndexOffset = 32;
static_assert(kDurableIndexOffset % alignof(std::uint64_t) == 0);

// The writer's side. Move-only; unmaps on destruction (the file stays).
class DurableMarkPublisher {
 public:
  // Creates or takes over `directory`/DURABLE for the journal `journal_id`,
  // with durable_index = `durable_index`. Errors: the errno of open,
  // ftruncate or mmap, naming the file. Cold.
  static absl::StatusOr<DurableMarkPublisher> Open(const std::string& directory,
                                                   std::uint64_t journal_id,
                                                   std::uint64_t durable_index);
  DurableMarkPublisher() = default;
  DurableMarkPublisher(DurableMarkPublisher&& other) noexcept;
  DurableMarkPublisher& operator=(DurableMarkPublisher&& other) noexcept;
  DurableMarkPublisher(const DurableMarkPublisher&) = delete;
  DurableMarkPublisher& operator=(const DurableMarkPublisher&) = delete;
  ~DurableMarkPublisher();

  // Publishes `durable_index` (release store). Hot path: one store.
  // Nothing before Open.
  void Publish(std::uint64_t durable_index) noexcept {
    if (index_ == nullptr) return;
    std::atomic_ref<std::uint64_t>(*index_).store(durable_index,
                                                  std::memory_order_release);
  }

 private:
  std::byte* map_ = nullptr;
  std::uint64_t* index_ = nullptr;
};

// A follower's side: the file mapped read-only.
class DurableMarkView {
 public:
  // nullopt if `directory` has no DURABLE file (no writer of this version
  // has opened the journal). Errors: DataLoss for a file that is not one
  // (size, magic, version), the errno of open or mmap. Cold.
  static absl::StatusOr<std::optional<DurableMarkView>> Open(
      const std::string& directory);
  DurableMarkView() = default;
  DurableMarkView(DurableMarkView&& other) noexcept;
  DurableMarkView& operator=(DurableMarkView&& other) noexcept;
  DurableMarkView(const DurableMarkView&) = delete;
  DurableMarkView& operator=(const DurableMarkView&) = delete;
  ~DurableMarkView();

  // Every record up to this index is durable (acquire load).
  [[nodiscard]] std::uint64_t durable_index() const noexcept {
    return std::atomic_ref<std::uint64_t>(*index_).load(
        std::memory_order_acquire);
  }
  [[nodiscard]] std::uint64_t journal_id() const noexcept;
  [[nodiscard]] std::uint64_t generation() const noexcept;

 private:
  std::byte* map_ = nullptr;
  std::uint64_t* index_ = nullptr;
};

}  // namespace orderwire::journal

#endif  // ORDERWIRE_JOURNAL_DURABLE_MARK_H_
