// Write-then-fdatasync ordering, in the manner of liburing's test/fsync.c:
// the guarantees the writer builds its durability on, checked on this
// kernel. Skipped where io_uring is not available.
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "journal/internal/io_queue.h"
#include "tests/journal/test_support.h"

namespace orderwire::journal {
namespace {

using internal::IoCompletion;
using internal::IoOp;
using internal::OpCode;
using test_support::ScratchDir;

constexpr std::size_t kChunk = 4096;

struct AlignedBuffer {
  explicit AlignedBuffer(std::size_t n)
      : data(static_cast<std::byte*>(std::aligned_alloc(4096, n))), size(n) {
    std::memset(data, 0x5A, n);
  }
  ~AlignedBuffer() { std::free(data); }
  std::byte* data;
  std::size_t size;
};

// liburing test/fsync.c, test_barrier_fsync: four writes, then an fsync
// queued behind them with IOSQE_IO_DRAIN; the fsync must complete last.
TEST(FsyncOrderingTest, ADrainedFdatasyncCompletesAfterEveryEarlierWrite) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  const int fd = ::open(dir.Sub("f").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  io_uring ring;
  ASSERT_EQ(io_uring_queue_init(8, &ring, 0), 0);
  AlignedBuffer buf(4 * kChunk);
  for (int round = 0; round < 20; ++round) {
    for (std::size_t i = 0; i < 4; ++i) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_write(sqe, fd, buf.data + i * kChunk, kChunk,
                          static_cast<__u64>(i * kChunk));
      sqe->user_data = static_cast<__u64>(i + 1);
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
    sqe->flags |= IOSQE_IO_DRAIN;
    sqe->user_data = 0;
    ASSERT_EQ(io_uring_submit(&ring), 5);
    for (int i = 0; i < 5; ++i) {
      io_uring_cqe* cqe = nullptr;
      ASSERT_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
      if (i < 4) {
        EXPECT_NE(cqe->user_data, 0u) << "the fsync completed before a write";
        EXPECT_EQ(cqe->res, static_cast<int>(kChunk));
      } else {
        EXPECT_EQ(cqe->user_data, 0u);
        EXPECT_EQ(cqe->res, 0);
      }
      io_uring_cqe_seen(&ring, cqe);
    }
  }
  io_uring_queue_exit(&ring);
  ::close(fd);
}

// The writer's batch mode: each group's write carries an fdatasync linked
// behind it. Every sync completes after its own write, whatever the order
// of the writes among themselves.
TEST(FsyncOrderingTest, ALinkedFdatasyncCompletesAfterItsWrite) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  const int fd = ::open(dir.Sub("f").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  auto queue = internal::MakeUringQueue(64);
  ASSERT_TRUE(queue.ok());
  AlignedBuffer buf(8 * kChunk);
  for (int round = 0; round < 10; ++round) {
    for (std::uint64_t i = 0; i < 8; ++i) {
      ASSERT_TRUE((*queue)->Push(IoOp{.code = OpCode::kWrite,
                                      .fd = fd,
                                      .data = buf.data + i * kChunk,
                                      .length = kChunk,
                                      .offset = i * kChunk,
                                      .link = true,
                                      .user_data = i << 1}));
      ASSERT_TRUE((*queue)->Push(
          IoOp{.code = OpCode::kFdatasync, .fd = fd, .user_data = i << 1 | 1}));
    }
    ASSERT_EQ((*queue)->Submit(), 0);
    std::vector<int> write_at(8, -1);
    std::vector<int> sync_at(8, -1);
    int seen = 0;
    while (seen < 16) {
      IoCompletion c[16];
      const int n = (*queue)->Reap(c, true);
      ASSERT_GT(n, 0);
      for (int k = 0; k < n; ++k) {
        const std::uint64_t i = c[k].user_data >> 1;
        if (c[k].user_data & 1) {
          EXPECT_EQ(c[k].result, 0);
          sync_at[i] = seen;
        } else {
          EXPECT_EQ(c[k].result, static_cast<int>(kChunk));
          write_at[i] = seen;
        }
        ++seen;
      }
    }
    for (std::size_t i = 0; i < 8; ++i) {
      EXPECT_GE(write_at[i], 0);
      EXPECT_GT(sync_at[i], write_at[i]) << "pair " << i;
    }
  }
  ::close(fd);
}

// A short write breaks the link: the fdatasync behind it is cancelled, so
// the writer must not take its absence of error for a sync. A file-size
// limit makes the kernel write only part of the buffer (in a child, so the
// limit does not stay with the test process).
TEST(FsyncOrderingTest, AShortWriteCancelsTheLinkedFdatasync) {
  SKIP_WITHOUT_URING();
  ScratchDir dir;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(dir.Sub("f").c_str(), O_CREAT | O_RDWR, 0644);
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{kChunk + kChunk / 2, kChunk + kChunk / 2};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto queue = internal::MakeUringQueue(8);
    if (!queue.ok() || fd < 0) ::_exit(10);
    AlignedBuffer buf(2 * kChunk);
    (*queue)->Push(IoOp{.code = OpCode::kWrite,
                        .fd = fd,
                        .data = buf.data,
                        .length = 2 * kChunk,
                        .offset = 0,
                        .link = true,
                        .user_data = 1});
    (*queue)->Push(IoOp{.code = OpCode::kFdatasync, .fd = fd, .user_data = 2});
    (*queue)->Submit();
    int write_result = 1;
    int sync_result = 1;
    for (int seen = 0; seen < 2;) {
      IoCompletion c[2];
      const int n = (*queue)->Reap(c, true);
      if (n <= 0) ::_exit(11);
      for (int k = 0; k < n; ++k, ++seen) {
        (c[k].user_data == 1 ? write_result : sync_result) = c[k].result;
      }
    }
    std::fprintf(stderr, "write %d, fdatasync %d\n", write_result, sync_result);
    ::_exit(write_result == static_cast<int>(kChunk + kChunk / 2) &&
                    sync_result == -ECANCELED
                ? 0
                : 12);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The blocking fallback keeps io_uring's link rule.
TEST(FsyncOrderingTest, TheBlockingQueueCancelsWhatIsLinkedBehindAFailure) {
  auto queue = internal::MakeBlockingQueue(8);
  AlignedBuffer buf(kChunk);
  ScratchDir dir;
  const int fd = ::open(dir.Sub("f").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_TRUE(queue->Push(IoOp{.code = OpCode::kWrite,
                               .fd = -1,
                               .data = buf.data,
                               .length = kChunk,
                               .link = true,
                               .user_data = 1}));
  ASSERT_TRUE(
      queue->Push(IoOp{.code = OpCode::kFdatasync, .fd = fd, .user_data = 2}));
  ASSERT_TRUE(queue->Push(IoOp{.code = OpCode::kWrite,
                               .fd = fd,
                               .data = buf.data,
                               .length = kChunk,
                               .link = true,
                               .user_data = 3}));
  ASSERT_TRUE(
      queue->Push(IoOp{.code = OpCode::kFdatasync, .fd = fd, .user_data = 4}));
  ASSERT_EQ(queue->Submit(), 0);
  IoCompletion c[4];
  ASSERT_EQ(queue->Reap(c, true), 4);
  EXPECT_EQ(c[0].result, -EBADF);
  EXPECT_EQ(c[1].result, -ECANCELED);
  EXPECT_EQ(c[2].result, static_cast<int>(kChunk));
  EXPECT_EQ(c[3].result, 0);
  ::close(fd);
}

// The I/O seam (IoFaults) sees every op when pushed, each Submit(), and
// every completion with the result the writer will see: a rewritten write
// and the -ECANCELED of the fdatasync linked behind it.
TEST(FsyncOrderingTest, TheFaultSeamReportsEveryOpAndTheResultTheWriterSees) {
  struct Seen : internal::IoFaults {
    std::vector<std::string> events;
    void Pushed(const IoOp& op) override {
      events.push_back("push " + std::to_string(op.user_data) +
                       (op.dsync ? " dsync" : "") + (op.link ? " link" : ""));
    }
    void Submitted() override { events.push_back("submit"); }
    std::int32_t Rewrite(const IoOp& op, std::int32_t result) override {
      return op.user_data == 1 ? -EIO : result;
    }
    void Completed(const IoOp& op, std::int32_t result) override {
      events.push_back("done " + std::to_string(op.user_data) + " " +
                       std::to_string(result));
    }
  } seen;
  auto queue = internal::MakeFaultyQueue(internal::MakeBlockingQueue(8), &seen);
  AlignedBuffer buf(kChunk);
  ScratchDir dir;
  const int fd = ::open(dir.Sub("f").c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(queue->Push(IoOp{.code = OpCode::kWrite,
                               .fd = fd,
                               .data = buf.data,
                               .length = kChunk,
                               .link = true,
                               .user_data = 1}));
  ASSERT_TRUE(
      queue->Push(IoOp{.code = OpCode::kFdatasync, .fd = fd, .user_data = 2}));
  ASSERT_TRUE(queue->Push(IoOp{.code = OpCode::kWrite,
                               .fd = fd,
                               .data = buf.data,
                               .length = kChunk,
                               .dsync = true,
                               .user_data = 3}));
  ASSERT_EQ(queue->Submit(), 0);
  IoCompletion c[3];
  ASSERT_EQ(queue->Reap(c, true), 3);
  EXPECT_EQ(c[0].result, -EIO);
  EXPECT_EQ(c[1].result, -ECANCELED);
  EXPECT_EQ(c[2].result, static_cast<int>(kChunk));
  EXPECT_EQ(seen.events, (std::vector<std::string>{
                             "push 1 link", "push 2", "push 3 dsync", "submit",
                             "done 1 -5", "done 2 -125", "done 3 4096"}));
  ::close(fd);
}

}  // namespace
}  // namespace orderwire::journal
