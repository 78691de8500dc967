// Tests of UniqueFd.
#include "base/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <type_traits>
#include <utility>

#include "gtest/gtest.h"

namespace orderwire::base {
namespace {

static_assert(!std::is_copy_constructible_v<UniqueFd>);
static_assert(!std::is_copy_assignable_v<UniqueFd>);
static_assert(std::is_nothrow_move_constructible_v<UniqueFd>);
static_assert(std::is_nothrow_move_assignable_v<UniqueFd>);
static_assert(!std::is_convertible_v<int, UniqueFd>);  // explicit

// Whether `fd` is an open descriptor of this process.
bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

int OpenDevNull() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(UniqueFdTest, DefaultIsEmpty) {
  UniqueFd fd;
  EXPECT_EQ(fd.get(), -1);
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(fd);
  EXPECT_EQ(fd.Close(), 0);
}

TEST(UniqueFdTest, NegativeIsEmpty) {
  UniqueFd fd(-5);
  EXPECT_EQ(fd.get(), -1);
  EXPECT_FALSE(fd);
}

TEST(UniqueFdTest, DestructorCloses) {
  int raw = -1;
  {
    UniqueFd fd(OpenDevNull());
    ASSERT_TRUE(fd.valid());
    EXPECT_TRUE(fd);
    raw = fd.get();
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
}

TEST(UniqueFdTest, ReleaseGivesUpOwnership) {
  int raw = -1;
  {
    UniqueFd fd(OpenDevNull());
    raw = fd.release();
    EXPECT_FALSE(fd.valid());
    EXPECT_EQ(fd.get(), -1);
  }
  EXPECT_TRUE(IsOpen(raw));
  ::close(raw);
}

TEST(UniqueFdTest, ResetClosesTheOldOne) {
  UniqueFd fd(OpenDevNull());
  const int first = fd.get();
  const int second = OpenDevNull();
  fd.reset(second);
  EXPECT_FALSE(IsOpen(first));
  EXPECT_EQ(fd.get(), second);
  EXPECT_TRUE(IsOpen(second));
  fd.reset(second);  // the same descriptor: kept open
  EXPECT_TRUE(IsOpen(second));
  fd.reset();
  EXPECT_FALSE(IsOpen(second));
  EXPECT_FALSE(fd.valid());
}

TEST(UniqueFdTest, MoveTransfersOwnership) {
  UniqueFd a(OpenDevNull());
  const int raw = a.get();
  UniqueFd b(std::move(a));
  // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from state is the test
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.get(), raw);

  UniqueFd c(OpenDevNull());
  const int other = c.get();
  c = std::move(b);
  EXPECT_FALSE(IsOpen(other));  // the target's old descriptor is closed
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(IsOpen(raw));
  UniqueFd& same = c;   // through a reference: compilers warn on the plain one
  c = std::move(same);  // self-move keeps it
  EXPECT_EQ(c.get(), raw);
  EXPECT_TRUE(IsOpen(raw));
}

TEST(UniqueFdTest, CloseReportsSuccessAndEmpties) {
  UniqueFd fd(OpenDevNull());
  const int raw = fd.get();
  EXPECT_EQ(fd.Close(), 0);
  EXPECT_FALSE(fd.valid());
  EXPECT_FALSE(IsOpen(raw));
  EXPECT_EQ(fd.Close(), 0);  // again: nothing to do
}

TEST(UniqueFdTest, CloseReportsTheErrno) {
  // A descriptor closed behind UniqueFd's back: close(2) fails with EBADF,
  // which Close() returns (and it does not try again).
  const int raw = OpenDevNull();
  UniqueFd fd(raw);
  ASSERT_EQ(::close(raw), 0);
  EXPECT_EQ(fd.Close(), EBADF);
  EXPECT_FALSE(fd.valid());
}

}  // namespace
}  // namespace orderwire::base
