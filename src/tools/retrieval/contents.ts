/**
 * A passage's `contents` as Search-R1 and pyserini corpora write it: the title in double quotes on
 * the first line, the text after the first newline (`"Title"\ntext`).
 */
export interface TitledText {
  title: string;
  text: string;
}

export function toContents(p: TitledText): string {
  return `"${p.title}"\n${p.text}`;
}

/** Inverse of toContents; a first line without quotes is the title as it stands, no newline means no title. */
export function fromContents(contents: string): TitledText {
  const nl = contents.indexOf('\n');
  if (nl < 0) return { title: '', text: contents.trim() };
  const first = contents.slice(0, nl).trim();
  const title = first.length >= 2 && first.startsWith('"') && first.endsWith('"') ? first.slice(1, -1) : first;
  return { title, text: contents.slice(nl + 1).trim() };
}

/** Key under which two copies of one paragraph meet: title and whitespace-collapsed text. */
export function passageKey(p: TitledText): string {
  return `${p.title.trim()}\u0000${p.text.replace(/\s+/g, ' ').trim()}`;
}
