#!/usr/bin/env bash
# The prebuilt native kernels as a machine without OpenBLAS runs them (npm run test:prebuilt, run by
# .ci/run): both binaries (AVX2+FMA and x86-64 baseline) match their recorded sha256 and name no BLAS,
# LAPACK or Fortran library; then, in a private mount namespace where every OpenBLAS, BLAS, LAPACK and
# gfortran library file of this machine reads as /dev/null, the native kernel tests run on the
# prebuilt binary this CPU gets (SHARP_NATIVE=prebuilt: the parity tests fail instead of skipping when
# it does not load), then again on the baseline binary (SHARP_NATIVE_AVX2=0), which an AVX2 machine
# would otherwise never run.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "test:prebuilt: $*"; }

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  say "no prebuilt binary for $(uname -s)-$(uname -m); nothing to test"
  exit 0
fi
(cd prebuilds/linux-x64 && sha256sum --check --quiet sharp_native.avx2.napi.glibc.node.sha256 sharp_native.napi.glibc.node.sha256)
# (src/backend/native/addon.test.ts reads the same list with its own ELF reader, without binutils.)
if command -v readelf >/dev/null; then
  for bin in prebuilds/linux-x64/sharp_native.avx2.napi.glibc.node prebuilds/linux-x64/sharp_native.napi.glibc.node; do
    needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    say "$bin needs: $needed"
    if grep -Eiq 'blas|lapack|gfortran|quadmath' <<<"$needed"; then
      say "FAIL: the prebuilt binary must not need a BLAS, LAPACK or Fortran library"
      exit 1
    fi
  done
fi

mapfile -t libs < <(ldconfig -p | awk '/openblas|libblas|liblapack|gfortran/ {print $NF}' | xargs -r readlink -f | sort -u)
if [ "${#libs[@]}" -eq 0 ]; then
  say "no OpenBLAS on this machine: the tests run as they are"
  env SHARP_NATIVE=prebuilt npx vitest run src/backend/native src/model/ops/fused.test.ts src/model/ops/sdpa.test.ts src/model/ops/threads.test.ts
  exec env SHARP_NATIVE=prebuilt SHARP_NATIVE_AVX2=0 npx vitest run src/backend/native/addon.test.ts src/backend/native/kernels src/model/ops/fused.test.ts src/model/ops/sdpa.test.ts src/model/ops/threads.test.ts
fi
if ! unshare --mount true 2>/dev/null; then
  say "OpenBLAS is installed and no mount namespace is allowed here, so it cannot be hidden; the tests run with it present"
  env SHARP_NATIVE=prebuilt npx vitest run src/backend/native src/model/ops/fused.test.ts src/model/ops/sdpa.test.ts src/model/ops/threads.test.ts
  exec env SHARP_NATIVE=prebuilt SHARP_NATIVE_AVX2=0 npx vitest run src/backend/native/addon.test.ts src/backend/native/kernels src/model/ops/fused.test.ts src/model/ops/sdpa.test.ts src/model/ops/threads.test.ts
fi
# shellcheck disable=SC2016
exec unshare --mount bash -c '
  set -euo pipefail
  for f in "$@"; do mount --bind /dev/null "$f"; done
  echo "test:prebuilt: hidden: $*"
  if [ -f native/build/Release/sharp_native.node ]; then
    # The proof that OpenBLAS is gone: the local build, linked against it, no longer loads.
    node -e "try { require(\"./native/build/Release/sharp_native.node\"); console.error(\"test:prebuilt: FAIL: the local build still loads\"); process.exit(1) } catch (e) { console.log(\"test:prebuilt: the local build no longer loads: \" + e.message.split(\"\\n\")[0]) }"
  fi
  SHARP_NATIVE=prebuilt npx vitest run src/backend/native src/model/ops/fused.test.ts src/model/ops/sdpa.test.ts src/model/ops/threads.test.ts
  # The baseline binary too, which an AVX2 machine would otherwise never run.
  SHARP_NATIVE=prebuilt SHARP_NATIVE_AVX2=0 npx vitest run src/backend/native/addon.test.ts src/backend/native/kernels src/model/ops/fused.test.ts src/model/ops/sdpa.test.ts src/model/ops/threads.test.ts
' test-prebuilt "${libs[@]}"
