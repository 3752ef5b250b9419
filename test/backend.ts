import type { BackendName } from '../src/backend/select.ts';

/**
 * The CPU backend a backend-parametrised test runs on: wasm unless SHARP_TEST_BACKEND names
 * another (CI runs the LoRA and log-prob tests again with SHARP_TEST_BACKEND=native).
 */
export function testBackend(): BackendName {
  const name = process.env['SHARP_TEST_BACKEND'];
  if (name === undefined || name === '') return 'wasm';
  if (name !== 'wasm' && name !== 'native' && name !== 'cpu')
    throw new Error(`SHARP_TEST_BACKEND must be wasm, native or cpu, got '${name}'`);
  return name;
}
