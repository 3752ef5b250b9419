import cliProgress from 'cli-progress';

/**
 * Progress of an eval run: a cli-progress bar on a TTY, plain lines otherwise (CI
 * logs and pipes get one line per finished batch, not carriage-return noise).
 */
export interface Progress {
  /** `n` more episodes finished. */
  tick(n: number): void;
  stop(): void;
}

export interface ProgressOptions {
  total: number;
  /** Episodes already predicted by an earlier (interrupted) run. */
  done: number;
  stream?: NodeJS.WriteStream | { isTTY?: boolean; write(s: string): boolean };
  label?: string;
}

export function createProgress(o: ProgressOptions): Progress {
  const stream = o.stream ?? process.stderr;
  const label = o.label ?? 'eval';
  if (stream.isTTY === true) {
    const bar = new cliProgress.SingleBar(
      { format: `${label} [{bar}] {value}/{total} episodes | {duration_formatted} elapsed | eta {eta_formatted}`, stream: stream as NodeJS.WriteStream, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    bar.start(o.total, o.done);
    return { tick: (n) => bar.increment(n), stop: () => bar.stop() };
  }
  let done = o.done;
  const t0 = performance.now();
  if (done > 0) stream.write(`${label}: resuming, ${done}/${o.total} episodes already predicted\n`);
  return {
    tick(n) {
      done += n;
      stream.write(`${label}: ${done}/${o.total} episodes (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
    },
    stop() {},
  };
}
