// A run on a busy machine is said, and predict's band widens by what the others took.
#include "doctor/busy_machine.h"

#include <gtest/gtest.h>

#include <fstream>

#include "doctor/doctor_file.h"
#include "doctor/scaling_model.h"
#include "support/doctor_document.h"
#include "support/run_command.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

RunRecord run_with_others(double others_core_seconds) {
  RunRecord r;
  r.label = "devices=2";
  r.devices = 2;
  r.ok = true;
  r.summary.wall_seconds = 2.0;
  r.summary.host_load = {
      {.host = "node1", .cores = 2, .busy_core_seconds = 4.0 + others_core_seconds, .ranks_cpu_seconds = 4.0}};
  return r;
}

TEST(BusyMachine, ARunWhoseHostOthersUsedIsSaidAQuietOneIsNot) {
  EXPECT_FALSE(busy_note(run_with_others(0.1)).has_value());  // 5 % of one core
  const std::optional<std::string> note = busy_note(run_with_others(1.0));
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(*note,
            "devices=2: other processes used 1.00 core-seconds on node1 while it trained, 50 % of one core on "
            "average (25 % of its 2 cores): its times are slower than a quiet machine gives, and predictions "
            "from them less sure (predict widens its band by that share)");
  EXPECT_DOUBLE_EQ(*others_share_of_cores(run_with_others(1.0).summary), 0.25);
}

TEST(BusyMachine, PredictWidensItsBandByTheShareOthersTook) {
  ModelParameters m;
  m.flops_per_second = 1e10;
  m.alpha_seconds = 1e-5;
  m.beta_bytes_per_second = 1e9;
  const auto doctor_with = [&](double others) {
    return testing::doctor_document({{"devices", "2"}},
                                    {{.devices = 2, .wall_seconds = 2.0, .summary = run_with_others(others).summary}},
                                    {{.label = "devices=2", .devices = 2, .measured_wall_seconds = 2.0}}, m);
  };
  nlohmann::json doctor = doctor_with(1.0);
  EXPECT_DOUBLE_EQ(busiest_share_of_cores(read_doctor_result(doctor, "doctor.json").runs), 0.25);
  const auto dir = ddp::testing::fresh_dir("busy_predict");
  std::ofstream(dir / "doctor.json") << doctor.dump();
  const auto r =
      ddp::testing::run_command(std::string(DDPSCOPE_BINARY) + " predict --from doctor.json --devices 2", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" ± 30 % (1 device:"), std::string::npos) << r.out;  // 5 % + 25 %
  EXPECT_NE(r.out.find("Other processes took up to 25 % of the machine's cores during the doctor's runs: the band "
                       "widens by as much\n"),
            std::string::npos)
      << r.out;
  // A quiet machine's few core-milliseconds (0.1 % of its cores) are no line of their own.
  std::ofstream(dir / "doctor.json") << doctor_with(0.004).dump();
  const auto quiet =
      ddp::testing::run_command(std::string(DDPSCOPE_BINARY) + " predict --from doctor.json --devices 2", dir);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out.find("Other processes took"), std::string::npos) << quiet.out;
}

// Three ranks on a machine of two cores (the local cluster's three namespace hosts on this
// machine): said, and predict's band widens by the share of ranks without a core.
TEST(BusyMachine, RanksOutnumberingAMachinesCoresAreSaidAndWidenPredictsBand) {
  RunRecord run = run_with_others(0);
  run.devices = 3;
  run.summary.host_load[0].ranks = 3;
  const std::optional<std::string> note = shared_cores_note(run);
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(*note,
            "devices=2: its 3 ranks on node1 shared 2 cores, so each computed slower than on a core of its own: its "
            "times are slower than a machine with a core per rank gives, and predictions from them less sure "
            "(predict widens its band by the share of ranks without a core, 33 %)");
  run.summary.host_load[0].ranks = 2;
  EXPECT_FALSE(shared_cores_note(run).has_value());
  EXPECT_EQ(ranks_without_a_core_share(run.summary), 0);

  ModelParameters m;
  m.flops_per_second = 1e10;
  m.alpha_seconds = 1e-5;
  m.beta_bytes_per_second = 1e9;
  run.summary.host_load[0].ranks = 3;
  const nlohmann::json doctor =
      testing::doctor_document({{"devices", "3"}}, {{.devices = 3, .wall_seconds = 2.0, .summary = run.summary}},
                               {{.label = "devices=3", .devices = 3, .measured_wall_seconds = 2.0}}, m);
  const auto dir = ddp::testing::fresh_dir("shared_cores_predict");
  std::ofstream(dir / "doctor.json") << doctor.dump();
  const auto r =
      ddp::testing::run_command(std::string(DDPSCOPE_BINARY) + " predict --from doctor.json --devices 3", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" ± 38 % (1 device:"), std::string::npos) << r.out;  // 5 % + 33 %
  EXPECT_NE(r.out.find("Ranks outnumbered a machine's cores in the doctor's runs (33 % of its ranks without a core "
                       "of their own): the band widens by as much\n"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace ddp
