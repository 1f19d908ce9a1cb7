// Prompts are rendered and tokenized off the network threads, once per prompt: the n samples of one
// prompt share one encoding, and encoding runs on the engine's prompt thread, never on the thread
// that runs request actors (the network io_context).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "actors/engine_harness.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

// The stories tokenizer, counting its encodes and noting the threads they ran on.
class counting_tokenizer : public tokenizer {
 public:
  explicit counting_tokenizer(std::shared_ptr<const tokenizer> inner) : inner_(std::move(inner)) {}
  std::vector<token_id> encode(std::string_view text, bool add_bos) const override {
    ++encodes;
    if (std::this_thread::get_id() == network_thread) ++on_network_thread;
    return inner_->encode(text, add_bos);
  }
  std::string decode_piece(token_id prev, token_id id) const override { return inner_->decode_piece(prev, id); }
  int vocab_size() const override { return inner_->vocab_size(); }
  token_id bos_id() const override { return inner_->bos_id(); }
  token_id eos_id() const override { return inner_->eos_id(); }

  mutable std::atomic<int> encodes{0}, on_network_thread{0};
  std::thread::id network_thread = std::this_thread::get_id();  // the test's thread runs the io_context

 private:
  std::shared_ptr<const tokenizer> inner_;
};

TEST(request_actor, a_prompts_samples_share_one_encoding_made_off_the_network_thread) {
  PAGEDSERVE_REQUIRE_DATA(test::model_file("stories260K.bin"));
  auto m = llama2c_model_load(test::model_file("stories260K.bin"));
  auto t = llama2c_tokenizer_load(test::model_file("tok512.bin"), (*m)->config.vocab_size);
  ASSERT_TRUE(m && t);
  auto counting = std::make_shared<counting_tokenizer>(std::shared_ptr<const tokenizer>(std::move(*t)));
  boost::asio::io_context io;
  engine e(io.get_executor(), *m, counting, engine_config{.kv_blocks = 1024});
  auto link = std::make_shared<test::recording_link>();
  sampling_params p;
  p.max_tokens = 8;
  p.temperature = 0.8f;
  const sample_group group{7, 4, std::make_shared<shared_prompt>()};
  std::vector<std::shared_ptr<request_actor>> actors;
  for (int i = 0; i < 4; ++i) {
    p.seed = i;
    actors.push_back(test::start_request(e, link, "s" + std::to_string(i), "Once upon a time there was", p, group));
  }
  actors.push_back(test::start_request(e, link, "alone", "One day", p));
  ASSERT_TRUE(test::run_until(io, [&] { return link->n_ended() == 5; }));
  for (const auto& [id, r] : link->requests()) {
    EXPECT_EQ(r.n_final, 1) << id;
    EXPECT_TRUE(r.error_code.empty()) << id << ": " << r.error_code;
    EXPECT_EQ(r.completion_tokens, 8) << id;
  }
  EXPECT_EQ(counting->encodes.load(), 2) << "one encoding for the four samples, one for the lone request";
  EXPECT_EQ(counting->on_network_thread.load(), 0) << "prompts were encoded on the network thread";
}

}  // namespace
}  // namespace pagedserve
