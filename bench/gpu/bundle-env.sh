# shellcheck shell=sh disable=SC2034,SC2154  # sourced: $bundle comes from, bundle_library_path goes to, the wrapper
# Sourced by every bin/ wrapper of the bundle, with $bundle the unpacked bundle's folder.
# Open MPI and PMIx find their components, help texts and defaults here, not under /usr.
export OPAL_PREFIX="$bundle" OPAL_EXEC_PREFIX="$bundle" OPAL_BINDIR="$bundle/bin" OPAL_LIBDIR="$bundle/lib" \
  OPAL_DATADIR="$bundle/share" OPAL_DATAROOTDIR="$bundle/share" OPAL_SYSCONFDIR="$bundle/etc/openmpi" \
  OPAL_PKGLIBDIR="$bundle/lib/openmpi3" OPAL_PKGDATADIR="$bundle/share/openmpi"
export PMIX_INSTALL_PREFIX="$bundle" PMIX_MCA_mca_base_component_path="$bundle/lib/pmix"
# The GPU tests start ddpscope by this bundle's wrapper (their build folder is not here).
export DDPSCOPE_TEST_BINARY="$bundle/bin/ddpscope"
# ddpscope starts mpirun from PATH, and mpirun starts the ranks: both from here.
case ":$PATH:" in *":$bundle/bin:"*) ;; *) export PATH="$bundle/bin:$PATH" ;; esac
# The bundle's libraries first (its glibc is its loader's), then the machine's CUDA libraries
# (check.sh finds them: DDPSCOPE_BUNDLE_MACHINE_LIBS), then the machine's own search path
# (the driver's libcuda). Given to the loader, not exported: the machine's programs that
# ours start (a shell) keep their own glibc.
bundle_library_path="$bundle/lib${DDPSCOPE_BUNDLE_MACHINE_LIBS:+:$DDPSCOPE_BUNDLE_MACHINE_LIBS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
