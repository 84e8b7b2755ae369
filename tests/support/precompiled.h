#pragma once
// The headers most tests parse, precompiled once for all test targets (tests/CMakeLists.txt).
// Third-party and standard headers only: the project's own change too often to be worth it.
// Each test still includes what it uses; this file only makes that faster.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
