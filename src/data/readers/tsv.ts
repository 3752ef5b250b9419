import { BenchmarkFormatError } from './records.ts';

/**
 * Tab-separated values as pandas and csv.writer write them (FRAMES test.tsv): a field that holds a
 * tab, a newline or a quote is wrapped in double quotes, with inner quotes doubled. Rows keep the
 * line they start on so errors can name it.
 */
export interface TsvRow {
  line: number;
  cells: string[];
}

export function parseTsv(text: string, file: string): TsvRow[] {
  const rows: TsvRow[] = [];
  let cells: string[] = [];
  let cell = '';
  let line = 1;
  let rowLine = 1;
  let quoted = false;
  let i = 0;
  const endRow = () => {
    cells.push(cell);
    if (!(cells.length === 1 && cells[0] === '')) rows.push({ line: rowLine, cells });
    cells = [];
    cell = '';
  };
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          cell += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i += 1;
        continue;
      }
      if (c === '\n') line += 1;
      cell += c;
      i += 1;
      continue;
    }
    if (c === '"' && cell.length === 0) {
      quoted = true;
      i += 1;
    } else if (c === '\t') {
      cells.push(cell);
      cell = '';
      i += 1;
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i += 1;
      endRow();
      i += 1;
      line += 1;
      rowLine = line;
    } else {
      cell += c;
      i += 1;
    }
  }
  if (quoted) throw new BenchmarkFormatError(`${file}:${rowLine}: unterminated quoted field`);
  if (cell.length > 0 || cells.length > 0) endRow();
  return rows;
}
