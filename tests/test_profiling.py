"""The benchmark's counter (onmt_optimal/profiling.py): calls and aten ops per call on a known workload."""
import torch

from onmt_optimal.profiling import OpCounts, count, counting_calls


class Model:
    def step(self, x):
        return torch.add(x, x)  # one aten op per call (a Python scalar operand would add its conversion ops)


def test_counts_aten_ops_per_call_and_restores_the_method():
    model = Model()
    x = torch.zeros(3)

    def run():
        for _ in range(4):
            model.step(x)
        torch.mul(x, x)  # outside the calls: counted in the total, spread over the calls

    counts = count(run, model, method="step")
    assert counts.calls == 4
    assert counts.aten_ops == 5
    assert counts.per_call()["aten_ops"] == 5 / 4
    assert counts.kernels is None and counts.syncs is None and counts.per_call()["syncs"] is None
    assert "step" not in vars(model)  # the class's method again, not a leftover wrapper


def test_counting_calls_puts_an_instance_attribute_back():
    model = Model()
    original = model.step
    model.step = original  # an instance attribute, as the benchmark's timers set
    with counting_calls(model, "step") as calls:
        model.step(torch.zeros(1))
        model.step(torch.zeros(1))
    assert calls[0] == 2 and model.step == original


def test_totals_add_up():
    total = OpCounts(calls=0, aten_ops=0)
    total += OpCounts(calls=2, aten_ops=10)
    total += OpCounts(calls=3, aten_ops=5)
    assert (total.calls, total.aten_ops, total.kernels, total.syncs) == (5, 15, None, None)
    assert total.per_call()["aten_ops"] == 3.0
