"""ddpscope's start-up hook: traces a PyTorch or Lightning training script without touching it.

`ddpscope doctor -- COMMAND` and `ddpscope analyze -- COMMAND` put this file's folder first on
PYTHONPATH, so every Python process the command starts runs it at start-up. Without
DDPSCOPE_HOOK_OUT it does nothing but run the sitecustomize the user's Python would have run.
With it, in each process that steps a torch optimizer:

- torch.profiler starts at the first optimizer step and is stepped at each one after (torch 2's
  global optimizer-step hook; on 1.x each optimizer class's step is wrapped), with a schedule
  of DDPSCOPE_WAIT_STEPS steps skipped, one of warm-up and DDPSCOPE_TRACE_STEPS recorded; the
  trace is written into DDPSCOPE_HOOK_OUT as rank<R>.<pid>.pt.trace.json, R being the
  process's rank in its job (torch.distributed's, else the launcher's).
- beside it, rank<R>.<pid>.hook.json says what the hook saw: the steps, the batch's first
  dimension (Lightning), the devices the script asked for where they were overridden, the
  traces of a profiler of the script's own, whether the run was cut, and any error.
- DDPSCOPE_DEVICES overrides a Lightning Trainer's `devices` where it is constructed (an
  explicit argument beats PL_TRAINER_DEVICES); DDPSCOPE_MAX_STEPS ends training after that
  many optimizer steps (Lightning: its max_steps; plain torch: every rank leaves at that step
  once its trace is written).
- a script that runs a profiler of its own keeps it: this one stops, and the files that
  profiler exports are listed for ddpscope to read.

Nothing here may break the script: the hook's own failures are written down and said once.
"""
import os
import sys


def _chain_user_sitecustomize():
    """Runs the sitecustomize that Python would have found without this folder first."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


class _Hook:
    def __init__(self, out):
        self.out = out
        self.trace_steps = int(os.environ.get("DDPSCOPE_TRACE_STEPS", "10"))
        self.wait_steps = int(os.environ.get("DDPSCOPE_WAIT_STEPS", "4"))
        self.max_steps = int(os.environ.get("DDPSCOPE_MAX_STEPS", "0"))
        devices = os.environ.get("DDPSCOPE_DEVICES")
        self.devices = int(devices) if devices else None
        self.steps = 0
        self.rank = None
        self.world_size = None
        self.profiler = None
        self.ours = False  # set while this hook constructs its profiler
        self.trace = None
        self.own_profiler = False
        self.own_traces = []
        self.lightning = None  # {"asked_devices": ..., "used_devices": ...} once a Trainer is built
        self.batch_size = None
        self.micro_batches = 0  # Lightning's training batches, counted to tell its accumulation
        self.cut_at = None
        self.errors = []
        self.patched = set()

    # -- what the hook saw, beside the trace -------------------------------------------------

    def _rank_and_world(self):
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                return dist.get_rank(), dist.get_world_size()
        except Exception:
            pass
        for rank_name, size_name in (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
                                     ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")):
            if rank_name in os.environ:
                return int(os.environ[rank_name]), int(os.environ.get(size_name, "0")) or None
        return 0, 1

    def _name(self, suffix):
        return os.path.join(self.out, "rank%d.%d.%s" % (self.rank if self.rank is not None else 0, os.getpid(), suffix))

    def write_facts(self):
        import json

        facts = {
            "rank": self.rank,
            "world_size": self.world_size,
            "pid": os.getpid(),
            "steps": self.steps,
            "trace": os.path.basename(self.trace) if self.trace else None,
            "own_profiler": self.own_profiler,
            "own_traces": self.own_traces,
            "lightning": self.lightning,
            "batch_size": self.batch_size,
            "micro_batches": self.micro_batches,
            "cut_at": self.cut_at,
            "errors": self.errors,
            "python": sys.executable,
            "torch": sys.modules["torch"].__version__ if "torch" in sys.modules else None,
        }
        path = self._name("hook.json")
        try:
            with open(path + ".tmp", "w") as f:
                json.dump(facts, f)
            os.replace(path + ".tmp", path)
        except OSError as e:
            sys.stderr.write("ddpscope hook: cannot write %s: %s\n" % (path, e))

    def failed(self, what, error):
        text = "%s: %s: %s" % (what, type(error).__name__, error)
        if text not in self.errors:
            self.errors.append(text)
            sys.stderr.write("ddpscope hook: %s\n" % text)

    # -- the profiler ------------------------------------------------------------------------

    def _start_profiler(self):
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.ours = True
        try:
            self.profiler = profile(activities=activities,
                                    schedule=schedule(wait=self.wait_steps, warmup=1, active=self.trace_steps, repeat=1),
                                    record_shapes=True,  # the collectives' sizes: the what-if on other links
                                    on_trace_ready=self._trace_ready)
        finally:
            self.ours = False
        self.profiler.start()

    def _trace_ready(self, profiler):
        if self.own_profiler:
            return  # stopped for the script's own profiler: nothing of ours to write
        path = self._name("pt.trace.json")
        self.ours = True
        try:
            profiler.export_chrome_trace(path)
            self.trace = path
        except Exception as e:
            self.failed("writing the trace", e)
        finally:
            self.ours = False
        self.write_facts()

    def stop_profiler(self):
        profiler, self.profiler = self.profiler, None
        if profiler is not None:
            try:
                profiler.stop()
            except Exception as e:
                self.failed("stopping the profiler", e)

    # -- each optimizer step -----------------------------------------------------------------

    def after_optimizer_step(self):
        self.steps += 1
        if self.steps == 1:
            self.rank, self.world_size = self._rank_and_world()
            self._check_device_control()
            if not self.own_profiler:
                self._start_profiler()
            self.write_facts()
        elif self.profiler is not None:
            self.profiler.step()
        if self.max_steps and self.steps >= self.max_steps and self.lightning is None:
            self._leave()

    def _check_device_control(self):
        """A device count ddpscope cannot set: said at once, before the run is wasted."""
        if self.devices is None or self.lightning is not None or self.world_size == self.devices:
            return
        self.errors.append("no_device_control")
        self.write_facts()
        sys.stderr.write("ddpscope hook: this script runs %s process(es) and builds no Lightning Trainer: "
                         "ddpscope cannot make it use %d devices\n" % (self.world_size, self.devices))
        sys.stderr.flush()
        os._exit(86)

    def _leave(self):
        """--max-steps in a plain torch script: every rank leaves at this step, its trace written."""
        self.cut_at = self.steps
        self.stop_profiler()
        self.write_facts()
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized():
                dist.barrier()
        except Exception as e:
            self.failed("waiting for the other ranks at --max-steps", e)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def at_exit(self):
        if self.steps == 0:
            return
        self.stop_profiler()  # a run shorter than the schedule: what was recorded is written
        self.write_facts()

    # -- patches, applied as the modules they patch are imported -----------------------------

    def patch_optimizer(self, module):
        hook = self
        register = getattr(module, "register_optimizer_step_post_hook", None)
        if register is not None:  # torch 2: one hook for every optimizer
            register(lambda optimizer, args, kwargs: hook.guarded(hook.after_optimizer_step))
            return
        optimizer_class = module.Optimizer
        original_init = optimizer_class.__init__

        def init(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            cls = type(self)
            if "_ddpscope_step" in cls.__dict__:
                return
            original_step = cls.step

            def step(self, *args, **kwargs):
                result = original_step(self, *args, **kwargs)
                hook.guarded(hook.after_optimizer_step)
                return result

            step.__wrapped__ = original_step
            cls.step = step
            cls._ddpscope_step = True

        optimizer_class.__init__ = init

    def patch_profiler(self, module, notice_new):
        """A profiler the script makes itself: ours steps aside, and its exports are listed.
        torch.profiler's profile makes the legacy torch.autograd.profiler's as it runs: only the
        former's construction tells the script's own (notice_new)."""
        hook = self
        profile = getattr(module, "profile", None)
        if profile is None:
            return
        original_init = profile.__init__
        original_export = profile.export_chrome_trace

        def init(self, *args, **kwargs):
            if notice_new and not hook.ours and not hook.own_profiler:
                hook.own_profiler = True
                hook.stop_profiler()
                sys.stderr.write("ddpscope hook: the script runs a profiler of its own: ddpscope reads its traces\n")
            original_init(self, *args, **kwargs)

        def export(self, path, *args, **kwargs):
            result = original_export(self, path, *args, **kwargs)
            # torch.profiler's export calls the legacy profiler's: one file, listed once.
            if not hook.ours and os.path.abspath(path) not in hook.own_traces:
                hook.own_traces.append(os.path.abspath(path))
                if hook.rank is None:
                    hook.rank, hook.world_size = hook._rank_and_world()
                hook.write_facts()
            return result

        profile.__init__ = init
        profile.export_chrome_trace = export

    def patch_lightning(self, module, package):
        hook = self
        trainer_class = module.Trainer
        original_init = trainer_class.__init__

        def batch_size_callback():
            import importlib

            class BatchSize(importlib.import_module(package + ".callbacks").Callback):
                def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args):
                    hook.micro_batches += 1
                    if hook.batch_size is None:
                        hook.batch_size = _first_dimension(batch)

            return BatchSize()

        def init(self, *args, **kwargs):
            asked = kwargs.get("devices", "auto")
            if hook.devices is not None:
                kwargs["devices"] = hook.devices
            hook.lightning = {"asked_devices": _plain(asked),
                              "used_devices": hook.devices if hook.devices is not None else _plain(asked)}
            if hook.max_steps:
                asked_steps = kwargs.get("max_steps", -1)
                if asked_steps is None or asked_steps < 0 or asked_steps > hook.max_steps:
                    kwargs["max_steps"] = hook.max_steps
                    hook.cut_at = hook.max_steps
            given = kwargs.get("callbacks")
            given = [] if given is None else list(given) if isinstance(given, (list, tuple)) else [given]
            kwargs["callbacks"] = given + [batch_size_callback()]
            original_init(self, *args, **kwargs)

        trainer_class.__init__ = init

    def guarded(self, function, *args):
        try:
            function(*args)
        except Exception as e:
            self.failed(getattr(function, "__name__", "the hook"), e)


def _first_dimension(batch):
    shape = getattr(batch, "shape", None)
    if shape is not None and len(shape) > 0:
        return int(shape[0])
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)):
        for item in batch:
            found = _first_dimension(item)
            if found is not None:
                return found
    return None


def _plain(value):
    return value if isinstance(value, (int, str, list, type(None))) else repr(value)


class _AfterImport:
    """A meta path finder that patches a module once it has been executed."""

    def __init__(self, patches):
        self.patches = patches  # module name -> function(module)

    def find_spec(self, name, path=None, target=None):
        patch = self.patches.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                original = spec.loader.exec_module

                def exec_module(module, original=original, patch=patch):
                    original(module)
                    patch(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


def _install(out):
    import atexit

    hook = _Hook(out)

    def guarded(function, *args):
        return lambda module: hook.guarded(function, module, *args)

    patches = {
        "torch.optim.optimizer": guarded(hook.patch_optimizer),
        "torch.profiler.profiler": guarded(hook.patch_profiler, True),
        "torch.autograd.profiler": guarded(hook.patch_profiler, False),
        "pytorch_lightning.trainer.trainer": guarded(hook.patch_lightning, "pytorch_lightning"),
        "lightning.pytorch.trainer.trainer": guarded(hook.patch_lightning, "lightning.pytorch"),
    }
    sys.meta_path.insert(0, _AfterImport(patches))
    atexit.register(hook.guarded, hook.at_exit)


if os.environ.get("DDPSCOPE_HOOK_OUT"):
    try:
        _install(os.environ["DDPSCOPE_HOOK_OUT"])
    except Exception as e:  # the script runs untraced rather than not at all
        sys.stderr.write("ddpscope hook: not installed: %s: %s\n" % (type(e).__name__, e))
_chain_user_sitecustomize()
