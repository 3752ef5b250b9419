import cliProgress from 'cli-progress';

/**
 * Progress for people, of training (`Progress`: step, reward, accuracy, tokens/s, ETA) and of
 * evaluation (`createProgress`: episodes done): a cli-progress bar on a TTY, one plain line per
 * step or batch otherwise (CI logs, files, pipes), where a redrawn bar would be noise.
 * Machine-readable metrics go to metrics.jsonl, not here.
 */
export interface ProgressFields {
  reward?: number;
  accuracy?: number;
  tokensPerSec?: number;
}

export interface ProgressOptions {
  /** Last step of the run. */
  total: number;
  /** Step the run starts from (resume); ETA counts only steps done in this process. */
  startStep?: number;
  /** Where to write (default process.stderr). */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Force bar (true) or plain lines (false); default: the stream's isTTY. */
  tty?: boolean;
  /** Clock in ms (tests). */
  now?: () => number;
}

/** 0:42, 3m05s, 1h02m: compact durations for plain lines. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

const fmt = (x: number | undefined, digits: number): string =>
  x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits);

export class Progress {
  private readonly total: number;
  private readonly start: number;
  private readonly stream: NodeJS.WritableStream;
  private readonly now: () => number;
  private readonly t0: number;
  private readonly bar?: cliProgress.SingleBar;

  constructor(opts: ProgressOptions) {
    this.total = opts.total;
    this.start = opts.startStep ?? 0;
    this.stream = opts.stream ?? process.stderr;
    this.now = opts.now ?? Date.now;
    this.t0 = this.now();
    const tty = opts.tty ?? Boolean((opts.stream ?? process.stderr).isTTY);
    if (tty) {
      this.bar = new cliProgress.SingleBar(
        {
          format: 'step {value}/{total} |{bar}| reward {reward} acc {accuracy} {tps} tok/s ETA {eta_formatted}',
          stream: this.stream,
          hideCursor: true,
          etaBuffer: 20,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(this.total, this.start, { reward: '-', accuracy: '-', tps: '-' });
    }
  }

  /** Seconds left, from the mean time of the steps done in this process. */
  eta(step: number): number {
    const done = step - this.start;
    if (done <= 0) return Number.NaN;
    return (((this.now() - this.t0) / 1000) * (this.total - step)) / done;
  }

  update(step: number, f: ProgressFields): void {
    const reward = fmt(f.reward, 3);
    const accuracy = fmt(f.accuracy, 3);
    const tps = fmt(f.tokensPerSec, 0);
    if (this.bar) {
      this.bar.update(step, { reward, accuracy, tps });
      return;
    }
    this.stream.write(
      `step ${step}/${this.total} reward ${reward} acc ${accuracy} ${tps} tok/s eta ` +
        `${formatDuration(this.eta(step))}\n`,
    );
  }

  stop(): void {
    this.bar?.stop();
  }
}

/** Progress of an eval run (episodes finished), as createProgress makes it. */
export interface EpisodeProgress {
  /** `n` more episodes finished. */
  tick(n: number): void;
  stop(): void;
}

export interface EpisodeProgressOptions {
  total: number;
  /** Episodes already predicted by an earlier (interrupted) run. */
  done: number;
  stream?: NodeJS.WriteStream | { isTTY?: boolean; write(s: string): boolean };
  label?: string;
  /** What is counted (default 'episodes'). */
  unit?: string;
}

export function createProgress(o: EpisodeProgressOptions): EpisodeProgress {
  const stream = o.stream ?? process.stderr;
  const label = o.label ?? 'eval';
  const unit = o.unit ?? 'episodes';
  if (stream.isTTY === true) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label} [{bar}] {value}/{total} ${unit} | {duration_formatted} elapsed | eta {eta_formatted}`,
        stream: stream as NodeJS.WriteStream,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(o.total, o.done);
    return { tick: (n) => bar.increment(n), stop: () => bar.stop() };
  }
  let done = o.done;
  const t0 = performance.now();
  if (done > 0) stream.write(`${label}: resuming, ${done}/${o.total} ${unit} already predicted\n`);
  return {
    tick(n) {
      done += n;
      stream.write(`${label}: ${done}/${o.total} ${unit} (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
    },
    stop() {},
  };
}
