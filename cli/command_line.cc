// RunMain(): the orderwire command line on CLI11 (common.h). Cold path.
//
// CLI11 does the parsing: one CLI::App per command, built from the
// CommandSpec tables, nested where a command has subcommands; `--name
// value`, `--name=value`, boolean `--name`, `--` and `-h`/`--help`. Every
// App allows extras, so nothing it does not know is an exception: this file
// reads the leftovers after the parse and turns each kind of mistake into a
// message that names it, and gives every usage error the exit status 2
// (never CLI11's own exit codes).
//
// Values are kept as text and converted by the Args accessors at the call
// site, with the range the call site needs. CLI11 2.1.2 converts integers
// with strtoll(..., 0), so "010" would be 8 and "0x10" 16; the accessors
// take decimal only, and their messages name the flag and the value.
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/common.h"

namespace orderwire::cli {
namespace {

// The value CLI11 records for a boolean flag given as `--name`; `--name=X`
// records X instead, which is refused ("takes no value").
constexpr std::string_view kBareFlag = "(given)";

// What each App stands for.
struct Node {
  const CommandSpec* spec = nullptr;
  const Command* command = nullptr;  // nullptr for the root
};

using NodeMap = absl::flat_hash_map<const CLI::App*, Node>;

// The command the parse chose: the deepest App selected.
const CLI::App* Leaf(const CLI::App& root) {
  const CLI::App* app = &root;
  while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
  return app;
}

// "orderwire journal inspect" for the App of `journal inspect`.
std::string Path(const CLI::App* app) {
  std::string path = app->get_name();
  for (app = app->get_parent(); app != nullptr; app = app->get_parent()) {
    path = absl::StrCat(app->get_name(), " ", path);
  }
  return path;
}

// The --help text of a command, generated from its App (flags, their value
// names, defaults and help; subcommands) and its CommandSpec (synopsis,
// summary, details).
class HelpFormatter : public CLI::FormatterBase {
 public:
  explicit HelpFormatter(const NodeMap* nodes) : nodes_(nodes) {}

  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode /*mode*/) const override {
    const CommandSpec& spec = *nodes_->at(app).spec;
    const bool is_root = app->get_parent() == nullptr;
    std::string out =
        absl::StrFormat("usage: %s %s\n\n%s\n", name, spec.synopsis,
                        is_root ? app->get_description() : spec.summary);
    if (!spec.details.empty()) {
      absl::StrAppendFormat(&out, "\n%s\n", spec.details);
    }
    // The table's flags, then --help.
    std::vector<const CLI::Option*> flags;
    for (const CLI::Option* option : app->get_options(
             [](const CLI::Option* o) { return !o->get_positional(); })) {
      if (option != app->get_help_ptr()) flags.push_back(option);
    }
    flags.push_back(app->get_help_ptr());
    out += "\nflags:\n";
    for (const CLI::Option* option : flags) {
      std::string left = absl::StrCat("  --", option->get_lnames().front());
      if (option->get_expected_max() > 0) {
        absl::StrAppend(&left, " ", option->get_type_name());
      }
      absl::StrAppendFormat(&out, "%-28s %s", left, option->get_description());
      if (!option->get_default_str().empty()) {
        absl::StrAppendFormat(&out, " (default: %s)",
                              option->get_default_str());
      }
      out.push_back('\n');
    }
    const std::vector<const CLI::App*> subcommands =
        app->get_subcommands([](const CLI::App*) { return true; });
    if (!subcommands.empty()) out += "\ncommands:\n";
    for (const CLI::App* sub : subcommands) {
      absl::StrAppendFormat(&out, "  %-14s %s\n", sub->get_name(),
                            sub->get_description());
    }
    if (is_root) {
      absl::StrAppendFormat(&out,
                            "\n'%s <command> --help' describes a command.\n\n"
                            "%s",
                            name, kExitStatusHelp);
    } else {
      if (!subcommands.empty()) {
        absl::StrAppendFormat(
            &out, "\n'%s <command> --help' describes a command.\n", name);
      }
      absl::StrAppend(&out,
                      "\nexit status: 0 success, 1 failure, 2 usage error "
                      "(see 'orderwire --help').\n");
    }
    return out;
  }

 private:
  const NodeMap* nodes_;
};

// The --help text of `app`.
std::string HelpText(const CLI::App* app) {
  return app->get_formatter()->make_help(app, Path(app),
                                         CLI::AppFormatMode::Normal);
}

// Adds `command` (listed with `summary`) under `parent`, and its
// subcommands under it.
void AddCommand(CLI::App& parent, const Command& command,
                std::string_view summary, NodeMap& nodes) {
  const CommandSpec& spec = *command.spec;
  CLI::App* app =
      parent.add_subcommand(std::string(spec.name), std::string(summary));
  app->allow_extras();
  for (const FlagSpec& flag : spec.flags) {
    CLI::Option* option = nullptr;
    if (flag.value_name.empty()) {
      option = app->add_flag(absl::StrFormat("--%s{%s}", flag.name, kBareFlag));
    } else {
      option = app->add_option(absl::StrFormat("--%s", flag.name))
                   ->type_name(std::string(flag.value_name))
                   ->default_str(std::string(flag.default_value));
    }
    // Keep every occurrence: a flag given twice is refused below.
    option->description(std::string(flag.help))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }
  if (!spec.positional.empty()) {
    // Never satisfied, so that after `--` the rest stays with this command
    // (CLI11 hands it to the parent once a positional has its minimum).
    app->add_option(std::string(spec.positional))
        ->expected(CLI::detail::expected_max_vector_size,
                   CLI::detail::expected_max_vector_size)
        ->allow_extra_args()
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  }
  if (!command.subcommands.empty()) app->require_subcommand(0, 1);
  nodes[app] = Node{&spec, &command};
  for (const Command& sub : command.subcommands) {
    AddCommand(*app, sub, sub.spec->summary, nodes);
  }
}

// The first argument the parse left over: CLI11 keeps those it could not
// place in the App that met them (a `--` it ate is kept too, skipped here).
std::optional<std::string> FirstLeftover(const CLI::App* leaf) {
  for (const CLI::App* app = leaf; app != nullptr; app = app->get_parent()) {
    for (const std::string& arg : app->remaining(false)) {
      if (arg != "--") return arg;
    }
  }
  return std::nullopt;
}

bool LooksLikeFlag(std::string_view arg) {
  return arg.size() > 2 && arg.substr(0, 2) == "--";
}

// "--name=value" -> "name".
std::string_view FlagName(std::string_view arg) {
  arg.remove_prefix(2);
  return arg.substr(0, arg.find('='));
}

const FlagSpec* FindFlag(const CommandSpec& spec, std::string_view name) {
  for (const FlagSpec& flag : spec.flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

// Prints "orderwire <command>: <message>" and, if
// asked, the command's usage to standard error; returns ExitStatus().
int Fail(const CLI::App* app, const absl::Status& status,
         bool print_usage = false) {
  std::fprintf(stderr, "%s: %.*s\n", Path(app).c_str(),
               static_cast<int>(status.message().size()),
               status.message().data());
  if (print_usage) {
    std::fputc('\n', stderr);
    std::fputs(HelpText(app).c_str(), stderr);
  }
  return ExitStatus(status);
}

// The Args of the command `app` stands for, or the usage error that its
// flags make.
absl::StatusOr<Args> CollectArgs(const CLI::App& app, const CommandSpec& spec) {
  Args args(spec);
  for (const FlagSpec& flag : spec.flags) {
    const CLI::Option* option =
        app.get_option(absl::StrFormat("--%s", flag.name));
    const std::vector<std::string>& results = option->results();
    if (results.empty()) continue;
    if (results.size() > 1) {
      return UsageError(absl::StrFormat("flag '--%s' given twice", flag.name));
    }
    if (flag.value_name.empty()) {
      if (results.front() != kBareFlag) {
        return UsageError(
            absl::StrFormat("flag '--%s' takes no value", flag.name));
      }
      args.Set(flag.name, "true");
    } else {
      args.Set(flag.name, results.front());
    }
  }
  if (!spec.positional.empty()) {
    for (const std::string& value :
         app.get_option(std::string(spec.positional))->results()) {
      args.AddPositional(value);
    }
  }
  return args;
}

}  // namespace

int RunMain(const CommandSpec& root_spec,
            std::span<const Subcommand> subcommands, int argc, char** argv) {
  NodeMap nodes;
  CLI::App root(std::string(root_spec.summary), std::string(root_spec.name));
  root.formatter(std::make_shared<HelpFormatter>(&nodes));
  root.set_help_flag("-h,--help", "show this help");
  root.allow_extras();
  root.require_subcommand(0, 1);
  nodes[&root] = Node{&root_spec, nullptr};
  for (const Subcommand& sub : subcommands) {
    AddCommand(root, *sub.command, sub.summary, nodes);
  }

  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(HelpText(Leaf(root)).c_str(), stdout);
    return kExitOk;
  } catch (const CLI::ArgumentMismatch& e) {
    // A flag that takes a value came last, without one: CLI11 takes the
    // next argument, whatever it is, as the value otherwise.
    const CLI::App* leaf = Leaf(root);
    const std::string_view last = argc > 1 ? argv[argc - 1] : "";
    const FlagSpec* flag = LooksLikeFlag(last)
                               ? FindFlag(*nodes.at(leaf).spec, FlagName(last))
                               : nullptr;
    if (flag == nullptr) return Fail(leaf, UsageError(e.what()));
    return Fail(leaf,
                UsageError(absl::StrFormat("flag '--%s' needs a value (%s)",
                                           flag->name, flag->value_name)));
  } catch (const CLI::ParseError& e) {
    return Fail(Leaf(root), UsageError(e.what()));
  }

  const CLI::App* leaf = Leaf(root);
  const Node& node = nodes.at(leaf);
  const bool is_group = node.command == nullptr || node.command->run == nullptr;
  if (const std::optional<std::string> arg = FirstLeftover(leaf)) {
    if (LooksLikeFlag(*arg)) {
      return Fail(leaf, UsageError(absl::StrFormat(
                            "unknown flag '--%s' (see '%s --help')",
                            FlagName(*arg), Path(leaf))));
    }
    const bool has_subcommands =
        !leaf->get_subcommands([](const CLI::App*) { return true; }).empty();
    if (has_subcommands && *arg == "help") {
      std::fputs(HelpText(leaf).c_str(), stdout);
      return kExitOk;
    }
    if (is_group) {
      return Fail(leaf,
                  UsageError(absl::StrFormat("unknown command '%s'", *arg)),
                  /*print_usage=*/true);
    }
    return Fail(leaf, UsageError(absl::StrFormat(
                          "unexpected argument '%s' (see '%s --help')", *arg,
                          Path(leaf))));
  }
  if (is_group) {
    std::fputs(HelpText(leaf).c_str(), stderr);
    return kExitUsage;
  }
  // A subcommand takes none of its parent's flags (`snapshot --journal D
  // inspect F`).
  for (const CLI::App* app = leaf->get_parent(); app->get_parent() != nullptr;
       app = app->get_parent()) {
    for (const CLI::Option* option : app->get_options()) {
      if (option->count() > 0 && option != app->get_help_ptr()) {
        return Fail(leaf, UsageError(absl::StrFormat(
                              "%s is a flag of '%s', not of '%s'",
                              option->get_name(), Path(app), Path(leaf))));
      }
    }
  }
  absl::StatusOr<Args> args = CollectArgs(*leaf, *node.spec);
  if (!args.ok()) return Fail(leaf, args.status());
  const absl::Status status = node.command->run(*args);
  if (status.ok()) return kExitOk;
  return Fail(leaf, status);
}

}  // namespace orderwire::cli
