// The writer's I/O queues; see io_queue.h.
#include "journal/internal/io_queue.h"

#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"

namespace orderwire::journal::internal {
namespace {

std::string UringUnavailable(int err) {
  std::string why;
  switch (err) {
    case ENOSYS:
      why = "this kernel has no io_uring";
      break;
    case EPERM:
      why =
          "io_uring is disabled for this process (see the sysctl "
          "kernel.io_uring_disabled, or a seccomp/container policy)";
      break;
    case ENOMEM:
      why =
          "the kernel could not allocate the ring (locked-memory limit, "
          "ulimit -l, too low?)";
      break;
    default:
      why = "io_uring_queue_init failed";
      break;
  }
  return absl::StrFormat("io_uring is not available: %s: %s (errno %d)", why,
                         std::strerror(err), err);
}

class UringQueue final : public IoQueue {
 public:
  UringQueue() = default;
  UringQueue(const UringQueue&) = delete;
  UringQueue& operator=(const UringQueue&) = delete;
  ~UringQueue() override {
    if (initialized_) io_uring_queue_exit(&ring_);
  }

  int Init(unsigned entries) {
    const int ret = io_uring_queue_init(entries, &ring_, 0);
    if (ret == 0) initialized_ = true;
    return ret;
  }

  bool Push(const IoOp& op) noexcept override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return false;
    switch (op.code) {
      case OpCode::kWrite:
        if (op.buffer_index >= 0 && registered_) {
          io_uring_prep_write_fixed(sqe, op.fd, op.data, op.length, op.offset,
                                    op.buffer_index);
        } else {
          io_uring_prep_write(sqe, op.fd, op.data, op.length, op.offset);
        }
        if (op.dsync) sqe->rw_flags = RWF_DSYNC;
        break;
      case OpCode::kFdatasync:
        io_uring_prep_fsync(sqe, op.fd, IORING_FSYNC_DATASYNC);
        break;
      case OpCode::kFsync:
        io_uring_prep_fsync(sqe, op.fd, 0);
        break;
    }
    if (op.link) sqe->flags |= IOSQE_IO_LINK;
    sqe->user_data = op.user_data;
    return true;
  }

  int Submit() noexcept override {
    while (true) {
      const int ret = io_uring_submit(&ring_);
      if (ret >= 0) return 0;
      if (ret != -EINTR) return ret;
    }
  }

  int Reap(std::span<IoCompletion> out, bool wait) noexcept override {
    io_uring_cqe* cqes[64];
    const unsigned max =
        static_cast<unsigned>(std::min<std::size_t>(out.size(), 64));
    unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, max);
    if (n == 0 && wait) {
      io_uring_cqe* cqe = nullptr;
      while (true) {
        const int ret = io_uring_wait_cqe(&ring_, &cqe);
        if (ret == 0) break;
        if (ret != -EINTR) return ret;
      }
      n = io_uring_peek_batch_cqe(&ring_, cqes, max);
    }
    for (unsigned i = 0; i < n; ++i) {
      out[i] = IoCompletion{cqes[i]->user_data, cqes[i]->res};
    }
    io_uring_cq_advance(&ring_, n);
    return static_cast<int>(n);
  }

  int RegisterBuffers(std::span<const iovec> buffers) noexcept override {
    const int ret = io_uring_register_buffers(
        &ring_, buffers.data(), static_cast<unsigned>(buffers.size()));
    registered_ = ret == 0;
    return ret;
  }

  [[nodiscard]] std::string_view name() const noexcept override {
    return "io_uring";
  }

 private:
  io_uring ring_{};
  bool initialized_ = false;
  bool registered_ = false;
};

class BlockingQueue final : public IoQueue {
 public:
  explicit BlockingQueue(unsigned entries)
      : ops_(entries), completions_(std::size_t{entries} * 4) {}

  bool Push(const IoOp& op) noexcept override {
    if (queued_ == ops_.size()) return false;
    ops_[queued_++] = op;
    return true;
  }

  int Submit() noexcept override {
    bool cancel = false;
    std::size_t i = 0;
    for (; i < queued_; ++i) {
      if (pending_ == completions_.size()) break;
      const IoOp& op = ops_[i];
      const std::int32_t result = cancel ? -ECANCELED : Execute(op);
      const bool incomplete =
          result < 0 || (op.code == OpCode::kWrite &&
                         static_cast<std::uint32_t>(result) != op.length);
      cancel = op.link && incomplete;
      completions_[(head_ + pending_) % completions_.size()] =
          IoCompletion{op.user_data, result};
      ++pending_;
    }
    // Ops that found no room for their completion wait for the next call.
    std::move(ops_.begin() + static_cast<std::ptrdiff_t>(i),
              ops_.begin() + static_cast<std::ptrdiff_t>(queued_),
              ops_.begin());
    queued_ -= i;
    return 0;
  }

  int Reap(std::span<IoCompletion> out, bool /*wait*/) noexcept override {
    if (pending_ == 0 && queued_ != 0) Submit();
    std::size_t n = 0;
    while (n < out.size() && pending_ > 0) {
      out[n++] = completions_[head_];
      head_ = (head_ + 1) % completions_.size();
      --pending_;
    }
    return static_cast<int>(n);
  }

  int RegisterBuffers(std::span<const iovec> /*buffers*/) noexcept override {
    return 0;  // plain pointers are used
  }

  [[nodiscard]] std::string_view name() const noexcept override {
    return "blocking pwritev2/fdatasync";
  }

 private:
  static std::int32_t Execute(const IoOp& op) noexcept {
    while (true) {
      long ret = 0;
      switch (op.code) {
        case OpCode::kWrite: {
          iovec iov{const_cast<std::byte*>(op.data), op.length};
          ret = ::pwritev2(op.fd, &iov, 1, static_cast<off_t>(op.offset),
                           op.dsync ? RWF_DSYNC : 0);
          break;
        }
        case OpCode::kFdatasync:
          ret = ::fdatasync(op.fd);
          break;
        case OpCode::kFsync:
          ret = ::fsync(op.fd);
          break;
      }
      if (ret >= 0) return static_cast<std::int32_t>(ret);
      if (errno != EINTR) return -errno;
    }
  }

  std::vector<IoOp> ops_;
  std::size_t queued_ = 0;
  std::vector<IoCompletion> completions_;
  std::size_t head_ = 0;
  std::size_t pending_ = 0;
};

class FaultyQueue final : public IoQueue {
 public:
  FaultyQueue(std::unique_ptr<IoQueue> inner, IoFaults* faults)
      : inner_(std::move(inner)), faults_(faults) {}

  bool Push(const IoOp& op) noexcept override {
    if (!inner_->Push(op)) return false;
    if (linked_from_.has_value()) {
      follower_[*linked_from_] = op.user_data;
      linked_from_.reset();
    }
    if (op.link) linked_from_ = op.user_data;
    ops_[op.user_data] = op;
    faults_->Pushed(op);
    return true;
  }

  int Submit() noexcept override {
    const int ret = inner_->Submit();
    // A link does not reach into the next batch (see IoFaults::Submitted).
    linked_from_.reset();
    faults_->Submitted();
    return ret;
  }

  int Reap(std::span<IoCompletion> out, bool wait) noexcept override {
    const int n = inner_->Reap(out, wait);
    for (int i = 0; i < n; ++i) {
      IoCompletion& c = out[static_cast<std::size_t>(i)];
      const auto it = ops_.find(c.user_data);
      if (it == ops_.end()) continue;
      const IoOp op = it->second;
      ops_.erase(it);
      if (cancelled_.erase(c.user_data) > 0) {
        if (c.result >= 0) c.result = -ECANCELED;
        faults_->Completed(op, c.result);
        continue;
      }
      const std::int32_t before = c.result;
      c.result = faults_->Rewrite(op, c.result);
      const bool was_whole =
          op.code != OpCode::kWrite ||
          (before >= 0 && static_cast<std::uint32_t>(before) == op.length);
      const bool now_whole =
          op.code != OpCode::kWrite
              ? c.result >= 0
              : (c.result >= 0 &&
                 static_cast<std::uint32_t>(c.result) == op.length);
      if (was_whole && !now_whole) {
        if (const auto f = follower_.find(c.user_data); f != follower_.end()) {
          cancelled_.insert(f->second);
        }
      }
      follower_.erase(c.user_data);
      faults_->Completed(op, c.result);
    }
    return n;
  }

  int RegisterBuffers(std::span<const iovec> buffers) noexcept override {
    return inner_->RegisterBuffers(buffers);
  }

  [[nodiscard]] std::string_view name() const noexcept override {
    return inner_->name();
  }

 private:
  std::unique_ptr<IoQueue> inner_;
  IoFaults* faults_;
  absl::flat_hash_map<std::uint64_t, IoOp> ops_;
  absl::flat_hash_map<std::uint64_t, std::uint64_t> follower_;
  absl::flat_hash_set<std::uint64_t> cancelled_;
  std::optional<std::uint64_t> linked_from_;
};

}  // namespace

absl::Status ProbeIoUring() {
  io_uring ring{};
  const int ret = io_uring_queue_init(4, &ring, 0);
  if (ret < 0) return absl::UnavailableError(UringUnavailable(-ret));
  io_uring_queue_exit(&ring);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<IoQueue>> MakeUringQueue(unsigned entries) {
  auto queue = std::make_unique<UringQueue>();
  const int ret = queue->Init(entries);
  if (ret < 0) return absl::UnavailableError(UringUnavailable(-ret));
  return std::unique_ptr<IoQueue>(std::move(queue));
}

std::unique_ptr<IoQueue> MakeBlockingQueue(unsigned entries) {
  return std::make_unique<BlockingQueue>(entries);
}

std::unique_ptr<IoQueue> MakeFaultyQueue(std::unique_ptr<IoQueue> inner,
                                         IoFaults* faults) {
  return std::make_unique<FaultyQueue>(std::move(inner), faults);
}

}  // namespace orderwire::journal::internal
