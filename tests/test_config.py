"""The system config: every preset dumps to TOML that loads back to an equal config;
overrides and section presets compose; and every bad input, from the command line or a
file, ends with one line on stderr naming the field, exit status 2, and nothing written."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

from dram import PRESETS as DRAM_PRESETS
from flash import PRESETS as FLASH_PRESETS
from tmhw import config as C
from tmhw.report import VERSION
from tmhw.sim.errors import ConfigError

# -- presets and TOML ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(C.PRESETS))
def test_every_preset_dumps_to_toml_that_loads_back_equal(name: str, tmp_path: Path) -> None:
    cfg = C.PRESETS[name]
    text = C.dumps(cfg)
    assert C.from_dict(tomllib.loads(text)) == cfg
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    # The dump is complete: it gives the same config whatever base it is loaded over.
    for base in C.PRESETS.values():
        assert C.load(path, base) == cfg


@pytest.mark.parametrize("section,name", [("flash", n) for n in FLASH_PRESETS]
                         + [("hbm", n) for n in DRAM_PRESETS])
def test_every_device_preset_round_trips_inside_a_system(section: str, name: str) -> None:
    device = (FLASH_PRESETS if section == "flash" else DRAM_PRESETS)[name]
    cfg = dataclasses.replace(C.QUICK, **{section: device})
    assert C.from_dict(tomllib.loads(C.dumps(cfg))) == cfg


@pytest.mark.parametrize("name", list(C.PRESETS))
def test_config_show_prints_the_preset_as_toml(name: str, tmhw: Callable) -> None:
    r = tmhw("config", "show", name)
    assert r.rc == 0 and r.err == ""
    assert r.out == C.dumps(C.PRESETS[name])


def test_presets_lists_every_preset_with_a_description(tmhw: Callable) -> None:
    r = tmhw("presets")
    assert r.rc == 0
    lines = r.out.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == list(C.PRESETS)
    assert all(len(ln.split()) > 1 for ln in lines)


def test_version(tmhw: Callable) -> None:
    r = tmhw("--version")
    assert r.rc == 0 and r.out.strip() == f"tmhw {VERSION}"


def test_the_library_and_python_m_tmhw_give_the_same_version() -> None:
    import os
    import subprocess
    import sys

    import tmhw

    assert tmhw.__version__ == VERSION
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}
    r = subprocess.run([sys.executable, "-m", "tmhw", "--version"], capture_output=True,
                       text=True, env=env, check=False)
    assert r.returncode == 0 and r.stdout.strip() == f"tmhw {VERSION}", r.stderr


def test_help_lists_the_exit_statuses_the_commands_use(tmhw: Callable) -> None:
    r = tmhw("--help")
    assert r.rc == 0
    statuses = dict(re.findall(r"^  (\d+) +(\S.*)$", r.out, re.M))
    assert set(statuses) == {"0", "1", "2", "3", "130"}
    assert "bad input" in statuses["2"] and "does not fit" in statuses["3"]


# -- overrides and section presets -----------------------------------------------------


def test_overrides_change_only_what_they_name() -> None:
    cfg = C.with_overrides(C.QUICK, ["flash.channels=16", "policy.hbm_ratio=0.25",
                                     "workload.model=resnet18",
                                     "run.seed=7",
                                     "flash.onfi.t_wc=30000"])
    assert cfg.flash == dataclasses.replace(
        C.QUICK.flash, channels=16, onfi=dataclasses.replace(C.QUICK.flash.onfi, t_wc=30000))
    assert cfg.policy == dataclasses.replace(C.QUICK.policy, hbm_ratio=0.25)
    # naming the model takes its own batch and seq (BERT's are not inherited)
    assert cfg.workload == dataclasses.replace(C.QUICK.workload, model="resnet18",
                                               batch=None, seq=None)
    assert cfg.run == dataclasses.replace(C.QUICK.run, seed=7)
    assert (cfg.npu, cfg.hbm, cfg.dma, cfg.link, cfg.cost) == \
        (C.QUICK.npu, C.QUICK.hbm, C.QUICK.dma, C.QUICK.link, C.QUICK.cost)
    assert C.QUICK.flash.channels == C.PAPER.flash.channels      # presets are untouched
    assert C.with_overrides(C.QUICK, []) is C.QUICK


def test_the_last_override_of_a_field_wins() -> None:
    cfg = C.with_overrides(C.QUICK, ["flash.channels=4", "flash.channels=16"])
    assert cfg.flash.channels == 16


def test_section_preset_in_a_file_starts_that_section_from_the_device(tmp_path: Path) -> None:
    path = tmp_path / "pm.toml"
    path.write_text('[flash]\npreset = "pm1743"\nchannels = 4\n\n[hbm]\npreset = "hbm3"\n')
    cfg = C.load(path, C.QUICK)
    assert cfg.flash == dataclasses.replace(FLASH_PRESETS["pm1743"], channels=4)
    assert cfg.hbm == DRAM_PRESETS["hbm3"]
    assert cfg.workload == C.QUICK.workload


def test_run_uses_the_section_preset_of_its_config_file(tmp_path: Path,
                                                        tmhw: Callable) -> None:
    path = tmp_path / "pm.toml"
    path.write_text('preset = "quick"\n[flash]\npreset = "pm1743"\n[workload]\nlayers = 2\n')
    out = tmp_path / "out"
    r = tmhw("run", "--config", str(path), "--policy", "hbm-only", "--quiet", "--json",
             "--out", str(out))
    assert r.rc == 0, r.err
    rep = json.loads((out / "report.json").read_text())
    assert C.from_dict(rep["config"]).flash == FLASH_PRESETS["pm1743"]
    assert rep["config"]["workload"]["layers"] == 2
    assert json.loads(r.out)["config"] == rep["config"]


def test_section_preset_as_an_override() -> None:
    cfg = C.with_overrides(C.QUICK, ["flash.preset=pm1743"])
    assert cfg.flash == FLASH_PRESETS["pm1743"]
    assert C.with_overrides(C.QUICK, ["hbm.preset=hbm3"]).hbm == DRAM_PRESETS["hbm3"]


def test_top_level_preset_in_a_file_picks_the_base(tmp_path: Path) -> None:
    path = tmp_path / "q.toml"
    path.write_text('preset = "quick"\n[run]\nseed = 5\n')
    assert C.load(path) == dataclasses.replace(C.QUICK, run=C.RunConfig(seed=5))


def test_an_override_cannot_replace_the_whole_config() -> None:
    with pytest.raises(ConfigError) as info:
        C.with_overrides(C.QUICK, ["preset=paper"])
    assert info.value.path == "preset" and "--preset" in info.value.allowed


def test_loading_does_not_consume_the_callers_data() -> None:
    data = {"flash": {"preset": "pm1743", "channels": 4}, "run": {"seed": 1}}
    C.from_dict(data)
    assert data == {"flash": {"preset": "pm1743", "channels": 4}, "run": {"seed": 1}}


def test_model_flag_takes_the_models_default_batch_and_seq() -> None:
    from tmhw.cli import build_parser, config_from_args

    args = build_parser().parse_args(["run", "--preset", "quick", "--model", "resnet18"])
    wl = config_from_args(args).workload
    assert (wl.model, wl.batch, wl.seq) == ("resnet18", None, None)
    args = build_parser().parse_args(["run", "--preset", "quick", "--model", "gpt2-small",
                                      "--batch", "4", "--seq", "256", "--policy", "demand",
                                      "--hbm-ratio", "0.5", "--iterations", "3", "--seed", "9"])
    cfg = config_from_args(args)
    assert (cfg.workload.model, cfg.workload.batch, cfg.workload.seq) == ("gpt2-small", 4, 256)
    assert (cfg.policy.name, cfg.policy.hbm_ratio) == ("demand", 0.5)
    assert (cfg.run.iterations, cfg.run.seed) == (3, 9)


def _float_fields(cls: type, prefix: str = "") -> list[str]:
    out = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            out += _float_fields(tp, f"{prefix}{f.name}.")      # type: ignore[arg-type]
        elif tp is float:
            out.append(prefix + f.name)
    return out


#: The sections tmhw/config.py defines itself (npu, hbm, flash validate in their packages).
SYSTEM_FLOATS = [p for p in _float_fields(C.SystemConfig)
                 if p.split(".")[0] in ("dma", "link", "cost", "workload", "policy", "run")]


@pytest.mark.parametrize("path", SYSTEM_FLOATS)
def test_nan_is_refused_for_every_system_level_number(path: str) -> None:
    with pytest.raises(ConfigError) as info:
        C.with_overrides(C.QUICK, [f"{path}=nan"])
    assert info.value.path == path


@pytest.mark.parametrize("path", SYSTEM_FLOATS)
def test_infinity_is_refused_where_it_would_poison_a_total(path: str) -> None:
    with pytest.raises(ConfigError) as info:
        C.with_overrides(C.QUICK, [f"{path}=inf"])
    assert info.value.path == path


# -- bad inputs: one line, the field, exit status 2, nothing written ---------------------

def _files(d: Path) -> dict[str, Path]:
    f = {"malformed": d / "malformed.toml", "unknown": d / "unknown.toml",
         "binary": d / "binary.toml", "array": d / "array.toml",
         "badpreset": d / "badpreset.toml", "missing": d / "missing.toml"}
    f["malformed"].write_text("[flash\nchannels = 4\n")
    f["unknown"].write_text("[flash]\nchanels = 4\n")
    f["binary"].write_bytes(b"\xff\xfe[flash]\n")
    f["array"].write_text("flash = [1, 2]\n")
    f["badpreset"].write_text('[hbm]\npreset = "hbm9"\n')
    return f


#: (id, arguments after ``run --preset quick --policy demand``, text the line must name)
BAD_INPUTS: list[tuple[str, list[str], str]] = [
    ("unknown key", ["--set", "flash.chanels=4"], "flash.chanels"),
    ("unknown section", ["--set", "bogus=1"], "bogus"),
    ("unknown nested key", ["--set", "flash.onfi.t_bogus=1"], "flash.onfi.t_bogus"),
    ("negative size", ["--set", "dma.chunk_bytes=-4096"], "dma.chunk_bytes"),
    ("negative page size", ["--set", "workload.page_size=-4096"], "workload.page_size"),
    ("zero channels", ["--set", "flash.channels=0"], "flash.channels"),
    ("hbm ratio 0", ["--hbm-ratio", "0"], "policy.hbm_ratio"),
    ("hbm ratio 1.5", ["--hbm-ratio", "1.5"], "policy.hbm_ratio"),
    ("hbm ratio negative", ["--hbm-ratio=-0.5"], "policy.hbm_ratio"),
    ("hbm ratio nan", ["--set", "policy.hbm_ratio=nan"], "policy.hbm_ratio"),
    ("page size not a power of two", ["--set", "workload.page_size=3000"],
     "workload.page_size"),
    ("unknown preset", ["--preset", "nope"], "preset"),
    ("malformed TOML", ["--config", "{malformed}"], "malformed.toml"),
    ("missing config file", ["--config", "{missing}"], "--config"),
    ("config not UTF-8", ["--config", "{binary}"], "--config"),
    ("config is a directory", ["--config", "{dir}"], "--config"),
    ("unknown key in a file", ["--config", "{unknown}"], "flash.chanels"),
    ("section not a table", ["--config", "{array}"], "flash"),
    ("unknown section preset in a file", ["--config", "{badpreset}"], "hbm.preset"),
    ("string for int", ["--set", 'flash.channels="eight"'], "flash.channels"),
    ("fraction for int", ["--set", "flash.channels=2.5"], "flash.channels"),
    ("integer past 64 bits", ["--set", "workload.batch=100000000000000000000000"],
     "workload.batch"),
    ("word for bool", ["--set", "policy.tm_training.split=maybe"], "policy.tm_training.split"),
    ("unknown model", ["--model", "nope"], "workload.model"),
    ("unknown policy", ["--policy", "nope"], "policy.name"),
    ("batch negative", ["--batch", "-1"], "workload.batch"),
    ("seq negative", ["--seq", "-1"], "workload.seq"),
    ("seq past the position table", ["--model", "gpt2-small", "--seq", "2048"],
     "workload.seq"),
    ("seq for a CNN", ["--set", "workload.model=resnet18", "--set", "workload.seq=128"],
     "workload.seq"),
    ("layers for a CNN", ["--model", "resnet18", "--layers", "3"], "workload.layers"),
    ("iterations 0", ["--iterations", "0"], "run.iterations"),
    ("negative seed", ["--seed", "-1"], "run.seed"),
    ("--set without =", ["--set", "flash.channels"], "--set"),
    ("--set empty path", ["--set", "flash..channels=3"], "--set"),
    ("chunk not a power of two", ["--set", "dma.chunk_bytes=3000"], "dma.chunk_bytes"),
    ("chunk under a page", ["--set", "dma.chunk_bytes=2048"], "dma.chunk_bytes"),
    ("write-back chunk under a larger page", ["--set", "workload.page_size=65536",
                                              "--set", "dma.writeback_chunk_bytes=32768"],
     "dma.writeback_chunk_bytes"),
    ("zero outstanding chunks", ["--set", "dma.max_outstanding=0"], "dma.max_outstanding"),
    ("flash model bogus", ["--set", "run.flash_model=bogus"], "run.flash_model"),
    ("precondition 1", ["--set", "run.precondition=1.0"], "run.precondition"),
    ("unknown optimizer", ["--set", "workload.optimizer=lamb"], "workload.optimizer"),
    ("unknown section preset", ["--set", "flash.preset=nope"], "flash.preset"),
    ("top-level preset as an override", ["--set", "preset=paper"], "--preset"),
    ("zero link lanes", ["--set", "link.lanes=0"], "link.lanes"),
    ("the link's lane rate is the SSDs'", ["--set", "link.gb_per_s_per_lane=4"],
     "link.gb_per_s_per_lane"),
    ("negative cost", ["--set", "cost.npu_usd=-1"], "cost.npu_usd"),
    ("negative hbm timing", ["--set", "hbm.t_rcd=-1"], "hbm.t_rcd"),
    ("zero array rows", ["--set", "npu.array_rows=0"], "npu.array_rows"),
    ("bad --hbm-ratio text", ["--hbm-ratio", "abc"], "--hbm-ratio"),
    ("bad --batch text", ["--batch", "x"], "--batch"),
    ("unknown option", ["--bogus"], "--bogus"),
    ("workload larger than flash", ["--batch", "100000"], "flash"),
    ("flash page not a power of two", ["--set", "flash.page_size=3000"], "flash.page_size"),
    ("flash too large for the FTL", ["--set", "flash.channels=100000"], "flash.channels"),
    ("infinite PCIe lane rate", ["--set", "flash.pcie_lane_gbps=inf"],
     "flash.pcie_lane_gbps"),
    ("NaN DRAM supply voltage", ["--set", "hbm.vdd=nan"], "hbm.vdd"),
    ("infinite DRAM current", ["--set", "hbm.idd4r=inf"], "hbm.idd4r"),
    ("infinite NPU clock", ["--set", "npu.freq_mhz=inf"], "npu.freq_mhz"),
    ("infinite MAC energy", ["--set", "npu.mac_pj=inf"], "npu.mac_pj"),
]


@pytest.mark.parametrize("args,field", [(a, f) for _, a, f in BAD_INPUTS],
                         ids=[i for i, _, _ in BAD_INPUTS])
def test_bad_input_is_one_line_naming_the_field_and_exit_status_2(
        args: list[str], field: str, tmp_path: Path, tmhw: Callable) -> None:
    files = {k: str(v) for k, v in _files(tmp_path).items()}
    files["dir"] = str(tmp_path)
    out = tmp_path / "out"
    argv = ["run", "--preset", "quick", "--policy", "demand", "--quiet", "--out", str(out)]
    r = tmhw(*argv, *[a.format(**files) for a in args])
    assert r.rc == 2
    assert len(r.err_lines) == 1, r.err
    line = r.err_lines[0]
    assert line.startswith("tmhw"), line
    assert field in line, line
    assert "Traceback" not in r.err
    assert r.out == ""
    assert not out.exists()                     # nothing written when a run fails


def test_there_are_at_least_twenty_distinct_bad_inputs() -> None:
    assert len({tuple(a) for _, a, _ in BAD_INPUTS}) == len(BAD_INPUTS) >= 20


@pytest.mark.parametrize("argv,field", [
    (["config", "show", "nope"], "preset"),
    (["bogus"], "bogus"),
    ([], "COMMAND"),
    (["config"], "SUBCOMMAND"),
])
def test_bad_commands_are_one_line_and_exit_status_2(argv: list[str], field: str,
                                                     tmhw: Callable) -> None:
    r = tmhw(*argv)
    assert r.rc == 2
    assert len(r.err_lines) == 1 and field in r.err_lines[0], r.err


def test_config_error_message_names_path_value_and_what_is_allowed() -> None:
    e = ConfigError("flash.channels", 0, "a positive integer")
    assert str(e) == "flash.channels = 0: a positive integer"


# -- policy names: one list, the registry's --------------------------------------------
def test_policy_names_come_from_the_registry_only(monkeypatch: pytest.MonkeyPatch,
                                                  tmhw: Callable[..., typing.Any]) -> None:
    """A name added to ``tmhw.placement.registry.POLICIES`` (the one place the README's
    "Add a policy" names) is valid in the config and listed by ``--policy``'s help."""
    from tmhw.placement import registry

    with pytest.raises(ConfigError, match="policy.name = 'mine'|name = 'mine'"):
        C.PolicyConfig(name="mine")
    monkeypatch.setitem(registry.POLICIES, "mine", "tmhw.placement.simple:Demand")
    assert C.PolicyConfig(name="mine").name == "mine"
    r = tmhw("run", "--help")
    assert "mine" in r.out.replace("\n", " ")


# -- the PCIe link: one generation for the system ---------------------------------------
@pytest.mark.parametrize("preset,gen", [("paper", 4), ("paper-pm1743", 5), ("paper-slc", 3)])
def test_the_ports_lanes_run_at_the_ssds_generation(preset: str, gen: int) -> None:
    """The PCIe generation is stated once, ``flash.pcie_gen`` (each device preset's, with
    its source); the NPU's port is ``link.lanes`` such lanes, so a PCIe-generation study
    changes one field. A lane's coded rate is GT/s x 128/130 / 8 (Gen 3-5)."""
    cfg = C.preset(preset)
    assert cfg.flash.pcie_gen == gen
    lane = {3: 8.0, 4: 16.0, 5: 32.0}[gen] * 128 / 130 / 8 * 1e9
    assert cfg.flash.pcie.line_bytes_per_s == pytest.approx(cfg.flash.pcie_lanes * lane)
    assert cfg.link_bytes_per_s == pytest.approx(
        cfg.link.lanes / cfg.flash.pcie_lanes * cfg.flash.host_read_bytes_per_s)
    gen5 = C.with_overrides(cfg, ["flash.pcie_gen=5"])
    assert gen5.link_bytes_per_s == pytest.approx(
        cfg.link_bytes_per_s * 32.0 / {3: 8.0, 4: 16.0, 5: 32.0}[gen])
    assert not hasattr(cfg.link, "gb_per_s_per_lane")


@pytest.mark.parametrize(("old", "new"), [
    ("split", "tm_training.split"), ("plan_rounds", "tm_training.plan_rounds"),
    ("sentinel_leads", "sentinel.leads"), ("ilp_node_limit", "autotm.ilp_node_limit"),
    ("demand_frees", "demand.frees"), ("flatflash_promote_after", "flatflash.promote_after"),
])
def test_a_policy_parameter_under_its_old_flat_key_names_its_table(old: str, new: str) -> None:
    """Each policy's parameters live in its own table (``[policy.<section>]``); the flat
    key they had in ``[policy]`` is refused with the key to use instead."""
    with pytest.raises(C.ConfigError, match=rf"^policy\.{old} = .*: moved: set "
                                            rf"policy\.{re.escape(new)} instead$"):
        C.with_overrides(C.QUICK, [f"policy.{old}=1"])


def test_a_policy_table_may_be_spelt_with_the_policys_dash() -> None:
    a = C.with_overrides(C.QUICK, ["policy.tm-training.monitor_gain=0.5"])
    b = C.with_overrides(C.QUICK, ["policy.tm_training.monitor_gain=0.5"])
    assert a == b and a.policy.tm_training.monitor_gain == 0.5
    with pytest.raises(C.ConfigError, match=r"^policy\.tm_training\.monitor_gain = 9"):
        C.with_overrides(C.QUICK, ["policy.tm-training.monitor_gain=9"])
    for bad, allowed in (("-1", "an integer >= 0"), ("2.5", "must be an integer"),
                         ("true", "must be an integer")):
        with pytest.raises(C.ConfigError,
                           match=rf"^policy\.tm_training\.simplex_columns = .*: {allowed}$"):
            C.with_overrides(C.QUICK, [f"policy.tm_training.simplex_columns={bad}"])


def test_every_policy_reads_the_table_its_class_names() -> None:
    """A registered policy with parameters names a table of ``[policy]`` holding its own
    ``Params`` class, and a policy built by the system gets that table's values."""
    from tmhw.placement.base import policy_class
    from tmhw.placement.registry import POLICIES
    from tmhw.system import System

    for name in POLICIES:
        cls = policy_class(name)
        if cls.section:
            assert isinstance(getattr(C.QUICK.policy, cls.section), cls.Params), name
    cfg = C.with_overrides(C.QUICK, ['policy.name="sentinel"', "policy.sentinel.leads=[2]"])
    assert System(cfg).policy.params.leads == (2,)
