#pragma once
// report.html's style sheet and script, kept as files of their own (src/doctor/assets/) and
// compiled into the library by cmake/embed_assets.cmake, so the page stays self-contained.
#include <string_view>

namespace ddp {

// assets/report.css: the page's look, on screen and in print.
std::string_view report_css();

// assets/report.js: proves in a browser that the page was parsed and its charts built (the
// headless-browser test reads what it sets); the charts never depend on it.
std::string_view report_js();

}  // namespace ddp
