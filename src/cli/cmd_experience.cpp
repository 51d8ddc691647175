// `kopt experience add|recommend|search|list|merge|sync|stats`.
#include <fmt/format.h>

#include <iostream>

#include "commands.hpp"
#include "kopt/core/clock.hpp"
#include "kopt/report/explanation_markdown.hpp"
#include "kopt/store/experience_db.hpp"
#include "kopt/store/experience_playbook.hpp"

namespace kopt::cli {
namespace {

// A column as wide as its widest cell (its header included).
std::size_t width(const std::string& header, const std::vector<std::string>& cells) {
  std::size_t w = header.size();
  for (const auto& c : cells) w = std::max(w, c.size());
  return w;
}

// "run gain": the version against the champion before it; "alone": the method's own
// leave-one-out factor, where it was ablated (the verdict is judged by it then).
void print_records(const std::vector<ExperienceRecord>& rs) {
  std::vector<std::string> families, chips, bottlenecks, methods;
  for (const auto& r : rs) {
    families.push_back(r.family);
    chips.push_back(r.chip);
    bottlenecks.push_back(r.bottleneck);
    methods.push_back(r.method);
  }
  std::size_t wf = width("family", families), wc = width("chip", chips),
              wb = width("bottleneck", bottlenecks), wm = width("method", methods);
  std::cout << fmt::format("{:<5} {:<{}} {:<{}} {:<{}} {:<{}} {:>8} {:>7} {:<11} {}\n", "id",
                           "family", wf, "chip", wc, "bottleneck", wb, "method", wm, "run gain",
                           "alone", "verdict", "run / note");
  for (const auto& r : rs) {
    auto own = r.own_factor();
    std::cout << fmt::format(
        "{:<5} {:<{}} {:<{}} {:<{}} {:<{}} {:>7.3f}x {:>7} {:<11} {}{}\n", r.id, r.family, wf,
        r.chip, wc, r.bottleneck, wb, r.method, wm, r.speedup,
        own ? fmt::format("{:.2f}x", *own) : "—", r.verdict.value_or(experience_verdict(r.speedup)),
        r.run_id,
        (r.note.empty() ? "" : " — " + r.note) +
            (r.cause == PitfallCause::none ? ""
                                           : " [pitfall: " + std::string(name_of(r.cause)) + "]"));
  }
}

// What the DB holds, by family, chip and bottleneck: what `recommend` can be asked about.
Expected<nlohmann::json> known_situations(const ExperienceDb& db) {
  nlohmann::json known{{"records", 0}};
  for (const char* by : {"family", "chip", "bottleneck"}) {
    auto st = db.stats(by);
    if (!st) return Unexpected(st.error());
    nlohmann::json counts = nlohmann::json::object();
    std::size_t total = 0;
    for (const auto& s : *st) {
      counts[s.key.empty() ? "(none)" : s.key] = s.trials;
      total += s.trials;
    }
    known[std::string(by) == "family" ? "families" : std::string(by) + "s"] = counts;
    known["records"] = total;
  }
  return known;
}

std::string counts_text(const nlohmann::json& counts) {
  std::string out;
  for (auto it = counts.begin(); it != counts.end(); ++it)
    out +=
        fmt::format("{}{} ({})", out.empty() ? "" : ", ", it.key(), it.value().get<std::size_t>());
  return out.empty() ? "none" : out;
}

void print_known(const nlohmann::json& known) {
  std::size_t n = known["records"].get<std::size_t>();
  std::cout << fmt::format(
      "the experience DB holds {} record{}\n  families:    {}\n  chips:       {}\n  "
      "bottlenecks: {}\n",
      n, n == 1 ? "" : "s", counts_text(known["families"]), counts_text(known["chips"]),
      counts_text(known["bottlenecks"]));
}

void print_recommendations(const std::vector<Recommendation>& recs) {
  std::vector<std::string> methods;
  for (const auto& r : recs) methods.push_back(r.method);
  std::size_t wm = width("method", methods);
  // Ranked by the chance weighed by the predictions' hit rate (Recommendation::rank).
  std::cout << fmt::format("{:<{}} {:>6} {:>11} {:>14}  {}\n", "method", wm, "chance", "predicted",
                           "best run gain", "evidence (successes of trials)");
  for (const auto& r : recs) {
    auto hit = r.hit_rate();
    std::cout << fmt::format("{:<{}} {:>4.0f} % {:>11} {:>13.2f}x  {}{}\n", r.method, wm,
                             100 * r.score,
                             hit ? fmt::format("{:.0f} % of {}", 100 * *hit, r.predictions_judged)
                                 : std::string("none judged"),
                             r.best_speedup, r.evidence, r.demoted ? "  [demoted]" : "");
  }
}

struct ExperienceCliOptions {
  std::string action;  // add | recommend | search | list | merge | sync | stats | predictions |
                       // pitfalls | playbook
  std::string playbooks = "playbooks";  // playbook: the folder of playbooks to write into
  std::string db;                       // default: default_experience_db()
  std::string family, chip, bottleneck, method, verdict, text, sass, note, by = "method", file,
                                                                           direction;
  std::vector<std::string> params;
  double before_s = 0, after_s = 0;
  std::size_t limit = 50;
};

int run_experience_command(const GlobalOptions& g, const ExperienceCliOptions& o) {
  std::string cmd = "experience " + o.action;
  auto db =
      ExperienceDb::open(o.db.empty() ? default_experience_db() : std::filesystem::path(o.db));
  if (!db) return report_error(g, cmd, exit_code(db.error().kind), db.error().to_string());
  nlohmann::json out{{"schema_version", 1}, {"command", cmd}, {"db", db->path().string()}};
  if (o.action == "add") {
    if (o.family.empty() || o.chip.empty() || o.method.empty() || o.before_s <= 0 || o.after_s <= 0)
      return report_error(
          g, cmd, 2, "add needs --family, --chip, --method, --before and --after (seconds, > 0)");
    auto params = parse_assignments(o.params, "--param");
    if (!params) return report_error(g, cmd, 2, params.error().to_string());
    ExperienceRecord r;
    r.family = o.family;
    r.chip = o.chip;
    r.bottleneck = o.bottleneck;
    r.method = o.method;
    r.params = ParamPoint(params->begin(), params->end());
    r.time_before_s = o.before_s;
    r.time_after_s = o.after_s;
    r.speedup = o.before_s / o.after_s;
    r.sass_verdict = o.sass;
    r.note = o.note;
    r.run_id = "manual";
    r.origin = "manual";
    r.date = utc_timestamp();
    auto added = db->add({r});
    if (!added)
      return report_error(g, cmd, exit_code(added.error().kind), added.error().to_string());
    out["added"] = *added;
    if (!g.json)
      std::cout << fmt::format("recorded: {} on {} {:.3f}x ({})\n", r.method, r.family, r.speedup,
                               experience_verdict(r.speedup));
  } else if (o.action == "recommend") {
    auto known = known_situations(*db);
    if (!known)
      return report_error(g, cmd, exit_code(known.error().kind), known.error().to_string());
    out["known"] = *known;
    out["recommendations"] = nlohmann::json::array();
    bool situation = !o.family.empty() || !o.chip.empty() || !o.bottleneck.empty();
    if (!situation) {
      // No situation to rank for: say what there is to ask about, instead of ranking nothing
      // and calling a full DB empty.
      if (!g.json) {
        print_known(*known);
        if ((*known)["records"].get<std::size_t>() > 0)
          std::cout << "methods are ranked for a situation: kopt experience recommend --family F "
                       "[--chip C] [--bottleneck B]\n";
      }
    } else {
      auto recs = db->recommend(o.family, o.chip, o.bottleneck);
      if (!recs)
        return report_error(g, cmd, exit_code(recs.error().kind), recs.error().to_string());
      for (const auto& r : *recs)
        out["recommendations"].push_back(
            {{"method", r.method},
             {"score", r.score},
             {"demoted", r.demoted},
             {"best_speedup", r.best_speedup},
             {"predictions_judged", r.predictions_judged},
             {"predictions_confirmed", r.predictions_confirmed},
             {"hit_rate", r.hit_rate() ? nlohmann::json(*r.hit_rate()) : nlohmann::json(nullptr)},
             {"rank", r.rank},
             {"evidence", r.evidence}});
      if (!g.json) {
        if (recs->empty()) {
          std::cout << "no experience for this family, chip or bottleneck; ";
          print_known(*known);
        } else {
          print_recommendations(*recs);
        }
      }
    }
  } else if (o.action == "search" || o.action == "list") {
    ExperienceFilter f;
    f.family = o.family;
    f.chip = o.chip;
    f.bottleneck = o.bottleneck;
    f.method = o.method;
    f.verdict = o.verdict;
    f.text = o.text;
    f.limit = o.limit;
    auto rs = db->list(f);
    if (!rs) return report_error(g, cmd, exit_code(rs.error().kind), rs.error().to_string());
    out["records"] = nlohmann::json::array();
    for (const auto& r : *rs) out["records"].push_back(to_json(r));
    if (!g.json) print_records(*rs);
  } else if (o.action == "pitfalls") {
    auto ps = db->pitfalls(o.family, o.chip, o.bottleneck);
    if (!ps) return report_error(g, cmd, exit_code(ps.error().kind), ps.error().to_string());
    out["pitfalls"] = nlohmann::json::array();
    for (const auto& p : *ps)
      out["pitfalls"].push_back({{"method", p.method},
                                 {"cause", std::string(name_of(p.cause))},
                                 {"times", p.times},
                                 {"successes", p.successes},
                                 {"worst_speedup", p.worst_speedup},
                                 {"last_run", p.last_run},
                                 {"last_note", p.last_note},
                                 {"line", p.line()}});
    if (!g.json) {
      if (ps->empty()) std::cout << "no pitfall recorded for this family, chip and bottleneck\n";
      for (const auto& p : *ps) std::cout << p.line() << "\n";
    }
  } else if (o.action == "playbook") {
    auto written = write_observed_playbooks(*db, o.playbooks, utc_timestamp());
    if (!written)
      return report_error(g, cmd, exit_code(written.error().kind), written.error().to_string());
    out["playbooks"] = nlohmann::json::array();
    for (const auto& [file, tables] : *written) {
      out["playbooks"].push_back({{"file", file}, {"observed", tables}});
      if (!g.json)
        std::cout << fmt::format(
            "{}: {}\n", (std::filesystem::path(o.playbooks) / file).string(),
            tables ? fmt::format("{} observed entr{}", tables, tables == 1 ? "y" : "ies")
                   : std::string("nothing observed of its methods yet"));
    }
  } else if (o.action == "predictions") {
    ExperienceFilter f;
    f.family = o.family;
    f.chip = o.chip;
    f.method = o.method;
    f.verdict = o.verdict;
    f.limit = o.limit;
    auto ps = db->list_predictions(f);
    if (!ps) return report_error(g, cmd, exit_code(ps.error().kind), ps.error().to_string());
    out["predictions"] = nlohmann::json::array();
    for (const auto& r : *ps) out["predictions"].push_back(to_json(r));
    if (!g.json) {
      if (ps->empty()) std::cout << "no predictions recorded yet\n";
      for (const auto& r : *ps)
        std::cout << fmt::format("{:<10} {:<6} {:<30} {:<34} {}{}\n", r.family, r.chip,
                                 fmt::join(r.methods, ","), r.prediction.text, r.prediction.verdict,
                                 r.prediction.note.empty() ? "" : " (" + r.prediction.note + ")");
    }
  } else if (o.action == "merge") {
    auto n = db->merge(o.file);
    if (!n) return report_error(g, cmd, exit_code(n.error().kind), n.error().to_string());
    out["added"] = *n;
    if (!g.json) std::cout << fmt::format("merged {}: {} new records\n", o.file, *n);
  } else if (o.action == "sync") {
    auto n = o.direction == "export" ? db->export_jsonl(o.file) : db->import_jsonl(o.file);
    if (!n) return report_error(g, cmd, exit_code(n.error().kind), n.error().to_string());
    out[o.direction == "export" ? "exported" : "imported"] = *n;
    if (!g.json)
      std::cout << fmt::format("{} {} records {} {}\n",
                               o.direction == "export" ? "exported" : "imported", *n,
                               o.direction == "export" ? "to" : "from", o.file);
  } else if (o.action == "stats") {
    auto st = db->stats(o.by);
    if (!st) return report_error(g, cmd, exit_code(st.error().kind), st.error().to_string());
    out["stats"] = nlohmann::json::array();
    for (const auto& s : *st)
      out["stats"].push_back({{"key", s.key},
                              {"trials", s.trials},
                              {"successes", s.successes},
                              {"regressions", s.regressions},
                              {"mean_speedup", s.mean_speedup}});
    if (!g.json) {
      std::cout << fmt::format("{:<28} {:>7} {:>9} {:>12} {:>13}\n", o.by, "trials", "success",
                               "regressions", "mean run gain");
      for (const auto& s : *st)
        std::cout << fmt::format(
            "{:<28} {:>7} {:>8.0f}% {:>12} {:>12.3f}x\n", s.key, s.trials,
            100.0 * double(s.successes) / double(std::max<std::size_t>(1, s.trials)), s.regressions,
            s.mean_speedup);
    }
  }
  if (g.json) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

std::vector<Command> experience_commands(const GlobalRef& g) {
  std::vector<Command> out;
  const char* helps[] = {"record an outcome",
                         "methods ranked by past outcomes for a family, chip and bottleneck (none "
                         "given: what the DB holds)",
                         "records with this text in any field",
                         "the records, newest first",
                         "take in another kopt experience DB",
                         "export or import JSON lines (one record a line)",
                         "success rates by method, family, bottleneck or chip",
                         "the predictions agents and the loop made, with their verdicts",
                         "what did not pay for a family, chip and bottleneck, by method and cause "
                         "(no SASS change, slower, no gain, incorrect, does not build, crashed)",
                         "write what the DB saw into each playbook's observed section (per class, "
                         "chip and method: trials, gains, pitfalls, predictions, the runs)"};
  const char* actions[] = {"add",  "recommend", "search",      "list",     "merge",
                           "sync", "stats",     "predictions", "pitfalls", "playbook"};
  for (int i = 0; i < 10; ++i) {
    auto e = std::make_shared<ExperienceCliOptions>();
    e->action = actions[i];
    Command c{.path = {"experience", actions[i]},
              .help = helps[i],
              .run = [g, e] { return run_experience_command(*g, *e); },
              .storage = e};
    c.options.push_back(
        {.names = "--db",
         .help =
             "experience DB (default: $KOPT_EXPERIENCE_DB or ~/.local/share/kopt/experience.db)",
         .target = &e->db});
    bool lists = e->action == "list" || e->action == "predictions";
    if (e->action == "add" || e->action == "recommend" || e->action == "pitfalls" || lists) {
      c.options.push_back({.names = "--family",
                           .help = "kernel family (softmax, gemm, ...)",
                           .target = &e->family});
      c.options.push_back({.names = "--chip", .help = "sm_90, gfx942, ...", .target = &e->chip});
      if (e->action != "predictions")
        c.options.push_back({.names = "--bottleneck",
                             .help = "memory-bound, compute-bound, ...",
                             .target = &e->bottleneck});
    }
    if (e->action == "add" || lists)
      c.options.push_back({.names = "--method", .help = "method id", .target = &e->method});
    if (e->action == "add") {
      c.options.insert(
          c.options.end(),
          {{.names = "--before", .help = "time without the method (s)", .target = &e->before_s},
           {.names = "--after", .help = "time with it (s)", .target = &e->after_s},
           {.names = "--param", .help = "NAME=VALUE (repeatable)", .target = &e->params},
           {.names = "--sass", .help = "SASS verdict", .target = &e->sass},
           {.names = "--note", .help = "a note", .target = &e->note}});
    }
    if (lists) {
      c.options.push_back(
          {.names = "--verdict",
           .help = "only records with this verdict",
           .target = &e->verdict,
           .choices =
               e->action == "list"
                   ? std::vector<std::string>{"success", "neutral", "failure", "regression"}
                   : std::vector<std::string>{"confirmed", "short", "refuted", "unmeasured"}});
      c.options.push_back({.names = "--limit", .help = "at most this many", .target = &e->limit});
    }
    if (e->action == "search") {
      c.options.push_back({.names = "text",
                           .help = "text found in any field",
                           .target = &e->text,
                           .required = true});
      c.options.push_back({.names = "--limit", .help = "at most this many", .target = &e->limit});
    }
    if (e->action == "merge")
      c.options.push_back({.names = "other",
                           .help = "another kopt experience DB",
                           .target = &e->file,
                           .required = true});
    if (e->action == "sync") {
      c.options.push_back({.names = "direction",
                           .help = "export or import",
                           .target = &e->direction,
                           .choices = {"export", "import"},
                           .required = true});
      c.options.push_back({.names = "file",
                           .help = "JSON-lines file (one record a line)",
                           .target = &e->file,
                           .required = true});
    }
    if (e->action == "playbook")
      c.options.push_back({.names = "--playbooks",
                           .help = "the folder of playbooks (default: playbooks)",
                           .target = &e->playbooks});
    if (e->action == "stats")
      c.options.push_back({.names = "--by",
                           .help = "method, family, bottleneck or chip",
                           .target = &e->by,
                           .choices = {"method", "family", "bottleneck", "chip"}});
    out.push_back(c);
  }
  return out;
}

}  // namespace kopt::cli
