#include "dist/world.h"

#include "dist/mpi_c.h"

#include <exception>
#include <memory>

#include "dist/mpi_communicator.h"

namespace ddp {
namespace {
std::unique_ptr<Communicator>& world_slot() {
  static std::unique_ptr<Communicator> world;
  return world;
}
}  // namespace

Communicator& mpi_world() {
  std::unique_ptr<Communicator>& world = world_slot();
  if (!world) world = make_mpi_communicator();
  return *world;
}

void release_mpi_world() { world_slot().reset(); }

void leave_together_after_stop() noexcept {
  const std::unique_ptr<Communicator>& world = world_slot();
  if (!world || world->size() == 1) return;
  try {
    world->barrier();
  } catch (const std::exception&) {  // a rank already gone: mpirun ends the job anyway
  }
}

void end_job_on_error(int exit_code) {
  const std::unique_ptr<Communicator>& world = world_slot();
  if (world && world->size() > 1) abort_mpi_job(exit_code);
}

}  // namespace ddp
