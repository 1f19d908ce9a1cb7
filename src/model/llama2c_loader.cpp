// Reads llama2.c checkpoints in place: the header says the shape, the tensors follow in run.c's order.
#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "model/mapped_file.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve {
namespace {

constexpr int header_words = 7;

std::expected<model_config, std::string> parse_header(const std::int32_t* h) {
  model_config c;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.shared_classifier = h[5] > 0;
  c.vocab_size = h[5] == INT32_MIN ? 0 : std::abs(h[5]);
  c.seq_len = h[6];
  auto bad = [](std::string what) { return std::unexpected("bad checkpoint header: " + what); };
  if (c.dim <= 0 || c.dim > (1 << 16)) return bad("dim " + std::to_string(c.dim));
  if (c.hidden_dim <= 0 || c.hidden_dim > (1 << 18)) return bad("hidden_dim " + std::to_string(c.hidden_dim));
  if (c.n_layers <= 0 || c.n_layers > 1024) return bad("n_layers " + std::to_string(c.n_layers));
  if (c.n_heads <= 0 || c.dim % c.n_heads != 0) return bad("n_heads " + std::to_string(c.n_heads) + " does not divide dim");
  if (c.head_size() % 2 != 0) return bad("head size " + std::to_string(c.head_size()) + " is odd (RoPE needs pairs)");
  if (c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0)
    return bad("n_kv_heads " + std::to_string(c.n_kv_heads) + " does not divide n_heads");
  if (c.vocab_size <= 0 || c.vocab_size > (1 << 22)) return bad("vocab_size " + std::to_string(c.vocab_size));
  if (c.seq_len <= 0 || c.seq_len > (1 << 20)) return bad("seq_len " + std::to_string(c.seq_len));
  return c;
}

// Number of float32 words the checkpoint must hold after the header.
std::size_t expected_words(const model_config& c) {
  const std::size_t dim = c.dim, hid = c.hidden_dim, L = c.n_layers, kv = c.kv_dim(), V = c.vocab_size;
  std::size_t n = V * dim;                        // token embedding
  n += L * dim;                                   // rms_att
  n += L * dim * dim + 2 * L * kv * dim;          // wq, wk, wv
  n += L * dim * dim;                             // wo
  n += L * dim;                                   // rms_ffn
  n += 3 * L * hid * dim;                         // w1, w2, w3
  n += dim;                                       // rms_final
  n += static_cast<std::size_t>(c.seq_len) * c.head_size();  // freq_cis real + imag (unused)
  if (!c.shared_classifier) n += V * dim;
  return n;
}

// Points the model's tensors into words (the floats after the header).
void assign_tensors(model& m, const float* words) {
  const model_config& c = m.config;
  const int dim = c.dim, hid = c.hidden_dim, kv = c.kv_dim();
  const float* p = words;
  auto take = [&p](std::size_t n) { const float* t = p; p += n; return t; };
  auto take_matrix = [&](int rows, int cols) { return weight_f32(take(static_cast<std::size_t>(rows) * cols), rows, cols); };
  m.token_embedding = take_matrix(c.vocab_size, dim);
  m.layers.assign(c.n_layers, {});
  for (auto& l : m.layers) l.rms_att = take(dim);
  for (auto& l : m.layers) l.wq = take_matrix(dim, dim);
  for (auto& l : m.layers) l.wk = take_matrix(kv, dim);
  for (auto& l : m.layers) l.wv = take_matrix(kv, dim);
  for (auto& l : m.layers) l.wo = take_matrix(dim, dim);
  for (auto& l : m.layers) l.rms_ffn = take(dim);
  for (auto& l : m.layers) l.w_gate = take_matrix(hid, dim);
  for (auto& l : m.layers) l.w_down = take_matrix(dim, hid);
  for (auto& l : m.layers) l.w_up = take_matrix(hid, dim);
  m.rms_final = take(dim);
  take(static_cast<std::size_t>(c.seq_len) * c.head_size());  // legacy freq_cis_real/imag: RoPE is computed
  m.classifier = c.shared_classifier ? m.token_embedding : take_matrix(c.vocab_size, dim);
  m.rope_inv_freq = rope_inv_freq_compute(c);
}

std::expected<model_config, std::string> validate(const std::byte* data, std::size_t size) {
  if (size < header_words * sizeof(std::int32_t))
    return std::unexpected("file is " + std::to_string(size) + " bytes, shorter than the 28-byte header");
  std::int32_t header[header_words];
  std::memcpy(header, data, sizeof header);
  auto config = parse_header(header);
  if (!config) return config;
  const std::size_t need = sizeof header + expected_words(*config) * sizeof(float);
  if (size < need)
    return std::unexpected("truncated checkpoint: " + std::to_string(size) + " bytes, the header needs " +
                           std::to_string(need));
  if (size > need)
    return std::unexpected("checkpoint has " + std::to_string(size - need) +
                           " unexpected trailing bytes for its header (wrong format or version?)");
  return config;
}

}  // namespace

std::expected<std::shared_ptr<const model>, std::string> llama2c_model_load(const std::filesystem::path& path) {
  auto file = mapped_file::open(path);
  if (!file) return std::unexpected(file.error());
  const auto bytes = file->bytes();
  auto config = validate(bytes.data(), bytes.size());
  if (!config) return std::unexpected(path.string() + ": " + config.error());
  auto m = std::make_shared<model>();
  m->name = path.stem().string();
  m->config = *config;
  assign_tensors(*m, reinterpret_cast<const float*>(bytes.data() + header_words * sizeof(std::int32_t)));
  m->storage.push_back(std::make_shared<mapped_file>(std::move(*file)));
  m->generation.bos_token_id = 1;  // llama2.c's SentencePiece vocabularies: <s> = 1, </s> = 2
  m->generation.eos_token_ids = {1, 2};  // run.c ends a sequence when it samples BOS; EOS ends it too
  return m;
}

std::expected<std::shared_ptr<const model>, std::string> llama2c_model_from_floats(std::vector<float> file_words,
                                                                                   std::string name) {
  auto config = validate(reinterpret_cast<const std::byte*>(file_words.data()), file_words.size() * sizeof(float));
  if (!config) return std::unexpected(name + ": " + config.error());
  auto m = std::make_shared<model>();
  m->name = std::move(name);
  m->config = *config;
  const float* words = m->keep(std::move(file_words));
  assign_tensors(*m, words + header_words);
  m->generation.bos_token_id = 1;
  m->generation.eos_token_ids = {1, 2};
  return m;
}

std::vector<float> llama2c_random_checkpoint(const model_config& c, std::uint64_t seed, float stddev) {
  std::vector<float> words(header_words + expected_words(c));
  const std::int32_t header[header_words] = {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads,
                                             c.shared_classifier ? c.vocab_size : -c.vocab_size, c.seq_len};
  for (int i = 0; i < header_words; ++i) words[i] = std::bit_cast<float>(header[i]);
  model m;
  m.config = c;
  assign_tensors(m, words.data() + header_words);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  for (std::size_t i = header_words; i < words.size(); ++i) words[i] = normal(rng);
  auto ones = [&](const float* t, std::size_t n) {
    float* w = words.data() + (t - words.data());
    std::fill(w, w + n, 1.0f);
  };
  for (const auto& l : m.layers) {
    ones(l.rms_att, c.dim);
    ones(l.rms_ffn, c.dim);
  }
  ones(m.rms_final, c.dim);
  // Legacy freq_cis tables, real then imaginary, [seq_len, head_size/2] each.
  float* freq = const_cast<float*>(m.rms_final) + c.dim;
  const int half = c.head_size() / 2;
  for (int pos = 0; pos < c.seq_len; ++pos)
    for (int i = 0; i < half; ++i) {
      const float angle = pos / std::pow(c.rope_theta, 2.0f * i / c.head_size());
      freq[pos * half + i] = std::cos(angle);
      freq[static_cast<std::size_t>(c.seq_len) * half + pos * half + i] = std::sin(angle);
    }
  return words;
}

}  // namespace pagedserve
