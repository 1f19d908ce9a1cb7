// Hub downloads in process against a hub served on 127.0.0.1 (e2e/fake_hub.hpp): the cache layout
// huggingface_hub writes, reuse offline, resumed downloads, tokens, missing repos, corrupt files and
// GGUF quantization choice. The server binary's side is in hub_serve_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <chrono>
#include <cstring>
#include <iostream>
#include <random>
#include <thread>

#include "e2e/fake_hub.hpp"
#include "e2e/hub_test_repo.hpp"
#include "model/gguf.hpp"
#include "model/gguf_model.hpp"
#include "src/hub/hub_cache.hpp"
#include "src/hub/hub_download.hpp"
#include "src/hub/sha256.hpp"

namespace pagedserve::e2e {
namespace {

namespace fs = std::filesystem;

const std::string repo = "test-org/tiny";

const fake_hub_file& file_named(const std::vector<fake_hub_file>& files, const std::string& name) {
  return *std::find_if(files.begin(), files.end(), [&](const fake_hub_file& f) { return f.name == name; });
}

class hub_download : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() / ("pagedserve_hub_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    hub_ = std::make_unique<fake_hub>();
    files_ = hub_test_safetensors_repo();
    hub_->add_repo(repo, files_);
    settings_.endpoint = hub_->endpoint();
    settings_.cache_dir = home_ / "hub";
    settings_.read_timeout = std::chrono::seconds(20);
  }
  void TearDown() override { fs::remove_all(home_); }

  std::expected<fs::path, std::string> fetch(const std::string& spec, const std::string& revision = "main") {
    download_progress::options o;
    o.log = [this](const std::string& line) { progress_lines_.push_back(line); };
    download_progress progress(o);
    return hub_model_fetch(*hub_model_ref_parse(spec), revision, settings_, progress);
  }

  std::vector<fake_hub_request> cdn_requests() const {
    std::vector<fake_hub_request> out;
    for (const auto& r : hub_->requests())
      if (r.cdn) out.push_back(r);
    return out;
  }

  const std::string& weights() const { return file_named(files_, "model.safetensors").bytes; }
  fs::path incomplete_of_weights() const { return hub_cache(settings_.cache_dir).incomplete(repo, sha256_hex(weights())); }

  fs::path home_;
  std::unique_ptr<fake_hub> hub_;
  std::vector<fake_hub_file> files_;
  hub_settings settings_;
  std::vector<std::string> progress_lines_;
};

TEST_F(hub_download, writes_huggingface_hubs_cache_layout) {
  auto path = fetch(repo);
  ASSERT_TRUE(path) << path.error();
  const hub_cache cache(settings_.cache_dir);
  const std::string commit = hub_->commit(repo);
  EXPECT_EQ(*path, cache.snapshot(repo, commit));
  EXPECT_EQ(cache.commit_for(repo, "main"), commit);
  for (const char* name : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                           "model.safetensors"}) {
    const fs::path p = *path / name;
    ASSERT_TRUE(fs::is_symlink(p)) << name;
    const fs::path target = fs::read_symlink(p);
    EXPECT_EQ(target.parent_path(), fs::path("../../blobs")) << name;
    EXPECT_EQ(hub_file_bytes(p), file_named(files_, name).bytes) << name;
  }
  // LFS blobs are named by their sha256 (X-Linked-Etag), as huggingface_hub names them.
  EXPECT_EQ(fs::read_symlink(*path / "model.safetensors").filename(), sha256_hex(weights()));
  for (const char* skipped : {"README.md", "pytorch_model.bin", "onnx"}) EXPECT_FALSE(fs::exists(*path / skipped));
  for (const auto& r : hub_->requests()) EXPECT_EQ(r.target.find("pytorch_model.bin"), std::string::npos) << r.target;
  for (const auto& e : fs::directory_iterator(cache.repo_dir(repo) / "blobs"))
    EXPECT_NE(e.path().extension(), ".incomplete") << e.path();
  EXPECT_FALSE(progress_lines_.empty());

  // A second start finds everything: one listing request, no file request.
  const auto n_requests = hub_->requests().size();
  auto again = fetch(repo);
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(*again, *path);
  EXPECT_EQ(hub_->requests().size(), n_requests + 1);
}

TEST_F(hub_download, offline_and_unreachable_hub_use_the_cache) {
  settings_.offline = true;
  auto cold = fetch(repo);
  ASSERT_FALSE(cold);
  EXPECT_NE(cold.error().find("HF_HUB_OFFLINE"), std::string::npos) << cold.error();
  EXPECT_TRUE(hub_->requests().empty());  // offline means no request at all

  settings_.offline = false;
  auto path = fetch(repo);
  ASSERT_TRUE(path) << path.error();
  hub_.reset();  // no hub any more
  settings_.offline = true;
  auto offline = fetch(repo);
  ASSERT_TRUE(offline) << offline.error();
  EXPECT_EQ(*offline, *path);
  settings_.offline = false;  // online, but nobody answers: the cache still serves
  auto unreachable = fetch(repo);
  ASSERT_TRUE(unreachable) << unreachable.error();
  EXPECT_EQ(*unreachable, *path);
  auto other = fetch(repo, "v2");  // a revision never fetched is not guessed
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().find("cannot reach the hub"), std::string::npos) << other.error();
}

TEST_F(hub_download, a_cache_laid_out_by_huggingface_hub_is_used_offline) {
  // What `huggingface-cli download test-org/hand-made` leaves, written here by hand: blobs named by
  // ETag, relative links, refs/main without a newline, files pagedserve skips, a .no_exist folder.
  const std::string commit = "89abcdef0123456789abcdef0123456789abcdef";
  const fs::path repo_dir = settings_.cache_dir / "models--test-org--hand-made";
  fs::create_directories(repo_dir / "blobs");
  fs::create_directories(repo_dir / "refs");
  fs::create_directories(repo_dir / "snapshots" / commit);
  fs::create_directories(repo_dir / ".no_exist" / commit);
  std::ofstream(repo_dir / ".no_exist" / commit / "chat_template.jinja");
  std::ofstream(repo_dir / "refs" / "main", std::ios::binary) << commit;
  for (const auto& f : files_) {
    const std::string etag = f.lfs ? sha256_hex(f.bytes) : sha256_hex("git " + f.bytes).substr(0, 40);
    std::ofstream(repo_dir / "blobs" / etag, std::ios::binary) << f.bytes;
    const fs::path link = repo_dir / "snapshots" / commit / f.name;
    fs::create_directories(link.parent_path());
    fs::path up;
    for (auto p = link.parent_path(); p != repo_dir; p = p.parent_path()) up /= "..";
    fs::create_symlink(up / "blobs" / etag, link);
  }
  settings_.offline = true;
  auto path = fetch("test-org/hand-made");
  ASSERT_TRUE(path) << path.error();
  EXPECT_EQ(*path, repo_dir / "snapshots" / commit);
  EXPECT_EQ(hub_file_bytes(*path / "model.safetensors"), weights());
  EXPECT_TRUE(hub_->requests().empty());
  // A revision named by its commit needs no ref.
  auto by_commit = fetch("test-org/hand-made", commit);
  ASSERT_TRUE(by_commit) << by_commit.error();
  EXPECT_EQ(*by_commit, *path);
}

TEST_F(hub_download, a_cut_connection_resumes_with_a_range_request) {
  const std::uint64_t cut = weights().size() / 3;
  hub_->cut_after("model.safetensors", cut, 1);
  auto path = fetch(repo);
  ASSERT_TRUE(path) << path.error();
  EXPECT_EQ(hub_file_bytes(*path / "model.safetensors"), weights());
  const auto cdn = cdn_requests();
  ASSERT_EQ(cdn.size(), 2u);
  EXPECT_EQ(cdn[0].range, "");
  EXPECT_EQ(cdn[1].range, "bytes=" + std::to_string(cut) + "-");
  EXPECT_EQ(hub_->bytes_sent("model.safetensors"), weights().size());  // nothing sent twice
}

TEST_F(hub_download, a_failed_download_is_resumed_by_the_next_start) {
  const std::uint64_t piece = weights().size() / 10;
  hub_->cut_after("model.safetensors", piece, 6);  // every attempt of this start is cut
  auto failed = fetch(repo);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("model.safetensors"), std::string::npos) << failed.error();
  EXPECT_NE(failed.error().find("resumes"), std::string::npos) << failed.error();
  ASSERT_TRUE(fs::exists(incomplete_of_weights()));
  EXPECT_EQ(fs::file_size(incomplete_of_weights()), 6 * piece);

  const auto before = cdn_requests().size();
  auto path = fetch(repo);
  ASSERT_TRUE(path) << path.error();
  const auto cdn = cdn_requests();
  ASSERT_EQ(cdn.size(), before + 1);
  EXPECT_EQ(cdn.back().range, "bytes=" + std::to_string(6 * piece) + "-");
  EXPECT_EQ(hub_file_bytes(*path / "model.safetensors"), weights());
  EXPECT_FALSE(fs::exists(incomplete_of_weights()));
}

TEST_F(hub_download, two_starts_at_once_download_each_file_once) {
  hub_->throttle(1'000'000);  // the weights take about 0.2 s: the second start waits on the blob's lock
  std::expected<fs::path, std::string> results[2];
  std::vector<std::thread> starts;
  for (auto& result : results)
    starts.emplace_back([&] {
      download_progress::options o;
      o.log = [](const std::string&) {};
      download_progress progress(o);
      result = hub_model_fetch(*hub_model_ref_parse(repo), "main", settings_, progress);
    });
  for (auto& t : starts) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(hub_file_bytes(*r / "model.safetensors"), weights());
  }
  EXPECT_EQ(hub_->bytes_sent("model.safetensors"), weights().size());
}

TEST_F(hub_download, a_server_ignoring_range_restarts_the_file) {
  hub_->cut_after("model.safetensors", weights().size() / 2, 1);
  hub_->ignore_range(true);
  auto path = fetch(repo);
  ASSERT_TRUE(path) << path.error();
  const auto cdn = cdn_requests();
  ASSERT_EQ(cdn.size(), 2u);
  EXPECT_FALSE(cdn[1].range.empty());  // asked for the rest, got the whole file (200)
  EXPECT_EQ(hub_file_bytes(*path / "model.safetensors"), weights());
}

TEST_F(hub_download, a_private_repo_needs_the_token) {
  hub_->require_token("hf_secret");
  auto denied = fetch(repo);
  ASSERT_FALSE(denied);
  EXPECT_NE(denied.error().find("401"), std::string::npos) << denied.error();
  EXPECT_NE(denied.error().find("HF_TOKEN"), std::string::npos) << denied.error();
  settings_.token = "hf_wrong";
  denied = fetch(repo);
  ASSERT_FALSE(denied);
  EXPECT_NE(denied.error().find("refused"), std::string::npos) << denied.error();

  settings_.token = "hf_secret";
  auto path = fetch(repo);
  ASSERT_TRUE(path) << path.error();
  EXPECT_EQ(hub_file_bytes(*path / "model.safetensors"), weights());
  bool saw_hub = false;
  for (const auto& r : hub_->requests()) {
    if (r.cdn) EXPECT_EQ(r.authorization, "") << "the token must not follow a redirect to another origin";
    else if (r.authorization == "Bearer hf_secret") saw_hub = true;
  }
  EXPECT_TRUE(saw_hub);
}

TEST_F(hub_download, missing_repo_and_revision_are_named) {
  auto no_repo = fetch("test-org/absent");
  ASSERT_FALSE(no_repo);
  EXPECT_NE(no_repo.error().find("test-org/absent"), std::string::npos) << no_repo.error();
  EXPECT_NE(no_repo.error().find("404"), std::string::npos) << no_repo.error();
  auto no_rev = fetch(repo, "v9");
  ASSERT_FALSE(no_rev);
  EXPECT_NE(no_rev.error().find("revision v9"), std::string::npos) << no_rev.error();
  EXPECT_NE(no_rev.error().find("revision not found"), std::string::npos) << no_rev.error();
}

TEST_F(hub_download, a_corrupt_file_is_caught_by_its_sha256_and_deleted) {
  hub_->corrupt("model.safetensors");
  auto r = fetch(repo);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("model.safetensors"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("SHA-256 mismatch"), std::string::npos) << r.error();
  const hub_cache cache(settings_.cache_dir);
  EXPECT_FALSE(fs::exists(cache.blob(repo, sha256_hex(weights()))));
  EXPECT_FALSE(fs::exists(incomplete_of_weights()));
  EXPECT_FALSE(fs::exists(cache.pointer(repo, hub_->commit(repo), "model.safetensors")));
}

TEST_F(hub_download, gguf_tag_fetches_one_quantization) {
  const auto gguf = hub_test_gguf_repo();
  hub_->add_repo("test-org/tiny-GGUF", gguf);
  auto path = fetch("test-org/tiny-GGUF:q8_0");
  ASSERT_TRUE(path) << path.error();
  EXPECT_EQ(path->filename(), "tiny-Q8_0.gguf");
  EXPECT_EQ(hub_file_bytes(*path), file_named(gguf, "tiny-Q8_0.gguf").bytes);
  for (const auto& r : hub_->requests()) {
    EXPECT_EQ(r.target.find("Q4_0"), std::string::npos) << r.target;
    EXPECT_EQ(r.target.find("F16"), std::string::npos) << r.target;
  }
  auto untagged = fetch("test-org/tiny-GGUF");  // no Q4_K_M and three files: which one?
  ASSERT_FALSE(untagged);
  EXPECT_NE(untagged.error().find("tiny-F16.gguf"), std::string::npos) << untagged.error();
  hub_->add_repo("test-org/evil-GGUF", {{"../../escape-Q5_0.gguf", gguf[1].bytes, true}});
  auto escape = fetch("test-org/evil-GGUF:Q5_0");  // a listed path leaving the snapshot is never taken
  ASSERT_FALSE(escape);
  for (const auto& e : fs::recursive_directory_iterator(settings_.cache_dir))
    EXPECT_EQ(e.path().filename().string().find("escape"), std::string::npos) << e.path();
  auto absent = fetch("test-org/tiny-GGUF:Q2_K");
  ASSERT_FALSE(absent);
  EXPECT_NE(absent.error().find("tiny-Q4_0.gguf"), std::string::npos) << absent.error();
}

// A quantization published as a split GGUF: every split is fetched into the snapshot, beside each
// other, and the first is the model path, which opens the whole model.
TEST_F(hub_download, gguf_splits_are_fetched_together) {
  const auto files = hub_test_split_gguf_repo();
  hub_->add_repo("test-org/split-GGUF", files);
  auto path = fetch("test-org/split-GGUF:Q8_0");
  ASSERT_TRUE(path) << path.error();
  EXPECT_EQ(path->filename(), "tiny-Q8_0-00001-of-00003.gguf");
  for (int s = 1; s <= 3; ++s) {
    const std::string name = "tiny-Q8_0-0000" + std::to_string(s) + "-of-00003.gguf";
    EXPECT_EQ(hub_file_bytes(path->parent_path() / name), file_named(files, "Q8_0/" + name).bytes) << name;
  }
  for (const auto& r : hub_->requests()) EXPECT_EQ(r.target.find("F16"), std::string::npos) << r.target;
  auto opened = gguf_file::open(*path);
  ASSERT_TRUE(opened.has_value()) << opened.error();
  EXPECT_EQ(opened->n_splits(), 3);
  auto loaded = gguf_model_load(*path);
  EXPECT_TRUE(loaded.has_value()) << loaded.error();
}

TEST_F(hub_download, a_large_file_streams_through_and_reports_its_rate) {
  // 64 MiB of weights: read in chunks, hashed as it is written, one pass; the rate is printed, not judged.
  std::string big(64 << 20, '\0');
  std::mt19937_64 rng(5);
  for (std::size_t i = 0; i + 8 <= big.size(); i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(big.data() + i, &v, 8);
  }
  hub_->add_repo("test-org/big", {{"config.json", file_named(files_, "config.json").bytes, false},
                                  {"model.safetensors", big, true}});
  const auto t0 = std::chrono::steady_clock::now();
  auto path = fetch("test-org/big");
  const std::chrono::duration<double> secs = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(path) << path.error();
  EXPECT_EQ(fs::file_size(*path / "model.safetensors"), big.size());
  EXPECT_EQ(hub_file_bytes(*path / "model.safetensors"), big);
  std::cout << "[ info     ] 64 MiB over loopback (fake hub -> CDN redirect, SHA-256 checked) in " << secs.count() * 1e3
            << " ms: " << big.size() / 1e6 / secs.count() << " MB/s\n";
}

}  // namespace
}  // namespace pagedserve::e2e
