#!/usr/bin/env bash
# Runs the README's first set-up command on a brand-new Debian 12, as a new user would: a
# minimal root made with debootstrap (nothing installed by hand, no ccache, no CUDA toolkit,
# no LibTorch), given only this machine's way to the package registries (its Debian sources,
# name server, the CA bundle and the pip settings its environment names), a clean clone of
# HEAD with ../shared beside it, and the README's first ```sh block run there as written.
# Prints the exit status, the minutes and the demo's accuracy line; exits with the demo's
# status. The root's mounts are undone and the root removed on every way out.
#
#   bash scripts/fresh-machine.sh [--ref REF] [--ccache DIR]   (as root; .ci/run runs it before the tests)
#
# REF: the commit to clone (default HEAD; uncommitted changes are not in a clone).
# --ccache DIR: lend the root this machine's compiler cache (DIR, bound at the root's
# ~/.cache/ccache), which the ccache that scripts/setup.sh installs there then uses. CI does, so
# that this check spends its minutes on what it checks, the set-up, not on compiling what the
# test stages compile again. It hides no missing package: ccache preprocesses anew when a
# header it recorded is not there, and the root compiles and links against its own files.
# Environment: MLH_FRESH_DIR, the folder the root is made in (default: a new one under
# /var/tmp); MLH_FRESH_MIRROR, the Debian archive (default: the machine's own, from its apt
# sources).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

ref=HEAD
ccache_dir=
while (($#)); do
  case $1 in
    --ref) [[ $# -ge 2 ]] || { echo "fresh-machine: --ref needs a commit" >&2; exit 2; }
           ref=$2; shift 2 ;;
    --ccache) [[ $# -ge 2 && -d $2 ]] || { echo "fresh-machine: --ccache needs a folder (got '${2:-}')" >&2; exit 2; }
              ccache_dir=$(cd "$2" && pwd); shift 2 ;;
    *) echo "fresh-machine: unknown argument '$1' (usage: fresh-machine.sh [--ref REF] [--ccache DIR])" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "fresh-machine: needs root (it mounts /proc and /dev into a chroot)" >&2; exit 2; }
commit=$(git -C "$repo" rev-parse --verify --quiet "$ref^{commit}") ||
  { echo "fresh-machine: --ref '$ref' is not a commit of $repo" >&2; exit 2; }
shared=$(cd "$repo/.." && pwd)/shared
[[ -d $shared ]] || { echo "fresh-machine: no $shared beside the checkout (the README's commands read it)" >&2; exit 2; }

# The README's first command: the first ```sh block after its "## Set-up" heading.
readme_command=$(awk '/^## Set-up/ { setup = 1 } setup && /^```sh$/ { inside = 1; next }
                      inside && /^```$/ { exit } inside { print }' "$repo/README.md")
[[ -n $readme_command ]] || { echo "fresh-machine: README.md has no \`\`\`sh block under '## Set-up'" >&2; exit 2; }

# This machine's Debian archive, from its apt sources (deb822 or one-line format).
mirror=${MLH_FRESH_MIRROR:-}
if [[ -z $mirror ]]; then
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ { uri = $2 } /^Suites:/ && / bookworm( |$)/ && uri { print uri; exit }')
  [[ -n $mirror ]] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }')
  mirror=${mirror:-http://deb.debian.org/debian}
fi

if ! command -v debootstrap >/dev/null; then
  echo "fresh-machine: installing debootstrap (the tool that makes the root; not part of the test)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

work=$(mktemp -d "${MLH_FRESH_DIR:-/var/tmp}/mlhost-fresh.XXXXXX")
root=$work/root
mounts=()  # in mount order; undone in reverse
job=       # the long step under way, in a session of its own

# Runs a long step as a job of its own and waits for it: a signal then reaches the traps at
# once (bash runs them only between commands, and `wait` is one), and the cleanup ends the job.
run_job() {
  setsid -w "$@" &
  job=$!
  local status=0
  wait "$job" || status=$?
  job=
  return $status
}

# Every process still inside the root, then every mount, then the files. A mount that will
# not go is reported and the root kept: removing files through a live bind of /dev would
# remove the machine's own.
cleanup() {
  local status=$? pid m busy=0
  trap - EXIT INT TERM HUP
  [[ -z $job ]] || kill -KILL -- "-$job" 2>/dev/null
  for pid in /proc/[0-9]*; do
    [[ "$(readlink "$pid/root" 2>/dev/null)" == "$root" ]] && kill -KILL "${pid#/proc/}" 2>/dev/null
  done
  for ((m = ${#mounts[@]} - 1; m >= 0; m--)); do
    umount "${mounts[m]}" 2>/dev/null || umount -l "${mounts[m]}" 2>/dev/null || true
  done
  if grep -q " $work/" /proc/mounts; then
    busy=1
    echo "fresh-machine: mounts under $work remain; left in place:" >&2
    grep " $work/" /proc/mounts >&2
  fi
  ((busy)) || rm -rf --one-file-system "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

start=$SECONDS
echo "== fresh-machine: a minimal Debian 12 root from $mirror =="
if ! run_job debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  echo "fresh-machine: debootstrap failed" >&2
  exit 1
fi
echo "root made in $((SECONDS - start)) s"

# The machine's way to the registries, and nothing else of it.
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  : >"$root/etc/apt/sources.list"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
registry_env=()
cert_files=()
for var in $(compgen -e); do
  case $var in
    PIP_*|SSL_CERT_FILE|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE) registry_env+=("$var=${!var}") ;;
    *) continue ;;
  esac
  [[ $var == PIP_CERT || $var == SSL_CERT_FILE || $var == REQUESTS_CA_BUNDLE || $var == CURL_CA_BUNDLE ]] &&
    cert_files+=("${!var}")
done
for conf in /etc/pip.conf /etc/xdg/pip/pip.conf ${PIP_CONFIG_FILE:-}; do
  [[ -f $conf ]] || continue
  mkdir -p "$root$(dirname "$conf")" && cp "$conf" "$root$conf"
  cert_files+=($(awk -F= '$1 ~ /^ *cert *$/ { gsub(/ /, "", $2); print $2 }' "$conf"))
done
for cert in "${cert_files[@]}"; do
  [[ -f $cert ]] || continue
  mkdir -p "$root$(dirname "$cert")" && cp "$cert" "$root$cert"
done
# The machine's own certificate authorities, where a ca-certificates installed in the root
# rebuilds its bundle from.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi

# A clean clone of the commit, with shared/ beside it, as CI lays them out.
mkdir -p "$root/root/src"
git clone --quiet --no-hardlinks "$repo" "$root/root/src/mlhost"
git -C "$root/root/src/mlhost" checkout --quiet --detach "$commit"
cp -r "$shared" "$root/root/src/shared"

mount -t proc proc "$root/proc" && mounts+=("$root/proc")
mount -t sysfs sysfs "$root/sys" && mounts+=("$root/sys")
mount --bind /dev "$root/dev" && mounts+=("$root/dev")
mount -t tmpfs tmpfs "$root/dev/shm" && mounts+=("$root/dev/shm")
if [[ -n $ccache_dir ]]; then
  mkdir -p "$root/root/.cache/ccache"
  mount --bind "$ccache_dir" "$root/root/.cache/ccache" && mounts+=("$root/root/.cache/ccache")
  echo "the root uses this machine's compiler cache ($ccache_dir)"
fi

echo "== fresh-machine: the README's first command in a clone of ${commit:0:12} =="
echo "\$ $readme_command"
demo_start=$SECONDS
status=0
run_job bash -o pipefail -c 'root=$1 command=$2 log=$3; shift 3
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 TERM=dumb "$@" /bin/bash -c "cd /root/src/mlhost && $command" </dev/null 2>&1 | tee "$log"' \
  demo "$root" "$readme_command" "$work/demo.log" "${registry_env[@]}" || status=$?
seconds=$((SECONDS - demo_start))

echo
echo "== fresh-machine: summary =="
echo "exit status: $status"
printf 'minutes: %d.%d (the command alone; %d s with the root made)\n' $((seconds / 60)) $((seconds % 60 * 10 / 60)) \
  $((SECONDS - start))
accuracy=$(grep -E 'test accuracy, ' "$work/demo.log" | tail -n 1 | sed -E 's/.*(test accuracy, )/\1/; s/; checkpoint .*//' || true)
echo "accuracy: ${accuracy:-none (the demo did not get to its evaluation)}"
if ((status != 0)); then
  echo "why, from its output:"
  grep -E -i 'error|failed|not found|no such' "$work/demo.log" | tail -n 8 || true
fi
exit "$status"
