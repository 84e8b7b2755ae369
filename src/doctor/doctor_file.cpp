#include "doctor/doctor_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ddpscope/error.h"
#include "io/json_fields.h"
#include "train/config/option_json.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

using json_fields::Json;
using json_fields::member;
using json_fields::read;
using json_fields::read_array;
using json_fields::read_optional;
using json_fields::read_strings;

std::string item(const std::string& where, const char* list, std::size_t i) {
  return fmt::format("{} {}[{}]", where, list, i);
}

RunRecord read_run(const Json& j, const std::string& where) {
  RunRecord run;
  run.label = read<std::string>(j, "label", where);
  run.devices = static_cast<int>(read<int64_t>(j, "devices", where));
  if (run.devices < 1)
    throw DataError(fmt::format("{} field \"devices\" is {}, expected 1 or more", where, run.devices));
  run.command = read<std::string>(j, "command", where);
  run.epochs_run = read<int64_t>(j, "epochs_run", where);
  run.epochs_full = read<int64_t>(j, "epochs", where);
  run.extrapolated = read<bool>(j, "extrapolated", where);
  run.ok = read<bool>(j, "ok", where);
  if (!run.ok) {
    run.error = read<std::string>(j, "error", where);
    return run;
  }
  run.wall_seconds = read<double>(j, "wall_seconds", where);
  run.summary = read_run_summary(member(j, "summary", where), where + " summary");
  if (!run.summary.config) throw DataError(fmt::format("{} summary field \"config\" is empty", where));
  run.config = *run.summary.config;
  if (j.contains("repeat_wall_seconds")) {
    for (const Json& wall : read_array(j, "repeat_wall_seconds", where)) {
      if (!wall.is_number())
        throw DataError(fmt::format("{} field \"repeat_wall_seconds\" holds {}", where, wall.dump()));
      run.repeat_wall_seconds.push_back(wall.get<double>());
    }
  }
  return run;
}

RunRecord read_traced_run(const Json& j, const std::string& where) {
  RunRecord run;
  run.label = read<std::string>(j, "label", where);
  run.devices = static_cast<int>(read<int64_t>(j, "devices", where));
  if (run.devices < 1)
    throw DataError(fmt::format("{} field \"devices\" is {}, expected 1 or more", where, run.devices));
  run.command = read<std::string>(j, "command", where);
  run.ok = read<bool>(j, "ok", where);
  if (!run.ok) {
    run.error = read<std::string>(j, "error", where);
    return run;
  }
  for (const Json& rank : read_array(j, "ranks", where)) {
    if (!rank.is_number_integer() || rank.get<int64_t>() < 0)
      throw DataError(fmt::format("{} field \"ranks\" holds {}, expected rank numbers", where, rank.dump()));
    run.ranks.push_back(rank.get<int>());
  }
  RunSummary& s = run.summary;
  s.world_size = static_cast<int>(run.ranks.size());
  const std::string accelerator = read<std::string>(j, "accelerator", where);
  const std::string transport = read<std::string>(j, "gradient_transport", where);
  if (const auto a = from_spelling<Accelerator>(accelerator); a && accelerator != "auto")
    s.accelerator = *a;
  else
    throw DataError(fmt::format("{} field \"accelerator\" is \"{}\", expected cpu or cuda", where, accelerator));
  if (const auto t = from_spelling<GradientTransport>(transport))
    s.gradient_transport = *t;
  else
    throw DataError(fmt::format("{} field \"gradient_transport\" is \"{}\", expected none, mpi, nccl, gloo or unknown",
                                where, transport));
  s.optimizer_steps_run = s.optimizer_steps = read<int64_t>(j, "steps", where);
  s.wall_seconds = run.wall_seconds = read<double>(j, "wall_seconds", where);
  const Json& phases = read_array(j, "phases_per_rank", where);
  for (std::size_t i = 0; i < phases.size(); ++i)
    s.phases_per_rank.push_back(read_phases(phases[i], item(where, "phases_per_rank", i)));
  if (s.phases_per_rank.size() != run.ranks.size()) {
    throw DataError(fmt::format("{} has {} \"ranks\" and {} \"phases_per_rank\", expected one for each rank", where,
                                run.ranks.size(), s.phases_per_rank.size()));
  }
  s.arrivals = read_arrivals(member(j, "arrivals", where), where + " arrivals");
  // Written since a user's command is run: null where unknown.
  if (j.contains("command_wall_seconds"))
    run.command_wall_seconds = read_optional<double>(j, "command_wall_seconds", where).value_or(0);
  if (j.contains("samples_per_step"))
    run.samples_per_step = read_optional<double>(j, "samples_per_step", where).value_or(0);
  return run;
}

PredictionRow read_prediction(const Json& j, const std::string& where, const Config& config) {
  PredictionRow row;
  row.label = read_optional<std::string>(j, "label", where);
  row.ablation = read_optional<std::string>(j, "ablation", where);
  row.workload = workload_for(config, static_cast<int>(read<int64_t>(j, "devices", where)));
  row.workload.interconnect = read<std::string>(j, "interconnect", where);
  // Written since traced results: "step" where a prediction prices a step of an unknown configuration.
  const std::string per = j.contains("per") ? read<std::string>(j, "per", where) : "run";
  if (per != "run" && per != "step")
    throw DataError(fmt::format("{} field \"per\" is \"{}\", expected \"run\" or \"step\"", where, per));
  row.per_step = per == "step";
  if (!row.per_step) {
    row.workload.batch_size = read<int64_t>(j, "batch_size", where);
    row.workload.hidden_size = read<int64_t>(j, "hidden_size", where);
    row.workload.hidden_layers = read<int64_t>(j, "hidden_layers", where);
  }
  row.predicted_wall_seconds = read<double>(j, "predicted_wall_seconds", where);
  row.predicted_speedup = read<double>(j, "predicted_speedup", where);
  row.measured_wall_seconds = read_optional<double>(j, "measured_wall_seconds", where);
  row.modelled = read<bool>(j, "modelled", where);
  row.band = read_optional<double>(j, "band", where);
  return row;
}

Finding read_finding(const Json& j, const std::string& where) {
  Finding f;
  f.title = read<std::string>(j, "title", where);
  f.detail = read<std::string>(j, "detail", where);
  f.cost_seconds = read<double>(j, "cost_seconds", where);
  f.share_of_wall = read<double>(j, "share_of_wall", where);
  f.evidence = read_strings(j, "evidence", where);
  f.fix = read<std::string>(j, "fix", where);
  if (j.contains("cost_uncertainty_seconds"))
    f.cost_uncertainty_seconds = read<double>(j, "cost_uncertainty_seconds", where);
  return f;
}

AllreduceFit::Row read_probe_row(const Json& j, const std::string& where) {
  AllreduceFit::Row row;
  row.point.ranks = static_cast<int>(read<int64_t>(j, "ranks", where));
  row.point.bytes = read<double>(j, "bytes", where);
  row.point.seconds = read<double>(j, "seconds", where);
  row.model_seconds = read<double>(j, "model_seconds", where);
  row.algbw_bytes_per_second = read<double>(j, "algbw_bytes_per_second", where);
  row.busbw_bytes_per_second = read<double>(j, "busbw_bytes_per_second", where);
  return row;
}

void read_findings(const Json& doc, const std::string& file, DoctorResult& result) {
  const Json& findings = read_array(doc, "findings", file);
  for (std::size_t i = 0; i < findings.size(); ++i) {
    result.findings.push_back(read_finding(findings[i], item(file, "findings", i)));
  }
}

}  // namespace

DoctorResult read_doctor_result(const Json& doc, const std::string& file) {
  DoctorResult result;
  const std::string schema = read<std::string>(doc, "schema", file);
  if (schema != "ddpscope.doctor/1" && schema != "ddpscope.compare/1" && schema != "ddpscope.analyze/1") {
    throw DataError(
        fmt::format("{} field \"schema\" is \"{}\", expected \"ddpscope.doctor/1\", \"ddpscope.compare/1\" or "
                    "\"ddpscope.analyze/1\"",
                    file, schema));
  }
  // Older files are all the engine's; analyze's (the doctor's document with the traces' detail)
  // all from traces.
  const std::string source = doc.contains("source") ? read<std::string>(doc, "source", file) : "engine";
  if (source != "engine" && source != "traces")
    throw DataError(fmt::format("{} field \"source\" is \"{}\", expected \"engine\" or \"traces\"", file, source));
  if (schema == "ddpscope.analyze/1" && source != "traces")
    throw DataError(fmt::format(
        "{} is analyze's (schema \"ddpscope.analyze/1\") but its field \"source\" is \"{}\", expected \"traces\"", file,
        source));
  const bool traced = source == "traces";
  result.source = traced ? RunSource::kTraces : RunSource::kEngine;
  result.ablations_run = schema == "ddpscope.doctor/1" && !traced;
  if (traced) {
    const Json& setup = member(doc, "setup", file);
    if (!setup.is_object())
      throw DataError(fmt::format("{} field \"setup\" is {}, expected an object", file, setup.dump()));
    for (const auto& [name, value] : setup.items())
      result.setup.emplace_back(name, read<std::string>(setup, name, file + " setup"));
  } else {
    result.config = config_from_json(member(doc, "config", file), file + " config");
  }
  result.notes = read_strings(doc, "notes", file);
  const std::vector<std::string> commands = read_strings(doc, "commands", file);
  if (!commands.empty()) result.command = commands.front();
  const Json& runs = read_array(doc, "runs", file);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string where = item(file, "runs", i);
    result.runs.push_back(traced ? read_traced_run(runs[i], where) : read_run(runs[i], where));
  }
  if (const Json& model = member(doc, "model", file); !model.is_null()) {
    try {
      result.model = model_from_json(nlohmann::json(model));
    } catch (const DataError& e) {
      throw DataError(fmt::format("{}: {}", file, e.what()));
    }
    result.allreduce.alpha_seconds = result.model->alpha_seconds;
    result.allreduce.beta_bytes_per_second = result.model->beta_bytes_per_second;
  }
  const Json& probe = read_array(doc, "allreduce_probe", file);
  for (std::size_t i = 0; i < probe.size(); ++i) {
    result.allreduce.rows.push_back(read_probe_row(probe[i], item(file, "allreduce_probe", i)));
  }
  const Json& predictions = read_array(doc, "predictions", file);
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    result.predictions.push_back(read_prediction(predictions[i], item(file, "predictions", i), result.config));
  }
  if (traced) read_findings(doc, file, result);
  if (!result.ablations_run) return result;
  const Json& ablations = read_array(doc, "ablations", file);
  const Json& ablation_runs = read_array(doc, "runs_ablations", file);
  if (ablations.size() != ablation_runs.size()) {
    throw DataError(fmt::format("{} has {} \"ablations\" and {} \"runs_ablations\", expected one run for each", file,
                                ablations.size(), ablation_runs.size()));
  }
  for (std::size_t i = 0; i < ablations.size(); ++i) {
    AblationResult a;
    a.name = read<std::string>(ablations[i], "name", item(file, "ablations", i));
    a.run = read_run(ablation_runs[i], item(file, "runs_ablations", i));
    a.baseline = result.run_at(a.run.devices);
    if (a.baseline == nullptr) {
      throw DataError(fmt::format("{} ablation \"{}\" ran at {} devices, where no run is its baseline",
                                  item(file, "ablations", i), a.name, a.run.devices));
    }
    result.ablations.push_back(std::move(a));
  }
  result.size_speedups = size_speedups(result.ablations, result.runs);
  read_findings(doc, file, result);
  return result;
}

DoctorResult read_doctor_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw DataError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  Json doc;
  try {
    doc = Json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{} is not valid JSON: {}", path, e.what()));
  }
  return read_doctor_result(doc, path);
}

}  // namespace ddp
