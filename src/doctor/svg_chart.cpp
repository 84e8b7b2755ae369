#include "doctor/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ddp {
namespace {

double nice_step(double range, int approx_count) {
  const double raw = range / std::max(1, approx_count);
  if (!(raw > 0) || !std::isfinite(raw)) return 1.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  const double rounded = fraction < 1.5 ? 1 : fraction < 3 ? 2 : fraction < 7 ? 5 : 10;
  return rounded * magnitude;
}

// Tick labels share the decimals their step needs, so "0.5, 1.0, 1.5" line up.
std::string tick_label(double value, double step, bool log2) {
  if (log2) return fmt::format("{:g}", value);
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  if (std::abs(value) < step * 1e-6) value = 0;  // no "-0.0"
  return fmt::format("{:.{}f}", value, decimals);
}

std::string strip_zeros(std::string text) {
  if (text.find('.') == std::string::npos) return text;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_count(double value) {
  if (!std::isfinite(value)) return "—";
  if (std::abs(value - std::round(value)) < 1e-9 * std::max(1.0, std::abs(value)) || std::abs(value) >= 100) {
    return fmt::format("{:.0f}", value);
  }
  return format_number(value);
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return "—";
  const double magnitude = std::abs(value);
  if (magnitude >= 100) return fmt::format("{:.0f}", value);
  if (magnitude >= 10) return fmt::format("{:.1f}", value);
  if (magnitude >= 1) return fmt::format("{:.2f}", value);
  if (magnitude == 0) return "0";
  const int decimals = 2 - static_cast<int>(std::floor(std::log10(magnitude)));
  return strip_zeros(fmt::format("{:.{}f}", value, std::min(decimals, 12)));
}

std::string svg_coord(double pixels) {
  if (!std::isfinite(pixels)) pixels = 0;
  // A coordinate on a half tenth (71.25) comes out a bit above or below it depending on whether
  // the compiler fused a multiply-add; rounding it away from zero explicitly makes the page the
  // same from every build.
  const double tenths = std::round(pixels * 10 + std::copysign(1e-6, pixels));
  return strip_zeros(fmt::format("{:.1f}", tenths / 10 + 0.0));  // + 0.0: no "-0"
}

Scale::Scale(double lo, double hi, double from, double to, bool log2)
    : lo_(lo), hi_(hi), from_(from), to_(to), log2_(log2 && lo > 0 && hi > 0) {
  if (!(hi_ > lo_)) hi_ = lo_ + 1;  // a single value still gets a drawable axis
}

double Scale::operator()(double value) const {
  double t = 0;
  if (log2_) {
    t = (std::log2(std::max(value, lo_ * 1e-3)) - std::log2(lo_)) / (std::log2(hi_) - std::log2(lo_));
  } else {
    t = (value - lo_) / (hi_ - lo_);
  }
  return from_ + t * (to_ - from_);
}

std::vector<double> Scale::ticks(int approx_count) const {
  std::vector<double> out;
  if (log2_) {
    const int first = static_cast<int>(std::ceil(std::log2(lo_) - 1e-9));
    const int last = static_cast<int>(std::floor(std::log2(hi_) + 1e-9));
    const int every = (last - first + 1) > approx_count * 3 / 2 ? 2 : 1;
    for (int k = first; k <= last; k += every) out.push_back(std::ldexp(1.0, k));
    return out;
  }
  const double step = std::max(nice_step(hi_ - lo_, approx_count), min_step_);
  for (double v = std::ceil(lo_ / step - 1e-9) * step; v <= hi_ + step * 1e-9; v += step) out.push_back(v);
  return out;
}

std::pair<double, double> nice_range(double lo, double hi, int approx_ticks) {
  if (!(hi > lo)) hi = lo + 1;
  const double step = nice_step(hi - lo, approx_ticks);
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step};
}

std::string svg_y_axis(const Scale& y, const PlotBox& box, std::string_view title, std::string_view suffix) {
  std::string out = "<g class=\"y-axis\">";
  const std::vector<double> ticks = y.ticks(6);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (const double v : ticks) {
    const std::string py = svg_coord(y(v));
    out += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", svg_coord(box.left),
                       svg_coord(box.right), py, py);
    out +=
        fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}{}</text>", svg_coord(box.left - 8),
                    svg_coord(y(v) + 4), tick_label(v, step, y.log2()), html_escape(suffix));
  }
  const double mid = (box.top + box.bottom) / 2;
  out += fmt::format(
      "<text class=\"axis-title\" x=\"{0}\" y=\"{1}\" text-anchor=\"middle\" transform=\"rotate(-90 {0} "
      "{1})\">{2}</text>",
      svg_coord(box.left - 48), svg_coord(mid), html_escape(title));
  return out + "</g>";
}

std::string svg_x_axis(const Scale& x, const PlotBox& box, std::string_view title, std::string_view suffix,
                       int approx_ticks) {
  std::string out = "<g class=\"x-axis\">";
  const std::vector<double> ticks = x.ticks(approx_ticks);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  for (const double v : ticks) {
    const std::string px = svg_coord(x(v));
    out += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", px, px, svg_coord(box.top),
                       svg_coord(box.bottom));
    out += fmt::format("<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>", px,
                       svg_coord(box.bottom + 18), tick_label(v, step, x.log2()), html_escape(suffix));
  }
  out += fmt::format("<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                     svg_coord((box.left + box.right) / 2), svg_coord(box.bottom + 42), html_escape(title));
  return out + "</g>";
}

double text_width(std::string_view text, double font_px) {
  // Characters, not bytes: UTF-8 continuation bytes (10xxxxxx) start none.
  const auto characters = std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; });
  return 0.6 * font_px * static_cast<double>(characters);
}

std::string svg_frame(const PlotBox& box) {
  return fmt::format(
      "<line class=\"axis\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
      "<line class=\"axis\" x1=\"{0}\" x2=\"{3}\" y1=\"{2}\" y2=\"{2}\"/>",
      svg_coord(box.left), svg_coord(box.top), svg_coord(box.bottom), svg_coord(box.right));
}

std::string svg_axes(const Scale& x, const Scale& y, const PlotBox& box, std::string_view x_title,
                     std::string_view y_title, std::string_view x_suffix, std::string_view y_suffix) {
  return svg_y_axis(y, box, y_title, y_suffix) + svg_x_axis(x, box, x_title, x_suffix) + svg_frame(box);
}

std::string svg_points(const std::vector<std::pair<double, double>>& pixels) {
  std::string out;
  for (const auto& [px, py] : pixels) {
    if (!out.empty()) out += ' ';
    out += svg_coord(px) + ',' + svg_coord(py);
  }
  return out;
}

std::string legend_item(std::string_view color, std::string_view label, std::string_view line_style) {
  if (line_style.empty()) {
    return fmt::format("<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>", color, html_escape(label));
  }
  return fmt::format("<li><span class=\"swatch line {}\" style=\"border-top-color:{}\"></span>{}</li>", line_style,
                     color, html_escape(label));
}

}  // namespace ddp
