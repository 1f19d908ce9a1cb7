// generation_config.json's sampling defaults over a real socket (vLLM's --generation-config): with
// "auto" (the default) a request that sets nothing samples as the file says (do_sample false =
// greedy, max_new_tokens caps the length), while its own fields still win; with "vllm" the file's
// defaults are ignored (temperature 1, the rest of the context).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "e2e/e2e_check.hpp"
#include "support/server_process.hpp"
#include "e2e/stream_collector.hpp"
#include "model/hf_model.hpp"
#include "api/ws_protocol.hpp"

namespace pagedserve::e2e {
namespace {

std::string frame(std::string_view id, std::string_view params) {
  std::string out = R"({"type":"generate","id":)";
  json_append_string(out, id);
  return out + R"(,"prompt":"Once upon a time","params":{)" + std::string(params) + "}}";
}

// stories260K as a Hugging Face folder with the given generation_config.json.
std::filesystem::path folder_with_generation_config(const std::string& json) {
  const auto dir = std::filesystem::temp_directory_path() / ("pagedserve_genconfig_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto written = hf_folder_write_from_llama2c(model_path(), dir);
  EXPECT_TRUE(written.has_value()) << written.error();
  std::ofstream(dir / "generation_config.json") << json;
  return dir;
}

struct outcome {
  std::string text, finish_reason;
  std::int64_t tokens = -1;
};

std::map<std::string, outcome> run(server_process& server, const std::vector<std::pair<std::string, std::string>>& requests) {
  ws_client client;
  EXPECT_TRUE(client.connect(server.port()));
  for (const auto& [id, params] : requests) EXPECT_TRUE(client.send_text(frame(id, params)));
  stream_collector frames;
  EXPECT_TRUE(read_until(
      client, frames,
      [&] { return std::all_of(requests.begin(), requests.end(), [&](const auto& r) { return frames.done(r.first); }); },
      std::chrono::seconds(60)));
  std::map<std::string, outcome> out;
  for (const auto& [id, params] : requests) {
    const auto& log = frames[id];
    if (log.dones.size() != 1) continue;
    out[id] = {log.text, log.dones.front().finish_reason, log.dones.front().completion_tokens};
  }
  client.close();
  return out;
}

TEST(generation_config, its_defaults_apply_to_requests_that_set_nothing) {
  E2E_REQUIRE_MODEL();
  const auto dir = folder_with_generation_config(R"({"eos_token_id": 2, "do_sample": false, "max_new_tokens": 7})");
  server_process server({"--model", dir.string()});
  ASSERT_TRUE(server.ready()) << server.error();
  auto got = run(server, {{"defaults", ""},
                          {"greedy", R"("temperature":0,"max_tokens":7)"},
                          {"own_length", R"("max_tokens":12)"}});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got["defaults"].tokens, 7) << "max_new_tokens caps a request without max_tokens";
  EXPECT_EQ(got["defaults"].finish_reason, "length");
  EXPECT_EQ(got["defaults"].text, got["greedy"].text) << "do_sample false: greedy";
  EXPECT_EQ(got["own_length"].tokens, 12) << "the request's own max_tokens wins";
  EXPECT_EQ(got["own_length"].text.substr(0, got["greedy"].text.size()), got["greedy"].text);
  std::filesystem::remove_all(dir);
}

TEST(generation_config, vllm_mode_ignores_the_files_defaults) {
  E2E_REQUIRE_MODEL();
  const auto dir = folder_with_generation_config(R"({"eos_token_id": 2, "do_sample": false, "max_new_tokens": 7})");
  server_process server({"--model", dir.string(), "--generation-config", "vllm"});
  ASSERT_TRUE(server.ready()) << server.error();
  auto got = run(server, {{"greedy", R"("temperature":0,"max_tokens":40)"},
                          {"seed1", R"("seed":1,"max_tokens":40)"},
                          {"seed2", R"("seed":2,"max_tokens":40)"},
                          {"unbounded", R"("temperature":0)"}});
  ASSERT_EQ(got.size(), 4u);
  EXPECT_GT(got["unbounded"].tokens, 7) << "no max_new_tokens cap";
  // Temperature 1: two seeds sample two different stories, at least one of them not the greedy one.
  EXPECT_NE(got["seed1"].text, got["seed2"].text);
  EXPECT_TRUE(got["seed1"].text != got["greedy"].text || got["seed2"].text != got["greedy"].text);
  std::filesystem::remove_all(dir);
}

TEST(generation_config, a_bad_mode_is_refused_at_startup) {
  E2E_REQUIRE_MODEL();
  const process_result r = run_process({test::server_binary().string(), "serve", "--model", model_path().string(),
                                        "--tokenizer", tokenizer_path().string(), "--port", "0",
                                        "--generation-config", "sometimes"},
                                       std::chrono::seconds(5));
  EXPECT_TRUE(r.exited && r.exit_code != 0) << r.err;
  EXPECT_NE(r.err.find("generation_config must be auto or vllm"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pagedserve::e2e
