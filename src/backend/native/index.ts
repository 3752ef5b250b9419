/** Native CPU kernels (the wasm overrides and the `native` backend): public API used by the backend selector. */
export { enableNativeKernels, disableNativeKernels } from './register.ts';
export type { NativeStatus } from './register.ts';
export { NATIVE_BACKEND, nativeKernelHere, registerNativeBackend } from './backend.ts';
export { fusedAdamWReady, inPlaceWeightUpdates, nativeAdamW } from './adamw.ts';
export { FUSED_KERNELS } from './kernels/fused.ts';
export { kvWriteInPlace, kvWriteReady } from './kv-write.ts';
