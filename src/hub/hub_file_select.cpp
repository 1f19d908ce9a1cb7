#include "hub/hub_file_select.hpp"

#include "hub/hub_url.hpp"
#include "model/gguf_split.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <regex>

namespace pagedserve {
namespace {


bool top_level(std::string_view name) { return name.find('/') == std::string_view::npos; }

// The files beside the weights that loading and serving read.
bool safetensors_companion(std::string_view name) {
  static constexpr std::array<std::string_view, 7> names = {
      "config.json",          "generation_config.json", "tokenizer.json",     "tokenizer_config.json",
      "chat_template.jinja",  "chat_template.json",     "model.safetensors.index.json"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

// A GGUF holding weights, not a vision projector (llama-server skips mmproj files the same way).
bool gguf_weights(std::string_view name) {
  return ascii_lower(name).ends_with(".gguf") && ascii_lower(name).find("mmproj") == std::string::npos;
}

std::string list(const std::vector<const hub_file*>& files) {
  std::string s;
  for (const hub_file* f : files) s += (s.empty() ? "" : ", ") + f->name;
  return s;
}

// Files that are all the splits of one model (gguf_split.hpp: <name>-00001-of-0000n.gguf ...), as
// llama-server's -hf fetches them: every split, the first as the model path. nullopt when they are
// not one model's splits; an error when some of its splits are not in the repo.
std::optional<std::expected<hub_selection, std::string>> split_set(const std::vector<const hub_file*>& files,
                                                                   const hub_model_ref& ref) {
  std::optional<gguf_split_name> model;
  std::vector<const hub_file*> by_split;
  for (const hub_file* f : files) {
    const auto name = gguf_split_name_parse(f->name);
    if (!name || (model && (name->prefix != model->prefix || name->n_splits != model->n_splits))) return std::nullopt;
    if (!model) model = name, by_split.assign(name->n_splits, nullptr);
    by_split[name->split] = f;
  }
  if (!model) return std::nullopt;
  hub_selection s;
  for (int i = 0; i < model->n_splits; ++i) {
    if (!by_split[i])
      return std::unexpected(ref.repo + ": split " + std::to_string(i + 1) + " of " + std::to_string(model->n_splits) +
                             " (" + gguf_split_path(model->prefix, i, model->n_splits).string() + ") is not in the repo");
    s.files.push_back(*by_split[i]);
  }
  s.gguf = by_split[0]->name;
  return s;
}

std::expected<hub_selection, std::string> pick_gguf(const std::vector<hub_file>& files, const hub_model_ref& ref) {
  std::vector<const hub_file*> ggufs, matches;
  for (const hub_file& f : files)
    if (gguf_weights(f.name)) ggufs.push_back(&f);
  if (ggufs.empty()) return std::unexpected(ref.repo + " has no .gguf files for the tag '" + ref.tag + "'");
  const std::string tag = ascii_lower(ref.tag.empty() ? "Q4_K_M" : ref.tag);
  for (const hub_file* f : ggufs)
    if (ascii_lower(f->name).find(tag) != std::string::npos) matches.push_back(f);
  if (matches.empty() && ref.tag.empty() && ggufs.size() == 1) matches = ggufs;  // the only one there is
  if (matches.size() == 1) return hub_selection{{*matches[0]}, matches[0]->name};
  if (auto split = split_set(matches, ref)) return *split;
  if (matches.empty())
    return std::unexpected(ref.repo + ": no .gguf file matches '" + (ref.tag.empty() ? "Q4_K_M" : ref.tag) +
                           "'; pick one with " + ref.repo + ":TAG from: " + list(ggufs));
  return std::unexpected(ref.repo + ": '" + (ref.tag.empty() ? "Q4_K_M" : ref.tag) + "' matches several .gguf files (" +
                         list(matches) + "); name one more precisely");
}

}  // namespace

std::optional<hub_model_ref> hub_model_ref_parse(std::string_view spec) {
  // huggingface_hub's repo id rule: [\w.-] names, not starting or ending with '.' or '-', no "--" or "..".
  static const std::regex id(R"(([A-Za-z0-9_][\w.-]*)/([A-Za-z0-9_][\w.-]*)(?::([\w.-]+))?)");
  std::cmatch m;
  if (!std::regex_match(spec.data(), spec.data() + spec.size(), m, id)) return std::nullopt;
  const std::string org = m[1].str(), name = m[2].str();
  for (const std::string& part : {org, name})
    if (part.find("--") != std::string::npos || part.find("..") != std::string::npos || part.ends_with('.') ||
        part.ends_with('-'))
      return std::nullopt;
  return hub_model_ref{org + "/" + name, m[3].str()};
}

std::expected<hub_selection, std::string> hub_files_select(const std::vector<hub_file>& files, const hub_model_ref& ref) {
  const bool has_safetensors = std::any_of(files.begin(), files.end(), [](const hub_file& f) {
    return top_level(f.name) && f.name.ends_with(".safetensors");
  });
  if (!ref.tag.empty() || !has_safetensors) {
    if (std::any_of(files.begin(), files.end(), [](const hub_file& f) { return gguf_weights(f.name); }) || !ref.tag.empty())
      return pick_gguf(files, ref);
    std::vector<const hub_file*> all;
    for (const hub_file& f : files) all.push_back(&f);
    return std::unexpected(ref.repo + " has neither .safetensors nor .gguf weights (files: " + list(all) + ")");
  }
  hub_selection s;
  for (const hub_file& f : files)
    if (top_level(f.name) && (f.name.ends_with(".safetensors") || safetensors_companion(f.name))) s.files.push_back(f);
  if (std::none_of(s.files.begin(), s.files.end(), [](const hub_file& f) { return f.name == "config.json"; }))
    return std::unexpected(ref.repo + " has .safetensors weights but no config.json");
  return s;
}

}  // namespace pagedserve
