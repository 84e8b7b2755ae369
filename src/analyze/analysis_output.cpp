// The analysis as text (the doctor's layout: the table, the straggler, the findings, the
// notes) and as JSON (the doctor's document with the traces' detail).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

#include "analyze/trace_analysis.h"
#include "doctor/doctor_result.h"
#include "doctor/ranks_shown.h"

namespace ddp {
namespace {

std::size_t index(Phase part) { return static_cast<std::size_t>(part); }

nlohmann::ordered_json parts_json(const std::array<double, kPhaseCount>& ms) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Phase p : kStepPhases) j[std::string(phase_name(p))] = ms[index(p)];
  return j;
}

// The rows of the text: every rank of a small job, the ranks that matter of a large one.
std::vector<ShownRank> shown_ranks(const TraceAnalysis& a) {
  std::vector<double> steps;
  for (const RankBreakdown& b : a.ranks) steps.push_back(b.step_ms);
  std::vector<double> waits;
  std::optional<std::size_t> waited_for;
  if (a.collectives && a.collectives->matched > 0) {
    waits = a.collectives->wait_ms_per_step;
    if (a.collectives->straggler) waited_for = static_cast<std::size_t>(a.collectives->straggler->rank);
  }
  if (!waited_for && a.slower_rank) {
    for (std::size_t i = 0; i < a.ranks.size(); ++i)
      if (a.ranks[i].rank == a.slower_rank->rank) waited_for = i;
  }
  return ranks_to_show(steps, waits, waited_for);
}

}  // namespace

std::string analysis_text(const TraceAnalysis& a) {
  fmt::memory_buffer out;
  auto to = std::back_inserter(out);
  const TracedRank& first = a.job.ranks.front();
  int64_t fewest = a.ranks.front().steps, most = fewest;
  for (const RankBreakdown& b : a.ranks) {
    fewest = std::min(fewest, b.steps);
    most = std::max(most, b.steps);
  }
  fmt::format_to(to, "{} rank{} of a job of {}{}{}, {} step{} each ({}).\n\n", a.ranks.size(),
                 a.ranks.size() == 1 ? "" : "s", a.job.world_size, first.steps.on_gpu ? " on GPUs" : " on CPUs",
                 a.job.backend.empty() ? "" : fmt::format(" over {}", a.job.backend),
                 fewest == most ? fmt::format("{}", most) : fmt::format("{} to {}", fewest, most), most == 1 ? "" : "s",
                 first.steps.step_source);
  fmt::format_to(to, "Where each step's time goes, ms per step (mean over the steps analysed{}):\n",
                 first.steps.on_gpu ? "; the GPU's time: kernels by the part that launched them, communication not "
                                      "hidden under compute, idle time by what the host was doing"
                                    : "; the training thread's time");
  const std::vector<ShownRank> shown = shown_ranks(a);
  const bool every_rank = shown.size() == a.ranks.size();
  fmt::format_to(to, "{:>5} {:>9} {:>7}", "rank", "step", "±sd");
  for (const Phase p : kStepPhases) fmt::format_to(to, " {:>12}", phase_name(p));
  fmt::format_to(to, "\n");
  for (const ShownRank& r : shown) {
    const RankBreakdown& b = a.ranks[r.index];
    fmt::format_to(to, "{:>5} {:>9.3f} {:>7.3f}", b.rank, b.step_ms, b.step_ms_stddev);
    for (const Phase p : kStepPhases) fmt::format_to(to, " {:>12.3f}", b.part_ms[index(p)]);
    fmt::format_to(to, "{}\n", r.why.empty() ? "" : "  " + r.why);
  }
  if (!every_rank) {
    std::vector<double> steps;
    for (const RankBreakdown& b : a.ranks) steps.push_back(b.step_ms);
    fmt::format_to(to, "(the ranks that matter of {}; --json has every rank) Step over all {} ranks: {}.\n",
                   a.ranks.size(), a.ranks.size(), spread_text(spread_of(steps), " ms"));
  }
  if (a.collectives && a.collectives->matched > 0) {
    const CollectiveMatch& c = *a.collectives;
    fmt::format_to(to,
                   "\nCollectives: {} matched across the ranks over {} steps. Per step, transfer {:.3f} ms; "
                   "waiting for the others:",
                   c.matched, c.steps, c.transfer_ms_per_step.front());
    if (every_rank) {
      for (std::size_t r = 0; r < a.ranks.size(); ++r) {
        fmt::format_to(to, "{} rank {} {:.3f} ms", r == 0 ? "" : ",", a.ranks[r].rank, c.wait_ms_per_step[r]);
      }
    } else {
      fmt::format_to(to, " {}", spread_text(spread_of(c.wait_ms_per_step), " ms"));
    }
    fmt::format_to(to, ".\n");
    if (c.straggler && a.straggler_part) {
      const RankBreakdown& slow = a.ranks[static_cast<std::size_t>(c.straggler->rank)];
      fmt::format_to(to,
                     "Straggler: rank {}. The others wait for it; it is slowest in {}, {:.3f} ms per step more than "
                     "the slowest other rank ({:.1f} % of its step).\n",
                     slow.rank, kPhaseNames[index(a.straggler_part->part)], a.straggler_part->excess_ms_per_step,
                     100 * a.straggler_part->excess_ms_per_step / slow.step_ms);
    } else if (a.slower_rank) {
      fmt::format_to(to,
                     "Slower rank: {}. The others wait for it; it is slower in {}, {:.3f} ms per step more than the "
                     "slowest other rank, which the traces cannot tell from a shared or slower core.\n",
                     a.slower_rank->rank, kPhaseNames[index(a.slower_rank->parts.front().part)],
                     a.slower_rank->parts.front().excess_ms_per_step);
    } else {
      fmt::format_to(to, "No straggler: no rank holds the others back by more than the noise.\n");
    }
  }
  if (a.prediction) {
    const TracePrediction& p = *a.prediction;
    const std::string compute =
        p.fitted_devices.empty()
            ? fmt::format("the slowest rank's measured {:.3f} ms of compute per step", p.compute_ms)
            : fmt::format(
                  "compute per step fitted across the traced jobs at {} devices: {:.3f} ms on one, {:+.1f} % "
                  "per added device",
                  fmt::join(p.fitted_devices, ", "), p.compute_ms, 100 * p.contention);
    fmt::format_to(
        to,
        "\nOn other devices and links ({}; {:.1f} collective{} of {} per step as ring allreduces; the "
        "slowest rank blocked {:.2f} ms per ms of their transfer, as measured):\n",
        compute, p.collectives_per_step, p.collectives_per_step == 1 ? "" : "s",
        p.bytes_per_step > 0 ? fmt::format("{:.2f} MB", p.bytes_per_step / 1e6) : std::string("unknown size"),
        p.blocked_per_transfer);
    fmt::format_to(to, "{:>15}", "link");
    for (const TracePredictionRow& r : p.rows) {
      if (r.link == p.rows.front().link) fmt::format_to(to, " {:>22}", fmt::format("{} devices", r.devices));
    }
    for (std::size_t i = 0; i < p.rows.size(); ++i) {
      if (i == 0 || p.rows[i].link != p.rows[i - 1].link) fmt::format_to(to, "\n{:>15}", p.rows[i].link);
      const TracePredictionRow& r = p.rows[i];
      const std::string band = std::isfinite(r.band) ? fmt::format("±{:.0f}%", 100 * r.band) : "±?";
      fmt::format_to(to, " {:>22}", fmt::format("{:.2f} ms {:.2f}x {}", r.step_ms, r.throughput, band));
    }
    fmt::format_to(to,
                   "\n(step time, throughput relative to one device, and the band: the traced steps' spread, "
                   "wider away from the traced device count)\n");
    for (const std::string& u : p.unknown) fmt::format_to(to, "Not in the traces: {}.\n", u);
  } else {
    fmt::format_to(to, "\nNo prediction for other devices: {}.\n", a.no_prediction);
  }
  fmt::format_to(to, "{}{}", findings_text(a.result.findings), notes_text(a.result.notes));
  return fmt::to_string(out);
}

nlohmann::ordered_json to_json(const TraceAnalysis& a) {
  nlohmann::ordered_json j = to_json(a.result);
  j["schema"] = "ddpscope.analyze/1";
  j["world_size"] = a.job.world_size;
  j["backend"] = a.job.backend.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(a.job.backend);
  j["ranks"] = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < a.ranks.size(); ++i) {
    const RankBreakdown& b = a.ranks[i];
    const RankSteps& s = a.job.ranks[i].steps;
    j["ranks"].push_back({{"rank", b.rank},
                          {"path", b.path},
                          {"on_gpu", s.on_gpu},
                          {"step_source", s.step_source},
                          {"steps", b.steps},
                          {"dropped_warmup", s.dropped_warmup},
                          {"dropped_partial", s.dropped_partial},
                          {"step_ms", b.step_ms},
                          {"step_ms_stddev", b.step_ms_stddev},
                          {"parts_ms", parts_json(b.part_ms)},
                          {"collectives_per_step",
                           {{"forward_passes", b.syncs.forward_passes},
                            {"gradient", b.syncs.gradient_calls},
                            {"gradient_syncs", b.syncs.gradient_syncs},
                            {"gradient_ms", b.syncs.gradient_ms},
                            {"other", b.syncs.other_calls},
                            {"other_ms", b.syncs.other_ms}}}});
  }
  if (a.collectives) {
    const CollectiveMatch& c = *a.collectives;
    j["collectives"] = {{"matched", c.matched},
                        {"steps", c.steps},
                        {"transfer_ms_per_step", c.transfer_ms_per_step},
                        {"wait_ms_per_step", c.wait_ms_per_step}};
    if (c.straggler && a.straggler_part) {
      j["straggler"] = {{"rank", a.ranks[static_cast<std::size_t>(c.straggler->rank)].rank},
                        {"part", kPhaseNames[index(a.straggler_part->part)]},
                        {"excess_ms_per_step", a.straggler_part->excess_ms_per_step},
                        {"others_wait_ms_per_step", 1e3 * c.straggler->cost_seconds_per_step}};
    } else {
      j["straggler"] = nullptr;
    }
    if (a.slower_rank) {
      nlohmann::ordered_json parts = nlohmann::ordered_json::object();
      for (const SlowPart& p : a.slower_rank->parts)
        parts[std::string(kPhaseNames[index(p.part)])] = p.excess_ms_per_step;
      j["slower_rank"] = {{"rank", a.slower_rank->rank}, {"excess_ms_per_step", parts}};
    }
  }
  if (a.prediction) {
    const TracePrediction& p = *a.prediction;
    nlohmann::ordered_json links = nlohmann::ordered_json::array();
    for (const TraceLink& l : p.links) {
      links.push_back(
          {{"name", l.name}, {"alpha_seconds", l.alpha_seconds}, {"beta_bytes_per_second", l.beta_bytes_per_second}});
    }
    j["prediction"] = {
        {"compute_ms", p.compute_ms},
        {"contention", p.contention},
        {"fitted_devices", p.fitted_devices},
        {"blocked_per_transfer", p.blocked_per_transfer},
        {"collectives_per_step", p.collectives_per_step},
        {"bytes_per_step", p.bytes_per_step > 0 ? nlohmann::ordered_json(p.bytes_per_step) : nlohmann::ordered_json()},
        {"links", links},
        {"unknown", p.unknown}};
  } else {
    j["prediction"] = {{"none", a.no_prediction}};
  }
  return j;
}

}  // namespace ddp
