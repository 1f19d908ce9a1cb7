#include "cli_tools.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "chat/chat_template.hpp"
#include "model/hf_model.hpp"
#include "tokenizer/hf_tokenizer.hpp"

namespace pagedserve {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "pagedserve: %s\n", message.c_str());
  return 1;
}

int run_tokenize(const cli_tool_options::tokenize_args& o) {
  auto tok = tokenizer_load_any(o.tokenizer, 0);
  if (!tok) return fail(tok.error());
  const auto ids = o.with_special ? (*tok)->encode_with_special_tokens(o.text) : (*tok)->encode(o.text, false);
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  std::printf("%s]\n", out.c_str());
  return 0;
}

int run_chat_template(const cli_tool_options::chat_template_args& o) {
  const std::filesystem::path dir = o.model;
  auto cfg = chat_template_load(dir / "tokenizer_config.json");
  if (!cfg) return fail(cfg.error());
  if (!cfg->chat_template) return fail((dir / "tokenizer_config.json").string() + " has no chat_template");
  auto tmpl = chat_template::parse(*cfg->chat_template);
  if (!tmpl) return fail("chat template: " + tmpl.error());
  std::ifstream in(o.messages);
  if (!in) return fail("cannot read " + o.messages);
  std::stringstream text;
  text << in.rdbuf();
  auto messages = chat_value_parse_json(text.str());
  if (!messages) return fail(o.messages + ": " + messages.error());
  auto* list = std::get_if<chat_value::array>(&messages->data);
  if (!list) return fail(o.messages + ": expected a JSON array of messages");
  chat_template_context ctx;
  ctx.messages = *list;
  ctx.add_generation_prompt = !o.no_generation_prompt;
  ctx.bos_token = cfg->bos_token;
  ctx.eos_token = cfg->eos_token;
  ctx.now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  auto rendered = tmpl->render(ctx);
  if (!rendered) return fail("chat template: " + rendered.error());
  std::fwrite(rendered->data(), 1, rendered->size(), stdout);
  return 0;
}

int run_convert(const cli_tool_options::convert_args& o) {
  hf_write_options options;
  if (o.dtype == "bf16") options.type = dtype::bf16;
  auto written = hf_folder_write_from_llama2c(o.model, o.out, options);
  if (!written) return fail(written.error());
  std::fprintf(stderr, "wrote %s\n", o.out.c_str());
  return 0;
}

}  // namespace

void cli_tools_define(CLI::App& app, cli_tool_options& o) {
  CLI::App* tokenize = app.add_subcommand("tokenize", "print the token ids of --text as a JSON array");
  tokenize->add_option("--tokenizer", o.tokenize.tokenizer, "tokenizer.json folder, GGUF or llama2.c tokenizer.bin")
      ->type_name("PATH")
      ->required();
  tokenize->add_option("--text", o.tokenize.text, "")->type_name("TEXT")->required();
  tokenize->add_flag("--with-special", o.tokenize.with_special, "special-token strings in the text become their ids");

  CLI::App* chat = app.add_subcommand("chat-template", "print the chat template's rendering of a conversation");
  chat->add_option("--model", o.chat_template.model, "Hugging Face folder with tokenizer_config.json")
      ->type_name("DIR")
      ->required();
  chat->add_option("--messages", o.chat_template.messages, "JSON file: an array of messages")
      ->type_name("FILE.json")
      ->required();
  chat->add_flag("--no-generation-prompt", o.chat_template.no_generation_prompt,
                 "leave out the assistant turn's opening");

  CLI::App* convert = app.add_subcommand("convert", "write a llama2.c checkpoint as a Hugging Face folder");
  convert->add_option("--model", o.convert.model, "llama2.c .bin checkpoint")->type_name("M.bin")->required();
  convert->add_option("--out", o.convert.out, "folder to write")->type_name("DIR")->required();
  convert->add_option("--dtype", o.convert.dtype, "weight type written")
      ->type_name("f32|bf16")
      ->check(CLI::IsMember({"f32", "bf16"}).description(""));
}

int cli_tool_run(const std::string& command, const cli_tool_options& o) {
  if (command == "tokenize") return run_tokenize(o.tokenize);
  if (command == "chat-template") return run_chat_template(o.chat_template);
  return run_convert(o.convert);
}

}  // namespace pagedserve
