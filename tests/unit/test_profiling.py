"""The benchmark's counter (onmt_optimal_lab/bench/profiling.py): calls and aten ops per call on a known workload."""
import torch

from onmt_optimal_lab.bench.profiling import OpCounts, count, counting_calls, kernel_like


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


def test_kernel_like_counts_the_operators_that_do_the_work():
    """Views, allocations and wrappers are no kernel; the operator that does the work under a wrapper is one."""
    x, mask = torch.randn(4, 6), torch.rand(4, 6) > 0.5
    weight = torch.randn(3, 6)
    cases = [
        (lambda: x.view(6, 4).unsqueeze(0).expand(2, 6, 4), 0),  # views only
        (lambda: torch.where(mask, x, x.new_zeros(())), 2),  # the fill of the zero and the where
        (lambda: torch.nn.functional.linear(x, weight), 1),  # aten::linear > aten::t, aten::matmul/addmm: one
        (lambda: x.to(torch.float64), 1),  # aten::to > aten::_to_copy > aten::copy_
        (lambda: torch.cat([x, x]), 1),
        (lambda: x.max(dim=1, keepdim=True), 1),
    ]
    for run, kernels in cases:
        with torch.profiler.profile() as prof:
            run()
        assert sum(kernel_like(e) for e in prof.events()) == kernels, [e.name for e in prof.events()]
