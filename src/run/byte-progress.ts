import cliProgress from 'cli-progress';

/**
 * Progress of reading a large file (`sharp index build`): a cli-progress bar of bytes with a count
 * of what was made from them on a TTY; elsewhere (CI logs, pipes) one plain line per tenth.
 */
export interface ByteProgress {
  update(bytes: number, items: number): void;
  stop(): void;
}

export interface ByteProgressOptions {
  total: number;
  label: string;
  /** What the count counts ('passages'). */
  unit: string;
  stream?: NodeJS.WriteStream | { isTTY?: boolean; write(s: string): boolean };
}

const mib = (b: number): string => (b / (1 << 20)).toFixed(1);

export function createByteProgress(o: ByteProgressOptions): ByteProgress {
  const stream = o.stream ?? process.stderr;
  if (stream.isTTY === true) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${o.label} [{bar}] {percentage}% | {read}/{size} MiB | {items} ${o.unit} | eta {eta_formatted}`,
        stream: stream as NodeJS.WriteStream,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(Math.max(1, o.total), 0, { read: '0.0', size: mib(o.total), items: 0 });
    return { update: (bytes, items) => bar.update(bytes, { read: mib(bytes), items }), stop: () => bar.stop() };
  }
  let tenth = 0;
  return {
    update(bytes, items) {
      const t = o.total > 0 ? Math.floor((10 * bytes) / o.total) : 10;
      if (t <= tenth) return;
      tenth = t;
      stream.write(`${o.label}: ${mib(bytes)}/${mib(o.total)} MiB, ${items} ${o.unit}\n`);
    },
    stop() {},
  };
}
