#pragma once
// The run's flags, declared once: name, kind, bounds, default, help and which
// front ends take each. h2o-cli, h2o-bench and h2o-bench-studio add them to
// CLI11 from here (app/cli_flags.h); h2o-studio builds its command line from
// here and its controls take their bounds from here; every front end checks
// a value with flag_int / flag_choice, so a bound, a backend or a default is
// stated in one place. A default may differ between front ends where that is
// the point, and the table says why (Default::why).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace h2o {

struct StudioConfig;

// The front ends that take a flag (a bit each).
enum FlagTaker : unsigned {
  kCliRun = 1,        // h2o-cli's run commands: stream, generate, eval, sample
  kCliStream = 2,     // h2o-cli stream alone
  kBench = 4,         // h2o-bench
  kBenchStudio = 8,   // h2o-bench-studio
  kApp = 16,          // h2o-studio (its command line, controls and settings)
  kCliInfo = 32,      // h2o-cli info
};

enum class FlagKind { Text, Path, List, Choice, Int, Switch };

struct RunFlag {
  // A front end's default where it is not the common one, and why.
  struct Default {
    FlagTaker taker;
    std::string text, why;
  };
  std::string name;        // "budget": --budget (and the app's setting of it)
  FlagKind kind = FlagKind::Text;
  std::string value_name;  // "n", "path", "MiB"
  std::string help;        // what it is (bounds and default are added by flag_help)
  int64_t lo = 0, hi = 0;  // Int: the least and the most value
  std::string hi_is;       // what the most is, for a refusal: "the tokens a KV head may hold"
  std::vector<std::string> choices;  // Choice: every value allowed
  std::string default_text;          // what holds when it is not given ("": nothing to say)
  std::vector<Default> defaults;     // front ends whose default differs
  unsigned takers = 0;

  bool taken_by(FlagTaker t) const { return (takers & t) != 0; }
  // The default `taker` has, with its reason where it differs.
  std::string default_for(FlagTaker taker) const;
};

// Every flag of the table, in the order --help lists them.
const std::vector<RunFlag>& run_flags();
// The flag named `name` (without dashes); a name not in the table is a bug (std::logic_error).
const RunFlag& run_flag(std::string_view name);

// --help's text for `taker`: the help, then the bounds or choices and the
// default, "(1 to 16777216; default 64: ...)".
std::string flag_help(const RunFlag& flag, FlagTaker taker);

// What is wrong with `text` as a value of `flag` ("" : nothing): a whole
// number within the bounds, or one of the choices.
std::string flag_problem(const RunFlag& flag, std::string_view text);
// The value of an Int flag, checked. Throws Error "--name: <problem>".
int64_t flag_int(const RunFlag& flag, std::string_view text);
// The value of a Choice flag, checked. Throws Error "--name: <problem>".
std::string flag_choice(const RunFlag& flag, std::string_view text);

// The app's settings (remembered, or a recording's) within the table's
// bounds: a value outside them (a hand-edited or older settings file) goes
// back to `defaults`' value; the settings' own "not given" values stay
// (slack -1: the backend's; G and R 0: shaped for the model).
void keep_in_bounds(StudioConfig& settings, const StudioConfig& defaults);

}  // namespace h2o
