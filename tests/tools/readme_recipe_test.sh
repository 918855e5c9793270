#!/usr/bin/env bash
# readme_recipe_test.sh README BUILD_DIR - runs a recipe of README.md verbatim, as a new operator
# would type it: the lines of the fenced block after the marker
# "<!-- recipe: NAME -->", one by one, with the build's programs on PATH (what `make install`
# gives), in a scratch directory that sees the clone's bridge-fw/ (the recipe's paths are the
# clone's; what it writes, e.g. pool.db, stays out of the source tree). A line ending in '&' starts a daemon; the next line waits
# until that daemon listens (an operator waits for its first log line), then goes on. Any line
# failing fails the test, with the line and its output. It runs in a network namespace of its
# own, so the recipe's fixed ports (17480, 17490, ...) meet no other test's.
#
# RECIPE=NAME picks the block (default: pool).
set -euo pipefail

readme=$1
build=$(cd "$2" && pwd)
recipe=${RECIPE:-pool}
root=$(cd "$(dirname "$readme")" && pwd)

# The block's lines, comments after the command kept (bash reads them as comments).
mapfile -t lines < <(awk -v marker="<!-- recipe: $recipe -->" '
  $0 == marker { found = 1; next }
  found && /^```/ { if (inside) exit; inside = 1; next }
  inside { print }
' "$readme")
if [[ ${#lines[@]} -eq 0 ]]; then
  echo "FAIL: README.md has no block after <!-- recipe: $recipe -->" >&2
  exit 1
fi

if [[ -z ${DXPU_RECIPE_IN_NETNS:-} ]]; then
  export DXPU_RECIPE_IN_NETNS=1
  exec unshare --net -- bash -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
fi

work=$(mktemp -d /tmp/dxpu-recipe.XXXXXX)
daemons=()
cleanup() {
  for pid in "${daemons[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

export PATH="$build/tools:$build/manager:$build/bridge-fw:$build/bridge-fw/boot:$PATH"
export HOME=$work  # nothing of the operator's own
unset DXPU_MANAGER
mkdir "$work/cwd"
ln -s "$root/bridge-fw" "$work/cwd/bridge-fw"
cd "$work/cwd"

# Waits until process $1 holds a listening socket (at most 20 s).
wait_listening() {
  local pid=$1 tries=0
  until ss -H -lntup 2>/dev/null | grep -q "pid=$pid,"; do
    if ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    ((++tries > 200)) && return 1
    sleep 0.1
  done
}

n=0
for line in "${lines[@]}"; do
  [[ -z ${line// /} || $line =~ ^[[:space:]]*# ]] && continue
  n=$((n + 1))
  echo "\$ $line"
  command=${line%%#*}           # the command without its trailing comment
  command=${command%"${command##*[![:space:]]}"}
  if [[ $command == *'&' ]]; then
    log="$work/daemon-$n.log"
    bash -c "exec ${command%&}" >"$log" 2>&1 &
    pid=$!
    daemons+=("$pid")
    if ! wait_listening "$pid"; then
      echo "FAIL: line $n started no listening daemon: $line" >&2
      sed 's/^/  log: /' "$log" >&2
      exit 1
    fi
    continue
  fi
  if ! out=$(bash -c "$command" 2>&1); then
    echo "FAIL: line $n failed: $line" >&2
    printf '%s\n' "$out" | sed 's/^/  out: /' >&2
    for log in "$work"/daemon-*.log; do
      [[ -e $log ]] && sed "s|^|  $(basename "$log"): |" "$log" | tail -20 >&2
    done
    exit 1
  fi
  printf '%s\n' "$out" | sed 's/^/  /'
done
echo "readme recipe '$recipe': $n commands ran as written"
