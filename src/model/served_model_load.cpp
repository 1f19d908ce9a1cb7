#include "model/served_model.hpp"

#include <cstring>
#include <fstream>
#include <iterator>

#include "hub/hub_download.hpp"
#include "model/load_phase.hpp"
#include "model/demo_model.hpp"
#include "model/gguf_model.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "model/model_load.hpp"

namespace pagedserve {

bool gguf_file_is(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, sizeof magic);
  return in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0;
}

namespace {

// A GGUF file carries its weights, tokenizer and chat template: all read from one mapping.
std::expected<served_model, std::string> served_gguf(const std::filesystem::path& path, const model_load_options& options) {
  auto file = gguf_file_map(path);
  if (!file) return std::unexpected("cannot load model: " + file.error());
  auto weights = gguf_model_from(*file, options);
  if (!weights) return std::unexpected("cannot load model: " + weights.error());
  load_phase phase("reading the GGUF tokenizer");
  auto tok = gguf_tokenizer_from(*file);
  if (!tok) return std::unexpected("cannot load tokenizer: " + tok.error());
  phase.finish(fmt::format("read the GGUF tokenizer ({} tokens)", (*tok)->vocab_size()));
  if ((*tok)->vocab_size() > (*weights)->config.vocab_size)
    return std::unexpected(path.string() + ": the tokenizer has " + std::to_string((*tok)->vocab_size()) +
                           " tokens but the model only " + std::to_string((*weights)->config.vocab_size));
  served_model out{std::move(*weights), std::move(*tok), nullptr};
  if (auto text = gguf_chat_template(*file)) {
    load_phase template_phase("parsing the chat template");
    auto renderer = chat_template::parse(*text);
    if (!renderer) return std::unexpected(path.string() + ": chat template: " + renderer.error());
    const tokenizer& t = *out.vocabulary;
    auto name = [&](token_id id) { return id >= 0 ? std::optional(t.token_text(id)) : std::nullopt; };
    out.chat = std::make_shared<const chat_setup>(
        chat_setup_make(std::move(*renderer), *text, name(t.bos_id()), name(t.eos_id())));
    template_phase.finish("parsed the chat template");
  }
  return out;
}

// org/name[:TAG]: fetched into the Hugging Face cache, then loaded from there under the repo id (the
// snapshot folder is named by a commit hash, no name for /v1/models).
std::expected<served_model, std::string> served_hub_model(const model_paths& paths, load_progress* progress) {
  auto local = hub_model_fetch(paths.model, paths.revision);
  if (!local) return std::unexpected(local.error());
  model_paths fetched = paths;
  fetched.model = local->string();
  fetched.chat_template.clear();  // applied once, by the outer served_model_load
  auto out = served_model_load(fetched, progress);
  if (!out) return out;
  auto named = std::make_shared<model>(*out->weights);  // shares the weights' storage
  named->name = paths.model;
  out->weights = std::move(named);
  return out;
}

// --chat-template: a file's text, or the argument itself when no such file exists (as vLLM takes it).
std::expected<served_model, std::string> with_chat_template(served_model m, const std::string& file_or_text) {
  std::string text = file_or_text;
  std::error_code ec;
  if (std::filesystem::is_regular_file(file_or_text, ec)) {
    std::ifstream in(file_or_text, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto renderer = chat_template::parse(text);
  if (!renderer) return std::unexpected("--chat-template: " + renderer.error());
  const tokenizer& t = *m.vocabulary;
  auto name = [&](token_id id) { return id >= 0 ? std::optional(t.token_text(id)) : std::nullopt; };
  std::optional<std::string> bos = m.chat ? m.chat->bos_token : name(t.bos_id());
  std::optional<std::string> eos = m.chat ? m.chat->eos_token : name(t.eos_id());
  m.chat = std::make_shared<const chat_setup>(chat_setup{std::move(*renderer), std::move(bos), std::move(eos)});
  return m;
}

std::expected<served_model, std::string> served_model_load_files(const model_paths& paths, load_progress* progress);

}  // namespace

chat_setup chat_setup_make(chat_template renderer, std::string_view source, std::optional<std::string> bos,
                           std::optional<std::string> eos) {
  chat_setup out{std::move(renderer), std::move(bos), std::move(eos)};
  out.tool_calls = tool_call_family_detect(source);
  out.writes_reasoning = source.find("<think>") != std::string_view::npos;
  return out;
}

std::expected<served_model, std::string> served_model_load(const model_paths& paths, load_progress* progress) {
  auto out = served_model_load_files(paths, progress);
  if (!out || paths.chat_template.empty()) return out;
  load_phase phase("parsing --chat-template");
  auto replaced = with_chat_template(std::move(*out), paths.chat_template);
  if (replaced) phase.finish("parsed the chat template given by --chat-template");
  return replaced;
}

namespace {

std::expected<served_model, std::string> served_model_load_files(const model_paths& paths, load_progress* progress) {
  if (paths.model.empty()) {
    load_phase phase("building the demo model");
    auto [m, tok] = demo_model_make();
    phase.finish("built the random-weight demo model");
    return served_model{std::move(m), std::move(tok), nullptr};
  }
  if (hub_model_wanted(paths.model)) return served_hub_model(paths, progress);
  const std::filesystem::path model_path = paths.model;
  const std::optional<weight_format> format = weight_format_parse(paths.quantize);
  if (!format) return std::unexpected("unknown weight format '" + paths.quantize + "' (none, f32, bf16, int8 or int4)");
  const model_load_options options{.weights = *format, .progress = progress};
  if (paths.tokenizer.empty() && gguf_file_is(model_path)) return served_gguf(model_path, options);
  auto m = model_load_any(model_path, options);
  if (!m) return std::unexpected("cannot load model: " + m.error());
  // A folder carries its tokenizer; a llama2.c checkpoint looks for tokenizer.bin beside it.
  const bool is_dir = std::filesystem::is_directory(model_path);
  std::filesystem::path tok_path = paths.tokenizer;
  if (tok_path.empty()) tok_path = is_dir ? model_path : model_path.parent_path() / "tokenizer.bin";
  load_phase tok_phase("reading the tokenizer");
  auto tok = tokenizer_load_any(tok_path, (*m)->config.vocab_size);
  if (!tok) return std::unexpected("cannot load tokenizer: " + tok.error());
  const std::string tok_name = std::filesystem::is_directory(tok_path) ? "tokenizer.json" : tok_path.filename().string();
  tok_phase.finish(fmt::format("read tokenizer {} ({} tokens)", tok_name, (*tok)->vocab_size()));
  if ((*tok)->vocab_size() > (*m)->config.vocab_size)
    return std::unexpected("tokenizer " + tok_path.string() + " has " + std::to_string((*tok)->vocab_size()) +
                           " tokens but the model only " + std::to_string((*m)->config.vocab_size));
  served_model out{std::move(*m), std::move(*tok), nullptr};
  const auto config_json = (is_dir ? model_path : tok_path.parent_path()) / "tokenizer_config.json";
  if (std::filesystem::exists(config_json)) {
    load_phase template_phase("reading tokenizer_config.json");
    auto cfg = chat_template_load(config_json);
    if (!cfg) return std::unexpected(cfg.error());
    if (cfg->chat_template) {
      auto renderer = chat_template::parse(*cfg->chat_template);
      if (!renderer) return std::unexpected(config_json.string() + ": chat template: " + renderer.error());
      out.chat = std::make_shared<const chat_setup>(
          chat_setup_make(std::move(*renderer), *cfg->chat_template, cfg->bos_token, cfg->eos_token));
    }
    template_phase.finish(out.chat ? "read tokenizer_config.json and parsed its chat template"
                                   : "read tokenizer_config.json (no chat template)");
  }
  return out;
}

}  // namespace
}  // namespace pagedserve
