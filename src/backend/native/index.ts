/** Native CPU kernels for the tfjs wasm backend: public API used by the backend selector. */
export { enableNativeKernels, disableNativeKernels, nativeStatus } from './register.ts';
export type { NativeStatus } from './register.ts';
export { nativeAdamW } from './adamw.ts';
