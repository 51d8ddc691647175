// The experience DB's predictions: what authors expected of their branches and what the
// metrics did, so an agent can learn which of its beliefs hold.
#include <fmt/format.h>

#include "kopt/core/hash.hpp"
#include "sqlite_statement.hpp"

namespace kopt {
using nlohmann::json;
using sqlite::db_error;
using sqlite::Statement;

namespace {

std::string join(const std::vector<std::string>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t at; !s.empty() && (at = s.find(',', start)) != std::string::npos; start = at + 1)
    out.push_back(s.substr(start, at - start));
  if (!s.empty()) out.push_back(s.substr(start));
  return out;
}

std::string uid(const PredictionRecord& r) {
  Sha256 h;
  h.field("kopt-prediction-v1")
      .field(r.family)
      .field(r.chip)
      .field(r.run_id)
      .field(r.prediction.branch);
  h.field(r.prediction.text).field(r.date);
  return h.hex().substr(0, 32);
}

void bind_optional(Statement& s, int i, const std::optional<double>& v) {
  if (v) s.bind(i, *v);  // unbound parameters are NULL
}

}  // namespace

Expected<std::size_t> ExperienceDb::add_predictions(std::vector<PredictionRecord> records) {
  auto bind = [](Statement& ins, PredictionRecord& r) {
    if (r.uid.empty()) r.uid = uid(r);
    const Prediction& p = r.prediction;
    ins.bind(1, r.uid);
    ins.bind(2, r.family);
    ins.bind(3, r.chip);
    ins.bind(4, r.bottleneck);
    ins.bind(5, join(r.methods));
    ins.bind(6, r.hypothesis);
    ins.bind(7, p.text);
    ins.bind(8, p.metric);
    ins.bind(9, p.direction);
    bind_optional(ins, 10, p.amount);
    ins.bind(11, static_cast<std::int64_t>(p.relative));
    bind_optional(ins, 12, p.before);
    bind_optional(ins, 13, p.after);
    ins.bind(14, std::string(name_of(p.verdict)));
    ins.bind(15, p.note);
    ins.bind(16, static_cast<std::int64_t>(r.accepted));
    ins.bind(17, r.run_id);
    ins.bind(18, r.date);
  };
  return sqlite::insert_all(
      m_h->db,
      "INSERT OR IGNORE INTO predictions (uid, family, chip, bottleneck, methods, hypothesis, "
      "prediction, metric, direction, amount, relative, before, after, verdict, note, accepted, "
      "run_id, date) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
      records, bind, m_path, "a prediction");
}

Expected<std::vector<PredictionRecord>> ExperienceDb::list_predictions(
    const ExperienceFilter& f) const {
  Statement s(m_h->db,
              "SELECT id, uid, family, chip, bottleneck, methods, hypothesis, prediction, metric, "
              "direction, amount, relative, "
              "before, after, verdict, note, accepted, run_id, date FROM predictions WHERE (?1 = "
              "'' OR family = ?1) AND "
              "(?2 = '' OR chip = ?2) AND (?3 = '' OR instr(',' || methods || ',', ',' || ?3 || "
              "',') > 0) AND "
              "(?4 = '' OR verdict = ?4) ORDER BY id DESC LIMIT ?5");
  if (!s.ok()) return Unexpected(db_error(m_h->db, "cannot query the predictions", m_path));
  s.bind(1, f.family);
  s.bind(2, f.chip);
  s.bind(3, f.method);
  s.bind(4, f.verdict);
  s.bind(5, static_cast<std::int64_t>(f.limit));
  std::vector<PredictionRecord> out;
  while (s.step() == SQLITE_ROW) {
    PredictionRecord r;
    r.id = s.integer(0);
    r.uid = s.text(1);
    r.family = s.text(2);
    r.chip = s.text(3);
    r.bottleneck = s.text(4);
    r.methods = split(s.text(5));
    r.hypothesis = s.text(6);
    Prediction& p = r.prediction;
    p.text = s.text(7);
    p.metric = s.text(8);
    p.direction = s.text(9);
    if (!s.null(10)) p.amount = s.real(10);
    p.relative = s.integer(11) != 0;
    if (!s.null(12)) p.before = s.real(12);
    if (!s.null(13)) p.after = s.real(13);
    p.verdict = parse_enum<PredictionVerdict>(s.text(14)).value_or(PredictionVerdict::unmeasured);
    p.note = s.text(15);
    r.accepted = s.integer(16) != 0;
    r.run_id = s.text(17);
    r.date = s.text(18);
    out.push_back(std::move(r));
  }
  return out;
}

Expected<PredictionHits> ExperienceDb::prediction_hits(const std::string& chip,
                                                       const std::string& bottleneck) const {
  Statement s(m_h->db,
              "SELECT methods, SUM(verdict IN ('confirmed', 'short', 'refuted')), "
              "SUM(verdict = 'confirmed') FROM predictions WHERE chip = ?1 AND bottleneck = ?2 "
              "GROUP BY methods");
  if (!s.ok()) return Unexpected(db_error(m_h->db, "cannot query the predictions", m_path));
  s.bind(1, chip);
  s.bind(2, bottleneck);
  PredictionHits out;
  while (s.step() == SQLITE_ROW)
    for (const auto& m : split(s.text(0))) {
      if (m.empty() || m.front() == '-') continue;  // "-M": an ablation, for no method
      out[m].first += static_cast<std::size_t>(s.integer(1));
      out[m].second += static_cast<std::size_t>(s.integer(2));
    }
  return out;
}

json to_json(const PredictionRecord& r) {
  json p;
  to_json(p, r.prediction);
  return {{"id", r.id},           {"family", r.family},
          {"chip", r.chip},       {"bottleneck", r.bottleneck},
          {"methods", r.methods}, {"hypothesis", r.hypothesis},
          {"prediction", p},      {"accepted", r.accepted},
          {"run_id", r.run_id},   {"date", r.date},
          {"uid", r.uid}};
}

}  // namespace kopt
