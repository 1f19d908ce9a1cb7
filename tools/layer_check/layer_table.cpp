#include "layer_table.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

namespace layer_check {

const layer* layer_table::find(const std::string& name) const {
  for (const auto& l : layers)
    if (l.name == name) return &l;
  return nullptr;
}

namespace {

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line.substr(0, line.find('#')));
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// "layer <name> uses <a> <b> third_party <x>": everything after a keyword up to the next keyword.
std::optional<std::string> read_layer(const std::vector<std::string>& w, layer& out) {
  if (w.size() < 2) return "layer needs a name";
  out.name = w[1];
  std::set<std::string>* list = nullptr;
  for (std::size_t i = 2; i < w.size(); ++i) {
    if (w[i] == "uses") list = &out.uses;
    else if (w[i] == "third_party") list = &out.third_party;
    else if (!list) return "expected 'uses' or 'third_party', not '" + w[i] + "'";
    else list->insert(w[i]);
  }
  return std::nullopt;
}

std::optional<std::string> read_directive(const std::vector<std::string>& w, const std::filesystem::path& table_dir,
                                          const std::filesystem::path& root, layer_table& t) {
  const std::string& d = w[0];
  if (d == "layer") {
    layer l;
    if (auto e = read_layer(w, l)) return e;
    if (t.find(l.name)) return "layer '" + l.name + "' declared twice";
    t.layers.push_back(std::move(l));
  } else if (d == "third_party") {
    if (w.size() < 3) return "third_party needs a name and at least one include prefix";
    auto& prefixes = t.third_party_prefixes[w[1]];
    prefixes.insert(prefixes.end(), w.begin() + 2, w.end());
  } else if (d == "include_dir") {
    if (w.size() != 2) return "include_dir takes one folder";
    t.include_dirs.push_back(w[1]);
  } else if (d == "file") {
    if (w.size() != 3 && w.size() != 4) return "file takes a layer, a path and optionally a disk path";
    std::filesystem::path disk = w.size() == 4 ? table_dir / w[3] : root / w[2];
    if (!t.files.emplace(w[2], table_file{w[1], disk}).second) return "file '" + w[2] + "' listed twice";
  } else if (d == "allow") {
    if (w.size() != 3) return "allow takes a layer and a header";
    t.allowed.emplace(w[1], w[2]);
  } else {
    return "unknown directive '" + d + "'";
  }
  return std::nullopt;
}

}  // namespace

std::expected<layer_table, std::string> layer_table_read(const std::vector<std::filesystem::path>& tables,
                                                         const std::filesystem::path& root) {
  layer_table t;
  for (const auto& path : tables) {
    std::ifstream in(path);
    if (!in) return std::unexpected(path.string() + ": cannot read");
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      auto w = words_of(line);
      if (w.empty()) continue;
      if (auto e = read_directive(w, path.parent_path(), root, t))
        return std::unexpected(path.string() + ":" + std::to_string(n) + ": " + *e);
    }
  }
  return t;
}

std::vector<std::string> layer_table_problems(const layer_table& table) {
  std::vector<std::string> problems;
  for (const auto& l : table.layers) {
    for (const auto& u : l.uses)
      if (!table.find(u)) problems.push_back("layer '" + l.name + "' uses unknown layer '" + u + "'");
    for (const auto& tp : l.third_party)
      if (!table.third_party_prefixes.contains(tp))
        problems.push_back("layer '" + l.name + "' uses unknown third_party '" + tp + "'");
  }
  for (const auto& [path, f] : table.files)
    if (!table.find(f.layer)) problems.push_back("file '" + path + "' belongs to unknown layer '" + f.layer + "'");
  for (const auto& [l, header] : table.allowed)
    if (!table.find(l)) problems.push_back("allow names unknown layer '" + l + "'");

  // Layers are a stack: 'uses' must not loop back (a uses b uses ... a).
  std::map<std::string, int> state;  // 1: on the path, 2: done
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    state[name] = 1;
    path.push_back(name);
    if (const layer* l = table.find(name))
      for (const auto& u : l->uses) {
        if (state[u] == 1) {
          std::string cycle;
          for (auto it = std::find(path.begin(), path.end(), u); it != path.end(); ++it) cycle += *it + " -> ";
          problems.push_back("layers use each other in a cycle: " + cycle + u);
        } else if (state[u] == 0) {
          visit(u);
        }
      }
    path.pop_back();
    state[name] = 2;
  };
  for (const auto& l : table.layers)
    if (state[l.name] == 0) visit(l.name);
  return problems;
}

}  // namespace layer_check
