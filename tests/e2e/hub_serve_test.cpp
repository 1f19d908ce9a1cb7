// `pagedserve serve|generate --model org/name` against a hub on 127.0.0.1 (HF_ENDPOINT): the real
// binary downloads the repo into $HF_HOME/hub and serves it over a real socket; later it starts
// with HF_HUB_OFFLINE=1 and no hub at all; the download's progress is a redrawn bar on a terminal
// (a pseudo-terminal from forkpty) and plain log lines on a pipe.
#include <gtest/gtest.h>
#include <poll.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <regex>

#include "e2e/fake_hub.hpp"
#include "e2e/hub_test_repo.hpp"
#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"

namespace pagedserve::e2e {
namespace {

namespace fs = std::filesystem;

// Sets (or unsets, with nullopt) environment variables for one test, restoring them after. The
// children the test starts inherit them; the test's own threads never read the environment.
class scoped_env {
 public:
  scoped_env(std::initializer_list<std::pair<const char*, std::optional<std::string>>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value) ::setenv(name, value->c_str(), 1);
      else ::unsetenv(name);
    }
  }
  ~scoped_env() {
    for (const auto& [name, value] : saved_) {
      if (value) ::setenv(name.c_str(), value->c_str(), 1);
      else ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

std::string completion_text(const raw_response& r) {
  simdjson::dom::parser parser;
  std::string_view text;
  if (parser.parse(r.body)["choices"].at(0)["text"].get(text) != simdjson::SUCCESS) return "<no text in " + r.body + ">";
  return std::string(text);
}

class hub_serve : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() / ("pagedserve_hub_serve_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    hub_ = std::make_unique<fake_hub>();
    hub_->add_repo("test-org/tiny", hub_test_safetensors_repo());
  }
  void TearDown() override { fs::remove_all(home_); }

  // The environment of a user whose HF_HOME is this test's folder and whose hub is the fake one.
  scoped_env hub_env(bool offline = false) const {
    return scoped_env{{"HF_HOME", home_.string()},
                      {"HF_ENDPOINT", hub_ ? hub_->endpoint() : std::string("http://127.0.0.1:9")},
                      {"HF_HUB_OFFLINE", offline ? std::optional<std::string>("1") : std::nullopt},
                      {"HF_HUB_CACHE", std::nullopt},
                      {"HF_TOKEN", std::nullopt},
                      {"HUGGING_FACE_HUB_TOKEN", std::nullopt}};
  }

  process_result generate(const std::string& model, const std::string& prompt) const {
    return run_process({test::server_binary().string(), "generate", "--model", model, "--prompt", prompt,
                        "--max-tokens", "12", "--temperature", "0"},
                       std::chrono::seconds(60));
  }

  fs::path home_;
  std::unique_ptr<fake_hub> hub_;
};

TEST_F(hub_serve, serves_a_downloaded_repo_then_starts_offline_from_the_cache) {
  const std::string body = R"({"prompt":"hello world","max_tokens":12,"temperature":0})";
  std::string served;
  {
    auto env = hub_env();
    server_process server({"--model", "test-org/tiny", "--tokenizer", ""}, std::chrono::seconds(60));
    ASSERT_TRUE(server.ready()) << server.error();
    EXPECT_TRUE(server.wait_for_log("serving 'test-org/tiny'", std::chrono::seconds(1))) << server.log();
    auto r = http_exchange(server.port(), http_post_bytes("/v1/completions", body));
    ASSERT_TRUE(r) << r.error();
    ASSERT_EQ(r->status, 200) << r->body;
    served = completion_text(*r);
  }
  // What the server said is the greedy completion of the downloaded folder itself.
  const fs::path snapshot = home_ / "hub" / "models--test-org--tiny" / "snapshots" / hub_->commit("test-org/tiny");
  ASSERT_TRUE(fs::is_directory(snapshot));
  const auto local = generate(snapshot.string(), "hello world");
  ASSERT_TRUE(local.exited && local.exit_code == 0) << local.err;
  EXPECT_EQ(local.out, served);
  EXPECT_FALSE(served.empty());

  hub_.reset();  // no hub: the cache alone
  auto env = hub_env(true);
  const auto offline = generate("test-org/tiny", "hello world");
  ASSERT_TRUE(offline.exited && offline.exit_code == 0) << offline.err;
  EXPECT_EQ(offline.out, served);
  EXPECT_NE(offline.err.find("using the cached snapshot"), std::string::npos) << offline.err;
}

TEST_F(hub_serve, errors_name_the_repo_and_the_token) {
  hub_->require_token("hf_secret");
  {
    auto env = hub_env();
    const auto denied = generate("test-org/tiny", "hi");
    EXPECT_TRUE(denied.exited && denied.exit_code == 1) << denied.err;
    EXPECT_NE(denied.err.find("401"), std::string::npos) << denied.err;
    EXPECT_NE(denied.err.find("HF_TOKEN"), std::string::npos) << denied.err;
    const auto absent = generate("test-org/absent", "hi");
    EXPECT_TRUE(absent.exited && absent.exit_code == 1) << absent.err;
  }
  {
    auto env = hub_env();
    auto token = scoped_env{{"HF_TOKEN", "hf_secret"}};
    const auto ok = generate("test-org/tiny", "hi");
    EXPECT_TRUE(ok.exited && ok.exit_code == 0) << ok.err;
    fs::remove_all(home_ / "hub");
  }
  fs::create_directories(home_);
  std::ofstream(home_ / "token") << "hf_secret\n";  // as `huggingface-cli login` leaves it
  auto env = hub_env();
  const auto ok = generate("test-org/tiny", "hi");
  EXPECT_TRUE(ok.exited && ok.exit_code == 0) << ok.err;
  const auto offline_cold = [&] {
    auto off = scoped_env{{"HF_HUB_OFFLINE", "1"}, {"HF_HOME", (home_ / "empty").string()}};
    return generate("test-org/tiny", "hi");
  }();
  EXPECT_TRUE(offline_cold.exited && offline_cold.exit_code == 1);
  EXPECT_NE(offline_cold.err.find("HF_HUB_OFFLINE"), std::string::npos) << offline_cold.err;
}

TEST_F(hub_serve, progress_is_a_redrawn_bar_on_a_terminal) {
  hub_->throttle(150'000);  // about 1.5 s for the weights: several redraws
  auto env = hub_env();
  const auto r = run_on_terminal({test::server_binary().string(), "generate", "--model", "test-org/tiny", "--prompt", "hi",
                                  "--max-tokens", "2"},
                                 std::chrono::seconds(60));
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out;
  // Redrawn in place while the bytes come: bars part-way (1..99 %), each with its rate and ETA.
  static const std::regex partial(
      R"(\rmodel\.safetensors  [0-9.]+ kB/[0-9.]+ kB +[1-9][0-9]?%  [0-9.]+ kB/s  ETA [0-9]+s)");
  const auto n_partial =
      std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), partial), std::sregex_iterator());
  EXPECT_GE(n_partial, 3) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\rmodel\.safetensors  [0-9.]+ kB/[0-9.]+ kB  100%[^\n]*\n)")))
      << r.out;
}

TEST_F(hub_serve, progress_is_plain_log_lines_on_a_pipe) {
  auto env = hub_env();
  const auto r = generate("test-org/tiny", "hi");
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(downloaded model\.safetensors  [0-9.]+ kB/[0-9.]+ kB  100%)"))) << r.err;
  EXPECT_NE(r.err.find("fetching 5 of 5 files"), std::string::npos) << r.err;
}

TEST_F(hub_serve, https_verifies_the_certificate_and_sends_sni) {
  if (!fs::exists("/usr/bin/openssl")) GTEST_SKIP() << "no /usr/bin/openssl to make a certificate (scripts/install-deps.sh installs it)";
  // A certificate for localhost and 127.0.0.1 that only SSL_CERT_FILE makes trusted.
  fs::create_directories(home_);
  const std::string cert = (home_ / "cert.pem").string(), key = (home_ / "key.pem").string();
  const auto made = run_process({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                 "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                                 "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"},
                                std::chrono::seconds(30));
  ASSERT_TRUE(made.exited && made.exit_code == 0) << made.err;
  fake_hub tls_hub(fake_hub_tls{cert, key});
  tls_hub.add_repo("test-org/tiny", hub_test_safetensors_repo());
  const std::string endpoint = "https://localhost:" + std::to_string(tls_hub.port());
  auto env = scoped_env{{"HF_HOME", home_.string()}, {"HF_ENDPOINT", endpoint}, {"HF_HUB_OFFLINE", std::nullopt},
                        {"HF_TOKEN", std::nullopt}, {"SSL_CERT_FILE", std::nullopt}, {"SSL_CERT_DIR", std::nullopt}};
  const auto untrusted = generate("test-org/tiny", "hi");  // the system store does not know this certificate
  EXPECT_TRUE(untrusted.exited && untrusted.exit_code == 1) << untrusted.err;
  EXPECT_NE(untrusted.err.find("certificate"), std::string::npos) << untrusted.err;
  EXPECT_TRUE(tls_hub.requests().empty());  // nothing was sent over the refused connection

  auto trust = scoped_env{{"SSL_CERT_FILE", cert}};
  const auto ok = generate("test-org/tiny", "hi");
  ASSERT_TRUE(ok.exited && ok.exit_code == 0) << ok.err;
  bool saw_cdn = false;
  for (const auto& r : tls_hub.requests()) {
    if (r.cdn) {
      saw_cdn = true;
      EXPECT_EQ(r.sni, "") << "no SNI for an IP address";  // the CDN redirect names 127.0.0.1
    } else {
      EXPECT_EQ(r.sni, "localhost") << r.target;
    }
  }
  EXPECT_TRUE(saw_cdn);
}

}  // namespace
}  // namespace pagedserve::e2e
