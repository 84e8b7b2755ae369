#!/bin/sh
# Runs inside `unshare -m` (POSIX sh: bash and most tools need libraries hidden here).
# Hides every Debian library and Open MPI file the bundle packs, keeping only the machine's
# libc and loader (which /bin/sh itself needs), then runs the bundle's programs. Results go
# to files that gpu_bundle_test.sh checks outside: grep would need hidden libraries.
# Usage: sh gpu_bundle_hidden.sh BUNDLE WORK
set -eu
bundle=$1
work=$2
keep=$work/system-libs
empty=$work/empty
mkdir -p "$keep" "$empty"
cp -L /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$keep/"
# unshare -m made every mount private (nothing leaks to the host); the library folder goes
# last: mount itself needs it.
for folder in /etc/openmpi /usr/share/openmpi /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2; do
  if [ -d "$folder" ]; then mount --bind "$empty" "$folder"; fi
done
mount --bind "$keep" /usr/lib/x86_64-linux-gnu

cd "$work"
run() {  # run NAME COMMAND...: stdout+stderr to NAME.out, exit code to NAME.rc
  name=$1
  shift
  set +e
  "$@" >"$work/$name.out" 2>&1
  echo $? >"$work/$name.rc"
  set -e
}
run version "$bundle/bin/ddpscope" --version
run train1 "$bundle/bin/ddpscope" train --preset seed --max-epochs 2 --devices 1
run train2 "$bundle/bin/ddpscope" train --preset seed --max-epochs 2 --devices 2
run mpirun2 "$bundle/bin/mpirun" -np 2 --oversubscribe --allow-run-as-root --bind-to none \
  "$bundle/bin/ddpscope" train --preset seed --max-epochs 2 --devices 2
# Every packed program and plugin resolves all its libraries inside the bundle.
for elf in "$bundle"/libexec/* "$bundle"/lib/openmpi3/*.so "$bundle"/lib/pmix/*.so; do
  [ -e "$elf" ] || continue
  echo "== $elf" >>"$work/resolve.out"
  "$bundle/lib/ld-linux-x86-64.so.2" --library-path "$bundle/lib" --list "$elf" >>"$work/resolve.out" 2>&1 ||
    echo "FAILED: $elf" >>"$work/resolve.out"
done
