#pragma once
// Building blocks for the report's static SVG charts: escaping, number labels, scales and
// axes. Charts are plain SVG strings so the report needs no script to draw and prints as seen.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp {

// Escapes text for HTML/SVG element content and quoted attribute values.
std::string html_escape(std::string_view text);

// A short human label: 3 significant digits without exponent notation ("0.0021", "12.3", "1840").
std::string format_number(double value);

// Whole numbers without decimals ("2", "200", "73368"); others as format_number.
std::string format_count(double value);

// A pixel coordinate for SVG attributes: one decimal, no trailing zeros.
std::string svg_coord(double pixels);

// Maps data values in [lo, hi] onto pixels [from, to]. Log2 axes serve device counts that
// span 1..64, where a linear axis squeezes the counts that were measured into one corner.
class Scale {
 public:
  Scale(double lo, double hi, double from, double to, bool log2 = false);
  double operator()(double value) const;
  // Tick positions inside [lo, hi]: round 1/2/5 steps on a linear axis, powers of two on a log axis.
  std::vector<double> ticks(int approx_count) const;
  // Device counts are whole: a linear device axis never gets a tick at 1.5.
  void set_min_step(double step) { min_step_ = step; }
  bool log2() const { return log2_; }
  double lo() const { return lo_; }
  double hi() const { return hi_; }

 private:
  double lo_, hi_, from_, to_;
  bool log2_;
  double min_step_ = 0;
};

// [lo, hi] widened to a round step so the last tick closes the axis.
std::pair<double, double> nice_range(double lo, double hi, int approx_ticks);

// Pixel edges of a chart's plotting area inside its viewBox.
struct PlotBox {
  double left, top, right, bottom;
};

// Both axes and the frame; `x_suffix`/`y_suffix` follow tick labels ("×", " %").
std::string svg_axes(const Scale& x, const Scale& y, const PlotBox& box, std::string_view x_title,
                     std::string_view y_title, std::string_view x_suffix = "", std::string_view y_suffix = "");

// Tick labels and vertical grid lines below a chart, with the axis title: about approx_ticks
// of them (a narrow chart asks for fewer, so that its labels do not overlap).
std::string svg_x_axis(const Scale& x, const PlotBox& box, std::string_view title, std::string_view suffix = "",
                       int approx_ticks = 8);
// Tick labels and horizontal grid lines left of a chart, with the rotated axis title.
std::string svg_y_axis(const Scale& y, const PlotBox& box, std::string_view title, std::string_view suffix = "");
// A text's width in viewBox units, estimated before any browser lays it out: 0.6 em per
// character, as wide as the report's sans-serif gets (bold digits), so a text sized by it fits.
double text_width(std::string_view text, double font_px);
// The left and bottom axis lines.
std::string svg_frame(const PlotBox& box);

// A chart legend's <li>: a filled swatch, or a line of `line_style` (dashed, dotted, thin).
std::string legend_item(std::string_view color, std::string_view label, std::string_view line_style = "");

// "x1,y1 x2,y2 ..." for a <polyline points="...">.
std::string svg_points(const std::vector<std::pair<double, double>>& pixels);

}  // namespace ddp
