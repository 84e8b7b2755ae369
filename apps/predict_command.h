#pragma once
// `ddpscope predict --from DOCTOR.json [train's options]`: the fitted scaling model's time for
// another configuration (src/doctor/scaling_model.h), without running it. It takes the
// command line a user has for train (preset, config file, every option): the options the
// model depends on replace the doctor's configuration, the others are named as not modelled.
namespace CLI {
class App;
}

namespace ddp {

// Adds the `predict` subcommand to app with its options and a callback that runs it once
// app.parse() has read it (CLI11 calls a subcommand's callback at the end of parsing).
// The callback prints to stdout and throws UsageError (bad option values) or DataError
// (DOCTOR.json unreadable, malformed, without a "model" block, or with one that predicts no
// finite time); CLI11's own ParseErrors
// (unknown option, missing --from, a value that is not a number) leave app.parse() as usual.
void add_predict_command(CLI::App& app);

}  // namespace ddp
