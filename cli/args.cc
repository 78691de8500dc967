// Command-line flags; see args.h.
#include "cli/args.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace orderwire::cli {
namespace {

const FlagSpec* Find(const CommandSpec& spec, std::string_view name) {
  for (const FlagSpec& flag : spec.flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<Args> Args::Parse(const CommandSpec& spec, int argc, char** argv,
                                 int first) {
  Args args;
  args.spec_ = &spec;
  for (int i = first; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help_ = true;
      return args;
    }
  }
  for (int i = first; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) args.positional_.emplace_back(argv[i]);
      break;
    }
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      if (spec.positional.empty()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "unexpected argument '%s' (see 'orderwire %s --help')", arg,
            spec.name));
      }
      args.positional_.emplace_back(arg);
      continue;
    }
    arg.remove_prefix(2);
    std::optional<std::string_view> inline_value;
    if (const std::size_t eq = arg.find('='); eq != std::string_view::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    const FlagSpec* flag = Find(spec, arg);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "unknown flag '--%s' (see 'orderwire %s --help')", arg, spec.name));
    }
    if (args.values_.contains(std::string(flag->name))) {
      return absl::InvalidArgumentError(
          absl::StrFormat("flag '--%s' given twice", flag->name));
    }
    if (flag->value_name.empty()) {
      if (inline_value.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("flag '--%s' takes no value", flag->name));
      }
      args.values_[std::string(flag->name)] = "true";
      continue;
    }
    if (inline_value.has_value()) {
      args.values_[std::string(flag->name)] = std::string(*inline_value);
    } else if (i + 1 < argc) {
      args.values_[std::string(flag->name)] = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "flag '--%s' needs a value (%s)", flag->name, flag->value_name));
    }
  }
  return args;
}

bool Args::Has(std::string_view name) const {
  return values_.contains(std::string(name));
}

std::string Args::String(std::string_view name) const {
  if (auto it = values_.find(std::string(name)); it != values_.end()) {
    return it->second;
  }
  if (const FlagSpec* flag = Find(*spec_, name); flag != nullptr) {
    return std::string(flag->default_value);
  }
  return "";
}

absl::StatusOr<std::int64_t> Args::Int(std::string_view name, std::int64_t min,
                                       std::int64_t max) const {
  const std::string text = String(name);
  std::int64_t value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s: '%s' is not an integer", name, text));
  }
  if (value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--%s: %d is out of range [%d, %d]", name, value, min, max));
  }
  return value;
}

absl::StatusOr<std::uint64_t> Args::Uint(std::string_view name,
                                         std::uint64_t max) const {
  const std::string text = String(name);
  std::uint64_t value = 0;
  const auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--%s: '%s' is not a non-negative integer", name, text));
  }
  if (value > max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s: %d is larger than %d", name, value, max));
  }
  return value;
}

absl::StatusOr<double> Args::Double(std::string_view name, double min,
                                    double max) const {
  const std::string text = String(name);
  double value = 0;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--%s: '%s' is not a number", name, text));
  }
  if (!(value >= min && value <= max)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--%s: %g is out of range [%g, %g]", name, value, min, max));
  }
  return value;
}

std::string Usage(const CommandSpec& spec) {
  std::string out = absl::StrFormat("usage: orderwire %s %s\n\n%s\n", spec.name,
                                    spec.synopsis, spec.summary);
  if (!spec.details.empty())
    absl::StrAppendFormat(&out, "\n%s\n", spec.details);
  if (!spec.flags.empty()) out += "\nflags:\n";
  for (const FlagSpec& flag : spec.flags) {
    std::string left = absl::StrFormat("  --%s", flag.name);
    if (!flag.value_name.empty()) {
      absl::StrAppendFormat(&left, " %s", flag.value_name);
    }
    absl::StrAppendFormat(&out, "%-28s %s", left, flag.help);
    if (!flag.default_value.empty()) {
      absl::StrAppendFormat(&out, " (default: %s)", flag.default_value);
    }
    out.push_back('\n');
  }
  absl::StrAppend(&out, "  --help                       show this help\n");
  return out;
}

int ReportError(std::string_view command, const absl::Status& status) {
  std::fprintf(stderr, "orderwire %.*s: %.*s\n",
               static_cast<int>(command.size()), command.data(),
               static_cast<int>(status.message().size()),
               status.message().data());
  return 1;
}

int ReportUsageError(std::string_view command, const absl::Status& status) {
  ReportError(command, status);
  return 2;
}

int RunCommand(const CommandSpec& spec, int argc, char** argv,
               absl::Status (*body)(const Args&)) {
  absl::StatusOr<Args> args = Args::Parse(spec, argc, argv, 2);
  if (!args.ok()) return ReportUsageError(spec.name, args.status());
  if (args->help_requested()) {
    std::fputs(Usage(spec).c_str(), stdout);
    return 0;
  }
  const absl::Status status = body(*args);
  if (status.ok()) return 0;
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    return ReportUsageError(spec.name, status);
  }
  return ReportError(spec.name, status);
}

}  // namespace orderwire::cli
