#include "cli_tools.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "pagedserve/chat_template.hpp"
#include "pagedserve/hf_model.hpp"
#include "pagedserve/hf_tokenizer.hpp"

namespace pagedserve {
namespace {

// --flag VALUE pairs plus the boolean flags named in `switches`.
struct tool_args {
  std::map<std::string, std::string> values;
  std::set<std::string> switches;
  std::string error;
};

tool_args parse_tool_args(int argc, char** argv, const std::set<std::string>& known_switches) {
  tool_args a;
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag.rfind("--", 0) != 0) {
      a.error = "unexpected argument '" + flag + "'";
      break;
    }
    flag = flag.substr(2);
    if (known_switches.contains(flag)) {
      a.switches.insert(flag);
    } else if (i + 1 < argc) {
      a.values[flag] = argv[++i];
    } else {
      a.error = "--" + flag + " needs a value";
      break;
    }
  }
  return a;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "pagedserve: %s\n", message.c_str());
  return 1;
}

int run_tokenize(const tool_args& a) {
  if (!a.values.contains("tokenizer") || !a.values.contains("text"))
    return fail("usage: pagedserve tokenize --tokenizer PATH --text TEXT [--with-special]");
  auto tok = tokenizer_load_any(a.values.at("tokenizer"), 0);
  if (!tok) return fail(tok.error());
  const std::string& text = a.values.at("text");
  const auto ids = a.switches.contains("with-special") ? (*tok)->encode_with_special_tokens(text)
                                                      : (*tok)->encode(text, false);
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  std::printf("%s]\n", out.c_str());
  return 0;
}

int run_chat_template(const tool_args& a) {
  if (!a.values.contains("model") || !a.values.contains("messages"))
    return fail("usage: pagedserve chat-template --model DIR --messages FILE.json [--no-generation-prompt]");
  const std::filesystem::path dir = a.values.at("model");
  auto cfg = chat_template_load(dir / "tokenizer_config.json");
  if (!cfg) return fail(cfg.error());
  if (!cfg->chat_template) return fail((dir / "tokenizer_config.json").string() + " has no chat_template");
  auto tmpl = chat_template::parse(*cfg->chat_template);
  if (!tmpl) return fail("chat template: " + tmpl.error());
  std::ifstream in(a.values.at("messages"));
  if (!in) return fail("cannot read " + a.values.at("messages"));
  std::stringstream text;
  text << in.rdbuf();
  auto messages = chat_value_parse_json(text.str());
  if (!messages) return fail(a.values.at("messages") + ": " + messages.error());
  auto* list = std::get_if<chat_value::array>(&messages->data);
  if (!list) return fail(a.values.at("messages") + ": expected a JSON array of messages");
  chat_template_context ctx;
  ctx.messages = *list;
  ctx.add_generation_prompt = !a.switches.contains("no-generation-prompt");
  ctx.bos_token = cfg->bos_token;
  ctx.eos_token = cfg->eos_token;
  ctx.now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  auto rendered = tmpl->render(ctx);
  if (!rendered) return fail("chat template: " + rendered.error());
  std::fwrite(rendered->data(), 1, rendered->size(), stdout);
  return 0;
}

int run_convert(const tool_args& a) {
  if (!a.values.contains("model") || !a.values.contains("out"))
    return fail("usage: pagedserve convert --model M.bin --out DIR [--dtype f32|bf16]");
  hf_write_options options;
  const std::string type = a.values.contains("dtype") ? a.values.at("dtype") : "f32";
  if (type == "bf16") options.type = dtype::bf16;
  else if (type != "f32") return fail("--dtype must be f32 or bf16");
  auto written = hf_folder_write_from_llama2c(a.values.at("model"), a.values.at("out"), options);
  if (!written) return fail(written.error());
  std::fprintf(stderr, "wrote %s\n", a.values.at("out").c_str());
  return 0;
}

}  // namespace

std::optional<int> cli_tool_run(int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string command = argv[1];
  if (command != "tokenize" && command != "chat-template" && command != "convert") return std::nullopt;
  const tool_args a = parse_tool_args(argc, argv, {"with-special", "no-generation-prompt"});
  if (!a.error.empty()) return fail(a.error);
  if (command == "tokenize") return run_tokenize(a);
  if (command == "chat-template") return run_chat_template(a);
  return run_convert(a);
}

}  // namespace pagedserve
