#pragma once
// The command lines of the load-test tools, each a CLI11 app (one definition per argument for
// parsing and --help). make-random-model has two, positional as perf.md's gen_llama2c: a llama2.c
// checkpoint (OUT and nine numbers) or, after --gguf, a GGUF (OUT ARCH RECIPE, thirteen numbers and
// an optional llama2.c tokenizer.bin). decode-limit takes a model, the quantization it is served with
// and the KV cache's element type.
#include <cstdint>
#include <string>

#include "model/gguf_recipe.hpp"
#include "pagedserve/model.hpp"
#include "src/cli_app.hpp"

namespace pagedserve::bench {

struct llama2c_random_options {
  std::string out;
  model_config config;  // dim .. seq_len and shared_classifier (untied = 0)
  std::uint64_t seed = 0;
};

struct gguf_random_options {
  std::string out;
  model_config config;  // architecture, the shape, the experts and shared_classifier
  gguf_recipe recipe;
  std::uint64_t seed = 0;
  std::string tokenizer;  // llama2.c tokenizer.bin whose vocabulary to embed; empty = bytes plus synthetic words
  int splits = 1;         // > 1: a split model, OUT's name ending -00001-of-0000N.gguf (llama.cpp's gguf-split names)
};

// Set app up (cli_app_setup) with each form's arguments, bound to o; the callback checks the shape.
void llama2c_random_define(CLI::App& app, llama2c_random_options& o);
void gguf_random_define(CLI::App& app, gguf_random_options& o);

struct decode_limit_options {
  std::string model;
  std::string quantization = "none";  // the weights as served: none (as stored), f32, bf16, int8, int4
  std::string kv_cache_dtype = "f32";  // f32, f16, q8 or fp8 (fp8_e4m3, fp8_e5m2): the K/V bytes one attended position costs
};

// decode-limit MODEL [--quantization Q] [--kv-cache-dtype T], bound to o.
void decode_limit_define(CLI::App& app, decode_limit_options& o);

}  // namespace pagedserve::bench
