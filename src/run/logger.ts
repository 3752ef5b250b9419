import { createWriteStream, type WriteStream } from 'node:fs';
import { Writable } from 'node:stream';
import pino, { type Logger, type Level } from 'pino';
import pretty from 'pino-pretty';

/**
 * Run logging: pino JSON lines to `<run>/log.jsonl`, and readable lines on the terminal (pino-pretty
 * on a TTY; plain `LEVEL msg key=value` lines otherwise, e.g. in CI logs).
 */
export interface RunLogger {
  log: Logger;
  /** Flushes and closes the file stream. */
  close(): Promise<void>;
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** Formats one pino JSON record as a plain terminal line. */
export function plainLine(record: Record<string, unknown>): string {
  const { level, msg, time: _t, pid: _p, hostname: _h, ...rest } = record;
  const fields = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${LEVEL_NAMES[level as number] ?? String(level)} ${String(msg ?? '')}${fields ? ' ' + fields : ''}`;
}

function plainStream(out: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        try {
          out.write(plainLine(JSON.parse(line) as Record<string, unknown>) + '\n');
        } catch {
          out.write(line + '\n');
        }
      }
      done();
    },
  });
}

export function createLogger(opts: { file?: string; level?: Level; terminal?: NodeJS.WriteStream | null }): RunLogger {
  const level = opts.level ?? 'info';
  const streams: pino.StreamEntry[] = [];
  let file: WriteStream | undefined;
  if (opts.file) {
    file = createWriteStream(opts.file, { flags: 'a' });
    streams.push({ level, stream: file });
  }
  const term = opts.terminal === undefined ? process.stderr : opts.terminal;
  if (term) {
    const stream = term.isTTY
      ? pretty({ destination: term, colorize: true, ignore: 'pid,hostname', sync: true })
      : plainStream(term);
    streams.push({ level, stream });
  }
  const log = pino({ level, base: undefined }, pino.multistream(streams));
  return {
    log,
    close: () =>
      new Promise<void>((resolve) => {
        if (!file) return resolve();
        file.end(() => resolve());
      }),
  };
}
