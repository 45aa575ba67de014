"""tests/xla_env.py: a code-generation flag goes into XLA_FLAGS only where the installed
jaxlib knows it (XLA aborts the process on an unknown one), decided without importing jax."""
import subprocess
import sys

import xla_env

MADE_UP = "--xla_rbx_no_such_flag_for_any_jaxlib=true"


def test_a_flag_that_jaxlib_parses_is_found_and_a_made_up_one_is_not():
  assert xla_env.jaxlib_libraries()
  assert xla_env.known_flag("--xla_force_host_platform_device_count=8")   # rbx's own tests use it
  assert xla_env.known_flag("xla_force_host_platform_device_count")
  assert not xla_env.known_flag(MADE_UP)


def test_only_a_whole_nul_terminated_name_counts(tmp_path):
  # a flag table entry, a name inside a message and a protobuf field name (length-prefixed)
  lib = tmp_path / "libfake.so"
  lib.write_bytes(b"\x7fELF\0xla_table_flag\0see xla_message_flag for\0\x14xla_proto_field\x18")
  assert xla_env.known_flag("--xla_table_flag=1", [lib])
  for missing in ("xla_message_flag", "xla_proto_field", "xla_table", "table_flag"):
    assert not xla_env.known_flag(missing, [lib]), missing


def test_add_flags_keeps_the_users_and_skips_unknown_ones():
  environ = {"XLA_FLAGS": "--xla_backend_optimization_level=2"}
  added = xla_env.add_flags(("--xla_backend_optimization_level=0",
                             "--xla_force_host_platform_device_count=2", MADE_UP), environ)
  assert added == ["--xla_force_host_platform_device_count=2"]
  assert environ["XLA_FLAGS"] == ("--xla_backend_optimization_level=2 "
                                  "--xla_force_host_platform_device_count=2")


def test_the_cpu_flags_only_where_the_tests_run_on_the_cpu():
  assert xla_env.runs_on_cpu({})
  assert xla_env.runs_on_cpu({"JAX_PLATFORMS": "cpu"})
  assert not xla_env.runs_on_cpu({"JAX_PLATFORMS": "cuda,cpu"})
  assert not xla_env.runs_on_cpu({"JAX_PLATFORMS": "tpu"})


def test_the_module_does_not_import_jax():
  code = "import sys, xla_env; xla_env.known_flag('xla_x'); print('jax' in sys.modules)"
  out = subprocess.run([sys.executable, "-c", code], cwd=xla_env.__file__.rpartition("/")[0],
                       capture_output=True, text=True, timeout=60)
  assert out.stdout.split() == ["False"], out.stderr


def test_level_1_replaces_only_the_suites_level_0():
  both = "--xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
  assert xla_env.level_1(both) == ("--xla_backend_optimization_level=1 "
                                   "--xla_cpu_use_fusion_emitters=false")
  for kept in ("", "--xla_backend_optimization_level=2", "--xla_cpu_use_fusion_emitters=false"):
    assert xla_env.level_1(kept) == kept
