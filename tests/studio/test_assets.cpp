// Where the programs look for the demo's files (core/studio/assets.h): $H2O_ASSETS
// alone when set; else the install's share folder beside bin/, then the source
// tree's ../shared/assets.
#include <gtest/gtest.h>

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
