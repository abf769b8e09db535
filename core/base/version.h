#pragma once
// The version every program says (--version, the app's About box), every run's
// manifest records, and the Debian package carries: project(VERSION) in the
// top-level CMakeLists.txt, and where in git the build's tree is
// ("0.1.0+1234.gb11d5de": 1234 commits, at b11d5de; "0.1.0" at a tag v0.1.0, or
// without git). Generated at configure time (version.cpp.in); a commit
// reconfigures the build, so a developer's build says the commit it is at.
namespace h2o {

const char* version();

}  // namespace h2o
