# kernel_env.sh - sourced by the kernel tests (after setting $here): the modules and the guest
# programs under test. Under ctest they are built once for every test: DXPU_KBUILD is the
# directory tests/kbuild_check.sh built the modules in (the check.kbuild-lib-core test, a fixture
# every kernel test requires), DXPU_GUEST_PROGRAMS the directory the build put the statically
# linked guest programs in (tests/CMakeLists.txt). A test run by hand without them builds its
# own into its work directory.
#   kernel_modules WORK       sets ko_dir: the directory holding dxpu.ko and dxpu_core_check.ko
#   guest_program NAME WORK   prints the path of the static guest program NAME
#                             (tests/kernel/NAME.c)
kernel_modules() {
  if [ -n "${DXPU_KBUILD:-}" ]; then
    ko_dir=$DXPU_KBUILD/driver
  else
    bash "$here/../kbuild_check.sh" "$1/kbuild" >/dev/null
    ko_dir=$1/kbuild/driver
  fi
  [ -f "$ko_dir/dxpu.ko" ] || { echo "FAIL: no $ko_dir/dxpu.ko (the kbuild check failed?)" >&2; exit 1; }
}

guest_program() {
  local name=$1 work=$2
  if [ -n "${DXPU_GUEST_PROGRAMS:-}" ]; then
    [ -x "$DXPU_GUEST_PROGRAMS/$name" ] ||
      { echo "FAIL: no guest program $DXPU_GUEST_PROGRAMS/$name" >&2; exit 1; }
    echo "$DXPU_GUEST_PROGRAMS/$name"
  else
    mkdir -p "$work"
    gcc -static -O2 -Wall -Wextra -Werror -I"$here/../../include" -o "$work/$name" "$here/$name.c"
    echo "$work/$name"
  fi
}
