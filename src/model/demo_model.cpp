#include "model/demo_model.hpp"

#include <bit>
#include <cstdio>
#include <string>

#include "pagedserve/check.hpp"

namespace pagedserve {
namespace {

// llama2.c tokenizer bytes: <unk>, BOS, EOS, the 256 byte pieces, and " " (the dummy prefix).
std::string byte_vocabulary() {
  std::string out;
  auto put_i32 = [&](std::int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  auto put_piece = [&](const std::string& s) {
    const float score = 0.0f;
    out.append(reinterpret_cast<const char*>(&score), 4);
    put_i32(static_cast<std::int32_t>(s.size()));
    out += s;
  };
  put_i32(7);  // max_token_length
  put_piece("<unk>");
  put_piece("\n<s>\n");
  put_piece("\n</s>\n");
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    put_piece(piece);
  }
  put_piece(" ");
  return out;
}

}  // namespace

std::pair<std::shared_ptr<const model>, std::unique_ptr<tokenizer>> demo_model_make() {
  model_config c;
  c.dim = 64;
  c.hidden_dim = 172;
  c.n_layers = 5;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.vocab_size = 3 + 256 + 1;
  c.seq_len = 512;
  auto m = llama2c_model_from_floats(llama2c_random_checkpoint(c, 260), "demo-random");
  ps_check(m.has_value(), "the built-in demo model must load");
  auto tok = llama2c_tokenizer_from_bytes(byte_vocabulary(), c.vocab_size);
  ps_check(tok.has_value(), "the built-in demo vocabulary must load");
  return {std::move(*m), std::move(*tok)};
}

}  // namespace pagedserve
