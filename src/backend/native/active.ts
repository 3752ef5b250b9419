import * as tf from '@tensorflow/tfjs';
import { arrayContext } from './backend.ts';
import type { NativeContext } from './context.ts';
import { nativeContext } from './register.ts';

/** The native context of the active backend: the wasm overrides' or the `native` backend's; undefined elsewhere. */
export function activeNativeContext(): NativeContext | undefined {
  if (tf.getBackend() === 'wasm') return nativeContext();
  return arrayContext();
}
