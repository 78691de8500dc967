// The DURABLE file; see durable_mark.h.
#include "journal/durable_mark.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/unique_fd.h"
#include "codec/wire.h"

namespace orderwire::journal {
namespace {

std::string PathOf(const std::string& directory) {
  return absl::StrFormat("%s/%s", directory, kDurableFileName);
}

void Unmap(std::byte* map) {
  if (map != nullptr) ::munmap(map, kDurableFileSize);
}

}  // namespace

absl::StatusOr<DurableMarkPublisher> DurableMarkPublisher::Open(
    const std::string& directory, std::uint64_t journal_id,
    std::uint64_t durable_index) {
  const std::string path = PathOf(directory);
  const base::UniqueFd fd(
      ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrFormat("open %s", path));
  // The previous writer's generation, then the whole file written with
  // pwrite: its block is allocated before it is mapped, so a full disk is
  // an error here, never a SIGBUS on a store to the map.
  std::byte image[kDurableFileSize] = {};
  std::uint64_t generation = 0;
  if (::pread(fd.get(), image, sizeof(image), 0) ==
          static_cast<ssize_t>(sizeof(image)) &&
      codec::LoadLE<std::uint64_t>(image) == kDurableMagic) {
    generation = codec::LoadLE<std::uint64_t>(image + kDurableGenerationOffset);
  }
  std::memset(image, 0, sizeof(image));
  codec::StoreLE<std::uint64_t>(image, kDurableMagic);
  codec::StoreLE<std::uint16_t>(image + 8, kDurableVersion);
  codec::StoreLE<std::uint16_t>(image + 10,
                                static_cast<std::uint16_t>(kDurableFileSize));
  codec::StoreLE<std::uint64_t>(image + kDurableJournalIdOffset, journal_id);
  codec::StoreLE<std::uint64_t>(image + kDurableGenerationOffset,
                                generation + 1);
  errno = 0;
  if (::pwrite(fd.get(), image, sizeof(image), 0) !=
          static_cast<ssize_t>(sizeof(image)) ||
      ::ftruncate(fd.get(), static_cast<off_t>(kDurableFileSize)) != 0) {
    const int err = errno != 0 ? errno : EIO;
    return absl::ErrnoToStatus(err, absl::StrFormat("write %s", path));
  }
  void* p = ::mmap(nullptr, kDurableFileSize, PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("mmap %s", path));
  }
  DurableMarkPublisher mark;
  mark.map_ = static_cast<std::byte*>(p);
  mark.index_ =
      reinterpret_cast<std::uint64_t*>(mark.map_ + kDurableIndexOffset);
  mark.Publish(durable_index);
  return mark;
}

DurableMarkPublisher::DurableMarkPublisher(
    DurableMarkPublisher&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)),
      index_(std::exchange(other.index_, nullptr)) {}

DurableMarkPublisher& DurableMarkPublisher::operator=(
    DurableMarkPublisher&& other) noexcept {
  if (this != &other) {
    Unmap(map_);
    map_ = std::exchange(other.map_, nullptr);
    index_ = std::exchange(other.index_, nullptr);
  }
  return *this;
}

DurableMarkPublisher::~DurableMarkPublisher() { Unmap(map_); }

absl::StatusOr<std::optional<DurableMarkView>> DurableMarkView::Open(
    const std::string& directory) {
  const std::string path = PathOf(directory);
  const base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::optional<DurableMarkView>();
    return absl::ErrnoToStatus(errno, absl::StrFormat("open %s", path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("fstat %s", path));
  }
  if (st.st_size != static_cast<off_t>(kDurableFileSize)) {
    return absl::DataLossError(
        absl::StrFormat("%s is %d bytes, not the %d of a DURABLE file", path,
                        st.st_size, kDurableFileSize));
  }
  void* p =
      ::mmap(nullptr, kDurableFileSize, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    return absl::ErrnoToStatus(errno, absl::StrFormat("mmap %s", path));
  }
  DurableMarkView view;
  view.map_ = static_cast<std::byte*>(p);
  view.index_ =
      reinterpret_cast<std::uint64_t*>(view.map_ + kDurableIndexOffset);
  if (codec::LoadLE<std::uint64_t>(view.map_) != kDurableMagic ||
      codec::LoadLE<std::uint16_t>(view.map_ + 8) != kDurableVersion) {
    return absl::DataLossError(absl::StrFormat(
        "%s: bad magic or unsupported version (a DURABLE file starts with "
        "\"OWDURABL\", version %d)",
        path, kDurableVersion));
  }
  return std::optional<DurableMarkView>(std::move(view));
}

DurableMarkView::DurableMarkView(DurableMarkView&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)),
      index_(std::exchange(other.index_, nullptr)) {}

DurableMarkView& DurableMarkView::operator=(DurableMarkView&& other) noexcept {
  if (this != &other) {
    Unmap(map_);
    map_ = std::exchange(other.map_, nullptr);
    index_ = std::exchange(other.index_, nullptr);
  }
  return *this;
}

DurableMarkView::~DurableMarkView() { Unmap(map_); }

std::uint64_t DurableMarkView::journal_id() const noexcept {
  return codec::LoadLE<std::uint64_t>(map_ + kDurableJournalIdOffset);
}

std::uint64_t DurableMarkView::generation() const noexcept {
  return codec::LoadLE<std::uint64_t>(map_ + kDurableGenerationOffset);
}

}  // namespace orderwire::journal
