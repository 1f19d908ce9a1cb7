// The Hugging Face cache layout (src/hub/hub_cache.hpp) and where it is (src/hub/hub_settings.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "src/hub/hub_cache.hpp"
#include "src/hub/hub_settings.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

class hub_cache_test : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("pagedserve_hub_cache_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(hub_cache_test, paths_follow_huggingface_hub) {
  const hub_cache c(root_);
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  EXPECT_EQ(c.repo_dir("Qwen/Qwen3-0.6B"), root_ / "models--Qwen--Qwen3-0.6B");
  EXPECT_EQ(c.blob("Qwen/Qwen3-0.6B", "e3b0"), root_ / "models--Qwen--Qwen3-0.6B" / "blobs" / "e3b0");
  EXPECT_EQ(c.incomplete("Qwen/Qwen3-0.6B", "e3b0"), root_ / "models--Qwen--Qwen3-0.6B" / "blobs" / "e3b0.incomplete");
  EXPECT_EQ(c.pointer("Qwen/Qwen3-0.6B", commit, "sub/config.json"),
            root_ / "models--Qwen--Qwen3-0.6B" / "snapshots" / commit / "sub" / "config.json");
  EXPECT_EQ(c.lock("Qwen/Qwen3-0.6B", "e3b0"), root_ / ".locks" / "models--Qwen--Qwen3-0.6B" / "e3b0.lock");
}

TEST_F(hub_cache_test, refs_name_commits) {
  const hub_cache c(root_);
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  EXPECT_FALSE(c.commit_for("o/m", "main"));
  EXPECT_EQ(c.commit_for("o/m", commit), commit);  // a commit hash needs no ref
  ASSERT_TRUE(c.write_ref("o/m", "main", commit));
  EXPECT_EQ(c.commit_for("o/m", "main"), commit);
  std::ifstream in(root_ / "models--o--m" / "refs" / "main");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, commit);  // the bare hash, as huggingface_hub writes it
  ASSERT_TRUE(c.write_ref("o/m", commit, commit));
  EXPECT_FALSE(fs::exists(root_ / "models--o--m" / "refs" / commit));
  std::ofstream(root_ / "models--o--m" / "refs" / "v1") << commit << "\n";  // a trailing newline is tolerated
  EXPECT_EQ(c.commit_for("o/m", "v1"), commit);
  std::ofstream(root_ / "models--o--m" / "refs" / "bad") << "not-a-commit";
  EXPECT_FALSE(c.commit_for("o/m", "bad"));
  EXPECT_TRUE(hub_commit_hash_is(commit));
  EXPECT_FALSE(hub_commit_hash_is("main"));
  EXPECT_FALSE(hub_commit_hash_is("0123456789ABCDEF0123456789abcdef01234567"));
}

TEST_F(hub_cache_test, snapshot_files_are_relative_symlinks_to_blobs) {
  const hub_cache c(root_);
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  fs::create_directories(c.blob("o/m", "x").parent_path());
  std::ofstream(c.blob("o/m", "aaaa")) << "top";
  std::ofstream(c.blob("o/m", "bbbb")) << "nested";
  ASSERT_TRUE(c.link("o/m", commit, "config.json", "aaaa"));
  ASSERT_TRUE(c.link("o/m", commit, "sub/dir/w.safetensors", "bbbb"));
  const fs::path top = c.pointer("o/m", commit, "config.json"), nested = c.pointer("o/m", commit, "sub/dir/w.safetensors");
  ASSERT_TRUE(fs::is_symlink(top));
  EXPECT_EQ(fs::read_symlink(top), fs::path("../../blobs/aaaa"));
  EXPECT_EQ(fs::read_symlink(nested), fs::path("../../../../blobs/bbbb"));
  std::ifstream in(nested);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "nested");
  ASSERT_TRUE(c.link("o/m", commit, "config.json", "bbbb"));  // relinking replaces
  EXPECT_EQ(fs::read_symlink(top), fs::path("../../blobs/bbbb"));
}

TEST_F(hub_cache_test, file_lock_is_exclusive_and_released) {
  const fs::path lock = root_ / ".locks" / "models--o--m" / "e.lock";
  {
    auto held = hub_file_lock::acquire(lock);
    ASSERT_TRUE(held) << held.error();
    EXPECT_TRUE(fs::exists(lock));
  }
  auto again = hub_file_lock::acquire(lock);  // released when the first went out of scope
  EXPECT_TRUE(again) << again.error();
}

hub_settings settings_from(const std::map<std::string, std::string>& vars) {
  return hub_settings_from_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST_F(hub_cache_test, settings_read_huggingface_hub_variables) {
  hub_settings s = settings_from({{"HOME", "/home/u"}});
  EXPECT_EQ(s.endpoint, "https://huggingface.co");
  EXPECT_EQ(s.cache_dir, fs::path("/home/u/.cache/huggingface/hub"));
  EXPECT_TRUE(s.token.empty());
  EXPECT_FALSE(s.offline);
  s = settings_from({{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg"}});
  EXPECT_EQ(s.cache_dir, fs::path("/xdg/huggingface/hub"));
  s = settings_from({{"HF_HOME", "/hf"}, {"HF_ENDPOINT", "http://127.0.0.1:9/"}, {"HF_HUB_OFFLINE", "1"}});
  EXPECT_EQ(s.cache_dir, fs::path("/hf/hub"));
  EXPECT_EQ(s.endpoint, "http://127.0.0.1:9");  // trailing slash dropped
  EXPECT_TRUE(s.offline);
  s = settings_from({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", "/cache"}, {"HF_HUB_OFFLINE", "true"}, {"HF_TOKEN", "hf_x"}});
  EXPECT_EQ(s.cache_dir, fs::path("/cache"));
  EXPECT_TRUE(s.offline);
  EXPECT_EQ(s.token, "hf_x");
  EXPECT_FALSE(settings_from({{"HF_HUB_OFFLINE", "0"}}).offline);
  // The token file huggingface-cli login writes, when HF_TOKEN is unset.
  fs::create_directories(root_);
  std::ofstream(root_ / "token") << "hf_from_file\n";
  s = settings_from({{"HF_HOME", root_.string()}});
  EXPECT_EQ(s.token, "hf_from_file");
  s = settings_from({{"HF_HOME", root_.string()}, {"HF_TOKEN", "hf_env"}});
  EXPECT_EQ(s.token, "hf_env");  // the variable wins
}

}  // namespace
}  // namespace pagedserve
