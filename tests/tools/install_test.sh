#!/usr/bin/env bash
# What `make install` installs (cmake/install.cmake, docs/install.md), installed from this build
# into a temporary prefix: the five programs there and running (--help), the dissector, the
# examples (the bridge's configuration passes `dxpu-bridge --check`), the systemd units naming
# the programs and the options files of that prefix, every option the options files name known
# to its daemon's --help, `systemd-analyze verify` clean on the units, an operator's options file
# kept by a second install; and with DESTDIR, the units naming the final paths, not the staging.
# Then make install and make uninstall: a staged (DESTDIR) install after a real one does not
# take the real one's place in make uninstall's list.
# Usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR
set -euo pipefail
cmake=${1:?usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR}
build=${2:?usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR}
src=${3:?usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}

programs=(dxpu dxpu-bridge dxpu-boot dxpu-manager dxpu-agent)
daemons=(dxpu-manager dxpu-agent dxpu-bridge dxpu-boot)

p=$tmp/prefix
"$cmake" --install "$build" --prefix "$p" >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log" >&2
  echo "FAIL: cmake --install $build --prefix $p" >&2
  exit 1
}

for prog in "${programs[@]}"; do
  if [ ! -x "$p/bin/$prog" ]; then
    fail "$p/bin/$prog is not installed (or not executable)"
  elif ! "$p/bin/$prog" --help >"$tmp/help-$prog" 2>&1 || [ ! -s "$tmp/help-$prog" ]; then
    fail "$p/bin/$prog --help did not exit 0 with its help"
  fi
done

cmp -s "$src/tools/wireshark/dxfp.lua" "$p/share/dxpu/wireshark/dxfp.lua" ||
  fail "the dissector is not installed as $p/share/dxpu/wireshark/dxfp.lua"
[ -f "$p/share/doc/dxpu/docs/install.md" ] || fail "docs/install.md is not installed"
example=$p/share/dxpu/examples/bridge.json
if [ ! -f "$example" ]; then
  fail "$example is not installed"
elif ! "$p/bin/dxpu-bridge" --config "$example" --check >"$tmp/check.log" 2>&1; then
  cat "$tmp/check.log" >&2
  fail "the installed dxpu-bridge refuses the installed example $example"
fi

units=$p/lib/systemd/system
for d in "${daemons[@]}"; do
  unit=$units/$d.service
  opts=$p/etc/default/$d
  if [ ! -f "$unit" ]; then
    fail "$unit is not installed"
    continue
  fi
  exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
  read -r exe var rest <<<"$exec_start"
  [ "$exe" = "$p/bin/$d" ] || fail "$d.service: ExecStart runs '$exe', not $p/bin/$d"
  [ -z "$rest" ] || fail "$d.service: ExecStart has more than the options variable: '$exec_start'"
  env_file=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
  [ "$env_file" = "$opts" ] || fail "$d.service: EnvironmentFile is '$env_file', not $opts"
  [ "$(grep -c '^Restart=on-failure$' "$unit")" = 1 ] || fail "$d.service: no Restart=on-failure"
  # A bad command line is not restarted: the status the daemon exits with for one is listed.
  rc=0
  timeout 10 "$p/bin/$d" --no-such-option >/dev/null 2>&1 || rc=$?
  no_restart=" $(sed -n 's/^RestartPreventExitStatus=//p' "$unit") "
  [[ $rc != 0 && $no_restart == *" $rc "* ]] ||
    fail "$d.service: $d exits $rc on a bad option; RestartPreventExitStatus is '$no_restart'"
  cmp -s "$opts" "$p/share/dxpu/examples/default/$d" ||
    fail "$opts is not the shipped $p/share/dxpu/examples/default/$d"
  # The variable ExecStart expands is the one the options file sets, and every option the file
  # names (its comments too) is one the daemon knows.
  name=${var#\$}
  value=$(env -i bash -c "set -a; . '$opts'; printf '%s' \"\${$name-unset}\"")
  [ "$value" != unset ] || fail "$opts does not set $name, which $d.service passes"
  for o in $(grep -o -- '--[a-z][a-z-]*' "$opts" | sort -u); do
    grep -q -- "$o[ ,=]\|$o\$" "$tmp/help-$d" || fail "$opts names $o, which $d --help does not know"
  done
  for path in $(grep -v '^#' "$unit" | grep -o -- '[ =-]/[^ "]*' | cut -c2- | sort -u); do
    case $path in
      /var/lib/* | /run/* | /sys/* | /etc/systemd/*) ;;
      *) [[ $path == "$p"/* ]] || fail "$d.service names $path, outside the prefix $p" ;;
    esac
  done
done
grep -q '^Conflicts=dxpu-boot.service$' "$units/dxpu-bridge.service" ||
  fail "dxpu-bridge.service does not exclude dxpu-boot.service"
grep -q '^StateDirectory=dxpu$' "$units/dxpu-manager.service" ||
  fail "dxpu-manager.service has no StateDirectory=dxpu for its --db"
grep -q -- '--db /var/lib/dxpu/' "$p/etc/default/dxpu-manager" ||
  fail "dxpu-manager's --db is not in its StateDirectory /var/lib/dxpu"

if command -v systemd-analyze >/dev/null; then
  if ! (cd "$units" && systemd-analyze verify --man=no ./*.service) >"$tmp/verify.log" 2>&1 ||
    [ -s "$tmp/verify.log" ]; then
    cat "$tmp/verify.log" >&2
    fail "systemd-analyze verify finds fault with the units"
  fi
else
  fail "systemd-analyze is not installed: tools/bootstrap installs it (Debian package systemd)"
fi

# A second install keeps what the operator wrote in an options file.
echo 'DXPU_AGENT_OPTS="--node-id 0xa1"  # mine' >"$p/etc/default/dxpu-agent"
"$cmake" --install "$build" --prefix "$p" >"$tmp/install2.log" 2>&1 ||
  fail "a second cmake --install into $p"
grep -q '# mine' "$p/etc/default/dxpu-agent" ||
  fail "a second install overwrote the operator's $p/etc/default/dxpu-agent"

# DESTDIR stages; the units and options name the final paths.
stage=$tmp/stage
DESTDIR=$stage "$cmake" --install "$build" --prefix /usr/local >"$tmp/install3.log" 2>&1 ||
  fail "DESTDIR=$stage cmake --install --prefix /usr/local"
[ -x "$stage/usr/local/bin/dxpu" ] || fail "DESTDIR: $stage/usr/local/bin/dxpu missing"
unit=$stage/usr/local/lib/systemd/system/dxpu-manager.service
grep -q '^ExecStart=/usr/local/bin/dxpu-manager \$DXPU_MANAGER_OPTS$' "$unit" ||
  fail "DESTDIR: $unit does not run /usr/local/bin/dxpu-manager"
grep -q '^EnvironmentFile=-/etc/default/dxpu-manager$' "$unit" ||
  fail "DESTDIR: $unit does not read /etc/default/dxpu-manager"
[ -f "$stage/etc/default/dxpu-manager" ] || fail "DESTDIR: $stage/etc/default/dxpu-manager missing"
grep -q -- '--config /etc/dxpu/bridge.json' "$stage/etc/default/dxpu-bridge" ||
  fail "DESTDIR: dxpu-bridge's options do not name /etc/dxpu/bridge.json"
if grep -rq "$stage" "$stage/usr/local/lib/systemd/system" "$stage/etc/default"; then
  fail "DESTDIR: the staging directory leaked into the units or options"
fi

# make install and make uninstall themselves (the Makefile's targets, from this build, without
# building: -o release; their file lists in $tmp, systemd left alone): a staged install
# (DESTDIR) after a real one leaves the list make uninstall reads as it was, so make uninstall
# then removes the real install's files (not the options files, which stay) and touches nothing
# of the staged tree.
if command -v make >/dev/null; then
  made=$tmp/made
  pkgroot=$tmp/pkgroot
  list=$tmp/installed_files.txt
  staged_list=$tmp/installed_files.destdir.txt
  mk=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$src" -o release INSTALL_BUILD="$build"
    INSTALLED="$list" INSTALLED_DESTDIR="$staged_list" SYSTEMCTL=true)
  if ! "${mk[@]}" install PREFIX="$made" DESTDIR= >"$tmp/make-install.log" 2>&1; then
    cat "$tmp/make-install.log" >&2
    fail "make install PREFIX=$made"
  elif [ ! -x "$made/bin/dxpu" ] || ! grep -qx "$made/bin/dxpu" "$list"; then
    fail "make install PREFIX=$made: no $made/bin/dxpu, or not in $list"
  else
    cp "$list" "$tmp/real-list"
    if ! "${mk[@]}" install PREFIX=/usr DESTDIR="$pkgroot" >"$tmp/make-stage.log" 2>&1; then
      cat "$tmp/make-stage.log" >&2
      fail "make install PREFIX=/usr DESTDIR=$pkgroot"
    fi
    [ -x "$pkgroot/usr/bin/dxpu" ] || fail "make install DESTDIR=$pkgroot: no $pkgroot/usr/bin/dxpu"
    cmp -s "$list" "$tmp/real-list" ||
      fail "make install DESTDIR=$pkgroot replaced make uninstall's list $list (the real install's)"
    grep -qx "$pkgroot/usr/bin/dxpu" "$staged_list" 2>/dev/null ||
      fail "make install DESTDIR=$pkgroot: its files are not listed in $staged_list"
    (cd "$pkgroot" && find . | sort) >"$tmp/staged-before"
    if ! "${mk[@]}" uninstall >"$tmp/make-uninstall.log" 2>&1; then
      cat "$tmp/make-uninstall.log" >&2
      fail "make uninstall"
    fi
    left=0
    while IFS= read -r f; do
      [ ! -e "$f" ] || { left=$((left + 1)) && echo "left: $f" >&2; }
    done <"$tmp/real-list"
    [ "$left" = 0 ] ||
      fail "make uninstall after a DESTDIR install left $left files of the real install (above)"
    [ ! -e "$made/share/dxpu" ] || fail "make uninstall left the directory $made/share/dxpu"
    [ -f "$made/etc/default/dxpu-agent" ] ||
      fail "make uninstall removed the options file $made/etc/default/dxpu-agent"
    (cd "$pkgroot" && find . | sort) >"$tmp/staged-after"
    diff -u "$tmp/staged-before" "$tmp/staged-after" >&2 ||
      fail "make uninstall removed files of the staged tree $pkgroot (above)"
    [ ! -e "$list" ] || fail "make uninstall left its list $list"
    if "${mk[@]}" uninstall >"$tmp/make-uninstall2.log" 2>&1 ||
      ! grep -q 'is missing' "$tmp/make-uninstall2.log"; then
      cat "$tmp/make-uninstall2.log" >&2
      fail "a second make uninstall did not refuse (its list is gone)"
    fi
  fi
else
  fail "make is not installed: tools/bootstrap installs it (build-essential)"
fi

if [ "$fails" -ne 0 ]; then
  echo "FAIL: $fails problem(s) with what make install installs" >&2
  exit 1
fi
echo "PASS: make install's programs run, its units name them and their options, verified;" \
  "make uninstall after a staged install removes the real one"
