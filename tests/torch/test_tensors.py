"""Tensors on the device: creation, round trips of several dtypes and layouts, views, printing,
indexing through the CPU fallback, and the device guard (a second device)."""
import pytest
import torch

import torch_mtia

DEV = torch.device("mtia", 0)
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool]


def sample(dtype, shape=(5, 7)):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=g) * 50
    return (x > 0) if dtype == torch.bool else x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_keeps_values_and_dtype(dtype):
    x = sample(dtype)
    y = x.to(DEV)
    assert y.device == DEV and y.dtype == dtype
    assert torch.equal(y.cpu(), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16])
def test_non_contiguous_layouts_round_trip(dtype):
    x = sample(dtype, (6, 8))
    for view in (x.t(), x[::2, 1::3], x[:, 3], x.unsqueeze(0).expand(3, 6, 8)):
        assert torch.equal(view.to(DEV).cpu(), view)
    # device-side non-contiguous views copied back to the host
    y = x.to(DEV)
    assert torch.equal(y.t().cpu(), x.t())
    assert torch.equal(y[::2, 1::3].cpu(), x[::2, 1::3])
    assert torch.equal(y.t().contiguous().cpu(), x.t().contiguous())


def test_copy_into_non_contiguous_device_destination():
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    y = torch.zeros(6, 4, device=DEV)
    y.t().copy_(x)  # host to a strided device view
    assert torch.equal(y.cpu(), x.t())
    z = torch.zeros(4, 6, device=DEV)
    z.copy_(y.t())  # device to device, strided source
    assert torch.equal(z.cpu(), x)


def test_dtype_conversion_in_copies():
    x = torch.linspace(-3.7, 3.7, 11)
    assert torch.equal(x.to(DEV).to(torch.int32).cpu(), x.to(torch.int32))
    assert torch.equal(x.to(DEV, torch.float16).cpu(), x.to(torch.float16))
    assert torch.equal(x.to(DEV).to(torch.float64).cpu(), x.to(torch.float64))
    assert torch.equal(x.to(DEV).cpu().to(torch.bfloat16), x.to(torch.bfloat16))
    d = torch.empty(11, dtype=torch.float64, device=DEV)
    d.copy_(x)
    assert torch.equal(d.cpu(), x.to(torch.float64))


def test_fill_zero_and_factories():
    a = torch.full((3, 4), 2.5, device=DEV)
    assert torch.equal(a.cpu(), torch.full((3, 4), 2.5))
    b = torch.ones(3, 4, dtype=torch.int64, device=DEV)
    b.t().fill_(7)  # strided fill
    assert torch.equal(b.cpu(), torch.full((3, 4), 7))
    b.zero_()
    assert torch.equal(b.cpu(), torch.zeros(3, 4, dtype=torch.int64))
    c = torch.zeros(5, device=DEV, dtype=torch.float16)
    assert torch.equal(c.cpu(), torch.zeros(5, dtype=torch.float16))


def test_views_resize_print_and_index():
    x = torch.arange(12, dtype=torch.float32)
    y = x.to(DEV)
    v = y.view(3, 4)
    assert v.data_ptr() == y.data_ptr()
    assert torch.equal(v.cpu(), x.view(3, 4))
    assert torch.equal(y.reshape(4, 3).cpu(), x.reshape(4, 3))
    s = y.as_strided((2, 2), (1, 2), 3)
    assert torch.equal(s.cpu(), x.as_strided((2, 2), (1, 2), 3))
    assert "device='mtia:0'" in repr(v)
    assert v[1, 2].item() == 6.0
    assert torch.equal(v[:, 1].cpu(), x.view(3, 4)[:, 1])
    z = torch.empty(0, device=DEV)
    z.resize_(2, 3)
    z.copy_(torch.ones(2, 3))
    z.resize_(4, 3)  # grows: the first six elements survive
    assert torch.equal(z.cpu()[:2], torch.ones(2, 3))


def test_fallback_operator_matches_cpu():
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(3))
    y = x.to(DEV)
    # operators without a device kernel go through the CPU fallback and come back to the device
    for got, want in [(torch.exp(y), torch.exp(x)), (y.max(dim=1).values, x.max(dim=1).values),
                      (torch.cat([y, y]), torch.cat([x, x]))]:
        assert got.device == DEV
        assert torch.allclose(got.cpu(), want)


def test_second_device_through_the_guard():
    if torch.mtia.device_count() < 2:
        pytest.skip("one device")
    d1 = torch.device("mtia", 1)
    x = torch.arange(6.0)
    y = x.to(d1)
    assert y.device == d1
    assert torch.equal((y + y).cpu(), x * 2)
    assert torch.mtia.current_device() == 0  # the guard restored it
    assert torch.equal(y.to(DEV).cpu(), x)  # device 1 to device 0


def test_fallback_waits_for_work_queued_on_the_current_stream():
    y = torch.zeros(1 << 16, device=DEV)
    torch_mtia._C.sleep_on_stream(50_000)  # the fill below queues behind this
    y.fill_(3.0)
    # torch.exp has no device kernel: the fallback copies y to the host on the current stream, so it
    # sees the fill, not the zeros
    assert torch.equal(torch.exp(y).cpu(), torch.exp(torch.full((1 << 16,), 3.0)))


def test_bad_input_raises_errors_naming_the_problem():
    with pytest.raises(RuntimeError, match="mtiaSetDevice"):
        torch.mtia.set_device(99)
    with pytest.raises(RuntimeError):
        torch.empty(2, device=torch.device("mtia", 99))
    a = torch.ones(2, 3, device=DEV)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        a @ a
    with pytest.raises(RuntimeError, match="pin_memory"):
        torch.empty(2, device=DEV, pin_memory=True)
    assert torch.mtia.current_device() == 0
