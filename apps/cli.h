#pragma once
// The ddpscope command line: subcommands over the library's calls.
namespace ddp {

// Runs the command line; returns the process exit code. Errors are reported on stderr.
int run_cli(int argc, char** argv);

}  // namespace ddp
