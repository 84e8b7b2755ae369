#pragma once
// Open MPI's files of one launched job, in one folder the launcher owns: mpirun's session
// directory (else /tmp/ompi.<host>.<uid>/pid.<mpirun>) and the shared-memory segments of the
// ranks (else /dev/shm/vader_segment.*). Open MPI removes them only when mpirun ends
// normally; a killed mpirun left them behind. The launcher removes the folder when the job
// has ended, and each launch removes the folders of launchers that were killed.
#include <string>
#include <vector>

namespace ddp {

class JobScratch {
 public:
  // <base>/ddpscope-job.<this pid>, base /dev/shm where it is writable (the segments then stay
  // in memory, as Open MPI keeps them), else $TMPDIR or /tmp. First removes any folder there
  // whose launcher is gone.
  JobScratch();
  ~JobScratch();
  JobScratch(const JobScratch&) = delete;
  JobScratch& operator=(const JobScratch&) = delete;

  const std::string& path() const { return path_; }
  // mpirun's arguments that put the job's files here.
  std::vector<std::string> mpirun_args() const;

 private:
  std::string path_;
};

}  // namespace ddp
