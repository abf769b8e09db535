// Where the programs look for the demo's files (core/studio/assets.h): $H2O_ASSETS
// alone when set; else the install's share folder beside bin/, then the source
// tree's ../shared/assets.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/studio/assets.h"

using namespace h2o;

TEST(AssetPlaces, H2oAssetsIsTheOnlyPlaceWhenSet) {
  EXPECT_EQ(asset_places("/data/demo", "/usr/bin"), std::vector<std::string>{"/data/demo"});
}

TEST(AssetPlaces, UnsetTheInstallsShareFolderComesBeforeTheSharedAssets) {
  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    const std::vector<std::string> places = asset_places(unset, "/opt/h2o/bin");
    ASSERT_GE(places.size(), 4u);
    EXPECT_EQ(places[0], "/opt/h2o/share/h2o-studio");
    EXPECT_EQ(places[1], "../shared/assets");  // beside the working directory
    EXPECT_EQ(places[2], "shared/assets");
    EXPECT_EQ(places[3], "/opt/h2o/shared/assets");  // beside the program's folder, then the folders above
    EXPECT_EQ(places.back(), "/shared/assets");
  }
}

TEST(AssetPlaces, WithoutTheProgramsFolderOnlyTheWorkingDirectorysPlaces) {
  EXPECT_EQ(asset_places(nullptr, ""), (std::vector<std::string>{"../shared/assets", "shared/assets"}));
}

// The demo's model chosen by its file (Model ▸ File… → kjv-1M.bin) takes the demo's tokenizer: it has
// none of its own, and the panes streamed "<1991><270><261>…". Any other model takes none from it.
TEST(DemoInputs, TheDemosModelChosenByItsFileTakesTheDemosTokenizer) {
  const std::string assets = find_assets_dir();
  const DefaultInputs d = default_inputs(assets);
  if (d.tokenizer.empty() || d.model.rfind("synthetic:", 0) == 0) GTEST_SKIP() << "no demo model in " << assets;
  EXPECT_EQ(demo_tokenizer_for(d, d.model), d.tokenizer);
  EXPECT_EQ(demo_tokenizer_for(d, assets + "/./" + std::filesystem::path(d.model).filename().string()), d.tokenizer);
  EXPECT_EQ(demo_tokenizer_for(d, assets + "/stories260K.bin"), "");
  EXPECT_EQ(demo_tokenizer_for(d, "synthetic:stories15M"), "");
  EXPECT_EQ(demo_tokenizer_for(d, ""), "");
}
