#include "doctor/scaling_model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "train/config/option_json.h"

#include <cmath>
#include <string>

#include "ddpscope/error.h"
#include "doctor/interconnect.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

ModelParameters known_parameters() {
  ModelParameters m;
  m.alpha_seconds = 0.4e-6;
  m.beta_bytes_per_second = 8e9;
  m.flops_per_second = 180e9;
  m.fixed_seconds_per_step = 35e-6;
  m.fixed_seconds_per_epoch = 1.5e-3;
  m.startup_seconds = 0.004;
  m.launch_seconds = 0.22;
  m.val_flops_per_second = 150e9;
  m.val_fixed_seconds_per_batch = 12e-6;
  m.data_seconds_per_micro_batch = 3e-6;
  m.data_seconds_per_sample = 40e-9;
  m.optimizer_seconds_per_step = 4e-6;
  m.optimizer_seconds_per_parameter = 0.15e-9;
  m.logging_seconds_per_event = 80e-6;
  m.monitor_seconds_per_micro_batch = 1.9e-3;
  m.jitter_fraction = 0.03;
  m.compute_contention = 0.07;  // ranks sharing the machine: 7 % slower per extra rank
  m.monitor_contention = 0.9;
  m.host_seconds_per_step = 6e-6;
  return m;
}

// A GPU's prices: a fixed cost per launch instead of per micro-batch, and what launching
// each kernel from the host adds.
ModelParameters known_gpu_parameters() {
  ModelParameters m = known_parameters();
  m.fixed_seconds_per_step = 0;
  m.seconds_per_kernel = 1.3e-6;
  m.eager_seconds_per_kernel = 3.1e-6;
  m.host_seconds_per_step = 9e-6;
  m.flops_per_second = 40e12;
  m.compute_contention = 0;  // one GPU: no ranks share it
  m.monitor_contention = 0;
  m.launch_seconds = 0;
  m.jitter_fraction = 0;
  m.alpha_seconds = 0;
  m.beta_bytes_per_second = 0;
  return m;
}

// A run's summary as a run of `config` would write it if the model were exact.
RunSummary synthetic_summary(const ModelParameters& model, const WorkloadConfig& c) {
  const Prediction p = predict(model, c);
  const auto text = [](auto value) { return fmt::format("{}", value); };
  RunSummary s;
  s.config = typed_config({{"input_dim", text(c.input_dim)},
                           {"hidden_size", text(c.hidden_size)},
                           {"hidden_layers", text(c.hidden_layers)},
                           {"output_dim", text(c.output_dim)},
                           {"dataset_size", text(c.dataset_size)},
                           {"batch_size", text(c.batch_size)},
                           {"max_epochs", text(c.epochs)},
                           {"accumulate_grad_batches", text(c.accumulate_grad_batches)},
                           {"check_val_every_n_epoch", text(c.check_val_every_n_epoch)},
                           {"limit_train_batches", "1.0"},
                           {"log_every_n_steps", text(c.log_every_n_steps)},
                           {"devices", text(c.devices)},
                           {"bucket_cap_mb", text(c.bucket_cap_mb)},
                           {"sync_every_micro_batch", text(c.sync_every_micro_batch)},
                           {"monitor_mode", c.monitor_per_step ? "per-step" : "background"},
                           {"no_cuda_graph", text(!c.cuda_graph)}},
                          "summary.json config");
  s.accelerator = c.on_gpu ? Accelerator::kCuda : Accelerator::kCpu;
  s.world_size = c.devices;
  s.epochs = c.epochs;
  s.optimizer_steps = p.counts.optimizer_steps;
  s.train_samples = c.epochs * p.counts.train_samples_per_epoch * c.devices;
  s.wall_seconds = p.wall_seconds;
  PhaseSeconds other_rank = p.phases;
  other_rank[static_cast<std::size_t>(Phase::kCommWait)] *= 0.5;  // rank zero's counts
  s.phases_per_rank = {p.phases};
  for (int r = 1; r < c.devices; ++r) s.phases_per_rank.push_back(other_rank);
  return s;
}

// 1, 2, 3 devices; batch 16..1024; widths 64..1024; some runs with the per-step probe, with
// sync every micro-batch, with several buckets, with other logging and validation cadences.
std::vector<WorkloadConfig> design() {
  std::vector<WorkloadConfig> configs;
  int i = 0;
  for (int devices : {1, 2, 3}) {
    for (int64_t batch : {16, 64, 256, 1024}) {
      for (int64_t width : {64, 256, 1024}) {
        WorkloadConfig c;
        c.devices = devices;
        c.batch_size = batch;
        c.hidden_size = width;
        c.dataset_size = 3000 + 7 * i;
        c.epochs = 2 + i % 4;
        c.accumulate_grad_batches = 1 + i % 3;
        c.log_every_n_steps = 3 + i % 5;
        c.check_val_every_n_epoch = 1 + i % 2;
        c.monitor_per_step = i % 5 == 0;
        c.sync_every_micro_batch = i % 7 == 3;
        c.bucket_cap_mb = i % 4 == 1 ? 0.5 : 25.0;
        configs.push_back(c);
        ++i;
      }
    }
  }
  return configs;
}

void expect_relative(double actual, double expected, const char* name) {
  EXPECT_NEAR(actual, expected, 1e-9 * std::abs(expected)) << name;
}

void expect_same_parameters(const ModelParameters& fitted, const ModelParameters& known) {
  const nlohmann::json a = to_json(fitted), b = to_json(known);
  for (const auto& [name, value] : b.items())
    expect_relative(a.at(name).get<double>(), value.get<double>(), name.c_str());
}

TEST(AllreduceFit, RecoversAlphaAndBetaExactly) {
  const double alpha = 0.4e-6, beta = 8e9;
  std::vector<AllreducePoint> points;
  for (int ranks : {2, 3, 4, 8}) {
    for (double bytes = 4; bytes <= 8e6; bytes *= 4)
      points.push_back({ranks, bytes, ring_allreduce_seconds(ranks, bytes, alpha, beta)});
  }
  const AllreduceFit fit = fit_allreduce(points);
  expect_relative(fit.alpha_seconds, alpha, "alpha");
  expect_relative(fit.beta_bytes_per_second, beta, "beta");
  ASSERT_EQ(fit.rows.size(), points.size());
  for (const AllreduceFit::Row& row : fit.rows) {
    expect_relative(row.model_seconds, row.point.seconds, "model seconds");
    EXPECT_DOUBLE_EQ(row.algbw_bytes_per_second, row.point.bytes / row.point.seconds);
    EXPECT_DOUBLE_EQ(row.busbw_bytes_per_second,
                     row.algbw_bytes_per_second * 2.0 * (row.point.ranks - 1) / row.point.ranks);
  }
}

TEST(AllreduceFit, KeepsBothTermsNonNegative) {
  // Pure bandwidth: a least-squares alpha would come out at rounding noise, possibly < 0.
  std::vector<AllreducePoint> points = {{2, 1e6, 1e6 / 5e9}, {2, 4e6, 4e6 / 5e9}, {3, 2e6, 4.0 / 3 * 2e6 / 5e9}};
  AllreduceFit fit = fit_allreduce(points);
  EXPECT_GE(fit.alpha_seconds, 0.0);
  EXPECT_NEAR(fit.beta_bytes_per_second, 5e9, 1e-6 * 5e9);
  // Larger messages faster than small ones: no bandwidth term, all latency.
  points = {{2, 8, 2e-6}, {2, 1e6, 1e-6}};
  fit = fit_allreduce(points);
  EXPECT_EQ(fit.beta_bytes_per_second, 0.0);
  EXPECT_GT(fit.alpha_seconds, 0.0);
  // One rank or nothing measured: nothing to fit.
  EXPECT_THROW(fit_allreduce(std::vector<AllreducePoint>{{1, 8, 1e-6}}), DataError);
  EXPECT_THROW(fit_allreduce(std::vector<AllreducePoint>{}), DataError);
}

TEST(Interconnect, RingModelAndBandwidthDefinitions) {
  EXPECT_EQ(ring_allreduce_seconds(1, 1e6, 1e-6, 1e9), 0.0);
  // 2 ranks: 2 steps of latency, the whole message once over the link.
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(2, 538628, 0.405e-6, 7.95e9), 2 * 0.405e-6 + 538628 / 7.95e9);
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(4, 4e6, 0, 1e9), 6.0 / 4 * 4e6 / 1e9);
  EXPECT_DOUBLE_EQ(algbw(3e9, 1.0), 3e9);
  EXPECT_DOUBLE_EQ(busbw(3, 3e9, 1.0), 4e9);
  EXPECT_DOUBLE_EQ(busbw(2, 3e9, 1.0), 3e9);
}

// The nvlink preset against published NCCL allreduce times on H100s: about 25 us for 512 KB
// over 8 GPUs (ByteDance-Seed/Triton-distributed#57) and about 23 us over 6
// (vllm-project/vllm#24111, a small message: the latency term alone).
TEST(Interconnect, NvlinkPresetIsWithinAThirdOfPublishedNcclAllreduceTimes) {
  const Interconnect& nvlink = find_interconnect("nvlink");
  const double eight = ring_allreduce_seconds(8, 512 * 1024, nvlink.alpha_seconds, nvlink.beta_bytes_per_second);
  const double six = ring_allreduce_seconds(6, 4096, nvlink.alpha_seconds, nvlink.beta_bytes_per_second);
  EXPECT_NEAR(eight / 25e-6, 1.0, 0.35) << eight;
  EXPECT_NEAR(six / 23e-6, 1.0, 0.35) << six;
}

TEST(Interconnect, PresetsAreNamedAndPositive) {
  for (const char* name : {"shared-memory", "nvlink", "pcie", "infiniband", "10gbe"}) {
    const Interconnect& link = find_interconnect(name);
    EXPECT_GT(link.alpha_seconds, 0.0) << name;
    EXPECT_GT(link.beta_bytes_per_second, 0.0) << name;
    EXPECT_FALSE(link.description.empty()) << name;
  }
  EXPECT_GT(find_interconnect("nvlink").beta_bytes_per_second, find_interconnect("infiniband").beta_bytes_per_second);
  EXPECT_GT(find_interconnect("10gbe").alpha_seconds, find_interconnect("infiniband").alpha_seconds);
  try {
    find_interconnect("token-ring");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--interconnect: 'token-ring' is not accepted; expected measured, shared-memory, nvlink, pcie, "
              "infiniband, 10gbe");
  }
}

TEST(ScalingModel, PhasesSumToTheWallAndOneDeviceDoesNotCommunicate) {
  const ModelParameters m = known_parameters();
  WorkloadConfig c;
  c.devices = 3;
  c.accumulate_grad_batches = 3;
  const Prediction p = predict(m, c);
  double total = 0;
  for (double s : p.phases) total += s;
  EXPECT_DOUBLE_EQ(total, p.wall_seconds);
  EXPECT_DOUBLE_EQ(p.speedup, p.one_device_wall_seconds / p.wall_seconds);
  // comm_wait: 600 syncs of one 538,628 B bucket, plus 3 % of the compute.
  const double sync = ring_allreduce_seconds(3, 538628, m.alpha_seconds, m.beta_bytes_per_second);
  EXPECT_DOUBLE_EQ(p.allreduce_seconds_per_sync, sync);
  const double compute =
      p.phases[static_cast<std::size_t>(Phase::kForward)] + p.phases[static_cast<std::size_t>(Phase::kBackward)];
  EXPECT_NEAR(p.phases[static_cast<std::size_t>(Phase::kCommWait)], 600 * sync + 0.03 * compute, 1e-12);
  EXPECT_DOUBLE_EQ(p.phases[static_cast<std::size_t>(Phase::kStartup)], m.startup_seconds + m.launch_seconds);
  EXPECT_EQ(p.phases[static_cast<std::size_t>(Phase::kMonitor)], 0.0);  // background monitor

  c.devices = 1;
  const Prediction one = predict(m, c);
  EXPECT_EQ(one.phases[static_cast<std::size_t>(Phase::kCommWait)], 0.0);
  EXPECT_DOUBLE_EQ(one.phases[static_cast<std::size_t>(Phase::kStartup)], m.startup_seconds);
  EXPECT_DOUBLE_EQ(one.wall_seconds, p.one_device_wall_seconds);
  EXPECT_DOUBLE_EQ(one.speedup, 1.0);
}

TEST(ScalingModel, OtherInterconnectsChangeCommunicationAndDropContention) {
  const ModelParameters m = known_parameters();
  WorkloadConfig c;
  c.devices = 8;
  c.interconnect = "nvlink";
  const Prediction fast = predict(m, c);
  c.interconnect = "10gbe";
  const Prediction slow = predict(m, c);
  EXPECT_GT(slow.phases[static_cast<std::size_t>(Phase::kCommWait)],
            fast.phases[static_cast<std::size_t>(Phase::kCommWait)]);
  EXPECT_DOUBLE_EQ(slow.phases[static_cast<std::size_t>(Phase::kForward)],
                   fast.phases[static_cast<std::size_t>(Phase::kForward)]);
  // Ranks on this machine share it: their compute is slower by the contention.
  c.interconnect = "measured";
  const Prediction measured = predict(m, c);
  EXPECT_DOUBLE_EQ(measured.phases[static_cast<std::size_t>(Phase::kForward)],
                   slow.phases[static_cast<std::size_t>(Phase::kForward)] * (1 + 7 * m.compute_contention));
  EXPECT_DOUBLE_EQ(slow.alpha_seconds, find_interconnect("10gbe").alpha_seconds);
  EXPECT_DOUBLE_EQ(slow.one_device_wall_seconds, measured.one_device_wall_seconds);
  c.interconnect = "carrier-pigeon";
  EXPECT_THROW(predict(m, c), UsageError);
}

TEST(ScalingModel, FitRecoversEveryParameterAndWallExactly) {
  const ModelParameters known = known_parameters();
  std::vector<RunSummary> summaries;
  const std::vector<WorkloadConfig> configs = design();
  for (const WorkloadConfig& c : configs) summaries.push_back(synthetic_summary(known, c));
  AllreduceFit probe;
  probe.alpha_seconds = known.alpha_seconds;
  probe.beta_bytes_per_second = known.beta_bytes_per_second;

  const ModelParameters fitted = fit_model(summaries, probe);
  expect_same_parameters(fitted, known);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    expect_relative(predict(fitted, configs[i]).wall_seconds, summaries[i].wall_seconds, "wall");
  }
}

// One GPU: batches, widths and depths (launches per micro-batch grow with depth), some runs
// eager (--no-cuda-graph), some with the per-step probe.
TEST(ScalingModel, GpuFitRecoversThePricePerLaunchAndWhatEagerLaunchesAdd) {
  const ModelParameters known = known_gpu_parameters();
  std::vector<WorkloadConfig> configs;
  int i = 0;
  for (int64_t batch : {16, 256, 1024}) {
    for (int64_t layers : {1, 3, 7}) {
      for (const bool graph : {true, false}) {
        WorkloadConfig c;
        c.on_gpu = true;
        c.cuda_graph = graph;
        c.batch_size = batch;
        c.hidden_layers = layers;
        c.hidden_size = i % 2 ? 256 : 512;
        c.dataset_size = 4000 + 13 * i;
        c.epochs = 3 + i % 3;
        c.accumulate_grad_batches = 1 + i % 3;
        c.log_every_n_steps = 4 + i % 5;
        c.monitor_per_step = i % 4 == 0;
        configs.push_back(c);
        ++i;
      }
    }
  }
  std::vector<RunSummary> summaries;
  for (const WorkloadConfig& c : configs) summaries.push_back(synthetic_summary(known, c));
  const ModelParameters fitted = fit_model(summaries, AllreduceFit{});
  expect_same_parameters(fitted, known);
  for (std::size_t j = 0; j < configs.size(); ++j) {
    expect_relative(predict(fitted, configs[j]).wall_seconds, summaries[j].wall_seconds, "wall");
  }
  // Eager launches are the host's: they land in other, one price per launch of the run.
  const WorkloadConfig graph = configs[0];
  WorkloadConfig eager = graph;
  eager.cuda_graph = false;
  const Prediction e = predict(fitted, eager), g = predict(fitted, graph);
  const auto other = static_cast<std::size_t>(Phase::kOther);
  expect_relative(e.phases[other] - g.phases[other],
                  static_cast<double>(e.counts.kernels) * known.eager_seconds_per_kernel, "eager launches");
}

// N GPUs on a link between GPUs start a NCCL communicator, at its published price; ranks on
// this machine (sharing its GPUs through host memory) and CPUs start none.
TEST(ScalingModel, GpuWorldsOnGpuLinksStartANcclCommunicator) {
  const ModelParameters m = known_gpu_parameters();
  const auto startup = [&](bool gpu, int devices, const char* link) {
    WorkloadConfig c;
    c.on_gpu = gpu;
    c.devices = devices;
    c.interconnect = link;
    return predict(m, c).phases[static_cast<std::size_t>(Phase::kStartup)];
  };
  EXPECT_DOUBLE_EQ(startup(true, 3, "nvlink"), m.startup_seconds + m.launch_seconds + kNcclStartupSeconds);
  EXPECT_DOUBLE_EQ(startup(true, 8, "pcie"), m.startup_seconds + m.launch_seconds + kNcclStartupSeconds);
  EXPECT_DOUBLE_EQ(startup(true, 3, "measured"), m.startup_seconds + m.launch_seconds);
  EXPECT_DOUBLE_EQ(startup(true, 1, "nvlink"), m.startup_seconds);
  EXPECT_DOUBLE_EQ(startup(false, 3, "nvlink"), m.startup_seconds + m.launch_seconds);
}

TEST(ScalingModel, FitRefusesRunsOfACpuAndAGpuTogether) {
  WorkloadConfig cpu, gpu;
  cpu.epochs = gpu.epochs = 2;
  gpu.on_gpu = true;
  try {
    fit_model({synthetic_summary(known_parameters(), cpu), synthetic_summary(known_gpu_parameters(), gpu)},
              AllreduceFit{});
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "the runs are of both a CPU and a GPU; a scaling model prices one kind of device");
  }
}

TEST(ScalingModel, FitOfOneRunPutsComputeIntoTheRate) {
  ModelParameters known = known_parameters();
  WorkloadConfig c;
  c.epochs = 3;
  const RunSummary summary = synthetic_summary(known, c);
  const ModelParameters fitted = fit_model({summary}, AllreduceFit{});
  EXPECT_EQ(fitted.fixed_seconds_per_step, 0.0);
  const Prediction p = predict(fitted, c);
  const double measured = summary.phases_per_rank[0][static_cast<std::size_t>(Phase::kForward)] +
                          summary.phases_per_rank[0][static_cast<std::size_t>(Phase::kBackward)];
  expect_relative(
      p.phases[static_cast<std::size_t>(Phase::kForward)] + p.phases[static_cast<std::size_t>(Phase::kBackward)],
      measured, "compute");
  expect_relative(p.wall_seconds, summary.wall_seconds, "wall");  // one run: reproduced exactly
  EXPECT_EQ(fitted.launch_seconds, 0.0);
  EXPECT_EQ(fitted.jitter_fraction, 0.0);
  EXPECT_EQ(fitted.monitor_seconds_per_micro_batch, 0.0);
}

TEST(ScalingModel, JitterIsClampedAtZero) {
  ModelParameters known = known_parameters();
  known.jitter_fraction = 0;
  std::vector<RunSummary> summaries;
  for (int devices : {1, 2}) {
    WorkloadConfig c;
    c.devices = devices;
    c.epochs = 2;
    summaries.push_back(synthetic_summary(known, c));
  }
  summaries[1].phases_per_rank[0][static_cast<std::size_t>(Phase::kCommWait)] = 0.0;  // faster than the probe says
  AllreduceFit probe;
  probe.alpha_seconds = known.alpha_seconds;
  probe.beta_bytes_per_second = known.beta_bytes_per_second;
  EXPECT_EQ(fit_model(summaries, probe).jitter_fraction, 0.0);
}

TEST(ScalingModel, FitRejectsRunsItCannotCount) {
  const ModelParameters known = known_parameters();
  WorkloadConfig c;
  c.epochs = 2;
  const RunSummary summary = synthetic_summary(known, c);
  RunSummary stopped = summary;
  stopped.optimizer_steps = 25;  // stopped by max_steps inside an epoch
  EXPECT_THROW(fit_model({stopped}, AllreduceFit{}), DataError);
  RunSummary no_phases = summary;
  no_phases.phases_per_rank.clear();
  EXPECT_THROW(fit_model({no_phases}, AllreduceFit{}), DataError);
  RunSummary bad_phase = summary;
  bad_phase.phases_per_rank[0][static_cast<std::size_t>(Phase::kForward)] = std::nan("");
  EXPECT_THROW(fit_model({bad_phase}, AllreduceFit{}), DataError);
  RunSummary no_config = summary;
  no_config.config.reset();  // its workload unknown
  EXPECT_THROW(fit_model({no_config}, AllreduceFit{}), DataError);
  EXPECT_THROW(fit_model({}, AllreduceFit{}), DataError);
}

TEST(ScalingModel, JsonRoundTripAndErrors) {
  const ModelParameters known = known_parameters();
  const nlohmann::json j = to_json(known);
  EXPECT_EQ(j.size(), 21u);
  for (const char* name : {"alpha_seconds", "beta_bytes_per_second", "flops_per_second", "fixed_seconds_per_step",
                           "fixed_seconds_per_epoch", "startup_seconds", "launch_seconds", "val_flops_per_second",
                           "val_fixed_seconds_per_batch", "data_seconds_per_micro_batch", "data_seconds_per_sample",
                           "optimizer_seconds_per_step", "optimizer_seconds_per_parameter", "logging_seconds_per_event",
                           "monitor_seconds_per_micro_batch", "jitter_fraction", "seconds_per_kernel",
                           "eager_seconds_per_kernel", "host_seconds_per_step"}) {
    EXPECT_TRUE(j.contains(name)) << name;
  }
  EXPECT_EQ(to_json(model_from_json(nlohmann::json::parse(j.dump()))), j);
  // A doctor.json from before the GPU's prices: they read as 0, the rest as written.
  nlohmann::json older = j;
  for (const char* name : {"seconds_per_kernel", "eager_seconds_per_kernel", "host_seconds_per_step"})
    older.erase(name);
  const ModelParameters read = model_from_json(older);
  EXPECT_EQ(read.host_seconds_per_step, 0.0);
  EXPECT_EQ(read.seconds_per_kernel, 0.0);
  EXPECT_EQ(read.flops_per_second, known.flops_per_second);

  nlohmann::json missing = j;
  missing.erase("jitter_fraction");
  try {
    model_from_json(missing);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "\"model\" has no \"jitter_fraction\"");
  }
  nlohmann::json text = j;
  text["flops_per_second"] = "fast";
  EXPECT_THROW(model_from_json(text), DataError);
  nlohmann::json negative = j;
  negative["launch_seconds"] = -1.0;
  EXPECT_THROW(model_from_json(negative), DataError);
  EXPECT_THROW(model_from_json(nlohmann::json::array()), DataError);
}

TEST(ScalingModel, SmallestBatchAndWidthWhereNBeatsOne) {
  const ModelParameters m = known_parameters();
  WorkloadConfig c;
  c.epochs = 20;
  const std::optional<int64_t> batch = smallest_batch_where_n_beats_one(m, c, 2);
  ASSERT_TRUE(batch.has_value());
  // The search agrees with predict(): the value found wins, the one before it does not.
  WorkloadConfig at = c;
  at.devices = 2;
  at.batch_size = *batch;
  EXPECT_LT(predict(m, at).speedup, 1e9);
  EXPECT_GT(predict(m, at).speedup, 1.0);
  if (*batch > 16) {
    at.batch_size = *batch / 2;
    EXPECT_LE(predict(m, at).speedup, 1.0);
  }
  const std::optional<int64_t> width = smallest_width_where_n_beats_one(m, c, 2);
  ASSERT_TRUE(width.has_value());
  at = c;
  at.devices = 2;
  at.hidden_size = *width;
  EXPECT_GT(predict(m, at).speedup, 1.0);

  // A launch that costs more than any run saves: no batch or width in range wins.
  ModelParameters slow_launch = m;
  slow_launch.launch_seconds = 1e9;
  EXPECT_FALSE(smallest_batch_where_n_beats_one(slow_launch, c, 2).has_value());
  EXPECT_FALSE(smallest_width_where_n_beats_one(slow_launch, c, 2).has_value());
  EXPECT_THROW(smallest_batch_where_n_beats_one(m, c, 1), UsageError);
}

TEST(ScalingModel, BreakEvenIsWhereNDevicesStayFaster) {
  EXPECT_EQ(break_even({{16, 1.2}, {32, 1.1}, {64, 0.9}, {128, 1.05}, {256, 1.1}}), 128);
  EXPECT_EQ(break_even({{16, 1.2}, {32, 1.1}}), 16);
  // Faster at small batches only: no batch from which N devices win.
  EXPECT_FALSE(break_even({{16, 1.2}, {32, 0.97}, {64, 0.95}}).has_value());
  EXPECT_FALSE(break_even({{16, 0.5}, {32, 1.0}}).has_value());

  // The sweep is predict()'s speedup at each batch, the numbers predict prints.
  const ModelParameters m = known_parameters();
  WorkloadConfig c;
  c.epochs = 20;
  const std::vector<SweepPoint> sweep = batch_sweep(m, c, 3);
  ASSERT_EQ(sweep.size(), 13u);
  for (const SweepPoint& point : sweep) {
    WorkloadConfig at = c;
    at.devices = 3;
    at.batch_size = point.value;
    EXPECT_EQ(point.speedup, predict(m, at).speedup) << point.value;
  }
  EXPECT_EQ(width_sweep(m, c, 3).back().value, 8192);
}

TEST(ScalingModel, RequiresAFinitePositivePrediction) {
  WorkloadConfig c;
  c.devices = 2;
  EXPECT_NO_THROW(require_finite_prediction(known_parameters(), c));
  ModelParameters huge = known_parameters();
  huge.fixed_seconds_per_step = 1e308;
  try {
    require_finite_prediction(huge, c);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "\"model\" predicts a wall time of inf s for 2 devices x batch 256; expected a "
              "finite time > 0 (write the model with 'ddpscope doctor')");
  }
  EXPECT_THROW(require_finite_prediction(ModelParameters{}, c), DataError);
}

}  // namespace
}  // namespace ddp
