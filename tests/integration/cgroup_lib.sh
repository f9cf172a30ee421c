# Child cgroups (v1) for tests that put a recorded program under a memory
# limit or a disk throttle: they need root and a writable v1 hierarchy of the
# controller, and skip with a clear message elsewhere. Source after lib.sh.
# Every cgroup made here is removed when the test exits.

CGROUPS_MADE=()
cleanup_cgroups() {
  local dir tries
  for dir in "${CGROUPS_MADE[@]}"; do
    # The last process may still be exiting: an rmdir of a busy cgroup fails.
    for tries in 1 2 3 4 5 6 7 8 9 10; do
      rmdir "$dir" 2>/dev/null && break
      [ -d "$dir" ] || break
      sleep 0.2
    done
    [ -d "$dir" ] && echo "warning: could not remove cgroup $dir" >&2
  done
  rm -rf "$WORK"
}
trap cleanup_cgroups EXIT

# v1_cgroup_dir CONTROLLER: this shell's cgroup directory in the v1 hierarchy
# that has CONTROLLER (e.g. memory, blkio); fails without one.
v1_cgroup_dir() {
  local controller=$1 mount path
  mount=$(awk -v c="$controller" '{
      for (i = 7; i <= NF; i++) if ($i == "-") break
      if ($(i + 1) == "cgroup" && $4 == "/" && ("," $(i + 3) ",") ~ ("," c ",")) { print $5; exit }
    }' /proc/self/mountinfo)
  path=$(awk -F: -v c="$controller" '("," $2 ",") ~ ("," c ",") { print $3; exit }' /proc/self/cgroup)
  [ -n "$mount" ] && [ -n "$path" ] && [ -d "$mount$path" ] || return 1
  echo "${mount}${path%/}"
}

# make_cgroup CONTROLLER VAR: makes a child of this shell's CONTROLLER cgroup
# and sets VAR to its directory; fails (for the caller to skip) when it
# cannot. (Not a $(...) function: the cleanup list lives in this shell.)
make_cgroup() {
  local parent dir
  parent=$(v1_cgroup_dir "$1") || return 1
  dir="$parent/stepscope-test-$$-$RANDOM"
  mkdir "$dir" 2>/dev/null || return 1
  CGROUPS_MADE+=("$dir")
  printf -v "$2" '%s' "$dir"
}

# in_cgroup DIR CMD...: runs CMD inside the cgroup DIR (its children too).
in_cgroup() {
  local dir=$1; shift
  bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' in_cgroup "$dir" "$@"
}
