/* global process, setTimeout */
import { parentPort } from 'node:worker_threads';

/**
 * A WorkerHost entry (plain JavaScript, as the built tool entries are) that says ready only after
 * SLOW_START_MS (given by the test in the worker's environment), then answers each job with its own
 * text: the worker-host test checks that a call made during a slow start gets this answer, not a
 * start failure.
 */
const SLOW_START_MS = Number(process.env.SLOW_START_MS ?? '0');

const port = parentPort;
if (!port) throw new Error('slow-start-worker: must run in a worker thread');
setTimeout(() => {
  port.on('message', (req) => port.postMessage({ id: req.id, outcome: { ok: true, output: `echo ${req.text}` } }));
  port.postMessage({ ready: true });
}, SLOW_START_MS);
