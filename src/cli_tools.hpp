#pragma once
// The offline subcommands: `tokenize`, `chat-template` and `convert`. They print to stdout and
// return the process exit code; errors go to stderr as one line.
#include <CLI/CLI.hpp>

#include <string>

namespace pagedserve {

struct cli_tool_options {
  struct tokenize_args {
    std::string tokenizer;  // tokenizer.json folder, GGUF or llama2.c tokenizer.bin
    std::string text;
    bool with_special = false;  // special-token strings in text become their ids
  } tokenize;
  struct chat_template_args {
    std::string model;     // a Hugging Face folder with tokenizer_config.json
    std::string messages;  // a JSON file: an array of messages
    bool no_generation_prompt = false;
  } chat_template;
  struct convert_args {
    std::string model;  // llama2.c .bin checkpoint
    std::string out;    // Hugging Face folder to write
    std::string dtype = "f32";
  } convert;
};

// Adds the three tool subcommands and their flags to app, bound to o.
void cli_tools_define(CLI::App& app, cli_tool_options& o);

// Runs the tool subcommand named command; its exit code.
int cli_tool_run(const std::string& command, const cli_tool_options& o);

}  // namespace pagedserve
