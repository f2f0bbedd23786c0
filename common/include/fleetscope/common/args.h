// Small argument parser shared by every subcommand so that all of them accept the same syntax:
// `--name VALUE`, `--name=VALUE`, `-o VALUE`, boolean `--flag`, positionals, `--` to end options,
// `--help`. Header-only and in the bottom layer (common/) so the libraries that implement commands
// use it without depending on the programs above them.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace fleetscope::common {

class ArgParser {
 public:
  ArgParser(std::string usage, std::string description)
      : usage_(std::move(usage)), description_(std::move(description)) {}

  ArgParser& flag(std::string name, std::string help, bool* target) {
    specs_.push_back({std::move(name), "", std::move(help), Kind::flag, target});
    return *this;
  }
  ArgParser& option(std::string name, std::string value_name, std::string help,
                    std::string* target) {
    specs_.push_back({std::move(name), std::move(value_name), std::move(help), Kind::text, target});
    return *this;
  }
  // An integer option; a value below `min` (e.g. 0 for a count) is a usage error here, so no
  // command checks its own bound after parsing.
  ArgParser& option(std::string name, std::string value_name, std::string help, int64_t* target,
                    int64_t min = std::numeric_limits<int64_t>::min()) {
    specs_.push_back(
        {std::move(name), std::move(value_name), std::move(help), Kind::integer, target, min});
    return *this;
  }
  ArgParser& option(std::string name, std::string value_name, std::string help, double* target) {
    specs_.push_back({std::move(name), std::move(value_name), std::move(help), Kind::real, target});
    return *this;
  }
  // Repeatable option; each occurrence appends. Comma-separated values are split.
  ArgParser& list(std::string name, std::string value_name, std::string help,
                  std::vector<std::string>* target) {
    specs_.push_back({std::move(name), std::move(value_name), std::move(help), Kind::list, target});
    return *this;
  }
  // Positionals: collected in order. min/max bound their count (max < 0 = unbounded).
  ArgParser& positionals(std::string name, std::string help, std::vector<std::string>* target,
                         int min = 0, int max = -1) {
    positional_name_ = std::move(name);
    positional_help_ = std::move(help);
    positionals_ = target;
    min_positionals_ = min;
    max_positionals_ = max;
    return *this;
  }
  // Everything after `--` goes here (e.g. the command of `fleetscope run -- CMD ...`).
  ArgParser& rest(std::vector<std::string>* target) {
    rest_ = target;
    return *this;
  }

  // Returns std::nullopt when the command should go on, or the exit code to return now
  // (0 after --help, 2 after a usage error, with the message on `err`).
  std::optional<int> parse(const std::vector<std::string>& args, std::ostream& out,
                           std::ostream& err) {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& arg = args[i];
      if (arg == "--help" || arg == "-h") {
        print_help(out);
        return 0;
      }
      if (arg == "--") {
        if (!rest_) return usage_error(err, "unexpected '--'");
        rest_->assign(args.begin() + static_cast<long>(i) + 1, args.end());
        break;
      }
      if (arg.size() > 1 && arg[0] == '-' && !is_number(arg)) {
        std::string name = arg;
        std::optional<std::string> inline_value;
        if (auto eq = arg.find('='); eq != std::string::npos) {
          name = arg.substr(0, eq);
          inline_value = arg.substr(eq + 1);
        }
        Spec* spec = find(name);
        if (!spec) return usage_error(err, "unknown option '" + name + "'");
        if (spec->kind == Kind::flag) {
          if (inline_value) return usage_error(err, "option '" + name + "' takes no value");
          *static_cast<bool*>(spec->target) = true;
          continue;
        }
        std::string value;
        if (inline_value) {
          value = *inline_value;
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          return usage_error(err, "option '" + name + "' needs a value (" + spec->value_name + ")");
        }
        // An empty value (`--capture=`, or `--capture "$ID"` with ID unset) was taken as the
        // option not given: `info --capture=` showed every capture without a word.
        if (value.empty() && spec->kind != Kind::flag)
          return usage_error(err, "option '" + name + "' needs a value (" + spec->value_name +
                                      "), got an empty one");
        // One value per option: a second, different one was silently taken instead of the first
        // (`diff a.db --capture 9 b.db --capture 11` compared capture 11 with itself).
        if (spec->kind != Kind::list && spec->given && *spec->given != value)
          return usage_error(err, "option '" + name + "' given twice ('" + *spec->given +
                                      "', then '" + value + "'): give it once");
        if (auto problem = assign(*spec, value)) return usage_error(err, *problem);
        spec->given = value;
        continue;
      }
      if (!positionals_) return usage_error(err, "unexpected argument '" + arg + "'");
      positionals_->push_back(arg);
    }
    if (positionals_) {
      int n = static_cast<int>(positionals_->size());
      if (n < min_positionals_) return usage_error(err, "missing " + positional_name_);
      if (max_positionals_ >= 0 && n > max_positionals_)
        return usage_error(err, "too many arguments");
    }
    return std::nullopt;
  }

  void print_help(std::ostream& out) const {
    out << "usage: " << usage_ << "\n\n" << description_ << "\n";
    if (positionals_ && !positional_help_.empty())
      out << "\n  " << pad(positional_name_) << positional_help_ << "\n";
    if (!specs_.empty()) out << "\noptions:\n";
    for (const Spec& s : specs_) {
      std::string left = s.name + (s.value_name.empty() ? "" : " " + s.value_name);
      out << "  " << pad(left) << s.help << "\n";
    }
    out << "  " << pad("-h, --help") << "show this help\n";
  }

 private:
  enum class Kind { flag, text, integer, real, list };
  struct Spec {
    std::string name, value_name, help;
    Kind kind;
    void* target;
    int64_t min = std::numeric_limits<int64_t>::min();
    std::optional<std::string> given;  // the value of this parse, once it is given
  };

  static bool is_number(const std::string& s) {
    char* end = nullptr;
    std::strtod(s.c_str(), &end);
    return end && *end == '\0' && s.size() > 1;
  }
  static std::string pad(const std::string& s) {
    return s.size() >= 24 ? s + "  " : s + std::string(24 - s.size(), ' ');
  }
  Spec* find(const std::string& name) {
    for (Spec& s : specs_) {
      if (s.name == name) return &s;
      // Short aliases are written "-o, --output".
      if (auto comma = s.name.find(", ");
          comma != std::string::npos &&
          (s.name.substr(0, comma) == name || s.name.substr(comma + 2) == name))
        return &s;
    }
    return nullptr;
  }
  std::optional<std::string> assign(Spec& spec, const std::string& value) {
    switch (spec.kind) {
      case Kind::text:
        *static_cast<std::string*>(spec.target) = value;
        return std::nullopt;
      case Kind::integer: {
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno == ERANGE)
          return "option '" + spec.name + "' expects an integer, got '" + value + "'";
        if (v < spec.min)
          return "option '" + spec.name + "' expects " + spec.value_name +
                 " >= " + std::to_string(spec.min) + ", got " + value;
        *static_cast<int64_t*>(spec.target) = v;
        return std::nullopt;
      }
      case Kind::real: {
        char* end = nullptr;
        double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0')
          return "option '" + spec.name + "' expects a number, got '" + value + "'";
        *static_cast<double*>(spec.target) = v;
        return std::nullopt;
      }
      case Kind::list: {
        auto* target = static_cast<std::vector<std::string>*>(spec.target);
        std::stringstream ss(value);
        for (std::string item; std::getline(ss, item, ',');)
          if (!item.empty()) target->push_back(item);
        return std::nullopt;
      }
      case Kind::flag:
        break;
    }
    return std::nullopt;
  }
  int usage_error(std::ostream& err, const std::string& message) const {
    err << "error: " << message << "\nusage: " << usage_ << "\n(see --help)\n";
    return 2;
  }

  std::string usage_, description_;
  std::vector<Spec> specs_;
  std::string positional_name_, positional_help_;
  std::vector<std::string>* positionals_ = nullptr;
  int min_positionals_ = 0, max_positionals_ = -1;
  std::vector<std::string>* rest_ = nullptr;
};

}  // namespace fleetscope::common
