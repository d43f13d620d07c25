"""The GPU path of SpatialFilter and Retrieval: device arrays (CuPy) in, device arrays out, and
``backend="gpu"`` for host keys, with the same bits and answers as the CPU backend. The refusals
(backend names, dtypes, out= arrays, key types, lying pointers, no GPU) run everywhere; the
device tests skip visibly without a GPU and CuPy."""

import numpy as np
import pytest

import bloomlanes
from test_gpu import GPU, HAVE_CUPY, FakeDeviceArray, needs_gpu

CLASSES = ["allow", "mirror", "deny"]


def spatial(**kw):
    return bloomlanes.SpatialFilter(CLASSES, 10_000, fpr=0.01, key_type="u64", **kw)


def table():
    keys = np.arange(1, 5001, dtype=np.uint64) * 7919
    return bloomlanes.Retrieval.build(keys, (keys % 1000).astype(np.uint32)), keys


def test_backend_and_out_are_checked_on_the_host():
    f = spatial()
    keys = np.arange(10, dtype=np.uint64)
    with pytest.raises(ValueError, match="backend="):
        f.classify(keys, backend="tpu")
    with pytest.raises(ValueError, match="backend="):
        f.insert(keys, "allow", backend="tpu")
    with pytest.raises(ValueError, match="out= is for device keys"):
        f.classify(keys, out=np.zeros(10, dtype=np.uint16))
    t, _ = table()
    with pytest.raises(ValueError, match="backend="):
        t.get(keys, backend="tpu")


def test_device_arrays_are_refused_on_the_cpu_backend():
    f = spatial()
    t, _ = table()
    dev = FakeDeviceArray(0x1000, 4)
    for call in (lambda: f.classify(dev, backend="cpu"),
                 lambda: f.insert(dev, "deny", backend="cpu"),
                 lambda: t.get(dev, backend="cpu")):
        with pytest.raises(ValueError, match="backend='cpu'"):
            call()


def test_device_key_and_output_types_are_checked():
    f = spatial()
    t, _ = table()
    with pytest.raises(TypeError, match="element type"):
        f.classify(FakeDeviceArray(0x1000, 4, typestr="<f8"))
    with pytest.raises(TypeError, match="element type"):
        t.get(FakeDeviceArray(0x1000, 4, typestr="<f4"))
    with pytest.raises(ValueError, match="one-dimensional"):
        f.classify(FakeDeviceArray(0x1000, 4, shape=(2, 2)))
    # Keys of another type than the filter's: refused before any device work.
    with pytest.raises(bloomlanes.KeyTypeError):
        spatial().classify(FakeDeviceArray(0x1000, 4, typestr="<i4"))
    b = bloomlanes.SpatialFilter(CLASSES, 100, key_type="bytes")
    with pytest.raises(bloomlanes.KeyTypeError):
        b.insert(FakeDeviceArray(0x1000, 4), "allow")
    # out= must be a uint16 device array holding one class per key.
    with pytest.raises(ValueError, match="out= must be a uint16 device array of at least 4"):
        f.classify(FakeDeviceArray(0x1000, 4), out=FakeDeviceArray(0x2000, 4, "|b1"))
    with pytest.raises(ValueError, match="out= must be a uint16"):
        f.classify(FakeDeviceArray(0x1000, 4), out=FakeDeviceArray(0x2000, 3, "<u2"))
    with pytest.raises(TypeError, match="out= must be a device array"):
        f.classify(FakeDeviceArray(0x1000, 4), out=np.zeros(4, dtype=np.uint16))
    # Device classes: uint32, one per key.
    with pytest.raises(TypeError, match="device classes must be a uint32 device array"):
        f.insert(FakeDeviceArray(0x1000, 4), FakeDeviceArray(0x2000, 4, "<u2"))
    with pytest.raises(TypeError, match="device classes must be a uint32 device array"):
        f.insert(FakeDeviceArray(0x1000, 4), FakeDeviceArray(0x2000, 5, "<u4"))
    # Host classes for device keys are checked as for host keys.
    with pytest.raises(ValueError, match="no class is called"):
        f.insert(FakeDeviceArray(0x1000, 4), "nope")
    with pytest.raises(ValueError, match="3 classes for 4 keys"):
        f.insert(FakeDeviceArray(0x1000, 4), [1, 2, 3])
    assert f.key_count == 0


def test_a_lying_device_pointer_is_refused_not_dereferenced():
    # Without a GPU: no CUDA driver; with one: no allocation at 0x1000.
    f = spatial()
    with pytest.raises(ValueError, match="GPU|device"):
        f.insert(FakeDeviceArray(0x1000, 1 << 20), "allow")
    with pytest.raises(ValueError, match="GPU|device"):
        f.classify(FakeDeviceArray(0x1000, 1 << 20), out=FakeDeviceArray(0x2000, 1 << 20, "<u2"))
    assert f.key_count == 0 and f.key_type == "u64"


@pytest.mark.skipif(GPU is not None, reason="a GPU is present")
def test_backend_gpu_without_a_gpu_is_a_clear_error():
    f = spatial()
    keys = np.arange(10, dtype=np.uint64)
    with pytest.raises(ValueError, match="GPU"):
        f.insert(keys, "deny", backend="gpu")
    with pytest.raises(ValueError, match="GPU"):
        f.classify(keys, backend="gpu")
    t, tkeys = table()
    with pytest.raises(ValueError, match="GPU"):
        t.get(tkeys, backend="gpu")
    # Nothing changed, and the CPU backend still answers.
    assert f.key_count == 0 and (f.classify(keys) == 0).all()
    print("SKIP: no GPU here; the spatial and retrieval device tests ran only where one is present")


@needs_gpu
def test_spatial_device_keys_match_the_cpu_backend():
    import cupy as cp

    rng = np.random.default_rng(3)
    keys = rng.integers(0, 2**63, 20_000, dtype=np.uint64)
    classes = rng.integers(1, 4, keys.size).astype(np.uint32)
    cpu, gpu, host_gpu, dev_cls = spatial(), spatial(), spatial(), spatial()
    cpu.insert(keys, classes)
    gpu.insert(cp.asarray(keys), classes)  # host classes, copied over
    dev_cls.insert(cp.asarray(keys), cp.asarray(classes))  # device classes, borrowed
    host_gpu.insert(keys, classes, backend="gpu")
    for f in (gpu, dev_cls, host_gpu):
        assert f.to_bytes() == cpu.to_bytes()
        assert f.keys_per_class == cpu.keys_per_class
    probe = np.concatenate([keys, rng.integers(0, 2**63, 20_000, dtype=np.uint64)])
    want = cpu.classify(probe)
    got = gpu.classify(cp.asarray(probe))
    assert got.dtype == cp.uint16
    np.testing.assert_array_equal(cp.asnumpy(got), want)
    np.testing.assert_array_equal(gpu.classify(probe, backend="gpu"), want)
    out = cp.zeros(len(probe) + 3, dtype=cp.uint16)
    assert gpu.classify(cp.asarray(probe), out=out) is out
    np.testing.assert_array_equal(cp.asnumpy(out[: len(probe)]), want)
    # One class for all; then a CPU insert; the device copy follows the host filter.
    gpu.insert(cp.asarray(keys[:100]), "deny")
    cpu.insert(keys[:100], "deny")
    assert gpu.to_bytes() == cpu.to_bytes()
    more = rng.integers(0, 2**63, 1000, dtype=np.uint64)
    gpu.insert(more, "mirror")
    cpu.insert(more, "mirror")
    np.testing.assert_array_equal(cp.asnumpy(gpu.classify(cp.asarray(probe))), cpu.classify(probe))
    # A class outside 1..3 on the device: refused, nothing inserted.
    before = gpu.to_bytes()
    with pytest.raises(ValueError, match="class 7 does not exist"):
        gpu.insert(cp.asarray(keys[:10]), cp.full(10, 7, dtype=cp.uint32))
    assert gpu.to_bytes() == before


@needs_gpu
def test_retrieval_device_keys_match_the_cpu_backend():
    import cupy as cp

    t, keys = table()
    probe = np.concatenate([keys, np.arange(10**9, 10**9 + 5000, dtype=np.uint64)])
    values, found = t.get(probe)
    dv, df = t.get(cp.asarray(probe))
    assert dv.dtype == cp.uint32 and df.dtype == cp.bool_
    np.testing.assert_array_equal(cp.asnumpy(dv), values)
    np.testing.assert_array_equal(cp.asnumpy(df), found)
    hv, hf = t.get(probe, backend="gpu")
    np.testing.assert_array_equal(hv, values)
    np.testing.assert_array_equal(hf, found)
    assert found[: keys.size].all()
