#!/usr/bin/env bash
# Installs the Debian packages ddpscope needs when any is missing, then configures and
# builds a CMake preset. Usage: scripts/setup.sh PRESET [TARGET...]
# With DDPSCOPE_APT_CACHE=DIR, downloaded packages are kept in (and taken from) DIR.
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  libopenblas-dev libblis-dev libdnnl-dev ocl-icd-opencl-dev
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libfmt-dev rapidjson-dev libsimdjson-dev libisal-dev zlib1g-dev
  libgtest-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin iproute2
  slurmd slurmctld slurm-client munge
  protobuf-compiler
  python3-numpy python3-torch python3-pip ca-certificates
  chromium fonts-liberation
)
preset=${1:-release}
# The sanitizer and fuzz stages also need clang (libFuzzer, OpenMP for clang) and the style tools
# (scripts/check-style runs on the asan build); a release or debug build does not.
case "$preset" in
  release | debug | portable) ;;
  *) packages+=(clang-14 libclang-rt-14-dev libomp-14-dev clang-format-14 clang-tidy-14) ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "ddpscope needs these Debian packages; install them as root and run this again:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # DDPSCOPE_APT_CACHE: a folder of .debs shared with scripts/fresh-machine-test, so that
  # CI downloads each package once for the fresh root and this machine together.
  cache=()
  if [[ -n "${DDPSCOPE_APT_CACHE:-}" ]]; then
    mkdir -p "$DDPSCOPE_APT_CACHE/partial"
    cache=(-o "Dir::Cache::archives=$(cd "$DDPSCOPE_APT_CACHE" && pwd)/")
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${cache[@]}" "${missing[@]}" >&2
fi

shift || true
cd "$(dirname "$0")/.."

# Lightning for the tests of doctor -- COMMAND (tests/script): the newest that runs on Debian's
# torch 1.13, with what it imports, from PyPI as pure-Python wheels (--no-deps: torch stays
# Debian's), into build/python-lightning, once.
lightning_pins=(pytorch-lightning==2.0.9 lightning-utilities==0.9.0 torchmetrics==1.1.2 tqdm==4.70.1
  fsspec==2026.9.0 packaging==26.4)
lightning_dir=build/python-lightning
if [[ "$(cat "$lightning_dir/.pins" 2>/dev/null)" != "${lightning_pins[*]}" ]]; then
  rm -rf "$lightning_dir"
  PIP_ROOT_USER_ACTION=ignore /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --target "$lightning_dir" "${lightning_pins[@]}" >&2
  echo "${lightning_pins[*]}" >"$lightning_dir/.pins"
fi
cmake --preset "$preset" >/dev/null
if (($#)); then
  cmake --build --preset "$preset" -j "$(nproc)" --target "$@"
else
  cmake --build --preset "$preset" -j "$(nproc)"
fi
