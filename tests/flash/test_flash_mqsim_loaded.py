"""Loaded random reads against MQSim on the mqsim-default device, through an event model
of MQSim's arbitration written without tmhw's code (``mqsim_rules``).

The loaded runs of both modes against MQSim (stock MQSim against ``flash.compat =
"mqsim"``, MQSim under ONFI rules against the default) are checks of
``tmhw.validate.flash``, run by tests/test_validate.py; their figures, device and
commands are in tmhw/validate/data/mqsim.toml and mqsim/README.md."""

from __future__ import annotations

from mqsim_rules import mean_latency_us

from tmhw.validate.flash import TOLERANCE, runs
from tmhw.validate.flash import mean_latency_us as tmhw_mean_latency_us


def test_mqsims_rules_as_events_give_its_random_read_latency_and_ours() -> None:
    """An event model of MQSim's arbitration (``mqsim_rules``) is within 3% of stock
    MQSim's rr_qd64, and tmhw's ``compat = "mqsim"`` (``flash.convoy``) within 5% of it.
    With commands served before waiting data-outs, which is all a model that books each
    command when its request arrives can do, the same event model is more than 10% under
    MQSim: the data-out-first rule is what the loaded random reads depend on."""
    mqsim = runs()["rr_qd64"]["stock_us"]
    rules = mean_latency_us()
    assert abs(rules / mqsim - 1) <= 0.03
    assert abs(tmhw_mean_latency_us("rr_qd64", "mqsim") / rules - 1) <= 0.05
    assert mean_latency_us(data_out_first=False) / mqsim - 1 < -TOLERANCE
