import { parentPort } from 'node:worker_threads';

/**
 * The channel a tool worker (calculate-worker.ts, code-worker.ts) talks to its WorkerHost through:
 * the parent port in a worker thread, the IPC channel in a child process. A child process exits
 * when the channel closes, so one whose host died (even by kill -9) does not linger.
 */
export interface HostPort {
  post(message: unknown): void;
  onMessage<M>(handler: (message: M) => void): void;
}

export function hostPort(who: string): HostPort {
  if (parentPort) {
    const port = parentPort;
    return { post: (m) => port.postMessage(m), onMessage: (h) => port.on('message', h as (m: unknown) => void) };
  }
  if (process.send) {
    const send = process.send.bind(process);
    process.on('disconnect', () => process.exit(0));
    return { post: (m) => send(m), onMessage: (h) => process.on('message', h as (m: unknown) => void) };
  }
  throw new Error(`${who}: must run in a worker thread or a child process with an IPC channel`);
}
