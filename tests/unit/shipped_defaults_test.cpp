// Where the program finds what it ships (an install prefix or a build tree, from the binary's own
// path), and what serve does with no model: the shipped stories260K, the demo only when asked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/share_dir.hpp"
#include "src/shipped_defaults.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

struct temp_tree {
  fs::path root = fs::temp_directory_path() / ("pagedserve_share_" + std::to_string(::getpid()));
  temp_tree() { fs::create_directories(root); }
  ~temp_tree() { fs::remove_all(root); }
  void touch(const fs::path& p) {
    fs::create_directories((root / p).parent_path());
    std::ofstream(root / p) << "x";
  }
};

TEST(share_dir, installed_beside_bin_or_in_the_build_tree) {
  temp_tree t;
  t.touch("prefix/bin/pagedserve");
  t.touch("prefix/share/pagedserve/web/index.html");
  EXPECT_EQ(share_dir_for(t.root / "prefix/bin/pagedserve"), fs::weakly_canonical(t.root / "prefix/share/pagedserve"));
  t.touch("build/pagedserve");
  t.touch("build/share/pagedserve/models/stories260K.bin");
  EXPECT_EQ(share_dir_for(t.root / "build/pagedserve"), fs::weakly_canonical(t.root / "build/share/pagedserve"));
  t.touch("elsewhere/pagedserve");
  EXPECT_FALSE(share_dir_for(t.root / "elsewhere/pagedserve").has_value());
}

TEST(shipped_defaults, no_model_means_the_shipped_stories260k) {
  temp_tree t;
  t.touch("share/models/stories260K.bin");
  t.touch("share/models/tok512.bin");
  config c;
  auto note = shipped_defaults_apply(c, false, t.root / "share");
  ASSERT_TRUE(note.has_value()) << note.error();
  EXPECT_EQ(fs::path(c.model.model), t.root / "share/models/stories260K.bin");
  EXPECT_EQ(fs::path(c.model.tokenizer), t.root / "share/models/tok512.bin");
  EXPECT_EQ(fs::path(c.server.web_root), t.root / "share/web");
  EXPECT_NE(note->find("default model stories260K"), std::string::npos) << *note;
}

TEST(shipped_defaults, a_named_model_and_a_web_root_are_kept) {
  temp_tree t;
  config c;
  c.model.model = "org/name";
  c.server.web_root = "/srv/page";
  ASSERT_TRUE(shipped_defaults_apply(c, false, t.root).has_value());
  EXPECT_EQ(c.model.model, "org/name");
  EXPECT_EQ(c.model.tokenizer, "");
  EXPECT_EQ(c.server.web_root, "/srv/page");
}

TEST(shipped_defaults, the_demo_only_when_asked_and_alone) {
  config c;
  auto demo = shipped_defaults_apply(c, true, std::nullopt);
  ASSERT_TRUE(demo.has_value());
  EXPECT_EQ(c.model.model, "") << "an empty model path loads the demo";
  EXPECT_NE(demo->find("random-weight demo"), std::string::npos);
  c.model.model = "m.bin";
  EXPECT_FALSE(shipped_defaults_apply(c, true, std::nullopt).has_value());
  config missing;
  auto none = shipped_defaults_apply(missing, false, std::nullopt);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().find("--demo-model"), std::string::npos) << none.error();
}

}  // namespace
}  // namespace pagedserve
