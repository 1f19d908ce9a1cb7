#include "tools_cli.hpp"

#include "model/gguf_split.hpp"

namespace pagedserve::bench {
namespace {

constexpr int max_size = 1 << 24;
constexpr std::uint64_t max_seed = std::uint64_t{1} << 53;

void add_size(CLI::App& app, const std::string& name, int& field, int lo, const std::string& description) {
  app.add_option(name, field, description)
      ->required()
      ->check(CLI::Range(lo, max_size).description(""))
      ->type_name("N")
      ->default_str("");  // required: no default to show
}

// untied: 1 writes a separate classifier (wcls), 0 ties it to the token embedding.
void add_untied_and_seed(CLI::App& app, model_config& c, std::uint64_t& seed) {
  app.add_option_function<int>(
         "untied", [&c](int untied) { c.shared_classifier = untied == 0; },
         "1 writes a separate classifier (wcls), 0 ties it to the token embedding")
      ->required()
      ->check(CLI::Range(0, 1).description(""))
      ->type_name("0|1");
  app.add_option("seed", seed, "seeds the random weights")
      ->required()
      ->check(CLI::Range(std::uint64_t{0}, max_seed).description(""))
      ->type_name("S")
      ->default_str("");
}

}  // namespace

void llama2c_random_define(CLI::App& app, llama2c_random_options& o) {
  cli_app_setup(app,
                "e.g. make-random-model s110m.bin 768 2048 12 12 12 32000 1024 0 1\n"
                "make-random-model --gguf OUT ARCH RECIPE ... writes a GGUF instead (make-random-model --gguf --help).");
  app.description("Writes a random-weight llama2.c checkpoint (../shared/anchors/perf.md's synthetic models).");
  model_config& c = o.config;
  app.add_option("out", o.out, "checkpoint to write")->required()->type_name("OUT");
  add_size(app, "dim", c.dim, 1, "model width");
  add_size(app, "hidden_dim", c.hidden_dim, 1, "feed-forward width");
  add_size(app, "n_layers", c.n_layers, 1, "");
  add_size(app, "n_heads", c.n_heads, 1, "");
  add_size(app, "n_kv_heads", c.n_kv_heads, 1, "");
  add_size(app, "vocab_size", c.vocab_size, 1, "");
  add_size(app, "seq_len", c.seq_len, 1, "context length");
  add_untied_and_seed(app, c, o.seed);
  app.callback([&c] {
    if (c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 || (c.dim / c.n_heads) % 2 != 0)
      throw CLI::ValidationError("need dim % n_heads == 0, n_heads % n_kv_heads == 0 and an even head size");
  });
}

void gguf_random_define(CLI::App& app, gguf_random_options& o) {
  cli_app_setup(app,
                "e.g. (Qwen3-30B-A3B) make-random-model --gguf q30b.gguf qwen3moe Q4_K_M 2048 6144 48 32 4 128 151936 "
                "40960 128 8 768 1 1");
  app.description(
      "Writes a GGUF of random valid blocks in one of llama.cpp's quantization mixes, with a byte-fallback "
      "SentencePiece vocabulary (or a llama2.c tokenizer.bin's) so servers can load it.");
  model_config& c = o.config;
  c.norm_topk_prob = true;
  c.rope_theta = 1000000.0f;
  c.rms_norm_eps = 1e-6f;
  app.add_flag("--gguf")->description("write a GGUF (the form these arguments describe)")->required();
  app.add_option("out", o.out, "GGUF file to write")->required()->type_name("OUT");
  app.add_option("arch", c.architecture, "architecture")
      ->required()
      ->check(CLI::IsMember({"llama", "qwen2", "qwen2moe", "qwen3", "qwen3moe"}).description(""))
      ->type_name("llama|qwen2|qwen2moe|qwen3|qwen3moe");
  cli_add_parsed(app, "recipe", o.recipe,
                 [](std::string_view name) -> std::expected<gguf_recipe, std::string> {
                   if (auto r = gguf_recipe_parse(name)) return *r;
                   return std::unexpected("unknown recipe '" + std::string(name) + "'");
                 },
                 "llama-quantize's ftype: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q2_K_S Q3_K_S Q3_K_M Q3_K_L Q4_K_S "
                 "Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS (llama.cpp's per-tensor mix), or pure:<type> (every matrix one type)")
      ->required()
      ->type_name("RECIPE");
  add_size(app, "dim", c.dim, 1, "model width");
  add_size(app, "hidden_dim", c.hidden_dim, 1, "feed-forward width (dense layers)");
  add_size(app, "n_layers", c.n_layers, 1, "");
  add_size(app, "n_heads", c.n_heads, 1, "");
  add_size(app, "n_kv_heads", c.n_kv_heads, 1, "");
  add_size(app, "head_dim", c.head_dim, 0, "0 = dim / n_heads");
  add_size(app, "vocab_size", c.vocab_size, 1, "");
  add_size(app, "seq_len", c.seq_len, 1, "context length");
  add_size(app, "n_experts", c.n_experts, 0, "0 = dense; with llama, Mixtral's experts of expert_hidden_dim");
  add_size(app, "n_experts_used", c.n_experts_used, 0, "");
  add_size(app, "expert_hidden_dim", c.expert_hidden_dim, 0, "");
  add_untied_and_seed(app, c, o.seed);
  app.add_option("tokenizer", o.tokenizer, "a llama2.c vocabulary to embed (default: bytes plus synthetic words)")
      ->type_name("TOKENIZER.bin");
  app.add_option("--shared-expert-hidden-dim", c.shared_expert_hidden_dim,
                 "qwen2moe's shared expert width (Qwen1.5-MoE-A2.7B: 5632); its top-k weights are not renormalised")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  app.add_option("--splits", o.splits,
                 "write a split model of N files, as llama.cpp's gguf-split does: OUT names the first, which must end "
                 "-00001-of-0000N.gguf")
      ->check(CLI::Range(1, 9999))
      ->type_name("N");
  app.callback([&c, &o] {
    if (o.splits > 1) {
      const auto name = gguf_split_name_parse(o.out);
      if (!name || name->split != 0 || name->n_splits != o.splits)
        throw CLI::ValidationError("--splits " + std::to_string(o.splits) + ": OUT must name the first split, " +
                                   gguf_split_path("NAME", 0, o.splits).string());
    }
    // Experts: qwen3moe and qwen2moe always (qwen2moe's shared expert too), llama as Mixtral; qwen2 / qwen3 are dense.
    const bool moe_arch = c.architecture == "qwen3moe" || c.architecture == "qwen2moe";
    const bool experts_allowed = moe_arch || c.architecture == "llama";
    if ((c.n_experts > 0 && !experts_allowed) || (c.n_experts == 0 && moe_arch) ||
        (c.shared_expert_hidden_dim > 0) != (c.architecture == "qwen2moe") || c.n_heads % c.n_kv_heads != 0 ||
        c.head_size() % 2 != 0 || c.n_experts_used > c.n_experts || c.vocab_size < 260)
      throw CLI::ValidationError(
          "need experts for qwen3moe and qwen2moe, none for qwen2 / qwen3 (llama: Mixtral's with, or none), "
          "--shared-expert-hidden-dim for qwen2moe only, n_kv_heads | n_heads, an even head size, n_experts_used <= "
          "n_experts, vocab_size >= 260");
    if (c.architecture == "qwen2moe") c.norm_topk_prob = false;
  });
}

void decode_limit_define(CLI::App& app, decode_limit_options& o) {
  cli_app_setup(app);
  app.description(
      "Prints the decode speed a model's memory traffic allows on this machine: the bytes one token streams, the "
      "read bandwidth measured in this process, and their ratio; and the K/V bytes one attended position adds, "
      "for rooflines at many streams.");
  app.add_option("model", o.model, "any model file or folder pagedserve loads (mapped, nothing is read)")
      ->required()
      ->type_name("MODEL");
  app.add_option("--quantization", o.quantization, "the weights as the server converts them at load")
      ->check(CLI::IsMember({"none", "f32", "bf16", "int8", "int4"}))
      ->type_name("none|f32|bf16|int8|int4");
  app.add_option("--kv-cache-dtype", o.kv_cache_dtype, "the KV cache's element type")
      ->check(CLI::IsMember({"f32", "f16", "q8", "fp8", "fp8_e4m3", "fp8_e5m2"}))
      ->type_name("f32|f16|q8|fp8|fp8_e4m3|fp8_e5m2");
}

}  // namespace pagedserve::bench
