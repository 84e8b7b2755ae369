// report.html's style sheet and script are compiled in byte for byte from their files, and
// the page carries them whole.
#include "doctor/report_assets.h"

#include <gtest/gtest.h>

#include <string>

#include "doctor/report_html.h"
#include "support/run_command.h"

namespace ddp {
namespace {

const std::string kAssets = std::string(DDPSCOPE_SOURCE_DIR) + "/src/doctor/assets/";

TEST(ReportAssets, AreTheirFilesByteForByte) {
  EXPECT_EQ(std::string(report_css()), testing::read_text(kAssets + "report.css"));
  EXPECT_EQ(std::string(report_js()), testing::read_text(kAssets + "report.js"));
  EXPECT_NE(report_js().find("b.dataset.ready = '1';"), std::string::npos);  // what the browser test waits for
}

TEST(ReportAssets, ThePageInlinesBothWhole) {
  const std::string html = render_report_html(ReportView{});
  EXPECT_NE(html.find("<style>\n" + std::string(report_css()) + "</style>"), std::string::npos);
  EXPECT_NE(html.find("<script>\n" + std::string(report_js()) + "</script>"), std::string::npos);
}

}  // namespace
}  // namespace ddp
