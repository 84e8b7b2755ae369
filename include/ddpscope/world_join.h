#pragma once
// The step before a Trainer: where this process trains. As Lightning's DDP launcher re-runs
// the script, a process started by hand for several devices runs the job under mpirun and
// only supervises it; each rank then joins the MPI world:
//
//   if (const std::optional<int> job = run_ranks_if_launcher(options)) return *job;
//   Trainer trainer(options, join_world(options, hparams), hparams);
#include <memory>
#include <optional>
#include <utility>

#include "ddpscope/config.h"

namespace ddp {

// With --devices N > 1 in a process that mpirun did not start: re-launches this program
// (its own command line) under `mpirun -np N` and returns the job's exit code once every
// rank has ended. Otherwise nullopt: this process is the one that trains.
std::optional<int> run_ranks_if_launcher(const TrainerOptions& options, bool verbose = false);

// The communicator a Trainer trains with: the MPI world under mpirun (checked against
// --devices and --num-nodes, and every rank's hparams against rank zero's, so ranks with
// different options never train together), or one rank alone: started without mpirun, or
// with --strategy single (one process training alone inside a multi-rank job).
class Communicator;  // what ranks say to each other: internal to ddpscope

class World {
 public:
  static World alone();
  explicit World(Communicator& shared);  // the process's MPI world
  explicit World(std::unique_ptr<Communicator> owned);
  World(World&&) noexcept;
  World& operator=(World&&) noexcept;
  ~World();
  Communicator& comm() const { return *comm_; }

 private:
  Communicator* comm_;
  std::unique_ptr<Communicator> owned_;
};

World join_world(const TrainerOptions& options, const OptionTexts& hparams = {});

}  // namespace ddp
