import { execFileSync } from 'node:child_process';

/**
 * Whether python3 runs here: the parity tests run our Python reference of the official evaluators
 * (musique_reference.py) and skip cleanly where there is no interpreter.
 */
export function hasPython(): boolean {
  try {
    execFileSync('python3', ['-c', 'pass'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
