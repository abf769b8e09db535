// h2o-bench-studio: whether the app's own run keeps up with the engine at
// the shapes a GPU serves. It runs StudioRun — the whole history, the
// analyzer, the capture window, snapshots at the app's cadence
// (SnapshotCadence), the recording spool — with no Qt, fed by the synthetic
// step source (steps of a real shape and policy mix at no model cost,
// core/studio/synthetic_steps.h), or with --backend by the real engine. A
// table (and --csv) of steps a second with the source's own time left out,
// µs a step per stage, recording bytes a step and resident memory. Each
// row runs in a child process of its own, so that its peak memory is its own.
// A benchmark, not a test.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "app/cli_flags.h"
#include "core/analysis/snapshot_cadence.h"
#include "core/backends/make_backend.h"
#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/base/format.h"
#include "core/base/process_memory.h"
#include "core/base/signal_cleanup.h"
#include "core/base/stopwatch.h"
#include "core/studio/assets.h"
#include "core/studio/studio_run.h"

using namespace h2o;

namespace {

struct Options {
  std::string shapes = "stories15M,tinyllama-1.1b,llama2-7b";
  std::string panes = "2,4";
  int64_t steps = 2000;
  int budget = 1024, slack = 64;
  std::string csv;
  std::string backend;  // empty: the synthetic source
  std::string dtype = "f16", precision;
  int threads = 0;
  bool sync = false;              // the sinks in the engine's loop, as before they ran beside it
  std::string thinning = "auto";  // auto: off for synthetic steps (capacity at full detail), the app's rule for an engine
  std::string spool_dir = std::filesystem::temp_directory_path().string();
  int64_t recording_limit_mib = 0;  // 0: none; else the spool keeps its newest steps past it (a ring)
  int64_t ask_every = 0;  // with --backend: a needle planted at the start, asked every N steps (0: none)
};

// One row of the table; a plain struct, sent from the child through a pipe.
struct Row {
  int64_t steps = 0;
  double wall_s = 0;
  PipelineTimes t;
  double rss_mib_quarter = 0, rss_mib_end = 0, peak_rss_mib = 0;
  double history_mib = 0;  // the analyzer's whole history at the end (stream_history.h)
  int64_t step_quarter = 0;
  char error[240] = {};  // the run failed: why
  char note[400] = {};   // the run's first warning (the spool reached its limit, a session stopped): said beside the row
};

std::vector<std::string> pane_policies(int panes) {
  if (panes == 2) return {"full", "h2o"};
  return {"full", "streaming", "h2o", "tova"};
}

std::unique_ptr<StudioRun> make_run(const Options& o, const std::string& shape, int panes, const std::string& spool) {
  const ViewSelection view;  // the app's default view: layer 0, the mean over heads
  if (o.backend.empty())
    return StudioRun::synthetic(synthetic_steps_spec(shape, pane_policies(panes), o.budget, o.slack), view, spool,
                                o.recording_limit_mib << 20);
  StudioConfig config;
  config.policies = pane_policies(panes);
  config.budget = o.budget;
  config.slack = o.slack;
  config.backend = o.backend;
  config.threads = o.threads;
  config.model = "synthetic:" + shape + ":dtype=" + o.dtype;
  const StudioInputs inputs = load_studio_inputs(config);
  BackendOptions options = studio_backend_options(config);
  if (!o.precision.empty()) options.precision = o.precision;
  auto run = StudioRun::live(config, inputs, make_backend(inputs.model, options), view, spool, o.recording_limit_mib << 20);
  if (o.ask_every > 0) {
    run->plant_needle("The secret word is Bethlehem.");  // into the stream when the first turn ends
    run->ask_every(o.ask_every);
  }
  return run;
}

// The child's work: one shape at one pane count, `o.steps` steps.
Row run_row(const Options& o, const std::string& shape, int panes) {
  Row row;
  const std::string spool =
      (std::filesystem::path(o.spool_dir) / ("h2o-bench-studio-" + std::to_string(::getpid()) + ".jsonl")).string();
  // The spool and its side files go with a signal (signal_cleanup.h) as they go at the run's end.
  for (const char* suffix : {"", ".checkpoint", ".turning"}) register_temporary(spool + suffix);
  std::unique_ptr<StudioRun> run = make_run(o, shape, panes, spool);
  SnapshotCadence cadence;
  const ViewSelection view;
  const Stopwatch clock;
  // The window takes every snapshot at once: the app's most demanding case.
  const auto snapshot_if_due = [&] {
    if (cadence.due(int64_t(clock.seconds() * 1000), false, false, run->behind())) run->snapshot(view);
  };
  if (!o.sync) {
    if (o.thinning == "auto" && !o.backend.empty()) run->run_beside();  // the app's rule
    else run->run_beside(PipelineOptions{.thinning = o.thinning == "on"});
    run->after_each_step_beside(snapshot_if_due);  // as the app's EngineWorker::runBeside
  }
  row.step_quarter = o.steps / 4;
  for (int64_t i = 0; i < o.steps; ++i) {
    const StepResult r = run->step();
    if (!r.failure.empty()) throw Error(r.failure);
    if (!row.note[0] && !r.warnings.empty()) std::snprintf(row.note, sizeof row.note, "%s", r.warnings.front().c_str());
    if (!r.stepped) break;
    if (i + 1 == row.step_quarter) row.rss_mib_quarter = double(process_rss_bytes()) / (1 << 20);
    if (!run->beside()) snapshot_if_due();
  }
  if (const std::string failure = run->settle(); !failure.empty()) throw Error(failure);
  run->after_each_step_beside({});  // the hook's cadence and clock go before the run
  row.wall_s = clock.seconds();
  row.t = run->pipeline_times();
  row.steps = row.t.steps;
  row.rss_mib_end = double(process_rss_bytes()) / (1 << 20);
  row.peak_rss_mib = double(process_peak_rss_bytes()) / (1 << 20);
  row.history_mib = double(run->snapshot(view).history_bytes) / (1 << 20);
  return row;
}

// Runs `run_row` in a child process: its peak memory is its own.
Row run_in_child(const Options& o, const std::string& shape, int panes) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error("h2o-bench-studio: cannot make a pipe");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("h2o-bench-studio: cannot fork");
  if (pid == 0) {
    // Ends with its parent, however the parent ends (SIGKILL too): no orphan goes on writing, and
    // the signal's cleanup removes the child's spool (registered in run_row).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(1);
    ::close(fds[0]);
    Row row;
    try {
      row = run_row(o, shape, panes);
    } catch (const std::exception& e) {
      std::snprintf(row.error, sizeof row.error, "%s", e.what());
    }
    const ssize_t n = ::write(fds[1], &row, sizeof row);
    ::_exit(n == ssize_t(sizeof row) ? 0 : 1);
  }
  ::close(fds[1]);
  Row row;
  const ssize_t n = ::read(fds[0], &row, sizeof row);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (n != ssize_t(sizeof row)) std::snprintf(row.error, sizeof row.error, "the run's process ended without a result");
  return row;
}

double us_per_step(double seconds, int64_t steps) { return steps > 0 ? seconds * 1e6 / double(steps) : 0; }

std::string csv_header(bool engine) {
  return std::string("shape,panes,steps,steps_per_s,recording_bytes_per_step,peak_rss_mib,rss_mib_at_quarter,") +
         "rss_mib_at_end,rss_growth_mib_per_1k_steps,history_mib,snapshots,thinned_steps,history_us,analyzer_us,snapshot_us,encode_us,write_us," +
         (engine ? "engine_us,engine_steps_per_s,whole_steps_per_s,asks,ms_per_ask,ask_kv_mib" : "source_us");
}

void add_flags(CLI::App& app, Options& o) {
  app.add_option("--shapes", o.shapes, "synthetic shapes, comma-separated (their layers and heads)");
  app.add_option("--panes", o.panes, "pane counts, comma-separated: 2 (full, h2o) or 4 (full, streaming, h2o, tova)");
  cli::one_line_flag_errors(app, "h2o-bench-studio");
  cli::add_whole_flag(&app, "steps", o.steps, 1, 10000000, "steps of each run");
  cli::add_table_flag(&app, "budget", o.budget, kBenchStudio);
  cli::add_table_flag(&app, "slack", o.slack, kBenchStudio);
  app.add_option("--csv", o.csv, "also write the table as CSV to this file");
  cli::add_table_flag(&app, "backend", o.backend, kBenchStudio);
  app.add_option("--dtype", o.dtype, "with --backend: the synthetic weights' type (default f16)");
  cli::add_table_flag(&app, "precision", o.precision, kBenchStudio);
  cli::add_table_flag(&app, "threads", o.threads, kBenchStudio);
  app.add_flag("--sync", o.sync, "take each step into the sinks before the next (the design before they ran beside the engine)");
  app.add_option("--thinning", o.thinning,
                 "on|off|auto: thin steps when the sinks fall behind (auto: off for synthetic steps, so the table "
                 "measures full detail; the app's rule with --backend)")
      ->check(CLI::IsMember({"on", "off", "auto"}));
  app.add_option("--spool-dir", o.spool_dir, "folder of the recording spool (removed after each run)");
  cli::add_table_flag(&app, "recording-limit", o.recording_limit_mib, kBenchStudio);
  cli::add_whole_flag(&app, "ask-every", o.ask_every, 0, 10000000,
                      "with --backend: plant a needle and ask for it every N steps (forks of every pane's cache fed "
                      "the question and answer, 8 tokens decoded): its ms and KV MiB in the table");
}

// Every (shape, pane count) to run, in the table's order. Throws Error naming the flag.
std::vector<std::pair<std::string, int>> runs_asked(const Options& o, bool dtype_given) {
  std::vector<std::pair<std::string, int>> runs;
  for (const std::string& shape : flag_list(o.shapes, "--shapes", "shape")) {
    synthetic_shape(shape);  // an unknown shape is one line naming it
    for (const std::string& p : flag_list(o.panes, "--panes", "pane count")) {
      if (p != "2" && p != "4") throw Error("--panes: " + p + " (2 or 4)");
      runs.emplace_back(shape, std::stoi(p));
    }
  }
  if (!std::filesystem::is_directory(o.spool_dir)) throw Error("--spool-dir: " + o.spool_dir + " is not a folder");
  if (o.ask_every > 0 && o.backend.empty())
    throw Error("--ask-every: give --backend too (the synthetic source has no caches to ask)");
  if (dtype_given && o.backend.empty())
    throw Error("--dtype: give --backend too (the synthetic source has no weights)");
  return runs;
}

void print_table_head(const Options& o, bool engine) {
  std::printf("source: %s; budget %d, slack %d, %lld steps a run; sinks %s; µs a step per stage\n\n",
              engine ? ("the engine, --backend " + o.backend).c_str() : "synthetic steps (its time left out)", o.budget,
              o.slack, static_cast<long long>(o.steps),
              o.sync ? "in the engine's loop (--sync)" : ("beside the engine, thinning " + o.thinning).c_str());
  std::printf("| shape | panes | steps/s | history | analyzer | snapshot | encode | write | %s | KB/step | peak RSS MiB | "
              "RSS growth MiB/1k steps | history MiB | thinned |%s\n",
              engine ? "engine" : "source",
              engine ? " engine steps/s | whole steps/s | asks | ms an ask | ask KV MiB |" : "");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n",
              engine ? "---:|---:|---:|---:|---:|" : "");
}

// One row: printed to the table, and returned as its CSV line.
std::string report_row(const std::string& shape, int panes, const Row& r, bool engine) {
  const PipelineTimes& t = r.t;
  const double pipeline_s = t.history_s + t.analyzer_s + t.snapshot_s + t.encode_s + t.write_s;
  const double steps_per_s = pipeline_s > 0 ? double(r.steps) / pipeline_s : 0;
  const double kb = double(t.recording_bytes) / 1024.0 / double(std::max<int64_t>(1, r.steps));
  const int64_t span = r.steps - r.step_quarter;
  const double growth = span > 0 ? (r.rss_mib_end - r.rss_mib_quarter) * 1000.0 / double(span) : 0;
  const auto us = [&](double seconds) { return us_per_step(seconds, r.steps); };
  std::printf("| %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.0f | %.2f | %.0f | %lld |", shape.c_str(),
              panes, steps_per_s, us(t.history_s), us(t.analyzer_s), us(t.snapshot_s), us(t.encode_s), us(t.write_s),
              us(t.source_s), kb, r.peak_rss_mib, growth, r.history_mib, static_cast<long long>(t.thinned_steps));
  // An ask's time is the source's too: the engine's rate leaves it out, the whole run's keeps it.
  const double ask_ms = t.asks ? t.ask_s * 1000 / double(t.asks) : 0, ask_mib = double(t.ask_kv_bytes) / (1 << 20);
  if (engine)
    std::printf(" %.0f | %.0f | %lld | %.1f | %.1f |", double(r.steps) / (t.source_s - t.ask_s), double(r.steps) / r.wall_s,
                static_cast<long long>(t.asks), ask_ms, ask_mib);
  std::printf("\n");
  std::fflush(stdout);
  char line[1024];
  std::snprintf(line, sizeof line, "%s,%d,%lld,%.1f,%.0f,%.1f,%.1f,%.1f,%.3f,%.1f,%lld,%lld,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f",
                shape.c_str(), panes, static_cast<long long>(r.steps), steps_per_s, kb * 1024.0, r.peak_rss_mib,
                r.rss_mib_quarter, r.rss_mib_end, growth, r.history_mib, static_cast<long long>(t.snapshots),
                static_cast<long long>(t.thinned_steps), us(t.history_s), us(t.analyzer_s), us(t.snapshot_s),
                us(t.encode_s), us(t.write_s), us(t.source_s));
  std::ostringstream out;
  out << line;
  if (engine)
    out << "," << double(r.steps) / (t.source_s - t.ask_s) << "," << double(r.steps) / r.wall_s << "," << t.asks << ","
        << ask_ms << "," << ask_mib;
  out << "\n";
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The app's run (history, analyzer, snapshots, recording spool; no Qt) at real shapes: steps a second "
               "with the source's time left out, µs a step per stage, recording bytes a step, resident memory"};
  install_signal_cleanup();  // SIGINT, SIGTERM: the CSV's temporary goes, and each row's child with its spool
  Options o;
  add_flags(app, o);
  CLI11_PARSE(app, argc, argv);
  const bool engine = !o.backend.empty();
  std::vector<std::pair<std::string, int>> runs;
  // The CSV appears whole at the end, or not at all (an error names it).
  std::unique_ptr<AtomicFile> csv_file;
  try {
    runs = runs_asked(o, app.count("--dtype") > 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "h2o-bench-studio: %s\n", e.what());
    return 2;
  }
  try {
    if (!o.csv.empty()) csv_file = std::make_unique<AtomicFile>(o.csv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "h2o-bench-studio: --csv: %s\n", e.what());
    return 2;
  }
  std::ostringstream csv;
  csv << csv_header(engine) << "\n";
  print_table_head(o, engine);
  int failures = 0;
  for (const auto& [shape, panes] : runs) {
    const Row r = run_in_child(o, shape, panes);
    if (r.error[0]) {
      std::fprintf(stderr, "h2o-bench-studio: %s, %d panes: %s\n", shape.c_str(), panes, r.error);
      ++failures;
      continue;
    }
    csv << report_row(shape, panes, r, engine);
    // Its numbers stand, but not for what they seem without this (a spool that stopped or turned to a ring).
    if (r.note[0]) std::fprintf(stderr, "h2o-bench-studio: %s, %d panes: %s\n", shape.c_str(), panes, r.note);
  }
  try {
    if (csv_file) {
      csv_file->stream() << csv.str();
      csv_file->commit();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "h2o-bench-studio: --csv: %s\n", e.what());
    return 1;
  }
  return failures ? 1 : 0;
}
