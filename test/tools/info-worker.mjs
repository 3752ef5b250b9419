/* global process */

/**
 * A WorkerHost entry run as a child process: says ready with what it was started with (its argv after
 * the entry) as `info`, then echoes each job; with argv 'hang' it never says ready (the host's close
 * must still stop it).
 */
const args = process.argv.slice(2);
process.on('disconnect', () => process.exit(0));
if (args[0] !== 'hang') {
  process.on('message', (req) => process.send({ id: req.id, outcome: { ok: true, output: `echo ${req.text}` } }));
  process.send({ ready: true, info: { args } });
} else process.stdin.resume();
