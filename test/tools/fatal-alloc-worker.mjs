/* global process */
import { parentPort } from 'node:worker_threads';

/**
 * A WorkerHost entry for a child process (plain JavaScript) that, asked for `grow`, does what mathjs'
 * resize did with `resize([1], [1e9])`: sets a huge array length and fills it element by element.
 * The array's elements become a hash table that V8 cannot grow past its heap limit, and V8 ends the
 * whole process with "heap out of memory" (a worker thread's resourceLimits do not prevent it). Any
 * other text is echoed.
 */
if (parentPort || !process.send) throw new Error('fatal-alloc-worker: must run in a child process');
process.on('disconnect', () => process.exit(0));
process.on('message', (req) => {
  if (req.text === 'grow') {
    const a = [];
    a.length = 1e9;
    for (let i = 0; i < 1e9; i++) a[i] = i;
  }
  process.send({ id: req.id, outcome: { ok: true, output: `echo ${req.text}` } });
});
process.send({ ready: true });
