"""Debian 12's python3-torch (1.13) predates Python 3.11, and two of its parts fail there. The
tests put this folder on PYTHONPATH to mend them, as a user of that Debian would have to;
ddpscope's hook runs it as it runs any sitecustomize the user has (the hook's own comes first).

- torch.distributed._shard declares a dataclass field whose default is another, unhashable,
  dataclass, which Python 3.11 refuses ("mutable default ... use default_factory"), so importing
  FSDP, and with it any Lightning, fails: that one class is made hashable before torch defines it.
- torchrun's Std.from_str finds a value by iterating the Std flags, which on Python 3.11 skips
  NONE and ALL, so torchrun fails at start ('NoneType' object has no attribute 'get'): it is
  given a from_str that builds the flag from its number.
"""
import dataclasses
import sys

_dataclass = dataclasses.dataclass


def dataclass(cls=None, /, **kwargs):
    def wrap(c):
        if c.__module__ == "torch.distributed._shard.sharded_tensor.metadata" and c.__name__ == "TensorProperties":
            kwargs.setdefault("unsafe_hash", True)
        return _dataclass(c, **kwargs)

    return wrap if cls is None else wrap(cls)


dataclasses.dataclass = dataclass


def _mend_std(module):
    std = module.Std

    def from_str(vm):
        if ":" in vm:
            return {int(i): std(int(v)) for i, v in (item.split(":") for item in vm.split(","))}
        return std(int(vm))

    std.from_str = staticmethod(from_str)


class _AfterImport:
    name = "torch.distributed.elastic.multiprocessing.api"

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                run = spec.loader.exec_module

                def exec_module(module, run=run):
                    run(module)
                    _mend_std(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


sys.meta_path.insert(0, _AfterImport())
