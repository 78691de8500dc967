// The command line (cli/common.h RunMain(), on CLI11), in process, with a
// table of its own: what each kind of usage error prints and its exit
// status, that --help (root, command, nested command) is generated from the
// flag tables and exits 0, and what a command receives in Args.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/common.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace orderwire::cli {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// What the last command run received.
struct Received {
  bool ran = false;
  std::int64_t count = 0;
  bool fast = false;
  std::string route;
  std::vector<std::string> positional;
};
Received received;

absl::Status Trade(const Args& args) {
  received.ran = true;
  absl::StatusOr<std::int64_t> count = args.Int("count", 1, 100);
  if (!count.ok()) return count.status();
  received.count = *count;
  received.fast = args.Bool("fast");
  received.route = args.String("route");
  received.positional = args.positional();
  return absl::OkStatus();
}

absl::Status Show(const Args& args) {
  received.ran = true;
  received.positional = args.positional();
  if (args.positional().size() != 1) return UsageError("give one book file");
  return absl::NotFoundError("book " + args.positional()[0] + " is empty");
}

absl::Status Open(const Args& args) {
  received.ran = true;
  received.count = args.Has("depth") ? 1 : 0;
  return absl::OkStatus();
}

const CommandSpec kTradeSpec{
    .name = "trade",
    .synopsis = "[--count N] [--fast] [--route VENUE] [NAME...]",
    .summary = "Send some orders.",
    .details = "Sends --count orders to VENUE.",
    .flags = {{"count", "N", "10", "orders to send"},
              {"fast", "", "", "do not wait between orders"},
              {"route", "VENUE", "main", "where the orders go"}},
    .positional = "NAME",
};

const CommandSpec kShowSpec{
    .name = "show",
    .synopsis = "FILE",
    .summary = "Show a book file.",
    .flags = {{"levels", "N", "5", "price levels shown per side"}},
    .positional = "FILE",
};

const CommandSpec kBookSpec{
    .name = "book",
    .synopsis = "[--depth N] | show FILE",
    .summary = "Open a book, or show one.",
    .flags = {{"depth", "N", "", "levels kept"}},
};

const CommandSpec kRootSpec{
    .name = "orderwire",
    .synopsis = "<command> [flags]",
    .summary = "orderwire: a test table.",
};

const Command kBookSubcommands[] = {{&kShowSpec, Show}};
const Command kTrade{&kTradeSpec, Trade};
const Command kBook{&kBookSpec, Open, kBookSubcommands};
const Subcommand kTable[] = {{&kTrade, "send orders (listed)"},
                             {&kBook, "open or show a book (listed)"}};

struct Outcome {
  int exit_status = -1;
  std::string out;
  std::string err;
};

Outcome RunCli(std::vector<std::string> args) {
  received = Received{};
  args.insert(args.begin(), "orderwire");
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  Outcome outcome;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  outcome.exit_status = RunMain(kRootSpec, kTable,
                                static_cast<int>(argv.size() - 1), argv.data());
  outcome.out = ::testing::internal::GetCapturedStdout();
  outcome.err = ::testing::internal::GetCapturedStderr();
  return outcome;
}

// A usage error: exit status 2, `message` on standard error, nothing on
// standard output, and the command did not run.
void ExpectUsageError(const std::vector<std::string>& args,
                      const std::string& message) {
  SCOPED_TRACE(absl::StrCat("args: ", args.size()));
  const Outcome outcome = RunCli(args);
  EXPECT_EQ(outcome.exit_status, kExitUsage) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr(message));
  EXPECT_THAT(outcome.out, IsEmpty());
  EXPECT_FALSE(received.ran);
}

TEST(CommandLineTest, FlagsInEveryFormReachTheCommand) {
  Outcome outcome = RunCli({"trade", "--count", "7", "--fast", "--route=east",
                            "alice", "--", "--bob"});
  EXPECT_EQ(outcome.exit_status, kExitOk) << outcome.err;
  EXPECT_TRUE(received.ran);
  EXPECT_EQ(received.count, 7);
  EXPECT_TRUE(received.fast);
  EXPECT_EQ(received.route, "east");
  EXPECT_THAT(received.positional, ElementsAre("alice", "--bob"));

  outcome = RunCli({"trade"});
  EXPECT_EQ(outcome.exit_status, kExitOk) << outcome.err;
  EXPECT_EQ(received.count, 10);  // the table's default
  EXPECT_FALSE(received.fast);
  EXPECT_EQ(received.route, "main");
  EXPECT_THAT(received.positional, IsEmpty());

  // A negative number is a value, not a flag.
  outcome = RunCli({"trade", "--count", "-3"});
  EXPECT_EQ(outcome.exit_status, kExitUsage);
  EXPECT_THAT(outcome.err, HasSubstr("--count: -3 is out of range [1, 100]"));
}

TEST(CommandLineTest, UnknownFlagIsAUsageErrorNamingIt) {
  ExpectUsageError({"trade", "--bogus"},
                   "orderwire trade: unknown flag '--bogus' (see 'orderwire "
                   "trade --help')");
  ExpectUsageError({"trade", "--bogus=3", "--count", "4"},
                   "unknown flag '--bogus'");
  // A flag of another command is unknown here.
  ExpectUsageError({"book", "show", "--count", "3", "f"},
                   "orderwire book show: unknown flag '--count'");
  ExpectUsageError({"book", "--levels", "3"},
                   "orderwire book: unknown flag '--levels'");
}

TEST(CommandLineTest, UnknownCommandIsAUsageErrorNamingItWithTheUsage) {
  Outcome outcome = RunCli({"frobnicate"});
  EXPECT_EQ(outcome.exit_status, kExitUsage);
  EXPECT_THAT(outcome.err, AllOf(HasSubstr("orderwire: unknown command "
                                           "'frobnicate'"),
                                 HasSubstr("usage: orderwire <command>")));
  EXPECT_THAT(outcome.out, IsEmpty());

  // A group command (no run of its own) with an unknown subcommand.
  ExpectUsageError({"book", "--depth", "1", "frob"}, "unexpected argument");
}

TEST(CommandLineTest, NoCommandPrintsTheUsageAsAUsageError) {
  const Outcome outcome = RunCli({});
  EXPECT_EQ(outcome.exit_status, kExitUsage);
  EXPECT_THAT(outcome.err, HasSubstr("usage: orderwire <command>"));
  EXPECT_THAT(outcome.out, IsEmpty());
}

TEST(CommandLineTest, MissingValueIsAUsageErrorNamingTheFlag) {
  ExpectUsageError({"trade", "--route"},
                   "orderwire trade: flag '--route' needs a value (VENUE)");
  ExpectUsageError({"trade", "--route="}, "flag '--route' needs a value");
  ExpectUsageError({"book", "show", "f", "--levels"},
                   "orderwire book show: flag '--levels' needs a value (N)");
}

TEST(CommandLineTest, BadIntegerIsAUsageErrorNamingFlagAndValue) {
  // Decimal only: CLI11's own conversion would read 0x10 as 16.
  for (const char* bad : {"x", "1.5", "0x10", "", "12abc"}) {
    const Outcome outcome = RunCli({"trade", "--count", bad});
    EXPECT_EQ(outcome.exit_status, kExitUsage) << bad;
    EXPECT_THAT(outcome.err,
                HasSubstr(absl::StrCat("orderwire trade: --count: '", bad,
                                       "' is not an integer")));
  }
}

TEST(CommandLineTest, OutOfRangeValueIsAUsageErrorNamingFlagAndValue) {
  Outcome outcome = RunCli({"trade", "--count=101"});
  EXPECT_EQ(outcome.exit_status, kExitUsage);
  EXPECT_THAT(outcome.err,
              HasSubstr("orderwire trade: --count: 101 is out of range "
                        "[1, 100]"));
  outcome = RunCli({"trade", "--count", "0"});
  EXPECT_EQ(outcome.exit_status, kExitUsage);
  EXPECT_THAT(outcome.err, HasSubstr("--count: 0 is out of range [1, 100]"));
}

TEST(CommandLineTest, ExtraPositionalIsAUsageErrorNamingIt) {
  ExpectUsageError({"book", "--depth", "3", "extra"},
                   "orderwire book: unexpected argument 'extra' (see "
                   "'orderwire book --help')");
  ExpectUsageError({"book", "show", "a", "-x"}, "unexpected argument '-x'");
  // What comes after `--` is positional: a command that takes none refuses.
  ExpectUsageError({"book", "--", "--depth"}, "'--depth'");
}

TEST(CommandLineTest, BooleanFlagTakesNoValue) {
  ExpectUsageError({"trade", "--fast=yes"},
                   "orderwire trade: flag '--fast' takes no value");
  ExpectUsageError({"trade", "--fast=true"}, "flag '--fast' takes no value");
}

TEST(CommandLineTest, FlagGivenTwiceIsAUsageError) {
  ExpectUsageError({"trade", "--count", "1", "--count=2"},
                   "flag '--count' given twice");
  ExpectUsageError({"trade", "--fast", "--fast"}, "flag '--fast' given twice");
}

TEST(CommandLineTest, ParentFlagsDoNotGoWithASubcommand) {
  ExpectUsageError({"book", "--depth", "3", "show", "f"},
                   "--depth is a flag of 'orderwire book', not of 'orderwire "
                   "book show'");
}

TEST(CommandLineTest, GroupAndSubcommandRunWithTheirOwnArgs) {
  Outcome outcome = RunCli({"book", "--depth", "3"});
  EXPECT_EQ(outcome.exit_status, kExitOk) << outcome.err;
  EXPECT_EQ(received.count, 1);

  // A command's failure: exit 1, the message after the command's path.
  outcome = RunCli({"book", "show", "f.book"});
  EXPECT_EQ(outcome.exit_status, kExitFailure);
  EXPECT_EQ(outcome.err, "orderwire book show: book f.book is empty\n");
  EXPECT_THAT(received.positional, ElementsAre("f.book"));

  // A usage error the command finds itself: exit 2.
  outcome = RunCli({"book", "show"});
  EXPECT_EQ(outcome.exit_status, kExitUsage);
  EXPECT_EQ(outcome.err, "orderwire book show: give one book file\n");
}

TEST(CommandLineTest, RootHelpListsTheCommandsAndExitStatuses) {
  for (const char* help : {"--help", "-h", "help"}) {
    const Outcome outcome = RunCli({help});
    EXPECT_EQ(outcome.exit_status, kExitOk) << help;
    EXPECT_THAT(outcome.err, IsEmpty());
    EXPECT_THAT(outcome.out,
                AllOf(HasSubstr("usage: orderwire <command> [flags]"),
                      HasSubstr("orderwire: a test table."),
                      HasSubstr("commands:\n"
                                "  trade          send orders (listed)\n"
                                "  book           open or show a book "
                                "(listed)\n"),
                      HasSubstr("2  usage error")));
  }
}

TEST(CommandLineTest, CommandHelpIsGeneratedFromItsTable) {
  // --help wins over anything else on the line.
  const Outcome outcome = RunCli({"trade", "--bogus", "--help"});
  EXPECT_EQ(outcome.exit_status, kExitOk);
  EXPECT_FALSE(received.ran);
  EXPECT_THAT(outcome.err, IsEmpty());
  EXPECT_THAT(
      outcome.out,
      AllOf(HasSubstr("usage: orderwire trade [--count N] [--fast] "
                      "[--route VENUE] [NAME...]\n\nSend some orders.\n\n"
                      "Sends --count orders to VENUE.\n"),
            HasSubstr("  --count N                  orders to send "
                      "(default: 10)\n"),
            HasSubstr("  --fast                     do not wait between "
                      "orders\n"),
            HasSubstr("  --route VENUE              where the orders go "
                      "(default: main)\n"),
            HasSubstr("  --help                     show this help\n"),
            HasSubstr("exit status: 0 success, 1 failure, 2 usage error"),
            Not(HasSubstr("commands:"))));
}

TEST(CommandLineTest, NestedCommandHelpIsGeneratedFromItsTable) {
  Outcome outcome = RunCli({"book", "show", "--help"});
  EXPECT_EQ(outcome.exit_status, kExitOk);
  EXPECT_THAT(outcome.out,
              AllOf(HasSubstr("usage: orderwire book show FILE\n"),
                    HasSubstr("  --levels N                 price levels "
                              "shown per side (default: 5)\n"),
                    Not(HasSubstr("--depth"))));
  // The group's help lists its flags and its subcommands.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"book", "--help"},
                                             {"book", "help"}}) {
    outcome = RunCli(args);
    EXPECT_EQ(outcome.exit_status, kExitOk);
    EXPECT_THAT(outcome.out,
                AllOf(HasSubstr("usage: orderwire book [--depth N] | show "
                                "FILE\n"),
                      HasSubstr("  --depth N "),
                      HasSubstr("commands:\n  show           Show a book "
                                "file.\n")));
  }
}

}  // namespace
}  // namespace orderwire::cli
