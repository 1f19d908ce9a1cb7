#include "layer_rules.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace layer_check {

namespace {

// The third-party name whose longest prefix matches a system include, or empty (std, POSIX, ...).
std::string third_party_of(const layer_table& table, const std::string& written) {
  std::string best, best_prefix;
  for (const auto& [name, prefixes] : table.third_party_prefixes)
    for (const auto& p : prefixes)
      if (written.starts_with(p) && p.size() > best_prefix.size()) best = name, best_prefix = p;
  return best;
}

std::string owner_of(const layer_table& table, const std::string& path) {
  auto it = table.files.find(path);
  return it == table.files.end() ? std::string{} : it->second.layer;
}

struct frame {
  std::string path;
  int line;
};

std::string via(const std::vector<frame>& chain) {
  std::string s;
  for (std::size_t i = 1; i < chain.size(); ++i) s += (i == 1 ? " via " : " -> ") + chain[i].path + ":" + std::to_string(chain[i].line);
  return s;
}

// Walks everything one file's translation unit reaches and reports what its layer may not reach.
class reach_check {
 public:
  reach_check(const layer_table& table, const include_graph& graph, check_report& report,
              std::set<std::pair<std::string, std::string>>& allow_used)
      : table_(table), graph_(graph), report_(report), allow_used_(allow_used) {}

  void run(const std::string& file, const layer& l) {
    layer_ = &l;
    seen_ = {file};
    reported_.clear();
    chain_ = {};
    walk(file);
  }

 private:
  bool may_use_layer(const std::string& owner) const { return owner == layer_->name || layer_->uses.contains(owner); }

  void fail(const std::string& what, const std::string& why) {
    if (!reported_.insert(what).second) return;
    const frame& first = chain_.front();
    report_.errors.push_back(first.path + ":" + std::to_string(first.line) + ": error: layer '" + layer_->name +
                             "' may not include " + what + " (" + why + ")" + via(chain_));
  }

  void walk(const std::string& file) {
    auto it = graph_.edges.find(file);
    if (it == graph_.edges.end()) return;
    for (const auto& e : it->second) {
      chain_.push_back({file, e.line});
      step(e);
      chain_.pop_back();
    }
  }

  void step(const include_edge& e) {
    if (e.target.empty()) {
      const std::string tp = third_party_of(table_, e.written);
      if (!tp.empty() && !layer_->third_party.contains(tp)) fail("<" + e.written + ">", "third-party " + tp);
      return;
    }
    if (table_.allowed.contains({layer_->name, e.target})) {
      allow_used_.emplace(layer_->name, e.target);
      return;
    }
    const std::string owner = owner_of(table_, e.target);
    if (owner.empty()) return fail(e.target, "a file that belongs to no layer");
    if (!may_use_layer(owner)) return fail(e.target, "layer " + owner);
    if (seen_.insert(e.target).second) walk(e.target);
  }

  const layer_table& table_;
  const include_graph& graph_;
  check_report& report_;
  std::set<std::pair<std::string, std::string>>& allow_used_;
  const layer* layer_ = nullptr;
  std::set<std::string> seen_;
  std::set<std::string> reported_;
  std::vector<frame> chain_;
};

// Our files including each other in a loop (hidden by #pragma once, but the order of declarations
// then depends on which one a translation unit includes first). Each cycle is reported once.
void check_file_cycles(const include_graph& graph, check_report& report) {
  std::map<std::string, int> state;  // 1: on the path, 2: done
  std::vector<frame> path;
  std::set<std::set<std::string>> reported;
  std::function<void(const std::string&)> visit = [&](const std::string& file) {
    state[file] = 1;
    if (auto it = graph.edges.find(file); it != graph.edges.end())
      for (const auto& e : it->second) {
        if (e.target.empty()) continue;
        path.push_back({file, e.line});
        if (state[e.target] == 1) {
          auto start = std::find_if(path.begin(), path.end(), [&](const frame& f) { return f.path == e.target; });
          std::set<std::string> members;
          std::string text;
          for (auto f = start; f != path.end(); ++f) {
            members.insert(f->path);
            text += f->path + ":" + std::to_string(f->line) + " -> ";
          }
          if (reported.insert(members).second)
            report.errors.push_back(start->path + ":" + std::to_string(start->line) + ": error: include cycle " + text + e.target);
        } else if (state[e.target] == 0) {
          visit(e.target);
        }
        path.pop_back();
      }
    state[file] = 2;
  };
  for (const auto& [file, edges] : graph.edges)
    if (state[file] == 0) visit(file);
}

// Layers whose files include each other's headers (only allowed includes can close such a loop,
// since every other include goes to a layer below): named so the allow-list shrinks in that order.
void note_layer_cycles(const layer_table& table, const include_graph& graph, check_report& report) {
  std::map<std::string, std::map<std::string, std::string>> edge;  // from -> to -> first include site
  for (const auto& [file, edges] : graph.edges)
    for (const auto& e : edges) {
      const std::string from = owner_of(table, file), to = owner_of(table, e.target);
      if (!from.empty() && !to.empty() && from != to)
        edge[from].emplace(to, file + ":" + std::to_string(e.line) + " includes " + e.target);
    }
  std::map<std::string, std::set<std::string>> reach;
  for (const auto& [from, tos] : edge)
    for (const auto& [to, site] : tos) reach[from].insert(to);
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& [from, tos] : reach)
      for (const auto& mid : std::set<std::string>(tos))
        if (auto further = reach.find(mid); further != reach.end())
          for (const auto& to : further->second) grew |= tos.insert(to).second;
  }
  for (const auto& from : table.layers)
    for (const auto& [to, site] : edge[from.name])
      if (!from.uses.contains(to) && reach[to].contains(from.name))
        report.notes.push_back("layer cycle " + from.name + " -> " + to + " -> ... -> " + from.name + ", closed by " + site);
}

}  // namespace

check_report layer_rules_check(const layer_table& table, const include_graph& graph) {
  check_report report;
  for (const auto& f : graph.unreadable) report.errors.push_back(f + ": error: cannot read");
  std::set<std::pair<std::string, std::string>> allow_used;
  reach_check reach(table, graph, report, allow_used);
  for (const auto& [path, file] : table.files)
    if (const layer* l = table.find(file.layer)) reach.run(path, *l);
  check_file_cycles(graph, report);
  for (const auto& [layer, header] : table.allowed) {
    const std::string entry = "allow " + layer + " " + header;
    if (allow_used.contains({layer, header})) report.notes.push_back("still needed: " + entry);
    else report.stale.push_back(entry + ": no file needs it any more");
  }
  note_layer_cycles(table, graph, report);
  return report;
}

}  // namespace layer_check
