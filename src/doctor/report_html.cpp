#include "doctor/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>

#include "doctor/effect_chart.h"
#include "doctor/report_assets.h"
#include "doctor/svg_chart.h"
#include "observe/phase.h"

namespace ddp {
namespace {

using Points = ReportPoints;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Predictions further off than this are flagged: the doctor aims to predict within 15 %.
constexpr double kPredictionTolerance = 0.15;
// More samples than this per device add nothing visible and bloat the file.
constexpr std::size_t kMaxPointsPerSeries = 1500;

// Same order as kPhaseNames. Communication wait is the one red: it is the cost of going parallel.
constexpr std::array<const char*, kPhaseCount> kPhaseColors = {"#9aa3ad", "#f1ce63", "#4e79a7", "#8cb4dc",
                                                               "#e15759", "#59a14f", "#b07aa1", "#9c755f",
                                                               "#f28e2b", "#d4d8dd", "#76b7b2", "#ff9da7"};
constexpr std::array<const char*, 8> kDeviceColors = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                                      "#76b7b2", "#b8962e", "#b07aa1", "#9c755f"};
constexpr std::array<const char*, 6> kInterconnectColors = {"#6a9f58", "#8e6c8a", "#5d8aa8",
                                                            "#a6761d", "#b5525c", "#7f7f7f"};
constexpr const char* kMeasuredColor = "#1f4e79";
constexpr const char* kPredictedColor = "#d9822b";
constexpr const char* kIdealColor = "#9aa3ad";

std::string esc(std::string_view text) { return html_escape(text); }

std::string seconds_text(double seconds) { return std::isfinite(seconds) ? format_number(seconds) + " s" : "—"; }

std::string percent_text(double share, bool sign = false) {
  if (!std::isfinite(share)) return "—";
  return sign ? fmt::format("{:+.1f} %", 100 * share) : fmt::format("{:.1f} %", 100 * share);
}

// Dark text on light fills, white on dark ones, so segment labels stay legible.
const char* text_color_on(std::string_view hex) {
  const auto channel = [&](std::size_t at) { return std::stoi(std::string(hex.substr(at, 2)), nullptr, 16); };
  const double luminance = 0.299 * channel(1) + 0.587 * channel(3) + 0.114 * channel(5);
  return luminance > 150 ? "#1d2330" : "#ffffff";
}

std::string section_start(const char* id, int number, std::string_view title, std::string_view lead) {
  std::string out = fmt::format("<section id=\"{}\"><h2><span class=\"num\">{}.</span>{}</h2>", id, number, esc(title));
  if (!lead.empty()) out += fmt::format("<p class=\"lead\">{}</p>", lead);  // lead is our own markup
  return out;
}

std::string question_of(const ReportView& view) {
  // Traces of one job ask where its steps go; a script's runs at 1 and N devices, the seed's question.
  if (view.kind == ReportKind::kAnalyze && !view.headline)
    return "Where does each rank's step go, and who holds the others back?";
  if (!view.headline) return "How fast does this configuration train, and where does the time go?";
  const double speedup = view.headline->speedup;
  const int n = view.headline->devices;
  if (!(speedup >= 1)) return fmt::format("Why are {} devices slower than one?", n);
  if (speedup < 0.9 * n) return fmt::format("Why are {} devices only {}× faster than one?", n, format_number(speedup));
  return fmt::format("Why are {} devices faster than one?", n);
}

std::string verdict_html(const ReportView& view) {
  std::string out = "<div class=\"verdict\"><p>";
  std::vector<std::string> walls;
  for (const ReportRun& r : view.runs)
    walls.push_back(fmt::format("{}: <strong>{}</strong>", esc(r.label), seconds_text(r.wall_seconds)));
  out += walls.empty() ? std::string("No runs were recorded.")
                       : "Measured wall time — " + fmt::format("{}", fmt::join(walls, " · "));
  out += "</p>";
  if (const auto& headline = view.headline) {
    out += fmt::format("<p>Speedup at {} devices: <strong>{}×</strong> (ideal {}×, parallel efficiency {}).</p>",
                       headline->devices, format_number(headline->speedup), headline->devices,
                       percent_text(headline->speedup / headline->devices));
  }
  if (view.findings && !view.findings->empty()) {
    const FindingView& top = view.findings->front();
    out += fmt::format("<p>Largest measured cost: <a href=\"#finding-1\">{}</a> ({}, {} of wall time).</p>",
                       esc(top.title), seconds_text(top.cost_seconds), percent_text(top.share_of_wall));
  }
  return out + "</div>";
}

// A grid of key/value cells rather than a table: it reflows from three columns on a screen
// to two or one on paper or a phone without wrapping the option names.
std::string config_table(const OptionTexts& config) {
  if (config.empty()) return "<p class=\"muted\">No configuration recorded.</p>";
  std::string out = "<dl class=\"config\">";
  for (const auto& [key, value] : config) out += fmt::format("<div><dt>{}</dt><dd>{}</dd></div>", esc(key), esc(value));
  return out + "</dl>";
}

std::string runs_table(const std::vector<ReportRun>& runs) {
  std::string out =
      "<table class=\"runs\"><thead><tr><th>run</th><th class=\"num\">devices</th><th class=\"num\">wall</th>"
      "<th class=\"num\">samples/s</th><th class=\"num\">optimizer steps</th><th class=\"num\">speedup</th>"
      "<th class=\"num\">efficiency</th></tr></thead><tbody>";
  for (const ReportRun& r : runs) {
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        esc(r.label), r.devices, seconds_text(r.wall_seconds), format_count(std::round(r.samples_per_second)),
        format_count(r.optimizer_steps), std::isfinite(r.speedup) ? format_number(r.speedup) + "×" : "—",
        r.devices > 0 ? percent_text(r.speedup / r.devices) : "—");
  }
  return out + "</tbody></table>";
}

std::string setup_section(const ReportView& view, int number) {
  std::string out = section_start("setup", number, "Configuration and what was run", "");
  if (!view.notes.empty()) {
    out += "<ul class=\"notes\">";
    for (const std::string& note : view.notes) out += fmt::format("<li>{}</li>", esc(note));
    out += "</ul>";
  }
  out += "<h3>Runs</h3>" + runs_table(view.runs);
  if (view.not_in_traces.empty()) return out + "<h3>Configuration</h3>" + config_table(view.config) + "</section>";
  out += "<h3>What the traces say of the job</h3>" + config_table(view.config);
  out += "<h3>Not in the traces</h3><ul class=\"not-in-traces\">";
  for (const std::string& what : view.not_in_traces) out += fmt::format("<li>{}</li>", esc(what));
  return out + "</ul></section>";
}

// The curve's colour: this machine's link in the predicted colour, the presets in palette order.
std::vector<const char*> curve_colors(const std::vector<SpeedupCurve>& curves) {
  std::vector<const char*> colors;
  for (const SpeedupCurve& c : curves)
    colors.push_back(c.interconnect == "measured" ? kPredictedColor
                                                  : kInterconnectColors[colors.size() % kInterconnectColors.size()]);
  return colors;
}

std::string speedup_section(const ReportView& view, int number) {
  const Points& measured = view.measured_speedups;
  struct Curve {
    const SpeedupCurve* curve;
    const char* color;
  };
  std::vector<Curve> predicted;
  const std::vector<const char*> colors = curve_colors(view.predicted_speedups);
  for (std::size_t i = 0; i < colors.size(); ++i) predicted.push_back({&view.predicted_speedups[i], colors[i]});
  // The measured link's curve is drawn first, under the presets.
  std::stable_partition(predicted.begin(), predicted.end(),
                        [](const Curve& c) { return c.curve->interconnect == "measured"; });

  double max_devices = 2, min_speedup = 1, max_speedup = 1;
  const auto include = [&](const Points& points) {
    for (const auto& [d, s] : points) {
      max_devices = std::max(max_devices, d);
      min_speedup = std::min(min_speedup, s);
      max_speedup = std::max(max_speedup, s);
    }
  };
  include(measured);
  for (const Curve& c : predicted) include(c.curve->points);
  max_speedup = std::max(max_speedup, max_devices);  // the ideal line's end

  // Up to 16 devices a linear axis reads best; beyond, log2 on both axes keeps 1 and 2 apart
  // and keeps the ideal line straight.
  const bool log_axes = max_devices > 16;
  const PlotBox box{78, 16, 740, 350};
  std::unique_ptr<Scale> x, y;
  if (log_axes) {
    x = std::make_unique<Scale>(1 / 1.15, max_devices * 1.15, box.left, box.right, true);
    y = std::make_unique<Scale>(std::exp2(std::floor(std::log2(min_speedup))),
                                std::exp2(std::ceil(std::log2(max_speedup))), box.bottom, box.top, true);
  } else {
    const double pad = std::max(0.2, 0.04 * (max_devices - 1));
    x = std::make_unique<Scale>(1 - pad, max_devices + pad, box.left, box.right);
    const auto [lo, hi] = nice_range(0, max_speedup * 1.04, 6);
    y = std::make_unique<Scale>(lo, hi, box.bottom, box.top);
  }
  x->set_min_step(1);
  const auto to_pixels = [&](const Points& points) {
    Points out;
    for (const auto& [d, s] : points) out.emplace_back((*x)(d), (*y)(s));
    return out;
  };

  std::string legend = "<ul class=\"legend\">" + legend_item(kMeasuredColor, "measured") +
                       legend_item(kIdealColor, "ideal (speedup = devices)", "dotted");
  std::string svg = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 760 400\" role=\"img\" aria-label=\"Speedup against device count\">"
      "<clipPath id=\"speedup-clip\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>",
      box.left, box.top, box.right - box.left, box.bottom - box.top);
  svg += svg_axes(*x, *y, box, log_axes ? "devices (log scale)" : "devices",
                  log_axes ? "speedup over 1 device (log scale)" : "speedup over 1 device", "", "×");
  svg += "<g clip-path=\"url(#speedup-clip)\">";
  const double y_one = (*y)(1);
  svg += fmt::format(
      "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"#b42318\" stroke-width=\"1\" "
      "stroke-dasharray=\"2 3\" opacity=\"0.7\"/><text class=\"ref\" x=\"{3}\" y=\"{4}\" text-anchor=\"end\">"
      "break-even: as fast as 1 device</text>",
      box.left, box.right, svg_coord(y_one), box.right - 4, svg_coord(y_one - 5));
  svg += fmt::format(
      "<polyline class=\"ideal\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" "
      "stroke-dasharray=\"1 4\" stroke-linecap=\"round\"/>",
      svg_points(to_pixels({{x->lo(), x->lo()}, {x->hi(), x->hi()}})), kIdealColor);
  for (const auto& [curve, color] : predicted) {
    const std::string& name = curve->interconnect;
    const bool main = name == "measured";
    const std::string label = main ? "predicted (measured interconnect)" : "predicted: " + name;
    legend += legend_item(color, label, main ? "dashed" : "thin");
    svg += fmt::format(
        "<polyline class=\"predicted\" data-interconnect=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"{}\"{}><title>{}</title></polyline>",
        esc(name), svg_points(to_pixels(curve->points)), color, main ? 2.5 : 1.4,
        main ? " stroke-dasharray=\"7 4\"" : " opacity=\"0.85\"", esc(label));
    for (const auto& [d, sp] : curve->points) {
      svg += fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"#fff\" stroke=\"{}\" stroke-width=\"1.5\"><title>{}: {} "
          "devices, predicted speedup {}×</title></circle>",
          svg_coord((*x)(d)), svg_coord((*y)(sp)), main ? 4 : 2.5, color, esc(name), format_count(d),
          format_number(sp));
    }
  }
  svg += "</g>";
  for (const auto& [d, s] : measured) {
    svg += fmt::format(
        "<circle class=\"measured\" cx=\"{0}\" cy=\"{1}\" r=\"5.5\" fill=\"{2}\"><title>{3} devices: measured "
        "speedup {4}×</title></circle><text class=\"value\" x=\"{5}\" y=\"{6}\">{4}×</text>",
        svg_coord((*x)(d)), svg_coord((*y)(s)), kMeasuredColor, format_count(d), format_number(s),
        svg_coord((*x)(d) + 9), svg_coord((*y)(s) + 16));
  }
  svg += "</svg>";
  legend += "</ul>";
  const std::string lead =
      view.kind == ReportKind::kAnalyze
          ? "Throughput of N devices over one, predicted from the traces: the step runs at the slowest rank's "
            "measured compute, and its collectives are priced on the link the traces measured and on named "
            "interconnect presets. Above the break-even line, N devices beat one."
          : "Wall time of 1 device divided by wall time of N devices. Points are measured runs; lines are the "
            "scaling model's predictions at this batch size and width, on this machine's measured interconnect and "
            "on named interconnect presets. Above the break-even line, N devices beat one.";
  return section_start("speedup", number, "Speedup against devices", lead) + "<figure id=\"speedup-chart\">" + legend +
         svg + "</figure></section>";
}

std::string phase_section(const std::vector<ReportRun>& runs, int number) {
  struct Bar {
    const ReportRun* run;
    std::array<double, kPhaseCount> seconds{};
    double total = 0;
  };
  std::vector<Bar> bars;
  for (const ReportRun& r : runs) {
    if (!r.phase_seconds) continue;
    Bar bar{&r, *r.phase_seconds, 0};
    for (const double s : bar.seconds) bar.total += s;
    bars.push_back(bar);
  }
  double longest = 0;
  for (const Bar& b : bars) longest = std::max(longest, b.total);

  constexpr double kRow = 30, kGap = 16, kTop = 10;
  const double plot_bottom = kTop + static_cast<double>(std::max<std::size_t>(bars.size(), 1)) * (kRow + kGap);
  const PlotBox box{120, kTop, 690, plot_bottom};
  const auto [lo, hi] = nice_range(0, longest > 0 ? longest : 1, 6);
  const Scale x(lo, hi, box.left, box.right);

  // The phases only a trace tells are in the legend where a run has them.
  std::string legend = "<ul class=\"legend\">";
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    const bool shown =
        !traced_only(p) || std::any_of(bars.begin(), bars.end(), [&](const Bar& b) { return b.seconds[p] > 0; });
    if (shown) legend += legend_item(kPhaseColors[p], kPhaseNames[p]);
  }
  legend += "</ul>";

  std::string svg =
      fmt::format("<svg class=\"chart\" viewBox=\"0 0 760 {}\" role=\"img\" aria-label=\"Wall time by phase per run\">",
                  svg_coord(plot_bottom + 52));
  svg += svg_x_axis(x, box, "wall time (seconds; mean over ranks)") + svg_frame(box);
  double row_y = kTop + kGap / 2;
  for (const Bar& b : bars) {
    svg += fmt::format("<g class=\"bar\" data-run=\"{}\">", esc(b.run->label));
    svg += fmt::format("<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", box.left - 10,
                       svg_coord(row_y + kRow / 2 + 4), esc(b.run->label));
    double offset = 0;
    for (std::size_t p = 0; p < kPhaseCount; ++p) {
      if (b.seconds[p] <= 0) continue;
      const double x0 = x(offset), x1 = x(offset + b.seconds[p]);
      svg += fmt::format(
          "<rect class=\"segment\" data-phase=\"{0}\" x=\"{1}\" y=\"{2}\" width=\"{3}\" height=\"{4}\" fill=\"{5}\">"
          "<title>{6} · {0}: {7} s ({8} of wall)</title></rect>",
          kPhaseNames[p], svg_coord(x0), svg_coord(row_y), svg_coord(std::max(x1 - x0, 0.5)), kRow, kPhaseColors[p],
          esc(b.run->label), fmt::format("{:.3f}", b.seconds[p]), percent_text(b.seconds[p] / b.total));
      if (x1 - x0 >= 34) {
        svg += fmt::format("<text class=\"seg-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{}\">{}</text>",
                           svg_coord((x0 + x1) / 2), svg_coord(row_y + kRow / 2 + 4), text_color_on(kPhaseColors[p]),
                           format_number(b.seconds[p]));
      }
      offset += b.seconds[p];
    }
    svg += fmt::format("<text class=\"value\" x=\"{}\" y=\"{}\">{}</text></g>", svg_coord(x(b.total) + 6),
                       svg_coord(row_y + kRow / 2 + 4), seconds_text(b.total));
    row_y += kRow + kGap;
  }
  svg += "</svg>";
  const std::string lead =
      "Where each run's wall time goes, by phase (mean over ranks). <em>comm_wait</em> is time blocked on "
      "gradient communication after backward: the price of going parallel. Hover a segment for its seconds.";
  std::string body = bars.empty() ? "<p class=\"muted\">No run recorded phases.</p>" : legend + svg;
  return section_start("phases", number, "Where the time goes", lead) + "<figure id=\"phase-chart\">" + body +
         "</figure></section>";
}

std::string utilization_chart(const ReportRun& run, const char* series_class, double height) {
  const std::vector<DeviceUtilization>& devices = run.utilization;
  double t_max = 0;
  for (const DeviceUtilization& d : devices)
    for (const auto& p : d.points) t_max = std::max(t_max, p.first);
  const PlotBox box{78, 12, 740, height - 50};
  const auto [lo, hi] = nice_range(0, t_max > 0 ? t_max : 1, 8);
  const Scale x(lo, hi, box.left, box.right), y(0, 100, box.bottom, box.top);

  std::string legend = "<ul class=\"legend\">";
  std::string svg = fmt::format(
      "<svg class=\"chart\" viewBox=\"0 0 760 {}\" role=\"img\" aria-label=\"Device utilization over time, {}\">",
      svg_coord(height), esc(run.label));
  svg += svg_axes(x, y, box, "time since start (seconds)", "utilization", "", " %");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const DeviceUtilization& d = devices[i];
    const char* color = kDeviceColors[i % kDeviceColors.size()];
    const std::size_t stride = d.points.size() / kMaxPointsPerSeries + 1;
    Points pixels;
    double sum = 0;
    for (std::size_t k = 0; k < d.points.size(); ++k) {
      sum += d.points[k].second;
      if (k % stride == 0) pixels.emplace_back(x(d.points[k].first), y(std::clamp(d.points[k].second, 0.0, 100.0)));
    }
    const double mean = d.points.empty() ? kNaN : sum / static_cast<double>(d.points.size());
    // Which cores the device is: a CPU rank's percent is of the cores it could run on.
    const std::string cores =
        d.cores.empty() ? std::string()
                        : fmt::format(", core{} {}", d.cores.size() == 1 ? "" : "s", fmt::join(d.cores, ", "));
    const std::string name = fmt::format("device {} (mean {}{})", d.device,
                                         std::isfinite(mean) ? fmt::format("{:.0f} %", mean) : std::string("—"), cores);
    legend += legend_item(color, name, "thin");
    svg += fmt::format(
        "<polyline class=\"{}\" data-device=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.6\" "
        "stroke-linejoin=\"round\" opacity=\"0.9\"><title>{} · {}</title></polyline>",
        series_class, d.device, svg_points(pixels), color, esc(run.label), esc(name));
  }
  return legend + "</ul>" + svg + "</svg>";
}

bool has_utilization(const ReportRun& run) {
  for (const DeviceUtilization& d : run.utilization)
    if (!d.points.empty()) return true;
  return false;
}

// Said in place of the chart, so that the section never shows empty axes.
std::string why_no_utilization(const std::vector<ReportRun>& runs) {
  bool any_config = false, all_off = true;
  for (const ReportRun& r : runs) {
    const double interval = r.monitor_interval_ms;
    if (!std::isfinite(interval)) continue;
    any_config = true;
    all_off = all_off && interval == 0;
  }
  if (!any_config) return "No run completed, so no utilization was measured.";
  if (all_off)
    return "<code>--monitor-interval-ms 0</code>: no utilization measured (the monitor was off in every run).";
  return "No run here carries utilization samples: the monitor was on, but it could not read the cores' counters "
         "(/proc/stat) or the runs ended before they moved; each run's warnings say which.";
}

// How the main run's readings were taken, for the caption.
std::string how_measured(const ReportRun& run) {
  if (run.per_step_probe) return ", read by the seed's probe in every training step";
  const double interval = run.monitor_interval_ms;
  return std::isfinite(interval) ? fmt::format(", sampled every {} ms off the training thread", format_number(interval))
                                 : std::string();
}

std::string utilization_section(const std::vector<ReportRun>& runs, int number) {
  const ReportRun* main_run = nullptr;
  for (const ReportRun& r : runs)
    if (has_utilization(r) && (!main_run || r.devices > main_run->devices)) main_run = &r;
  std::string out = section_start(
      "utilization", number, "Device utilization over time",
      "The chart the seed's author watched in W&amp;B, measured here by ddpscope's monitor: a GPU's utilization, or "
      "on a CPU what the rank's own threads used of the cores it could run on (named beside each line), over windows "
      "of 50 ms at least (the kernel counts CPU time in 10 ms ticks). Steady lines mean the devices are busy; "
      "saw-teeth mean they wait on each other, on data or on fixed per-step costs.");
  if (!main_run) {
    return out + "<figure id=\"utilization-chart\"><p class=\"muted\">" + why_no_utilization(runs) +
           "</p></figure></section>";
  }
  out += "<figure id=\"utilization-chart\">" + utilization_chart(*main_run, "series", 330);
  out += fmt::format("<figcaption>{}, one line per device{}.</figcaption></figure>", esc(main_run->label),
                     how_measured(*main_run));
  // The seed's contrast was "steady with one device, erratic with three": show the other runs beside it.
  for (const ReportRun& r : runs) {
    if (&r == main_run || !has_utilization(r)) continue;
    out += fmt::format("<figure class=\"utilization-compare\" data-run=\"{}\"><h3>For comparison: {}</h3>{}</figure>",
                       esc(r.label), esc(r.label), utilization_chart(r, "compare-series", 230));
  }
  return out + "</section>";
}

bool has_arrivals(const ReportRun& run) {
  for (const ReportPoints& rank : run.arrival_lag_ms)
    if (!rank.empty()) return true;
  return false;
}

std::string arrival_lag_chart(const ReportRun& run) {
  double steps = 1, lag = 0;
  for (const ReportPoints& rank : run.arrival_lag_ms) {
    for (const auto& [step, ms] : rank) steps = std::max(steps, step), lag = std::max(lag, ms);
  }
  const PlotBox box{78, 12, 740, 280};
  const auto [x_lo, x_hi] = nice_range(1, steps, 8);
  const auto [y_lo, y_hi] = nice_range(0, lag > 0 ? lag : 1, 6);
  const Scale x(x_lo, x_hi, box.left, box.right), y(y_lo, y_hi, box.bottom, box.top);
  std::string legend = "<ul class=\"legend\">";
  std::string svg =
      fmt::format("<svg class=\"chart\" viewBox=\"0 0 760 330\" role=\"img\" aria-label=\"Arrival lag per step, {}\">",
                  esc(run.label));
  svg += svg_axes(x, y, box, "step", "lag behind the first rank", "", " ms");
  for (std::size_t r = 0; r < run.arrival_lag_ms.size(); ++r) {
    const ReportPoints& points = run.arrival_lag_ms[r];
    if (points.empty() && !run.shown_ranks.empty()) continue;  // a large job: the ranks shown only
    const char* color = kDeviceColors[r % kDeviceColors.size()];
    Points pixels;
    double sum = 0;
    for (const auto& [step, ms] : points) {
      sum += ms;
      pixels.emplace_back(x(step), y(std::max(ms, 0.0)));
    }
    const std::string name =
        fmt::format("rank {} (mean {} ms){}", r, points.empty() ? "—" : format_number(sum / points.size()),
                    static_cast<int>(r) == run.straggler_rank ? ", the straggler" : "");
    legend += legend_item(color, name, "thin");
    svg += fmt::format(
        "<polyline class=\"series\" data-rank=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
        "stroke-width=\"1.6\" stroke-linejoin=\"round\" opacity=\"0.9\"><title>{} · {}</title></polyline>",
        r, svg_points(pixels), color, esc(run.label), esc(name));
  }
  return legend + "</ul>" + svg + "</svg>";
}

// The largest run with arrivals: the rank that holds the others back shows as the line above.
std::string arrival_section(const std::vector<ReportRun>& runs, int number) {
  const ReportRun* main_run = nullptr;
  for (const ReportRun& r : runs)
    if (has_arrivals(r) && (!main_run || r.devices > main_run->devices)) main_run = &r;
  std::string out = section_start(
      "arrivals", number, "Arrival lag per step",
      "How long after the first rank each rank started its gradient allreduces: the rank above the others arrives "
      "last, and every other rank waits for it. Phase times cannot show this, since the allreduce makes every "
      "rank's step end together.");
  if (!main_run) {
    return out +
           "<figure id=\"arrival-chart\"><p class=\"muted\">No run here recorded arrivals at gradient collectives: "
           "they are recorded with two or more devices (one device waits for no one).</p></figure></section>";
  }
  out += "<figure id=\"arrival-chart\">" + arrival_lag_chart(*main_run);
  out += fmt::format(
      "<figcaption>{}, one line per rank: its mean lag over a step's collectives, averaged over consecutive steps "
      "into at most 200 points.</figcaption></figure>",
      esc(main_run->label));
  return out + "</section>";
}

// A job of more ranks than rows: every rank's step as a point, the ranks shown named.
std::string rank_section(const std::vector<ReportRun>& runs, int number) {
  const ReportRun* run = nullptr;
  for (const ReportRun& r : runs)
    if (!r.step_ms_per_rank.empty()) run = &r;
  std::string out = section_start(
      "ranks", number, "Every rank's step",
      fmt::format("The tables show the ranks that matter of {}: the one the others wait for, the slowest, the fastest "
                  "and the one that waits most. Here is every rank's mean step; <code>--json</code> has every "
                  "rank's parts.",
                  run->step_ms_per_rank.size()));
  double hi = 0;
  int last = 0;
  for (const auto& [rank, ms] : run->step_ms_per_rank) hi = std::max(hi, ms), last = std::max(last, rank);
  const PlotBox box{78, 12, 740, 280};
  const auto [x_lo, x_hi] = nice_range(0, std::max(1, last), 8);
  const auto [y_lo, y_hi] = nice_range(0, hi > 0 ? hi : 1, 6);
  const Scale x(x_lo, x_hi, box.left, box.right), y(y_lo, y_hi, box.bottom, box.top);
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 760 330\" role=\"img\" aria-label=\"Each rank's mean step\">";
  svg += svg_axes(x, y, box, "rank", "step", "", " ms");
  for (const auto& [rank, ms] : run->step_ms_per_rank) {
    const bool shown = std::find(run->shown_ranks.begin(), run->shown_ranks.end(), rank) != run->shown_ranks.end();
    svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"><title>rank {}: {} ms</title></circle>",
                       svg_coord(x(rank)), svg_coord(y(ms)), shown ? 4 : 2, shown ? kDeviceColors[1] : kDeviceColors[0],
                       rank, format_number(ms));
    if (shown) {
      svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"label\">{}</text>", svg_coord(x(rank) + 6),
                         svg_coord(y(ms) - 6), rank);
    }
  }
  return out + "<figure id=\"rank-chart\">" + svg +
         fmt::format(
             "</svg><figcaption>{}: each rank's mean step; the ranks in the tables are larger and named."
             "</figcaption></figure></section>",
             esc(run->label));
}

// The sizes the seed's author tried, as the question they asked: do N devices beat one there?
std::string sizes_table(const std::vector<SizeSpeedupRow>& sizes) {
  if (sizes.empty()) return "";
  std::string out =
      "<h3>The sizes tried: N devices against one</h3><p class=\"muted\">A size changes the work, so its wall time "
      "against the baseline says only that more arithmetic takes longer; what matters is whether N devices beat "
      "one at that size.</p><table id=\"sizes\"><thead><tr><th>size</th><th class=\"num\">devices</th>"
      "<th class=\"num\">wall, 1 device</th><th class=\"num\">wall, N devices</th><th class=\"num\">speedup</th>"
      "<th class=\"num\">baseline speedup</th><th class=\"num\">samples/s, N devices</th></tr></thead><tbody>";
  for (const SizeSpeedupRow& z : sizes) {
    if (!z.error.empty()) {
      out += fmt::format(
          "<tr class=\"failed\"><td>{}</td><td class=\"num\">{}</td><td colspan=\"5\" "
          "class=\"worse\">failed: {}</td></tr>",
          esc(z.name), format_count(z.devices), esc(z.error));
      continue;
    }
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num {}\">{}×</td><td class=\"num\">{}×</td><td class=\"num\">{}</td></tr>",
        esc(z.name), format_count(z.devices), seconds_text(z.one_device_wall_seconds), seconds_text(z.wall_seconds),
        z.speedup > 1 ? "better" : "worse", format_number(z.speedup), format_number(z.baseline_speedup),
        format_count(std::round(z.samples_per_second)));
  }
  return out + "</tbody></table>";
}

std::string ablation_section(const std::vector<AblationRow>& ablations, const std::vector<SizeSpeedupRow>& sizes,
                             int number) {
  std::string out = section_start(
      "ablation-results", number, "Ablations: one habit changed at a time",
      "Each row switches one thing against the baseline run at the same device count. Positive change means "
      "slower. Cost per step is the change in wall time per optimizer step. The effect states the change with "
      "its 95 % band of noise (from the runs' epoch times, or the baseline's repeats).");
  out += ablation_effect_chart(ablations);
  out +=
      "<table id=\"ablations\"><thead><tr><th>ablation</th><th class=\"num\">devices</th><th class=\"num\">epochs "
      "run</th><th class=\"num\">wall</th><th class=\"num\">baseline wall</th><th class=\"num\">change</th><th "
      "class=\"num\">cost per step</th><th>effect</th></tr></thead><tbody>";
  bool any_extrapolated = false;
  for (const AblationRow& a : ablations) {
    const std::string name = esc(a.name);
    if (!a.error.empty()) {
      out += fmt::format(
          "<tr class=\"failed\"><td>{}</td><td class=\"num\">{}</td><td colspan=\"6\" class=\"worse\">"
          "failed: {}</td></tr>",
          name, format_count(a.devices), esc(a.error));
      continue;
    }
    any_extrapolated = any_extrapolated || a.extrapolated;
    const char* change_class = a.change > 0.02 ? "worse" : a.change < -0.02 ? "better" : "";
    const double cost_ms = 1e3 * a.cost_seconds_per_step;
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}{}</td>"
        "<td class=\"num\">{}</td><td class=\"num {}\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
        name, format_count(a.devices), format_count(a.epochs_run), seconds_text(a.wall_seconds),
        a.extrapolated ? "*" : "", seconds_text(a.baseline_wall_seconds), change_class, percent_text(a.change, true),
        std::isfinite(cost_ms) ? fmt::format("{:+.3f} ms", cost_ms) : "—",
        a.effect_text.empty() ? "—" : esc(a.effect_text));
  }
  if (ablations.empty()) out += "<tr><td colspan=\"8\" class=\"muted\">No ablations ran.</td></tr>";
  out += "</tbody></table>";
  if (any_extrapolated) {
    out += "<p class=\"muted\">* Ran fewer epochs and extrapolated to the full run from steady per-epoch times.</p>";
  }
  return out + sizes_table(sizes) + "</section>";
}

std::string findings_section(const std::vector<FindingView>& findings, int number) {
  std::string out = section_start("findings-section", number, "Findings",
                                  "Ranked by measured cost. Each comes from a rule over the measurements above, with "
                                  "its evidence and the fix.");
  out += "<ol id=\"findings\">";
  int index = 0;
  for (const FindingView& f : findings) {
    ++index;
    std::string evidence;
    for (const std::string& e : f.evidence) evidence += fmt::format(" <code>{}</code>", esc(e));
    out += fmt::format("<li class=\"finding\" id=\"finding-{}\"><h3>{}</h3>", index, esc(f.title));
    out += fmt::format("<p class=\"cost\">Cost: <strong>{}</strong> · {} of wall time</p>",
                       seconds_text(f.cost_seconds), percent_text(f.share_of_wall));
    if (!f.detail.empty()) out += fmt::format("<p class=\"detail\">{}</p>", esc(f.detail));
    if (!f.fix.empty()) out += fmt::format("<p class=\"fix\"><strong>Fix:</strong> {}</p>", esc(f.fix));
    if (!evidence.empty()) out += "<p class=\"evidence muted\">Evidence:" + evidence + "</p>";
    out += "</li>";
  }
  out += "</ol>";
  if (findings.empty()) out += "<p class=\"muted\">No rule fired: nothing measured here costs enough to report.</p>";
  return out + "</section>";
}

std::string model_table(const std::vector<ModelValue>& model) {
  struct Known {
    const char* key;
    const char* label;
    double scale;
    const char* unit;
  };
  static constexpr std::array<Known, 9> kKnown = {{
      {"alpha_seconds", "allreduce latency α", 1e6, "µs"},
      {"beta_bytes_per_second", "allreduce bandwidth β", 1e-9, "GB/s"},
      {"flops_per_second", "compute rate", 1e-9, "GFLOP/s"},
      {"fixed_seconds_per_step", "fixed cost per step", 1e3, "ms"},
      {"seconds_per_kernel", "fixed cost per GPU launch", 1e6, "µs"},
      {"eager_seconds_per_kernel", "a launch from the host adds", 1e6, "µs"},
      {"host_seconds_per_step", "host time per step", 1e6, "µs"},
      {"fixed_seconds_per_epoch", "fixed cost per epoch", 1e3, "ms"},
      {"startup_seconds", "startup", 1, "s"},
  }};
  if (model.empty()) return "";
  std::string cells;
  for (const ModelValue& value : model) {
    const auto known = std::find_if(kKnown.begin(), kKnown.end(), [&](const Known& k) { return value.key == k.key; });
    std::string shown = value.text;
    if (value.number) shown = format_number(*value.number * (known == kKnown.end() ? 1 : known->scale));
    if (known != kKnown.end() && value.number) shown += std::string(" ") + known->unit;
    cells += fmt::format("<tr><td class=\"key\">{}</td><td class=\"val\">{}</td></tr>",
                         esc(known == kKnown.end() ? value.key : std::string(known->label)), esc(shown));
  }
  return "<h3>Fitted model</h3><table class=\"kv\"><tbody>" + cells + "</tbody></table>";
}

std::string predictions_section(const ReportView& view, int number) {
  std::string out = section_start(
      "prediction-results", number, "Predictions",
      fmt::format("The scaling model's wall time for other device counts, interconnects, batch sizes and widths. "
                  "Where a measured run exists it stands beside the prediction; errors beyond {:.0f} % are marked.",
                  100 * kPredictionTolerance));
  out += model_table(view.model);
  out +=
      "<h3>Predicted wall time</h3><table id=\"predictions\"><thead><tr><th>run</th><th class=\"num\">devices</th>"
      "<th>interconnect</th><th class=\"num\">batch</th><th class=\"num\">width</th>";
  const std::vector<PredictionView>& predictions = view.predictions;
  // Depth is a column only where the doctor predicted it (it varies the layers when asked, as the seed's author did).
  const bool with_layers = std::any_of(predictions.begin(), predictions.end(),
                                       [](const PredictionView& p) { return std::isfinite(p.hidden_layers); });
  if (with_layers) out += "<th class=\"num\">layers</th>";
  out +=
      "<th class=\"num\">predicted wall</th><th class=\"num\">measured wall</th><th class=\"num\">error</th>"
      "</tr></thead><tbody>";
  for (const PredictionView& p : predictions) {
    // A measured run is named by its label, which says what its ablation changed.
    out += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
        esc(p.label), format_count(p.devices), esc(p.interconnect), format_count(p.batch_size),
        format_count(p.hidden_size));
    if (with_layers) out += fmt::format("<td class=\"num\">{}</td>", format_count(p.hidden_layers));
    out += fmt::format("<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num{}\">{}</td></tr>",
                       seconds_text(p.predicted_wall_seconds) +
                           (std::isfinite(p.band) ? fmt::format(" ± {:.0f} %", 100 * p.band) : std::string()),
                       seconds_text(p.measured_wall_seconds),
                       p.modelled && std::abs(p.error) > kPredictionTolerance ? " off" : "",
                       percent_text(p.error, true) + (p.modelled ? "" : " (not modelled)"));
  }
  if (predictions.empty()) out += "<tr><td colspan=\"8\" class=\"muted\">No predictions.</td></tr>";
  return out + "</tbody></table></section>";
}

// analyze: the traced job's step on other device counts and links, each with its band.
std::string step_predictions_section(const std::vector<PredictionView>& predictions, int number) {
  std::string out = section_start("prediction-results", number, "Predictions",
                                  "What a step would take on other device counts and links, from what the traces "
                                  "measured, each with its band: the traced steps' spread, wider away from the traced "
                                  "device count.");
  out +=
      "<table id=\"predictions\"><thead><tr><th class=\"num\">devices</th><th>link</th>"
      "<th class=\"num\">predicted step</th><th class=\"num\">measured step</th></tr></thead><tbody>";
  for (const PredictionView& p : predictions) {
    // One traced step has no spread: its band is unknown, and said so.
    const std::string band = std::isfinite(p.band) ? fmt::format(" ± {:.0f} %", 100 * p.band) : " ± ? (band unknown)";
    out +=
        fmt::format("<tr><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}{}</td><td class=\"num\">{}</td></tr>",
                    format_count(p.devices), esc(p.interconnect), seconds_text(p.predicted_wall_seconds), band,
                    seconds_text(p.measured_wall_seconds));
  }
  if (predictions.empty()) out += "<tr><td colspan=\"4\" class=\"muted\">No predictions.</td></tr>";
  return out + "</tbody></table></section>";
}

std::string reproduce_section(const ReportView& view, int number) {
  std::string out = section_start("reproduce", number, "Reproduce",
                                  "The exact commands behind this report: the whole study, then each run alone.");
  std::string top;
  for (const std::string& c : view.commands) top += esc(c) + "\n";
  if (!top.empty()) out += "<pre class=\"commands\">" + top + "</pre>";
  std::string each;
  for (const ReportRun& r : view.runs) {
    if (!r.command.empty()) each += fmt::format("# {}\n{}\n", esc(r.label), esc(r.command));
  }
  if (!each.empty()) out += "<h3>Each run</h3><pre class=\"run-commands\">" + each + "</pre>";
  if (top.empty() && each.empty()) out += "<p class=\"muted\">No commands were recorded.</p>";
  return out + "</section>";
}

}  // namespace

std::string render_report_html(const ReportView& view) {
  const std::string kind = view.kind == ReportKind::kDoctor    ? "doctor"
                           : view.kind == ReportKind::kAnalyze ? "analyze"
                                                               : "compare";
  const std::string question = question_of(view);

  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  // The report must never reach the network: the browser itself refuses any fetch.
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline'; img-src data:\">";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += fmt::format("<title>ddpscope {} report: {}</title><style>\n{}</style></head><body><main>", kind, esc(question),
                     report_css());
  out += fmt::format("<header><p class=\"kicker\">ddpscope {} report · {} · version {}</p><h1>{}</h1>", kind,
                     esc(view.schema), esc(view.version), esc(question));
  if (view.seed_preset) {
    out +=
        "<blockquote>The seed's question: “3-GPU DDP trains slower than 1 GPU. Is there a key problem in this "
        "test that makes one GPU beat three, and what fix would make three faster than one?”</blockquote>";
  }
  out += verdict_html(view) + "</header>";
  int number = 0;
  out += setup_section(view, ++number);
  out += speedup_section(view, ++number);
  out += phase_section(view.runs, ++number);
  // A trace has no utilization samples and no model of the doctor's to tabulate.
  const bool analyze = view.kind == ReportKind::kAnalyze;
  if (!analyze) out += utilization_section(view.runs, ++number);
  out += arrival_section(view.runs, ++number);
  if (std::any_of(view.runs.begin(), view.runs.end(), [](const ReportRun& r) { return !r.step_ms_per_rank.empty(); }))
    out += rank_section(view.runs, ++number);
  // compare.json has neither; an empty list in doctor.json still gets its section and says so.
  if (view.ablations) out += ablation_section(*view.ablations, view.sizes, ++number);
  if (view.findings) out += findings_section(*view.findings, ++number);
  out += analyze ? step_predictions_section(view.predictions, ++number) : predictions_section(view, ++number);
  out += reproduce_section(view, ++number);
  out += fmt::format("<footer>Generated by ddpscope {}. Self-contained: no network needed to view or print.</footer>",
                     esc(view.version));
  out += fmt::format("</main><script>\n{}</script></body></html>\n", report_js());
  return out;
}

std::string render_report_html(const DoctorResult& result) { return render_report_html(build_report_view(result)); }

}  // namespace ddp
