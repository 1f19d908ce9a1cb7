// Reading tokenizer.json (and tokenizer_config.json beside it) into an hf_tokenizer, and choosing
// a loader by what a path holds. Every malformed input is an error message naming the file and
// the part that is wrong; nothing here throws or trusts a size it has not checked.
#include <cstring>
#include <fstream>
#include <system_error>

#include "model/gguf_model.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve {
namespace hf {

std::string_view json_type(simdjson::dom::element e) {
  std::string_view t;
  if (e["type"].get(t) != simdjson::SUCCESS) return {};
  return t;
}

result<std::string_view> json_string(simdjson::dom::element e, std::string_view key, std::string_view where) {
  std::string_view s;
  if (e[key].get(s) != simdjson::SUCCESS)
    return std::unexpected(std::string(where) + ": '" + std::string(key) + "' is missing or not a string");
  return s;
}

bool json_bool(simdjson::dom::element e, std::string_view key, bool fallback) {
  bool b = fallback;
  if (e[key].get(b) != simdjson::SUCCESS) return fallback;
  return b;
}

bool json_has(simdjson::dom::element e, std::string_view key) {
  simdjson::dom::element v;
  return e[key].get(v) == simdjson::SUCCESS && !v.is_null();
}

namespace {

namespace fs = std::filesystem;
using simdjson::dom::element;

// Added tokens follow the model's vocabulary; one far past it is corruption.
std::int64_t max_added_id(std::size_t n_vocab, std::size_t n_added) {
  return static_cast<std::int64_t>(n_vocab + 2 * n_added) + 1024;
}

result<void> load_added(element root, added_vocab& added, std::vector<std::string>& tokens) {
  element list_e;
  if (root["added_tokens"].get(list_e) != simdjson::SUCCESS || list_e.is_null()) return {};
  simdjson::dom::array list;
  if (list_e.get(list) != simdjson::SUCCESS) return std::unexpected("'added_tokens' is not an array");
  const std::int64_t max_id = max_added_id(tokens.size(), list.size());
  for (element e : list) {
    added_token t;
    std::int64_t id = -1;
    std::string_view content;
    if (e["id"].get(id) != simdjson::SUCCESS || id < 0 || id >= max_id ||
        e["content"].get(content) != simdjson::SUCCESS)
      return std::unexpected("an added token lacks a valid id or content");
    t.id = static_cast<token_id>(id);
    t.content = std::string(content);
    t.special = json_bool(e, "special", false);
    t.lstrip = json_bool(e, "lstrip", false);
    t.rstrip = json_bool(e, "rstrip", false);
    t.single_word = json_bool(e, "single_word", false);
    t.normalized = json_bool(e, "normalized", !t.special);  // Hugging Face's default
    if (static_cast<std::size_t>(id) >= tokens.size()) tokens.resize(static_cast<std::size_t>(id) + 1);
    tokens[static_cast<std::size_t>(id)] = t.content;
    added.add(std::move(t));
  }
  added.finish();
  return {};
}

// A token id by its string: added tokens first, as Hugging Face's token_to_id.
std::optional<token_id> lookup(const added_vocab& added, const bpe_model& model, std::string_view s) {
  for (const added_token& t : added.tokens())
    if (t.content == s) return t.id;
  return model.find(s);
}

result<void> load_post(element e, const added_vocab& added, const bpe_model& model, post_processor& post) {
  const std::string_view type = json_type(e);
  if (type == "Sequence") {
    simdjson::dom::array list;
    if (e["processors"].get(list) != simdjson::SUCCESS)
      return std::unexpected("post_processor Sequence without 'processors'");
    for (element sub : list)
      if (auto ok = load_post(sub, added, model, post); !ok) return ok;
    return {};
  }
  if (type == "ByteLevel") return {};  // only trims offsets
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    std::int64_t cls = -1, sep = -1;
    if (e["cls"].at(1).get(cls) != simdjson::SUCCESS || e["sep"].at(1).get(sep) != simdjson::SUCCESS)
      return std::unexpected("post_processor " + std::string(type) + " needs cls and sep");
    post.prefix.push_back(static_cast<token_id>(cls));
    post.suffix.insert(post.suffix.begin(), static_cast<token_id>(sep));
    return {};
  }
  if (type != "TemplateProcessing")
    return std::unexpected("unsupported post_processor type '" + std::string(type) + "'");
  simdjson::dom::array single;
  if (e["single"].get(single) != simdjson::SUCCESS) return std::unexpected("TemplateProcessing without 'single'");
  bool after = false;
  for (element item : single) {
    element special;
    if (item["Sequence"].get(special) == simdjson::SUCCESS) {
      after = true;
      continue;
    }
    std::string_view name;
    if (item["SpecialToken"]["id"].get(name) != simdjson::SUCCESS)
      return std::unexpected("TemplateProcessing: an item is neither Sequence nor SpecialToken");
    simdjson::dom::array ids;
    std::vector<token_id> resolved;
    if (e["special_tokens"][name]["ids"].get(ids) == simdjson::SUCCESS) {
      for (element v : ids) {
        std::int64_t id = -1;
        if (v.get(id) != simdjson::SUCCESS || id < 0)
          return std::unexpected("TemplateProcessing: bad id for " + std::string(name));
        resolved.push_back(static_cast<token_id>(id));
      }
    } else if (auto id = lookup(added, model, name)) {
      resolved.push_back(*id);
    } else {
      return std::unexpected("TemplateProcessing: unknown special token '" + std::string(name) + "'");
    }
    auto& side = after ? post.suffix : post.prefix;
    side.insert(side.end(), resolved.begin(), resolved.end());
  }
  return {};
}

// simdjson rejects integers past 64 bits, and transformers writes model_max_length as
// 1000000000000000019884624838656 (int(1e30)). Such a number outside strings gets ".0" so it
// parses as a double; strings are copied untouched.
std::string widen_big_integers(std::string_view json) {
  std::string out;
  out.reserve(json.size() + 16);
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < json.size())
        out.push_back(json[++i]);
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c < '0' || c > '9') {
      out.push_back(c);
      continue;
    }
    std::size_t end = i;
    while (end < json.size() && json[end] >= '0' && json[end] <= '9') ++end;
    out.append(json.substr(i, end - i));
    const bool fraction = end < json.size() && (json[end] == '.' || json[end] == 'e' || json[end] == 'E');
    if (end - i >= 19 && !fraction) out.append(".0");
    i = end - 1;
  }
  return out;
}

// bos_token / eos_token in tokenizer_config.json: a string, an AddedToken object, or null.
std::optional<std::string_view> config_token(element cfg, std::string_view key) {
  element v;
  if (cfg[key].get(v) != simdjson::SUCCESS || v.is_null()) return std::nullopt;
  std::string_view s;
  if (v.get(s) == simdjson::SUCCESS || v["content"].get(s) == simdjson::SUCCESS) return s;
  return std::nullopt;
}

result<tokenizer_settings> load_settings(const fs::path& config_path, const added_vocab& added, const bpe_model& model,
                                         const post_processor& post) {
  tokenizer_settings s;
  std::error_code ec;
  if (!fs::is_regular_file(config_path, ec)) {  // no config: guess from the post-processor and common names
    if (!post.prefix.empty()) s.bos = post.prefix.front();
    for (const std::string_view name : {"</s>", "<|endoftext|>", "<|end_of_text|>", "<eos>"})
      if (auto id = lookup(added, model, name); id && s.eos < 0) s.eos = *id;
    return s;
  }
  std::ifstream in(config_path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  simdjson::dom::parser parser;
  element cfg;
  if (!in.is_open() || parser.parse(widen_big_integers(text)).get(cfg) != simdjson::SUCCESS || !cfg.is_object())
    return std::unexpected(config_path.string() + ": not a readable JSON object");
  for (const auto& [key, out] : {std::pair{"bos_token", &s.bos}, std::pair{"eos_token", &s.eos}}) {
    const auto name = config_token(cfg, key);
    if (!name) continue;
    const auto id = lookup(added, model, *name);
    if (!id)
      return std::unexpected(config_path.string() + ": " + key + " '" + std::string(*name) +
                             "' is not in the vocabulary");
    *out = *id;
  }
  s.add_bos = json_bool(cfg, "add_bos_token", true);
  s.cleanup = json_bool(cfg, "clean_up_tokenization_spaces", false);
  return s;
}

result<std::unique_ptr<tokenizer>> build(element root, const fs::path& config_path) {
  if (!root.is_object()) return std::unexpected("not a JSON object");
  element model_e;
  if (root["model"].get(model_e) != simdjson::SUCCESS || !model_e.is_object())
    return std::unexpected("no 'model' object");
  const auto member = [&](std::string_view key) -> std::optional<element> {
    element e;
    if (root[key].get(e) != simdjson::SUCCESS || e.is_null()) return std::nullopt;
    return e;
  };
  const auto norm_e = member("normalizer"), pre_e = member("pre_tokenizer"), dec_e = member("decoder"),
             post_e = member("post_processor");

  auto norm = normalizer::from_json(norm_e);
  if (!norm) return std::unexpected(norm.error());
  auto pre = pre_tokenizer::from_json(pre_e);
  if (!pre) return std::unexpected(pre.error());
  auto model = bpe_model::from_json(model_e, pre->byte_level());
  if (!model) return std::unexpected(model.error());
  std::vector<std::string> tokens = model->release_tokens();
  added_vocab added;
  if (auto ok = load_added(root, added, tokens); !ok) return std::unexpected(ok.error());
  auto dec = decoder_build(dec_e, tokens);
  if (!dec) return std::unexpected(dec.error());
  post_processor post;
  if (post_e)
    if (auto ok = load_post(*post_e, added, *model, post); !ok) return std::unexpected(ok.error());
  auto settings = load_settings(config_path, added, *model, post);
  if (!settings) return std::unexpected(settings.error());
  return std::make_unique<hf_tokenizer>(std::move(*norm), std::move(*pre), std::move(*model), std::move(added),
                                        std::move(*dec), std::move(post), std::move(tokens), *settings);
}

// llama2.c files do not store their token count; walk the records to find it.
result<int> llama2c_count_tokens(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected(path.string() + ": cannot open");
  const std::string d{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::size_t pos = 4;  // max_token_length
  int n = 0;
  while (pos + 8 <= d.size()) {
    std::int32_t len = 0;
    std::memcpy(&len, d.data() + pos + 4, 4);
    if (len < 0 || static_cast<std::size_t>(len) > d.size() - pos - 8) break;
    pos += 8 + static_cast<std::size_t>(len);
    ++n;
  }
  if (pos != d.size() || n == 0)
    return std::unexpected(path.string() + ": not a llama2.c tokenizer (records do not fill the file)");
  return n;
}

}  // namespace
}  // namespace hf

std::expected<std::unique_ptr<tokenizer>, std::string> hf_tokenizer_load(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path file = fs::is_directory(path, ec) ? path / "tokenizer.json" : path;
  if (!fs::is_regular_file(file, ec)) return std::unexpected(file.string() + ": no such file");
  simdjson::padded_string json;
  if (const auto err = simdjson::padded_string::load(file.string()).get(json); err != simdjson::SUCCESS)
    return std::unexpected(file.string() + ": cannot read: " + simdjson::error_message(err));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (const auto err = parser.parse(json).get(root); err != simdjson::SUCCESS)
    return std::unexpected(file.string() + ": not valid JSON: " + simdjson::error_message(err));
  auto tok = hf::build(root, file.parent_path() / "tokenizer_config.json");
  if (!tok) return std::unexpected(file.string() + ": " + tok.error());
  return std::move(*tok);
}

std::expected<std::unique_ptr<tokenizer>, std::string> tokenizer_load_any(const std::filesystem::path& path,
                                                                          int vocab_size_hint) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(path / "tokenizer.json", ec)) return hf_tokenizer_load(path / "tokenizer.json");
    file = path / "tokenizer.bin";
    if (!fs::is_regular_file(file, ec))
      return std::unexpected(path.string() + ": folder has neither tokenizer.json nor tokenizer.bin");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::unexpected(file.string() + ": cannot open");
  char head[4] = {};
  in.read(head, sizeof head);
  const std::string_view magic(head, static_cast<std::size_t>(in.gcount()));
  if (magic == "GGUF") return gguf_tokenizer_load(file);
  const auto first = magic.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && magic[first] == '{') return hf_tokenizer_load(file);
  int n = vocab_size_hint;
  if (n <= 0) {
    auto counted = hf::llama2c_count_tokens(file);
    if (!counted) return std::unexpected(counted.error());
    n = *counted;
  }
  return llama2c_tokenizer_load(file, n);
}

}  // namespace pagedserve
