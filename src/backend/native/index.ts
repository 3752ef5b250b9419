/** Native CPU kernels for the tfjs wasm backend: public API used by the backend selector. */
export { enableNativeKernels, enableFallbackKernels, disableNativeKernels, nativeStatus, setBlasThreads, useBlasThreadsFor, NATIVE_KERNELS } from './register.ts';
export type { NativeStatus } from './register.ts';
export { nativeAdamW } from './adamw.ts';
export type { AdamWHyper, AdamWResult } from './adamw.ts';
export { loadAddon, addonPath } from './addon.ts';
