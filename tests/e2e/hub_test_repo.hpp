#pragma once
// Repos for the fake hub: a random-weight Llama safetensors folder with a byte-fallback
// tokenizer.json (so the real server can load and serve it), and small GGUF files of several
// quantizations. Written by the tests (tests/model/hf_test_model.hpp, gguf_test_model.hpp).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/fake_hub.hpp"
#include "model/gguf_random_model.hpp"
#include "model/gguf_split.hpp"
#include "model/gguf_test_model.hpp"
#include "model/hf_test_model.hpp"

namespace pagedserve::e2e {

inline std::string hub_file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// SentencePiece-style BPE: <unk> <s> </s>, the 256 byte pieces, "▁" and a-z; anything else falls
// back to bytes, so every prompt encodes.
inline std::string hub_test_tokenizer_json() {
  std::string vocab = R"("<unk>":0,"<s>":1,"</s>":2)";
  int id = 3;
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    vocab += ",\"" + std::string(piece) + "\":" + std::to_string(id++);
  }
  vocab += ",\"\u2581\":" + std::to_string(id++);
  for (char c = 'a'; c <= 'z'; ++c) vocab += ",\"" + std::string(1, c) + "\":" + std::to_string(id++);
  return R"({"version":"1.0","added_tokens":[{"id":0,"content":"<unk>","special":true},
    {"id":1,"content":"<s>","special":true},{"id":2,"content":"</s>","special":true}],
    "normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},
                  {"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
    "pre_tokenizer":null,
    "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},
                      {"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}},
    "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},
               {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
    "model":{"type":"BPE","unk_token":"<unk>","byte_fallback":true,"fuse_unk":true,"vocab":{)" +
         vocab + R"(},"merges":[]}})";
}

inline test::arch_spec hub_test_spec() {
  test::arch_spec s = test::make_spec("hub", "LlamaForCausalLM", 64, 96, 2, 4, 2);
  s.vocab = 320;
  return s;
}

// The files of a safetensors repo as the hub holds them, plus files that must not be fetched.
inline std::vector<fake_hub_file> hub_test_safetensors_repo(int shards = 1) {
  const auto dir = test::temp_dir("hub_repo_src");
  const auto spec = hub_test_spec();
  test::write_spec_folder(dir, spec, test::spec_random_tensors(spec, dtype::bf16, 7), dtype::bf16, shards);
  std::ofstream(dir / "tokenizer.json") << hub_test_tokenizer_json();
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token":"<s>","eos_token":"</s>","add_bos_token":true})";
  std::vector<fake_hub_file> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    files.push_back({name, hub_file_bytes(e.path()), name.ends_with(".safetensors")});
  }
  std::filesystem::remove_all(dir);
  files.push_back({"README.md", "# a test model\n", false});
  files.push_back({"pytorch_model.bin", std::string(4096, 'p'), true});  // another format: never fetched
  files.push_back({"onnx/model.onnx", std::string(2048, 'o'), true});
  return files;
}

// GGUF files of one small model in several quantizations.
inline std::vector<fake_hub_file> hub_test_gguf_repo() {
  auto spec = hub_test_spec();
  spec.name = "hubgguf";
  const auto tensors = test::spec_random_tensors(spec, dtype::f32, 11);
  std::vector<fake_hub_file> files = {{"README.md", "gguf\n", false}};
  const auto path = test::temp_dir("hub_gguf.gguf");
  for (const auto& [name, type] : {std::pair{"tiny-Q8_0.gguf", gguf_tensor_type::q8_0},
                                   std::pair{"tiny-Q4_0.gguf", gguf_tensor_type::q4_0},
                                   std::pair{"tiny-F16.gguf", gguf_tensor_type::f16}}) {
    test::write_spec_gguf(path, spec, tensors, type);
    files.push_back({name, hub_file_bytes(path), true});
  }
  std::filesystem::remove(path);
  return files;
}

// One small model's Q8_0 as a split GGUF in a folder of its own (how hub repos publish large
// quantizations), beside a single-file F16.
inline std::vector<fake_hub_file> hub_test_split_gguf_repo() {
  model_config c;
  c.architecture = "llama";
  c.dim = 64, c.hidden_dim = 128, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.vocab_size = 300, c.seq_len = 64;
  c.shared_classifier = false;
  gguf_writer w;
  gguf_add_random_model(w, c, *gguf_recipe_parse("Q8_0"), 5);
  gguf_add_synthetic_vocab(w, c.vocab_size);
  const auto dir = test::temp_dir("hub_split_gguf");
  std::filesystem::create_directories(dir);
  std::vector<fake_hub_file> files = {{"README.md", "split gguf\n", false}};
  EXPECT_TRUE(w.write_splits((dir / "tiny-Q8_0").string(), 3).has_value());
  for (int s = 0; s < 3; ++s) {
    const auto path = gguf_split_path((dir / "tiny-Q8_0").string(), s, 3);
    files.push_back({"Q8_0/" + path.filename().string(), hub_file_bytes(path), true});
  }
  EXPECT_TRUE(w.write(dir / "tiny-F16.gguf").has_value());  // a Q8_0 model under another name: never fetched
  files.push_back({"tiny-F16.gguf", hub_file_bytes(dir / "tiny-F16.gguf"), true});
  std::filesystem::remove_all(dir);
  return files;
}

}  // namespace pagedserve::e2e
