"""Shared fixtures: a non-interactive matplotlib backend, closed figures, strict warnings, dtypes."""

import warnings

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from _helpers import error_for  # noqa: E402

# One torch thread per test process. `make test` runs two pytest-xdist workers on a 2-core machine; with torch's
# default of one thread per core, four threads fight over two cores and OpenMP's waiting threads spin: the unit
# tests took several times as long. The notebooks' kernels are processes of their own: nbval starts each with
# logical CPUs // workers threads (tools/ipc_kernels.kernel_env).
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _close_figures():
    """Every test starts and ends without open figures, and cannot leak rcParams into the next one."""
    plt.close("all")
    with matplotlib.rc_context():
        yield
    plt.close("all")


@pytest.fixture(autouse=True)
def _warnings_from_attn_course_are_errors():
    """A warning raised from attn_course's own code (a learner would see it) fails the test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", module=r"attn_course(\.|$)")
        yield


@pytest.fixture(params=[torch.float32, torch.float64], ids=["float32", "float64"])
def dtype(request):
    """Run a test once per floating dtype the course uses."""
    return request.param


@pytest.fixture
def gen():
    """A private, seeded random generator: tests never touch the global RNG for data."""
    return torch.Generator().manual_seed(1234)


@pytest.fixture
def call_unmodified():
    """``call_unmodified(fn, *args, **kwargs)``: call ``fn`` and assert no tensor argument changed.

    Compares a clone of every tensor argument (values, shape, dtype) before and after the call.
    """

    def call(fn, *args, **kwargs):
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        copies = [t.detach().clone() for t in tensors]
        result = fn(*args, **kwargs)
        name = getattr(fn, "__name__", type(fn).__name__)
        for i, (t, c) in enumerate(zip(tensors, copies, strict=True)):
            assert t.dtype == c.dtype and torch.equal(t.detach(), c), f"{name} modified tensor argument {i}"
        return result

    return call


@pytest.fixture
def int_error():
    """``int_error(value)``: the exception an integer argument must raise for ``value``."""
    return lambda value: error_for(value, int)


@pytest.fixture
def number_error():
    """``number_error(value)``: the exception a number argument (int or float) must raise for ``value``."""
    return lambda value: error_for(value, (int, float))
