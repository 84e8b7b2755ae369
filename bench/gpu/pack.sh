#!/usr/bin/env bash
# Packs, here, a self-contained bundle of a release build for a machine that has none of our
# Debian libraries (the GPU machine of bench/gpu/README.md): the programs, every shared
# library they load (glibc, libstdc++ and the dynamic loader included, so the machine's own
# glibc version does not matter), and Open MPI's runtime relocated into the bundle.
#
#   bench/gpu/pack.sh [BUILD_DIR] [OUT_DIR]    # defaults: build/portable, build/gpu-bundle
# (build/portable: `scripts/setup.sh portable`, CUDA and code for any AVX2 CPU.)
#
# Leaves OUT_DIR/ddpscope-bundle.tar.gz and prints its size. Exit 1 when a library a program
# needs cannot be found here (the bundle would not run there).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build/portable}" && pwd) ||
  { echo "pack.sh: no build to pack; make one with scripts/setup.sh portable" >&2; exit 2; }
out=$(mkdir -p "${2:-$root/build/gpu-bundle}" && cd "${2:-$root/build/gpu-bundle}" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b=$stage/ddpscope-bundle
mkdir -p "$b/bin" "$b/libexec" "$b/lib/openmpi3" "$b/lib/pmix" "$b/share" "$b/etc/openmpi"

# The driver's libraries belong to the machine (they must match its kernel module), and the
# CUDA libraries too large to travel (cuBLASLt is hundreds of MB) are the machine's own CUDA's
# or torch's: check.sh finds them there. Everything else is packed.
machine_libs='^(linux-vdso|libcuda\.so|libnvidia-|libcublas|libcudart\.so|libnccl|libnvrtc|libnvJitLink|libcupti)'
# Open MPI components for networks this single machine does not use; their libraries are not
# packed, and a component whose libraries are missing would print a load error at start.
network_deps='lib(fabric|ucp|ucs|uct|ucm|ibverbs|rdmacm|psm|infinipath|efa|oshmem|nl-)|libmca_common_(ucx|ofi|verbs)'

# Copies the libraries `elf` needs (ldd, recursively resolved) into lib/ under their sonames.
copy_needed() {
  local elf=$1 name path
  while read -r name path; do
    [[ $name =~ $machine_libs ]] && { echo "$name" >>"$stage/machine-libs"; continue; }
    if [[ $path == "not" ]]; then
      echo "pack.sh: $elf needs $name, which is not found here" >&2
      exit 1
    fi
    [[ -e $b/lib/$name ]] || cp -L "$path" "$b/lib/$name"
  done < <(ldd "$elf" | awk '$2 == "=>" {print $1, $3}')
}

# A program: the ELF goes to libexec/, and bin/NAME is the wrapper to start it by.
add_program() {
  local elf=$1 name
  name=$(basename "$elf")
  cp -L "$elf" "$b/libexec/$name"
  copy_needed "$elf"
  sed "s/@NAME@/$name/g" "$here/wrapper.sh.in" >"$b/bin/$name"
  chmod +x "$b/bin/$name"
}

# Our programs: ddpscope, the seed's script as a user builds it, the NVML cycle bench, the
# GPU step bench and the GPU tests where the build has them (built with CUDA).
add_program "$build/ddpscope"
# cuBLASLt and NCCL are loaded on first use (gpu/cublaslt_library.h, gpu/nccl_library.h), so
# ldd does not list them: the names the binary asks for are the machine's to provide.
"$build/ddpscope" devices --json | sed -n 's/^ *"\(cublaslt\|nccl\)": "\(.*\)",$/\2/p' >>"$stage/machine-libs"
add_program "$build/seed_example"
[[ -x $build/bench/nvml_cycle_bench ]] && add_program "$build/bench/nvml_cycle_bench"
[[ -x $build/bench/gpu_step_bench ]] && add_program "$build/bench/gpu_step_bench"
mkdir -p "$b/tests"
for test in "$build"/tests/gpu_*_test; do
  [[ -x $test ]] || continue
  add_program "$test"
  echo "$(basename "$test")" >>"$b/tests/gpu-tests"
done

# Open MPI's launcher (mpirun is orterun in Open MPI 4) and its components, help texts and
# defaults, at the places the wrapper's OPAL_* variables name; PMIx's likewise.
mpirun=$(readlink -f "$(command -v mpirun)")
add_program "$mpirun"
ln -s "$(basename "$mpirun")" "$b/bin/mpirun"
pkglibdir=$(ompi_info --path pkglibdir --parsable | sed 's/^path:pkglibdir://')
pkgdatadir=$(ompi_info --path pkgdatadir --parsable | sed 's/^path:pkgdatadir://')
sysconfdir=$(ompi_info --path sysconfdir --parsable | sed 's/^path:sysconfdir://')
for component in "$pkglibdir"/*.so; do
  ldd "$component" | grep -Eq "$network_deps" && continue
  cp -L "$component" "$b/lib/openmpi3/"
  copy_needed "$component"
done
cp -r "$pkgdatadir" "$b/share/openmpi"
cp "$sysconfdir"/openmpi-mca-params.conf "$b/etc/openmpi/"
pmix_lib=$(ldd "$pkglibdir"/mca_pmix_*.so | awk '/libpmix/ {print $3}' | head -1)
if [[ -n $pmix_lib ]]; then
  pmix_prefix=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
  for component in "$pmix_prefix"/lib/pmix/*.so; do
    cp -L "$component" "$b/lib/pmix/"
    copy_needed "$component"
  done
  cp -r "$pmix_prefix/share/." "$b/share/"
fi

# The dynamic loader the wrappers start every program with (the one glibc here was built for).
loader=$(readelf -l "$build/ddpscope" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
cp -L "$loader" "$b/lib/ld-linux-x86-64.so.2"
cp "$here/bundle-env.sh" "$b/lib/bundle-env.sh"

# What is inside, for check.sh and for whoever reads the results.
{
  echo "packed_on: $(uname -srm), $(ldd --version | head -1)"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "cxx_flags: $(sed -n 's/^CMAKE_CXX_FLAGS_RELEASE:STRING=//p' "$build/CMakeCache.txt")"
  echo "cuda_build: $(grep -Eq '^CMAKE_CUDA_COMPILER:(FILE)?PATH=.+' "$build/CMakeCache.txt" && echo yes || echo no)"
  echo "gpu_tests: $(cat "$b/tests/gpu-tests" 2>/dev/null | tr "\n" " ")"
  echo "machine_libs: $(sort -u "$stage/machine-libs" 2>/dev/null | grep -v linux-vdso | tr '\n' ' ')"
} >"$b/MANIFEST"

tar -C "$stage" -czf "$out/ddpscope-bundle.tar.gz" ddpscope-bundle
# What travels to the device machine (at most 64 MiB): the tracked tree and the bundle
# (the tree's size where git is here to list it; a fresh root has none).
travels=""
if command -v git >/dev/null; then
  tree_kib=$(cd "$root" && git ls-files -z | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1)
  travels="; with the source tree $(((tree_kib + $(du -k "$out/ddpscope-bundle.tar.gz" | cut -f1)) / 1024)) MiB of the 64 that travel"
fi
echo "pack.sh: $out/ddpscope-bundle.tar.gz: $(du -h "$out/ddpscope-bundle.tar.gz" | cut -f1)" \
  "($(du -sh "$b" | cut -f1) unpacked, $(find "$b/lib" -name '*.so*' | wc -l) libraries)$travels"
# -march=native code runs only on CPUs with this one's instructions (check.sh names an
# illegal instruction); the machine's CPU is not known here.
if grep -q 'march=native' "$b/MANIFEST"; then
  echo "pack.sh: note: built with -march=native for this CPU; should the GPU machine's lack an instruction," \
    "pack the portable build (scripts/setup.sh portable)" >&2
fi
