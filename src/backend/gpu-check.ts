import { BACKEND_NAMES, BackendError, type BackendChoice, type BackendName } from './select.ts';
import type { LibProbe } from './cuda-libs.ts';

/**
 * The backend a command uses: `--backend` flag, else the SHARP_BACKEND environment variable (the
 * Docker image sets it to `tensorflow`), else the config's `run.backend`.
 */
export function resolveBackendName(
  flag: string | undefined,
  configured: BackendName,
  env: NodeJS.ProcessEnv = process.env,
): BackendName {
  const pick = flag ?? env.SHARP_BACKEND ?? configured;
  if (!(BACKEND_NAMES as readonly string[]).includes(pick))
    throw new BackendError(
      `backend must be ${BACKEND_NAMES.slice(0, -1).join(', ')} or ${BACKEND_NAMES.at(-1)}, got '${pick}'`,
    );
  return pick as BackendName;
}

/**
 * A warning for `sharp train` when `tensorflow` was asked for but the work will run on the CPU:
 * either the CPU build (tfjs-node) loaded, or tfjs-node-gpu loaded without the CUDA/cuDNN libraries
 * (libtensorflow then falls back to the CPU without a word). Null when nothing is wrong.
 */
export function gpuFallbackWarning(requested: BackendName, choice: BackendChoice, libs: LibProbe[]): string | null {
  if (requested !== 'tensorflow') return null;
  if (choice.pkg !== '@tensorflow/tfjs-node-gpu') {
    return `backend 'tensorflow' was requested but ${choice.pkg} loaded: training runs on the CPU`;
  }
  const missing = libs.filter((l) => l.path === null).map((l) => l.lib);
  return missing.length > 0
    ? `tfjs-node-gpu loaded but ${missing.join(', ')} not found: TensorFlow falls back to the CPU`
    : null;
}
