#include "kopt/analysis/method_catalog.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>

#include "kopt/core/toml_text.hpp"

namespace kopt {

extern const char* const k_builtin_method_catalog;  // generated from catalog/methods.toml

bool SassPattern::matches(const SassInstruction& i) const {
  if (i.opcode != opcode) return false;
  for (const auto& m : modifiers)
    if (!i.has_modifier(m)) return false;
  return true;
}

Expected<SassPattern> parse_sass_pattern(const std::string& text) {
  SassPattern p;
  p.text = text;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = text.find('.', start);
    std::string part =
        text.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool ok = !part.empty();
    for (char c : part) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok)
      return Unexpected(
          bad_input("bad SASS pattern '" + text + "': expected OPCODE or OPCODE.MOD[.MOD...]"));
    if (start == 0) {
      for (char c : part)
        if (std::islower(static_cast<unsigned char>(c)))
          return Unexpected(bad_input("bad SASS pattern '" + text +
                                      "': opcodes are upper case (matching is case-sensitive)"));
      p.opcode = part;
    } else {
      p.modifiers.push_back(part);
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return p;
}

namespace {

// { all = [...], any = [...], none = [...] }: the patterns of a signature.
Expected<void> read_rules(const toml::table& rules, std::vector<SassPattern>& all,
                          std::vector<SassPattern>& any, std::vector<SassPattern>& none,
                          const std::string& source, const std::string& field) {
  for (auto& [key, list] : rules) {
    std::string rule(key.str());
    auto* target = rule == "all" ? &all : rule == "any" ? &any : rule == "none" ? &none : nullptr;
    int at = static_cast<int>(list.source().begin.line);
    if (!target)
      return Unexpected(
          bad_input("unknown rule '" + rule + "' (known: all, any, none)", source, at, field));
    const toml::array* arr = list.as_array();
    if (!arr)
      return Unexpected(bad_input("expected a list of patterns", source, at, field + "." + rule));
    for (const auto& item : *arr) {
      auto text = item.value<std::string>();
      auto p = text ? parse_sass_pattern(*text) : Unexpected(bad_input("expected a string"));
      if (!p) return Unexpected(bad_input(p.error().message, source, at, field + "." + rule));
      target->push_back(*p);
    }
  }
  return {};
}

// axis, priority, trigger, couplings, playbook: when a method is worth trying.
Expected<void> read_policy(const toml::table& t, Method& m, const std::string& source, int line,
                           const std::string& field) {
  auto axis = t["axis"].value<std::string>();
  if (!axis)
    return Unexpected(
        bad_input("missing axis (compute, memory or latency)", source, line, field + ".axis"));
  auto a = parse_axis(*axis);
  if (!a)
    return Unexpected(bad_input("unknown axis '" + *axis + "' (known: compute, memory, latency)",
                                source, line, field + ".axis"));
  m.axis = *a;
  if (auto p = t["priority"].value<std::int64_t>()) m.priority = static_cast<int>(*p);
  if (m.priority < 1)
    return Unexpected(bad_input("priority must be 1 or more", source, line, field + ".priority"));
  // trigger = { ... }, or a list of them: the method is as strong as its strongest.
  std::vector<const toml::table*> triggers;
  if (const toml::table* tr = t["trigger"].as_table()) triggers.push_back(tr);
  if (const toml::array* list = t["trigger"].as_array())
    for (const auto& x : *list) triggers.push_back(x.as_table());
  for (std::size_t k = 0; k < triggers.size(); ++k) {
    const toml::table* tr = triggers[k];
    std::string tf =
        field + ".trigger" + (t["trigger"].as_array() ? "[" + std::to_string(k) + "]" : "");
    if (!tr)
      return Unexpected(
          bad_input("a trigger is { metric = NAME, good = X, bad = Y }", source, line, tf));
    Trigger trig;
    trig.metric = (*tr)["metric"].value_or(std::string{});
    auto good = (*tr)["good"].value<double>();
    auto bad = (*tr)["bad"].value<double>();
    if (trig.metric.empty() || !good || !bad || *good == *bad)
      return Unexpected(bad_input("a trigger is { metric = NAME, good = X, bad = Y } with X != Y",
                                  source, static_cast<int>(tr->source().begin.line), tf));
    trig.good = *good;
    trig.bad = *bad;
    if (!m.trigger)
      m.trigger = trig;
    else
      m.more_triggers.push_back(trig);
  }
  if (const toml::array* c = t["couplings"].as_array())
    for (const auto& x : *c)
      if (auto s = x.value<std::string>()) m.couplings.push_back(*s);
  m.playbook = t["playbook"].value_or(std::string{});
  m.playbook_entry = t["playbook_entry"].value_or(std::string{});
  if (const toml::array* r = t["requires"].as_array())
    for (const auto& x : *r) {
      auto f = x.value<std::string>();
      const auto& known = known_features();
      if (!f || std::find(known.begin(), known.end(), *f) == known.end())
        return Unexpected(bad_input("unknown feature '" + f.value_or("?") +
                                        "' (known: tensor_cores, bf16, tf32, cp_async, "
                                        "fp8, tma, wgmma, clusters)",
                                    source, static_cast<int>(r->source().begin.line),
                                    field + ".requires"));
      m.requires_features.push_back(*f);
    }
  return {};
}

}  // namespace

std::vector<std::string> device_features(int sm) {
  std::vector<std::string> f;
  if (sm >= 70) f.push_back("tensor_cores");
  if (sm >= 80) f.insert(f.end(), {"bf16", "tf32", "cp_async"});
  if (sm >= 89) f.push_back("fp8");
  if (sm >= 90) f.insert(f.end(), {"tma", "wgmma", "clusters"});
  return f;
}

std::string_view axis_name(Axis a) {
  switch (a) {
    case Axis::compute:
      return "compute";
    case Axis::memory:
      return "memory";
    case Axis::latency:
      return "latency";
  }
  return "?";
}

std::optional<Axis> parse_axis(std::string_view name) {
  for (Axis a : {Axis::compute, Axis::memory, Axis::latency})
    if (axis_name(a) == name) return a;
  return std::nullopt;
}

const Method* MethodCatalog::find(const std::string& id) const {
  for (const auto& m : methods)
    if (m.id == id) return &m;
  return nullptr;
}

Expected<MethodCatalog> parse_method_catalog(const std::string& toml_text,
                                             const std::string& source) {
  auto parsed = parse_toml_text(toml_text, source);
  if (!parsed) return Unexpected(parsed.error());
  const toml::table& root = *parsed;
  MethodCatalog c;
  c.source = source;
  const toml::array* methods = root["methods"].as_array();
  if (!methods) return Unexpected(bad_input("missing [[methods]]", source, 1, "methods"));
  for (std::size_t i = 0; i < methods->size(); ++i) {
    const toml::table* t = methods->get(i)->as_table();
    std::string field = "methods[" + std::to_string(i) + "]";
    int line = static_cast<int>(methods->get(i)->source().begin.line);
    if (!t) return Unexpected(bad_input("expected a table", source, line, field));
    Method m;
    m.line = line;
    m.id = t->get_as<std::string>("id") ? t->get_as<std::string>("id")->get() : "";
    if (m.id.empty()) return Unexpected(bad_input("missing id", source, line, field + ".id"));
    if (c.find(m.id))
      return Unexpected(
          bad_input("duplicate method id '" + m.id + "'", source, line, field + ".id"));
    if (auto d = t->get_as<std::string>("description")) m.description = d->get();
    if (auto s = t->get_as<std::int64_t>("min_sm")) m.min_sm = static_cast<int>(s->get());
    if (auto e = read_policy(*t, m, source, line, field); !e) return Unexpected(e.error());
    const toml::table* sass = t->get_as<toml::table>("sass");
    if (!sass)
      return Unexpected(
          bad_input("missing sass = { all/any/none = [...] }", source, line, field + ".sass"));
    if (auto r = read_rules(*sass, m.all, m.any, m.none, source, field + ".sass"); !r)
      return Unexpected(r.error());
    if (m.all.empty() && m.any.empty() && m.none.empty())
      return Unexpected(
          bad_input("a signature needs at least one pattern", source, line, field + ".sass"));
    if (const toml::array* forms = t->get_as<toml::array>("forms"))
      for (std::size_t k = 0; k < forms->size(); ++k) {
        std::string ff = field + ".forms[" + std::to_string(k) + "]";
        const toml::table* ft = forms->get(k)->as_table();
        int at = static_cast<int>(forms->get(k)->source().begin.line);
        if (!ft)
          return Unexpected(
              bad_input("expected { name = ..., all/any/none = [...] }", source, at, ff));
        Method::Form form;
        form.name = (*ft)["name"].value_or(std::string{});
        if (form.name.empty())
          return Unexpected(bad_input("a form needs a name", source, at, ff + ".name"));
        toml::table rules = *ft;
        rules.erase("name");
        if (auto r = read_rules(rules, form.all, form.any, form.none, source, ff); !r)
          return Unexpected(r.error());
        if (form.all.empty() && form.any.empty())
          return Unexpected(bad_input("a form needs an all or any pattern", source, at, ff));
        m.forms.push_back(std::move(form));
      }
    if (const toml::node* rel = t->get("related")) {
      std::vector<SassPattern> ignored;
      toml::table wrapped;
      wrapped.insert("any", *rel);
      if (auto r = read_rules(wrapped, ignored, m.related, ignored, source, field + ".related"); !r)
        return Unexpected(r.error());
    }
    c.methods.push_back(std::move(m));
  }
  for (const auto& m : c.methods)
    for (const auto& other : m.couplings)
      if (!c.find(other))
        return Unexpected(bad_input("couples with unknown method '" + other + "'", source, m.line,
                                    "methods." + m.id + ".couplings"));
  return c;
}

Expected<MethodCatalog> builtin_method_catalog() {
  return parse_method_catalog(k_builtin_method_catalog, "catalog/methods.toml");
}

std::string_view sass_verdict_name(SassVerdictKind v) {
  switch (v) {
    case SassVerdictKind::verified:
      return "verified";
    case SassVerdictKind::missing:
      return "missing";
    case SassVerdictKind::not_applicable:
      return "not_applicable";
    case SassVerdictKind::unverifiable:
      return "unverifiable";
    case SassVerdictKind::other_form:
      return "other_form";
  }
  return "?";
}

MethodVerdict unchecked_method(const Method& m, SassVerdictKind kind, std::string why) {
  return MethodVerdict{m.id, kind, std::move(why), {}, {}};
}

namespace {

std::size_t count(const SassPattern& p, const SassFunction& f) {
  std::size_t n = 0;
  for (const auto& i : f.instructions) n += !i.never_runs() && p.matches(i);
  return n;
}

// One signature against the code: the evidence it adds, and why it fails ("" when it holds).
std::string check_signature(const std::vector<SassPattern>& all,
                            const std::vector<SassPattern>& any,
                            const std::vector<SassPattern>& none, const SassFunction& f,
                            const std::string& prefix, std::vector<PatternEvidence>& evidence) {
  std::string missing, forbidden, reason;
  for (const auto& p : all) {
    evidence.push_back({prefix + p.text, "all", count(p, f)});
    if (!evidence.back().count) missing += (missing.empty() ? "" : ", ") + p.text;
  }
  bool any_found = any.empty();
  for (const auto& p : any) {
    evidence.push_back({prefix + p.text, "any", count(p, f)});
    any_found = any_found || evidence.back().count > 0;
  }
  for (const auto& p : none) {
    evidence.push_back({prefix + p.text, "none", count(p, f)});
    if (evidence.back().count)
      forbidden +=
          (forbidden.empty() ? "" : ", ") + p.text + " x" + std::to_string(evidence.back().count);
  }
  if (!missing.empty()) reason = "no " + missing + " in " + f.name;
  if (!any_found) {
    std::string alts;
    for (const auto& p : any) alts += (alts.empty() ? "" : " or ") + p.text;
    reason += (reason.empty() ? "" : "; ") + std::string("none of ") + alts + " in " + f.name;
  }
  if (!forbidden.empty())
    reason += (reason.empty() ? "" : "; ") + std::string("forbidden ") + forbidden;
  return reason;
}

}  // namespace

MethodVerdict verify_method(const Method& m, const SassFunction& f, int sm) {
  if (m.min_sm > 0 && sm > 0 && sm < m.min_sm)
    return unchecked_method(
        m, SassVerdictKind::not_applicable,
        "needs sm_" + std::to_string(m.min_sm) + ", the target is sm_" + std::to_string(sm));
  MethodVerdict v{m.id, SassVerdictKind::verified, {}, {}, {}};
  v.reason = check_signature(m.all, m.any, m.none, f, "", v.evidence);
  if (v.reason.empty()) return v;
  for (const auto& form : m.forms) {
    std::vector<PatternEvidence> ev;
    if (check_signature(form.all, form.any, form.none, f, form.name + ": ", ev).empty()) {
      v.evidence.insert(v.evidence.end(), ev.begin(), ev.end());
      v.form = form.name;
      v.reason.clear();
      return v;
    }
  }
  std::string related;
  for (const auto& p : m.related)
    if (std::size_t n = count(p, f)) {
      v.evidence.push_back({p.text, "related", n});
      related += (related.empty() ? "" : ", ") + p.text + " x" + std::to_string(n);
    }
  if (!related.empty()) {
    v.verdict = SassVerdictKind::other_form;
    v.reason += "; a different form of the method is there: " + related;
    return v;
  }
  v.verdict = SassVerdictKind::missing;
  return v;
}

nlohmann::json to_json(const MethodVerdict& v) {
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& e : v.evidence)
    ev.push_back({{"pattern", e.pattern}, {"rule", e.rule}, {"count", e.count}});
  return {{"method", v.method},
          {"verdict", sass_verdict_name(v.verdict)},
          {"reason", v.reason},
          {"form", v.form},
          {"evidence", ev}};
}

}  // namespace kopt
