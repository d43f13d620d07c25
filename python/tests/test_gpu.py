"""The GPU backend: device arrays (``__cuda_array_interface__``: CuPy, PyTorch) used in place and
``backend="gpu"``, with the same answers and bits as the CPU backend. Without a GPU or CuPy the
device tests skip visibly; the refusals (no GPU, bad interfaces) run everywhere."""

import numpy as np
import pytest

import bloomlanes

GPU = bloomlanes.gpu_device()
try:
    import cupy  # noqa: F401

    HAVE_CUPY = GPU is not None
except Exception:  # pragma: no cover - no CuPy here
    HAVE_CUPY = False

needs_gpu = pytest.mark.skipif(
    not HAVE_CUPY, reason="SKIP: no GPU with CuPy (bloomlanes.gpu_device() is None or no cupy)"
)


class FakeDeviceArray:
    """An object that claims to be a device array: the interface may lie."""

    def __init__(self, ptr, n, typestr="<u8", shape=None, strides=None, **extra):
        self.__cuda_array_interface__ = dict(
            shape=shape if shape is not None else (n,),
            typestr=typestr,
            data=(ptr, False),
            strides=strides,
            version=3,
            **extra,
        )


class DlpackOnly:
    """Exposes only DLPack (like JAX arrays): `__dlpack_device__` and `__dlpack__`."""

    def __init__(self, inner, device=None):
        self.inner = inner
        self.device = device

    def __dlpack_device__(self):
        return self.device if self.device is not None else self.inner.__dlpack_device__()

    def __dlpack__(self, stream=None, **kw):
        return self.inner.__dlpack__() if hasattr(self.inner, "__dlpack__") else self.inner


def test_dlpack_exports_are_checked():
    f = bloomlanes.Filter(1000, 0.01, key_type="u64")
    # numpy exports DLPack on the CPU: the host path takes it.
    keys = np.arange(100, dtype=np.uint64)
    f.insert(keys)
    assert f.contains(keys).all()
    # A producer that claims CUDA memory but hands over no capsule.
    with pytest.raises(TypeError, match="capsule"):
        f.contains(DlpackOnly(object(), device=(2, 0)))


def test_backend_names_are_checked():
    f = bloomlanes.Filter(1000, 0.01, key_type="u64")
    with pytest.raises(ValueError, match="backend="):
        f.insert(np.arange(10, dtype=np.uint64), backend="tpu")
    with pytest.raises(ValueError, match="out= is for device keys"):
        f.contains(np.arange(10, dtype=np.uint64), out=np.zeros(10, dtype=bool))


def test_device_array_shapes_are_refused_by_name():
    f = bloomlanes.Filter(1000, 0.01, key_type="u64")
    with pytest.raises(ValueError, match="one-dimensional"):
        f.contains(FakeDeviceArray(0x1000, 4, shape=(2, 2)))
    with pytest.raises(ValueError, match="contiguous"):
        f.contains(FakeDeviceArray(0x1000, 4, strides=(16,)))
    with pytest.raises(ValueError, match="mask"):
        f.contains(FakeDeviceArray(0x1000, 4, mask=FakeDeviceArray(0x2000, 4)))
    with pytest.raises(TypeError, match="element type"):
        f.contains(FakeDeviceArray(0x1000, 4, typestr="<f2"))
    with pytest.raises(ValueError, match="backend='cpu'"):
        f.contains(FakeDeviceArray(0x1000, 4), backend="cpu")


def test_key_type_mismatch_on_device_keys_is_an_error():
    f = bloomlanes.Filter(1000, 0.01, key_type="bytes")
    with pytest.raises(bloomlanes.KeyTypeError):
        f.contains(FakeDeviceArray(0x1000, 4))


def test_a_lying_device_pointer_is_refused_not_dereferenced():
    # Without a GPU: "no CUDA driver"; with one: the driver knows no allocation at 0x1000.
    f = bloomlanes.Filter(1000, 0.01, key_type="u64")
    with pytest.raises(ValueError, match="GPU|device"):
        f.insert(FakeDeviceArray(0x1000, 1 << 20))
    with pytest.raises(ValueError, match="GPU|device|out="):
        f.contains(FakeDeviceArray(0x1000, 1 << 20), out=FakeDeviceArray(0x2000, 1 << 20, "|b1"))


@pytest.mark.skipif(GPU is not None, reason="a GPU is present")
def test_backend_gpu_without_a_gpu_is_a_clear_error():
    f = bloomlanes.Filter(1000, 0.01, key_type="u64")
    with pytest.raises(ValueError, match="GPU"):
        f.insert(np.arange(10, dtype=np.uint64), backend="gpu")
    print("SKIP: no GPU here; the GPU backend's device tests ran only where one is present")


@needs_gpu
@pytest.mark.parametrize("dtype,key_type", [("uint64", "u64"), ("int64", "i64"), ("uint32", "u32"), ("int32", "i32")])
def test_device_keys_match_the_cpu_backend(dtype, key_type):
    import cupy as cp

    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    present = rng.integers(info.min, info.max, 200_000, dtype=dtype, endpoint=True)
    probe = np.concatenate([present[:50_000], rng.integers(info.min, info.max, 150_000, dtype=dtype, endpoint=True)])
    cpu = bloomlanes.Filter(200_000, 0.01, key_type=key_type)
    cpu.insert(present)
    gpu = cpu.empty_like()
    gpu.insert(cp.asarray(present))
    assert gpu == cpu, "GPU insert of device keys must give the CPU's bits"
    expected = cpu.contains(probe)
    got = gpu.contains(cp.asarray(probe))
    assert isinstance(got, cp.ndarray) and got.dtype == cp.bool_
    np.testing.assert_array_equal(cp.asnumpy(got), expected)
    bits = gpu.contains(cp.asarray(probe), bitmap=True)
    np.testing.assert_array_equal(cp.asnumpy(bits), cpu.contains(probe, bitmap=True))
    assert expected[:50_000].all()


@needs_gpu
def test_backend_gpu_takes_host_keys_and_out_arrays():
    import cupy as cp

    keys = np.arange(0, 3_000_000, 3, dtype=np.uint64)
    probe = np.arange(0, 1_000_000, dtype=np.uint64)
    cpu = bloomlanes.Filter(len(keys), 0.001, key_type="u64")
    cpu.insert(keys)
    gpu = cpu.empty_like()
    gpu.insert(keys, backend="gpu")
    assert gpu == cpu
    np.testing.assert_array_equal(gpu.contains(probe, backend="gpu"), cpu.contains(probe))
    np.testing.assert_array_equal(
        gpu.contains(probe, backend="gpu", bitmap=True), cpu.contains(probe, bitmap=True)
    )
    out = cp.zeros(len(probe) + 5, dtype=cp.uint8)
    r = gpu.contains(cp.asarray(probe), out=out)
    assert r is out
    np.testing.assert_array_equal(cp.asnumpy(out[: len(probe)]).astype(bool), cpu.contains(probe))
    with pytest.raises(ValueError, match="out="):
        gpu.contains(cp.asarray(probe), out=cp.zeros(10, dtype=cp.uint8))
    with pytest.raises(ValueError, match="out="):
        gpu.contains(cp.asarray(probe), out=cp.zeros(len(probe), dtype=cp.float32))


@needs_gpu
def test_device_copy_follows_host_changes():
    import cupy as cp

    f = bloomlanes.Filter(100_000, 0.01, key_type="u64")
    probe = cp.arange(1000, 2000, dtype=cp.uint64)
    assert not cp.asnumpy(f.contains(probe)).any()  # uploads an empty copy
    f.insert(np.arange(1000, 2000, dtype=np.uint64))  # CPU insert: the device copy is stale
    assert cp.asnumpy(f.contains(probe)).all()
    f.clear()
    assert not cp.asnumpy(f.contains(probe)).any()
    f.insert(probe)  # GPU insert: copied back to the host
    assert f.contains(np.arange(1000, 2000, dtype=np.uint64)).all()
    assert f.key_count == 1000


@needs_gpu
def test_dlpack_only_device_arrays_match_the_cpu_backend():
    import cupy as cp

    keys = np.arange(0, 2_000_000, 7, dtype=np.int64)
    cpu = bloomlanes.Filter(len(keys), 0.01, key_type="i64")
    cpu.insert(keys)
    gpu = cpu.empty_like()
    dev = cp.asarray(keys)
    gpu.insert(DlpackOnly(dev))
    assert gpu == cpu
    probe = cp.arange(0, 100_000, dtype=cp.int64)
    out = cp.zeros(100_000, dtype=cp.bool_)
    gpu.contains(DlpackOnly(probe), out=DlpackOnly(out))
    np.testing.assert_array_equal(cp.asnumpy(out), cpu.contains(cp.asnumpy(probe)))
    with pytest.raises(ValueError, match="one-dimensional"):
        gpu.contains(DlpackOnly(cp.zeros((4, 4), dtype=cp.int64)))
    with pytest.raises(ValueError, match="contiguous"):
        gpu.contains(DlpackOnly(cp.arange(20, dtype=cp.int64)[::2]))


@needs_gpu
def test_device_extents_are_checked():
    import cupy as cp

    f = bloomlanes.Filter(1000, 0.01, key_type="u64")
    small = cp.arange(10, dtype=cp.uint64)
    ptr = small.data.ptr
    with pytest.raises(ValueError, match="past the end"):
        f.contains(FakeDeviceArray(ptr, 1 << 20))
    with pytest.raises(ValueError, match="aligned"):
        f.insert(FakeDeviceArray(ptr + 4, 2))
    with pytest.raises(ValueError, match="not in any device allocation"):
        f.insert(FakeDeviceArray(0x1000, 2))
    assert f.key_count in (0, None)


@needs_gpu
def test_torch_tensors_work_through_the_interface():
    torch = pytest.importorskip("torch")
    import cupy as cp

    keys = torch.arange(0, 100_000, dtype=torch.int64, device="cuda")
    f = bloomlanes.Filter(100_000, 0.01, key_type="i64")
    f.insert(keys)
    cpu = bloomlanes.Filter(100_000, 0.01, key_type="i64")
    cpu.insert(np.arange(0, 100_000, dtype=np.int64))
    assert f == cpu
    out = torch.zeros(100_000, dtype=torch.bool, device="cuda")
    f.contains(keys, out=out)
    assert bool(out.all())
    del cp
