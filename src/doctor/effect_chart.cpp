#include "doctor/effect_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "doctor/svg_chart.h"

namespace ddp {
namespace {

constexpr const char* kSlowerColor = "#e15759";
constexpr const char* kFasterColor = "#59a14f";
constexpr const char* kInsideNoiseColor = "#9aa3ad";
constexpr const char* kBandColor = "#dde1e6";
constexpr const char* kErrorBarColor = "#1d2330";

bool has_effect(const AblationRow& a) { return a.error.empty() && std::isfinite(a.effect); }

const char* color_of(const AblationRow& a) {
  if (!a.measurable) return kInsideNoiseColor;
  return a.effect > 0 ? kSlowerColor : kFasterColor;
}

// How far the axis must reach either side of zero, in percent.
double reach_of(const std::vector<const AblationRow*>& rows) {
  double reach = 1;
  for (const AblationRow* a : rows) {
    const double bar = std::isfinite(a->effect_uncertainty) ? a->effect_uncertainty : 0;
    reach = std::max(reach, 100 * (std::abs(a->effect) + bar));
    if (std::isfinite(a->baseline_band)) reach = std::max(reach, 100 * a->baseline_band);
  }
  return reach;
}

}  // namespace

std::string ablation_effect_chart(const std::vector<AblationRow>& ablations) {
  std::vector<const AblationRow*> rows;
  for (const AblationRow& a : ablations) {
    if (has_effect(a)) rows.push_back(&a);
  }
  if (rows.empty()) return "";

  constexpr double kRow = 18, kGap = 10, kTop = 10, kPlotWidth = 370;
  constexpr double kLabelFont = 13, kValueFont = 12;  // report.css: .bar-label, .value
  // Room for the longest label left of the plot and the longest effect right of it (760
  // wide at least): the viewBox grows rather than cut a text off.
  double label_room = 190, value_room = 200;
  for (const AblationRow* a : rows) {
    label_room =
        std::max(label_room, text_width(fmt::format("{} @ {}", a->name, format_count(a->devices)), kLabelFont) + 20);
    value_room = std::max(value_room, text_width(a->effect_text, kValueFont) + 16);
  }
  const double plot_bottom = kTop + static_cast<double>(rows.size()) * (kRow + kGap);
  const PlotBox box{label_room, kTop, label_room + kPlotWidth, plot_bottom};
  const double reach = reach_of(rows);
  const auto [lo, hi] = nice_range(-reach, reach, 6);
  const double edge = std::max(-lo, hi);  // symmetric: zero in the middle
  const Scale x(-edge, edge, box.left, box.right);

  std::string svg = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"Ablation effects with their noise\">",
      svg_coord(box.right + value_room), svg_coord(plot_bottom + 52));
  // Five ticks across the plot: labels such as "-25 %" need about 60 units each.
  svg +=
      svg_x_axis(x, box, "change in wall time against the baseline (%; positive is slower)", " %", 5) + svg_frame(box);
  double row_y = kTop + kGap / 2;
  for (const AblationRow* a : rows) {
    const std::string label = fmt::format("{} @ {}", a->name, format_count(a->devices));
    const double mid = row_y + kRow / 2;
    svg += fmt::format("<g class=\"effect\" data-ablation=\"{}\">", html_escape(label));
    svg += fmt::format("<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", box.left - 10,
                       svg_coord(mid + 4), html_escape(label));
    if (std::isfinite(a->baseline_band)) {
      const double b = 100 * a->baseline_band;
      svg += fmt::format(
          "<rect class=\"noise-band\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>the baseline's noise: ±{:.1f} %</title></rect>",
          svg_coord(x(-b)), svg_coord(row_y - kGap / 2), svg_coord(x(b) - x(-b)), svg_coord(kRow + kGap), kBandColor,
          b);
    }
    const double x0 = std::min(x(0), x(100 * a->effect)), x1 = std::max(x(0), x(100 * a->effect));
    svg += fmt::format(
        "<rect class=\"effect-bar\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: "
        "{}</title></rect>",
        svg_coord(x0), svg_coord(row_y + 3), svg_coord(std::max(x1 - x0, 0.5)), svg_coord(kRow - 6), color_of(*a),
        html_escape(label), html_escape(a->effect_text));
    if (std::isfinite(a->effect_uncertainty)) {
      const double from = x(100 * (a->effect - a->effect_uncertainty));
      const double to = x(100 * (a->effect + a->effect_uncertainty));
      svg += fmt::format(
          "<path class=\"error-bar\" d=\"M{0} {2}H{1}M{0} {3}V{4}M{1} {3}V{4}\" stroke=\"{5}\" stroke-width=\"1.5\" "
          "fill=\"none\"/>",
          svg_coord(from), svg_coord(to), svg_coord(mid), svg_coord(mid - 5), svg_coord(mid + 5), kErrorBarColor);
    }
    svg += fmt::format("<text class=\"value\" x=\"{}\" y=\"{}\">{}</text></g>", box.right + 8, svg_coord(mid + 4),
                       html_escape(a->effect_text));
    row_y += kRow + kGap;
  }
  svg += fmt::format("<line class=\"zero\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"{3}\"/></svg>",
                     svg_coord(x(0)), svg_coord(box.top), svg_coord(box.bottom), kErrorBarColor);

  const std::string legend = "<ul class=\"legend\">" + legend_item(kSlowerColor, "measurably slower") +
                             legend_item(kFasterColor, "measurably faster") +
                             legend_item(kInsideNoiseColor, "no measurable effect, or noise unknown") +
                             legend_item(kBandColor, "noise band: the baseline's ± (95 %)") +
                             legend_item(kErrorBarColor, "error bar: the effect's ± (95 %)", "thin") + "</ul>";
  return "<figure id=\"effect-chart\">" + legend + svg +
         "<figcaption>An effect whose error bar reaches zero is within the noise: the doctor calls it no measurable "
         "effect and draws no finding from it.</figcaption></figure>";
}

}  // namespace ddp
