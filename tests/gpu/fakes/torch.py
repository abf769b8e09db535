"""A test double of the few torch calls peer_transformers.py makes, for `run_on_device.sh
selftest` on a machine without torch: it runs the peer's whole code path (no numbers that
mean anything). Never on the GPU machine's PYTHONPATH."""
import contextlib
import random

__version__ = "0.0-fake"
float16 = "float16"
float32 = "float32"
_default_dtype = float32


class _Version:
    cuda = "fake"


version = _Version()


class device:
    def __init__(self, kind):
        self.type = kind

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Tensor:
    def __init__(self, shape, dtype=None, dev="cuda"):
        self.shape = tuple(shape)
        self.dtype = dtype or _default_dtype
        self.device = device(dev)

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        shape = [n for n, i in zip(self.shape, idx) if isinstance(i, slice)] + list(self.shape[len(idx):])
        return Tensor(shape, self.dtype)

    def argmax(self, dim=-1, keepdim=False):
        shape = list(self.shape)
        if keepdim:
            shape[dim] = 1
        else:
            del shape[dim]
        return Tensor(shape, "int64")

    def to(self, *args, **kwargs):
        return self

    def float(self):
        return Tensor(self.shape, float32)

    def std(self):
        return 0.02

    def all(self):
        return True

    def item(self):
        return 0

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n


def get_default_dtype():
    return _default_dtype


def set_default_dtype(d):
    global _default_dtype
    _default_dtype = d


def manual_seed(seed):
    random.seed(seed)


class Generator:
    def manual_seed(self, seed):
        return self


def randint(low, high, shape, generator=None):
    return Tensor(shape, "int64", "cpu")


def ones_like(t):
    return Tensor(t.shape, t.dtype)


def isfinite(t):
    return t


def inference_mode():
    return contextlib.nullcontext()


class _Cuda:
    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            self.t = random.uniform(0, 1)

        def elapsed_time(self, other):
            return 1.0 + abs(other.t - self.t)

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def get_device_name(i=0):
        return "fake GPU"

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def empty_cache():
        pass


cuda = _Cuda()
