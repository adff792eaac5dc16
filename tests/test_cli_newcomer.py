"""A newcomer's second pass: 136 bad inputs over every command (run flags, config TOML
fields, sweep specs and options, scenario options, the flash, DRAM and NPU benches,
workload, placement, bound, validate, bench, config). Each is one line on stderr that
starts with the option or field it is about and the value given (``subject``), exit
status 2, no traceback, and nothing written. Every case is refused in validation,
in-process through ``tmhw.cli.main``, in a fraction of a second."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

RUN = ["run", "--preset", "quick", "--policy", "hbm-only", "--set", "workload.layers=1",
       "--iterations", "1", "--quiet"]
FB = ["flash", "bench", "--count", "200"]
DB = ["dram", "bench", "--count", "10", "--model", "fast"]
SCN = ["scenario", "ablation", "--quick", "--quiet"]
PL = ["placement", "show", "--preset", "quick", "--policy", "tm-training", "--hbm-ratio",
      "0.25", "--rows", "1"]

#: the input files the cases name, written into the working directory
FILES = {
    'cfg_unknown_section.toml': (
        '[nosuch]\n'
        'x = 1\n'),
    'cfg_channels_text.toml': (
        '[flash]\n'
        'channels = "eight"\n'),
    'cfg_bad_preset.toml': (
        'preset = "nosuch"\n'),
    'cfg_model_int.toml': (
        '[workload]\n'
        'model = 5\n'),
    'cfg_ratio_list.toml': (
        '[policy]\n'
        'hbm_ratio = [0.5]\n'),
    'cfg_dup_key.toml': (
        '[flash]\n'
        'channels = 8\n'
        'channels = 16\n'),
    'cfg_devices_neg.toml': (
        '[flash]\n'
        'preset = "990pro"\n'
        'devices = -1\n'),
    'cfg_iter0.toml': (
        '[run]\n'
        'iterations = 0\n'),
    'cfg_top_unknown.toml': (
        'foo = 1\n'),
    'cfg_split_text.toml': (
        '[policy.tm_training]\n'
        'split = "yes"\n'),
    'cfg_unknown_policy_table.toml': (
        '[policy.nosuch_policy]\n'
        'x = 1\n'),
    'cfg_freq0.toml': (
        '[npu]\n'
        'freq_mhz = 0\n'),
    'cfg_dataflow.toml': (
        '[npu]\n'
        'dataflow = "xx"\n'),
    'cfg_hbm_refresh.toml': (
        '[hbm]\n'
        'refresh = "sometimes"\n'),
    'cfg_op.toml': (
        '[flash]\n'
        'over_provisioning = 1.5\n'),
    'cfg_cell.toml': (
        '[flash]\n'
        'cell_type = "QQQ"\n'),
    'cfg_gc.toml': (
        '[flash]\n'
        'gc_policy = "lucky"\n'),
    'cfg_pages_block0.toml': (
        '[flash]\n'
        'pages_per_block = 0\n'),
    'cfg_flash_preset.toml': (
        '[flash]\n'
        'preset = "nosuch"\n'),
    'cfg_section_scalar.toml': (
        'flash = 3\n'),
    'cfg_ratio_nan.toml': (
        '[policy]\n'
        'hbm_ratio = nan\n'),
    'cfg_t_r_neg.toml': (
        '[flash]\n'
        't_r = -5\n'),
    'spec_empty_list.toml': (
        'preset = "quick"\n'
        '[grid]\n'
        '"policy.name" = []\n'),
    'spec_not_list.toml': (
        'preset = "quick"\n'
        '[grid]\n'
        '"policy.name" = "demand"\n'),
    'spec_unknown_key.toml': (
        'preset = "quick"\n'
        '[grid]\n'
        '"policy.bogus" = [1]\n'),
    'spec_channels0.toml': (
        'preset = "quick"\n'
        '[grid]\n'
        '"flash.channels" = [8, 0]\n'),
    'spec_bad_preset.toml': (
        'preset = "nosuch"\n'
        '[grid]\n'
        '"policy.name" = ["demand"]\n'),
    'spec_base_unknown.toml': (
        'preset = "quick"\n'
        '[base]\n'
        '"run.bogus" = 1\n'
        '[grid]\n'
        '"policy.name" = ["demand"]\n'),
    'spec_points_scalars.toml': (
        'preset = "quick"\n'
        'points = [1, 2]\n'),
    'spec_dup_values.toml': (
        'preset = "quick"\n'
        '[base]\n'
        '"workload.layers" = 1\n'
        '"run.iterations" = 1\n'
        '[grid]\n'
        '"policy.name" = ["hbm-only", "hbm-only"]\n'),
    'spec_top_unknown.toml': (
        'preset = "quick"\n'
        'grids = 1\n'
        '[grid]\n'
        '"policy.name" = ["demand"]\n'),
    'spec_nested_grid.toml': (
        'preset = "quick"\n'
        '[grid.policy]\n'
        'name = ["demand", 3]\n'),
    'spec_ratio_text.toml': (
        'preset = "quick"\n'
        '[grid]\n'
        '"policy.hbm_ratio" = ["half"]\n'),
    'spec_points_unknown.toml': (
        'preset = "quick"\n'
        '[[points]]\n'
        '"npu.bogus" = 1\n'),
    'spec_preset_int.toml': (
        'preset = 7\n'
        '[grid]\n'
        '"policy.name" = ["demand"]\n'),
    'spec_syntax.toml': (
        'preset = "quick"\n'
        '[grid\n'),
    'spec_points_twice.toml': (
        'preset = "quick"\n'
        '[base]\n'
        '"workload.layers" = 1\n'
        '"run.iterations" = 1\n'
        '[[points]]\n'
        '"policy.name" = "hbm-only"\n'
        '[[points]]\n'
        '"policy.name" = "hbm-only"\n'),
    'spec_ok.toml': (
        'preset = "quick"\n'
        '[grid]\n'
        '"policy.name" = ["hbm-only"]\n'),
    'topo_empty.csv': '',
    'topo_header_only.csv': (
        'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, '
        'Num Filter, Strides,\n'),
    'topo_negative.csv': (
        'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, '
        'Num Filter, Strides,\n'
        'conv1, 56, 56, 3, 3, -64, 64, 1,\n'),
    'topo_text.csv': (
        'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, '
        'Num Filter, Strides,\n'
        'conv1, big, 56, 3, 3, 64, 64, 1,\n'),
    'topo_filter_big.csv': (
        'Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, '
        'Num Filter, Strides,\n'
        'conv1, 4, 4, 9, 9, 64, 64, 1,\n'),
    'mqsim_bad.xml': (
        '<Execution_Parameter_Set><Device_Parameter_Set><Flash_Channel_Count>x</Flash_C'
        'hannel_Count></Device_Parameter_Set></Execution_Parameter_Set>'),
    'mqsim_notxml.xml': (
        'this is not xml'),
    'dram_cfg_flash_only.toml': (
        '[flash]\n'
        'channels = 4\n'),
    'dram_cfg_bad.toml': (
        '[dram]\n'
        'channels = "two"\n'),
    'flash_cfg_bad.toml': (
        '[flash]\n'
        'planes_per_die = 0\n'),
}

#: (what was typed, the command line, how its one line must begin after 'error: ')
CASES: list[tuple[str, list[str], str]] = [
    ('run --hbm-ratio 0',
     [*RUN, '--hbm-ratio', '0', '--out', 'o'],
     '--hbm-ratio: 0'),
    ('run --hbm-ratio -0.5',
     [*RUN, '--hbm-ratio', '-0.5', '--out', 'o'],
     '--hbm-ratio: -0.5'),
    ('run --hbm-ratio 1.5',
     [*RUN, '--hbm-ratio', '1.5', '--out', 'o'],
     '--hbm-ratio: 1.5'),
    ('run --hbm-ratio nan',
     [*RUN, '--hbm-ratio', 'nan', '--out', 'o'],
     '--hbm-ratio: nan'),
    ('run --hbm-ratio inf',
     [*RUN, '--hbm-ratio', 'inf', '--out', 'o'],
     '--hbm-ratio: inf'),
    ('run --iterations 0',
     [*RUN, '--iterations', '0', '--out', 'o'],
     'run.iterations = 0'),
    ('run --iterations -3',
     [*RUN, '--iterations', '-3', '--out', 'o'],
     'run.iterations = -3'),
    ('run --seed -1',
     [*RUN, '--seed', '-1', '--out', 'o'],
     'run.seed = -1'),
    ('run --seed 1.5',
     [*RUN, '--seed', '1.5', '--out', 'o'],
     'argument --seed'),
    ('run --policy nosuch',
     [*RUN, '--policy', 'nosuch', '--out', 'o'],
     "policy.name = 'nosuch'"),
    ("run --policy ''",
     [*RUN, '--policy', '', '--out', 'o'],
     "policy.name = ''"),
    ('run --model nosuch-model',
     [*RUN, '--model', 'nosuch-model', '--out', 'o'],
     "workload.model = 'nosuch-model'"),
    ("run --model ''",
     [*RUN, '--model', '', '--out', 'o'],
     "workload.model = ''"),
    ('run --preset nosuch',
     ['run', '--preset', 'nosuch', '--out', 'o'],
     "preset = 'nosuch'"),
    ("run --preset ''",
     ['run', '--preset', '', '--out', 'o'],
     "preset = ''"),
    ('run --set flash.channels=0',
     [*RUN, '--set', 'flash.channels=0', '--out', 'o'],
     'flash.channels = 0'),
    ('run --set flash.channels=-4',
     [*RUN, '--set', 'flash.channels=-4', '--out', 'o'],
     'flash.channels = -4'),
    ('run --set flash.channels=abc',
     [*RUN, '--set', 'flash.channels=abc', '--out', 'o'],
     "flash.channels = 'abc'"),
    ('run --set =5',
     [*RUN, '--set', '=5', '--out', 'o'],
     "--set = '=5'"),
    ('run --set flash..channels=4',
     [*RUN, '--set', 'flash..channels=4', '--out', 'o'],
     "--set = 'flash..channels=4'"),
    ('run --set flash=4',
     [*RUN, '--set', 'flash=4', '--out', 'o'],
     'flash = 4'),
    ('run --set run.warmup_iterations=-1',
     [*RUN, '--set', 'run.warmup_iterations=-1', '--out', 'o'],
     'run.warmup_iterations = -1'),
    ('run --set policy.hbm_ratio=true',
     [*RUN, '--set', 'policy.hbm_ratio=true', '--out', 'o'],
     'policy.hbm_ratio = True'),
    ('run --set workload.batch=2.5',
     [*RUN, '--set', 'workload.batch=2.5', '--out', 'o'],
     'workload.batch = 2.5'),
    ('run --set flash.devices=0',
     [*RUN, '--set', 'flash.devices=0', '--out', 'o'],
     'flash.devices = 0'),
    ('run --set flash.page_size=1000',
     [*RUN, '--set', 'flash.page_size=1000', '--out', 'o'],
     'flash.page_size = 1000'),
    ('run --set hbm.channels=3',
     [*RUN, '--set', 'hbm.channels=3', '--out', 'o'],
     'hbm.channels = 3'),
    ('run --set npu.array_rows=0',
     [*RUN, '--set', 'npu.array_rows=0', '--out', 'o'],
     'npu.array_rows = 0'),
    ('run --out o --trace o (one path for both)',
     [*RUN, '--out', 'o', '--trace', 'o'],
     '--trace: o'),
    ('run --trace t.json --vcd t.json',
     [*RUN, '--out', 'o', '--trace', 't.json', '--vcd', 't.json'],
     '--vcd: t.json'),
    ('run --config nosuch.toml',
     [*RUN, '--config', 'nosuch.toml', '--out', 'o'],
     "--config = 'nosuch.toml'"),
    ('run --config a directory',
     [*RUN, '--config', 'adir', '--out', 'o'],
     "--config = 'adir'"),
    ('run --set workload.model=nosuch',
     [*RUN, '--set', 'workload.model=nosuch', '--out', 'o'],
     "workload.model = 'nosuch'"),
    ('run --seq -5',
     [*RUN, '--seq', '-5', '--out', 'o'],
     '--seq: -5'),
    ('run --layers -1',
     [*RUN, '--layers', '-1', '--out', 'o'],
     '--layers: -1'),
    ('run --batch 100000000',
     [*RUN, '--batch', '100000000', '--out', 'o'],
     'flash: the'),
    ('run --seq 10000000',
     [*RUN, '--seq', '10000000', '--out', 'o'],
     '--seq: 10000000'),
    ('run --set policy.tune=maybe',
     [*RUN, '--set', 'policy.tune=maybe', '--out', 'o'],
     "policy.tune = 'maybe'"),
    ('run --set run.hbm_model=nosuch',
     [*RUN, '--set', 'run.hbm_model=nosuch', '--out', 'o'],
     "run.hbm_model = 'nosuch'"),
    ('run --set run.flash_model=nosuch',
     [*RUN, '--set', 'run.flash_model=nosuch', '--out', 'o'],
     "run.flash_model = 'nosuch'"),
    ('run --set flash.preset=nosuch',
     [*RUN, '--set', 'flash.preset=nosuch', '--out', 'o'],
     "flash.preset = 'nosuch'"),
    ('run --set hbm.preset=nosuch',
     [*RUN, '--set', 'hbm.preset=nosuch', '--out', 'o'],
     "hbm.preset = 'nosuch'"),
    ('run --set npu.dataflow=xx',
     [*RUN, '--set', 'npu.dataflow=xx', '--out', 'o'],
     "npu.dataflow = 'xx'"),
    ('config [nosuch] section',
     [*RUN, '--config', 'cfg_unknown_section.toml', '--out', 'o'],
     "nosuch = {'x'"),
    ("config flash.channels = 'eight'",
     [*RUN, '--config', 'cfg_channels_text.toml', '--out', 'o'],
     "flash.channels = 'eight'"),
    ("config preset = 'nosuch'",
     [*RUN, '--config', 'cfg_bad_preset.toml', '--out', 'o'],
     "preset = 'nosuch'"),
    ('config workload.model = 5',
     [*RUN, '--config', 'cfg_model_int.toml', '--out', 'o'],
     'workload.model = 5'),
    ('config policy.hbm_ratio = [0.5]',
     [*RUN, '--config', 'cfg_ratio_list.toml', '--out', 'o'],
     'policy.hbm_ratio = [0.5]'),
    ('config duplicate key',
     [*RUN, '--config', 'cfg_dup_key.toml', '--out', 'o'],
     "cfg_dup_key.toml = '<toml>'"),
    ('config flash.devices = -1',
     [*RUN, '--config', 'cfg_devices_neg.toml', '--out', 'o'],
     'flash.devices = -1'),
    ('config run.iterations = 0',
     [*RUN, '--config', 'cfg_iter0.toml', '--out', 'o'],
     'run.iterations = 0'),
    ('config top-level foo = 1',
     [*RUN, '--config', 'cfg_top_unknown.toml', '--out', 'o'],
     'foo = 1'),
    ("config tm_training.split = 'yes'",
     [*RUN, '--config', 'cfg_split_text.toml', '--out', 'o'],
     "policy.tm_training.split = 'yes'"),
    ('config [policy.nosuch_policy]',
     [*RUN, '--config', 'cfg_unknown_policy_table.toml', '--out', 'o'],
     "policy.nosuch_policy = {'x'"),
    ('config npu.freq_mhz = 0',
     [*RUN, '--config', 'cfg_freq0.toml', '--out', 'o'],
     'npu.freq_mhz = 0.0'),
    ("config npu.dataflow = 'xx'",
     [*RUN, '--config', 'cfg_dataflow.toml', '--out', 'o'],
     "npu.dataflow = 'xx'"),
    ("config hbm.refresh = 'sometimes'",
     [*RUN, '--config', 'cfg_hbm_refresh.toml', '--out', 'o'],
     "hbm.refresh = 'sometimes'"),
    ('config flash.over_provisioning = 1.5',
     [*RUN, '--config', 'cfg_op.toml', '--out', 'o'],
     'flash.over_provisioning = 1.5'),
    ("config flash.cell_type = 'QQQ'",
     [*RUN, '--config', 'cfg_cell.toml', '--out', 'o'],
     "flash.cell_type = 'QQQ'"),
    ("config flash.gc_policy = 'lucky'",
     [*RUN, '--config', 'cfg_gc.toml', '--out', 'o'],
     "flash.gc_policy = 'lucky'"),
    ('config flash.pages_per_block = 0',
     [*RUN, '--config', 'cfg_pages_block0.toml', '--out', 'o'],
     'flash.pages_per_block = 0'),
    ("config flash.preset = 'nosuch'",
     [*RUN, '--config', 'cfg_flash_preset.toml', '--out', 'o'],
     "flash.preset = 'nosuch'"),
    ('config flash = 3',
     [*RUN, '--config', 'cfg_section_scalar.toml', '--out', 'o'],
     'flash = 3'),
    ('config policy.hbm_ratio = nan',
     [*RUN, '--config', 'cfg_ratio_nan.toml', '--out', 'o'],
     'policy.hbm_ratio = nan'),
    ('config flash.t_r = -5',
     [*RUN, '--config', 'cfg_t_r_neg.toml', '--out', 'o'],
     'flash.t_r = -5'),
    ('sweep grid list empty',
     ['sweep', 'spec_empty_list.toml', '--out', 'o'],
     'sweep spec: grid'),
    ('sweep grid value not a list',
     ['sweep', 'spec_not_list.toml', '--out', 'o'],
     'sweep spec: grid'),
    ('sweep grid unknown key',
     ['sweep', 'spec_unknown_key.toml', '--out', 'o'],
     'policy.bogus = 1'),
    ('sweep grid flash.channels 0',
     ['sweep', 'spec_channels0.toml', '--out', 'o'],
     'flash.channels = 0'),
    ('sweep preset nosuch',
     ['sweep', 'spec_bad_preset.toml', '--out', 'o'],
     "preset = 'nosuch'"),
    ('sweep [base] unknown key',
     ['sweep', 'spec_base_unknown.toml', '--out', 'o'],
     'run.bogus = 1'),
    ('sweep points not tables',
     ['sweep', 'spec_points_scalars.toml', '--out', 'o'],
     'sweep spec: points'),
    ('sweep grid repeats a value',
     ['sweep', 'spec_dup_values.toml', '--out', 'o', '--quiet'],
     'sweep spec: grid'),
    ('sweep unknown top-level key',
     ['sweep', 'spec_top_unknown.toml', '--out', 'o'],
     'sweep spec: unknown'),
    ('sweep nested [grid.policy] with a bad value',
     ['sweep', 'spec_nested_grid.toml', '--out', 'o'],
     'policy.name = 3'),
    ("sweep grid ratio 'half'",
     ['sweep', 'spec_ratio_text.toml', '--out', 'o'],
     "policy.hbm_ratio = 'half'"),
    ('sweep [[points]] unknown key',
     ['sweep', 'spec_points_unknown.toml', '--out', 'o'],
     'npu.bogus = 1'),
    ('sweep preset = 7',
     ['sweep', 'spec_preset_int.toml', '--out', 'o'],
     'sweep spec: preset'),
    ('sweep spec syntax error',
     ['sweep', 'spec_syntax.toml', '--out', 'o'],
     'sweep spec: spec_syntax.toml:'),
    ('sweep missing spec',
     ['sweep', 'nosuch.toml', '--out', 'o'],
     'sweep spec: cannot'),
    ('sweep spec is a directory',
     ['sweep', 'adir', '--out', 'o'],
     'sweep spec: cannot'),
    ('sweep --workers 0',
     ['sweep', 'spec_dup_values.toml', '--out', 'o', '--workers', '0'],
     '--workers: 0'),
    ('sweep --cluster notanaddress',
     ['sweep', 'spec_ok.toml', '--out', 'o', '--cluster', 'notanaddress'],
     "--cluster: 'notanaddress'"),
    ('scenario with no name',
     ['scenario', '--quick'],
     'scenario: give'),
    ("scenario ''",
     ['scenario', '', '--quick'],
     "scenario: ''"),
    ('scenario --model nosuch',
     [*SCN, '--model', 'nosuch'],
     "--model: 'nosuch'"),
    ('scenario --set run.iterations=0',
     [*SCN, '--set', 'run.iterations=0'],
     'run.iterations = 0'),
    ('scenario --set workload.batch=0',
     [*SCN, '--set', 'workload.batch=0'],
     'workload.batch = 0'),
    ('scenario --workers abc',
     [*SCN, '--workers', 'abc'],
     'argument --workers'),
    ('scenario --set policy.name=nosuch',
     [*SCN, '--set', 'policy.name=nosuch'],
     "policy.name = 'nosuch'"),
    ('flash bench --qd 0',
     [*FB, '--qd', '0'],
     'qd: 0'),
    ('flash bench --qd -1',
     [*FB, '--qd', '-1'],
     'qd: -1'),
    ('flash bench --count 0',
     ['flash', 'bench', '--count', '0'],
     'count: 0'),
    ('flash bench --size 0',
     [*FB, '--size', '0'],
     'size: 0'),
    ('flash bench --size 4TiB (beyond the device)',
     [*FB, '--size', '4TiB'],
     'size: 4398046511104'),
    ('sweep [[points]] listed twice',
     ['sweep', 'spec_points_twice.toml', '--out', 'o', '--quiet'],
     'sweep spec: two'),
    ('flash bench --precondition 2',
     [*FB, '--precondition', '2'],
     'flash.precondition: 2.0'),
    ('flash bench --age -1',
     [*FB, '--age', '-1'],
     'age: overwrites'),
    ('flash bench --set flash.channels=0',
     [*FB, '--set', 'flash.channels=0'],
     'flash.channels = 0'),
    ('flash bench --set dram.channels=2',
     [*FB, '--set', 'dram.channels=2'],
     "flash.dram = {'channels'"),
    ('flash bench --mqsim-xml nosuch.xml',
     [*FB, '--mqsim-xml', 'nosuch.xml'],
     'nosuch.xml: not'),
    ('flash bench --mqsim-xml bad field',
     [*FB, '--mqsim-xml', 'mqsim_bad.xml'],
     "Flash_Channel_Count = 'x'"),
    ('flash bench --mqsim-xml not XML',
     [*FB, '--mqsim-xml', 'mqsim_notxml.xml'],
     'mqsim_notxml.xml: not'),
    ('flash bench --config planes_per_die 0',
     [*FB, '--config', 'flash_cfg_bad.toml'],
     'flash.planes_per_die = 0'),
    ('flash bench --seed -1',
     [*FB, '--seed', '-1'],
     '--seed: -1'),
    ('dram bench --set dram.nosuch=1',
     [*DB, '--set', 'dram.nosuch=1'],
     'dram.nosuch = 1'),
    ('dram bench --set flash.channels=2',
     [*DB, '--set', 'flash.channels=2'],
     "dram.flash = {'channels'"),
    ('dram bench --config nosuch.toml',
     [*DB, '--config', 'nosuch.toml'],
     "--config = 'nosuch.toml'"),
    ('dram bench --config a [flash] table',
     [*DB, '--config', 'dram_cfg_flash_only.toml'],
     "--config = 'dram_cfg_flash_only.toml'"),
    ("dram bench --config channels 'two'",
     [*DB, '--config', 'dram_cfg_bad.toml'],
     "dram.channels = 'two'"),
    ('dram bench --size -64',
     [*DB, '--size', '-64'],
     "size: '-64'"),
    ('npu cycles --array 0x128',
     ['npu', 'cycles', '--topology', 'topo_negative.csv', '--array', '0x128'],
     'array: rows'),
    ('npu cycles --array 128',
     ['npu', 'cycles', '--topology', 'topo_filter_big.csv', '--array', '128'],
     'array: ROWSxCOLS'),
    ('npu cycles --topology nosuch.csv',
     ['npu', 'cycles', '--topology', 'nosuch.csv'],
     'topology: cannot'),
    ('npu cycles empty topology',
     ['npu', 'cycles', '--topology', 'topo_empty.csv'],
     'topology: topo_empty.csv'),
    ('npu cycles header-only topology',
     ['npu', 'cycles', '--topology', 'topo_header_only.csv'],
     'topology: topo_header_only.csv'),
    ('npu cycles negative channels',
     ['npu', 'cycles', '--topology', 'topo_negative.csv'],
     'topo_negative.csv:2: Channels'),
    ('npu cycles text dimension',
     ['npu', 'cycles', '--topology', 'topo_text.csv'],
     'topo_text.csv:2: IFMAP'),
    ('npu cycles filter larger than ifmap',
     ['npu', 'cycles', '--topology', 'topo_filter_big.csv'],
     'topo_filter_big.csv:2: filter'),
    ('workload show nosuch',
     ['workload', 'show', 'nosuch'],
     "model = 'nosuch'"),
    ('workload show --seq 0',
     ['workload', 'show', 'bert-base', '--seq', '0'],
     'seq = 0'),
    ('workload show --optimizer nosuch',
     ['workload', 'show', 'bert-base', '--optimizer', 'nosuch'],
     "optimizer = 'nosuch'"),
    ('workload show --page-size 1000',
     ['workload', 'show', 'bert-base', '--page-size', '1000'],
     'page_size = 1000'),
    ('workload show --page-size 0',
     ['workload', 'show', 'bert-base', '--page-size', '0'],
     'page_size = 0'),
    ('workload show resnet50 --layers 3',
     ['workload', 'show', 'resnet50', '--layers', '3'],
     'layers = 3'),
    ('placement show --rows -1',
     [*PL, '--rows', '-1'],
     '--rows: -1'),
    ('bound --hbm-ratio 0',
     ['bound', '--preset', 'quick', '--hbm-ratio', '0'],
     '--hbm-ratio: 0'),
    ('bound --policy nosuch',
     ['bound', '--preset', 'quick', '--policy', 'nosuch'],
     "policy.name = 'nosuch'"),
    ('validate --component nosuch',
     ['validate', '--component', 'nosuch'],
     'argument --component'),
    ('validate --json --markdown',
     ['validate', '--quick', '--json', '--markdown'],
     'argument --markdown'),
    ('bench --case nosuch',
     ['bench', '--case', 'nosuch'],
     "--case: 'nosuch'"),
    ('bench --repeat 0',
     ['bench', '--case', 'kernel', '--repeat', '0'],
     '--repeat: 0'),
    ('bench --repeat -1',
     ['bench', '--case', 'kernel', '--repeat', '-1'],
     '--repeat: -1'),
    ('bench --timeout nan',
     ['bench', '--case', 'kernel', '--timeout', 'nan'],
     '--timeout: nan'),
    ('bench --policy nosuch',
     ['bench', '--case', 'kernel', '--policy', 'nosuch'],
     "--policy: 'nosuch'"),
    ('config show nosuch',
     ['config', 'show', 'nosuch'],
     "preset = 'nosuch'"),
]

@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The input files in tmp_path, which is the working directory (so that a default
    output folder would show up there)."""
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "adir").mkdir()
    return tmp_path


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def test_there_are_136_distinct_cases() -> None:
    assert len(CASES) == 136
    assert len({tuple(argv) for _, argv, _ in CASES}) == len(CASES)


@pytest.mark.parametrize("argv,subject", [(a, s) for _, a, s in CASES],
                         ids=[n for n, _, _ in CASES])
def test_a_bad_input_is_one_line_naming_the_field_and_value_and_nothing_is_written(
        argv: list[str], subject: str, workdir: Path, tmhw: Callable) -> None:
    before = _tree(workdir)
    r = tmhw(*argv)
    assert r.rc == 2, (r.rc, r.err)
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1, r.err
    assert "Traceback" not in r.err, r.err
    assert lines[0].split("error: ", 1)[1].startswith(subject), lines[0]
    assert _tree(workdir) == before, "something was written"
