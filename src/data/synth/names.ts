import { fnv1a32 } from '../../random/hash.ts';
import { Rng } from '../../random/rng.ts';

/**
 * Invented names for the synthetic world: words built from syllables, so no real
 * entity is described and no name is ambiguous. Every word a name is made of is unique in the world
 * (case-insensitive), so one token identifies one entity: a question mentioning "Zorvex" can only be
 * about one thing, and BM25 finds that thing's paragraph by that token.
 */

const ONSETS = [
  'b',
  'd',
  'f',
  'g',
  'k',
  'l',
  'm',
  'n',
  'p',
  'r',
  's',
  't',
  'v',
  'z',
  'br',
  'dr',
  'kr',
  'tr',
  'gr',
  'th',
  'st',
  'sk',
  'vl',
  'zh',
];
/** Onsets that open place and brand names: rare at the start of real place names in English text. */
const HARD_ONSETS = ['k', 'v', 'z', 'kr', 'vl', 'zh', 'sk', 'dr', 'tr', 'th', 'gr', 'br'];
/** Plain vowels are weighted up: short names cost a small model fewer tokens. */
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'a', 'e', 'i', 'o', 'u', 'ai', 'ou'];
const CODAS = ['', '', 'n', 'r', 'l', 's', 'x', 'm', 'th', 'nd', 'sk', 'rv', 'lk'];

/**
 * Words a generated name must never equal: the words of our own templates (a city called "Mayor" or
 * "Located" would confuse readers and search) and real places short enough to arise from syllables.
 */
const BLOCKED = new Set(
  [
    'the',
    'mentor',
    'mayor',
    'capital',
    'country',
    'city',
    'company',
    'founded',
    'founder',
    'born',
    'worked',
    'employed',
    'headquartered',
    'headquarters',
    'official',
    'language',
    'located',
    'whose',
    'years',
    'year',
    'passed',
    'between',
    'birth',
    'founding',
    'turn',
    'after',
    'person',
    'occupation',
    'industry',
    'labs',
    'works',
    'group',
    'systems',
    'lima',
    'peru',
    'kobe',
    'mali',
    'togo',
    'cuba',
    'fiji',
    'oman',
    'chad',
    'laos',
    'nepal',
    'malta',
    'tonga',
    'samoa',
    'kenya',
    'rome',
    'oslo',
    'bern',
    'riga',
    'baku',
    'doha',
    'lome',
    'dili',
    'suva',
    'apia',
    'male',
    'sana',
    'kiev',
    'tokyo',
    'seoul',
    'milan',
    'paris',
    'sofia',
    'minsk',
    'lagos',
    'dakar',
    'tunis',
    'rabat',
    'kabul',
    'delhi',
    'dubai',
    'boston',
    'denver',
    'dallas',
    'austin',
    'tampa',
    'reno',
    'boise',
    'salem',
    'macon',
    'moscow',
    'sudan',
    'benin',
    'gabon',
    'niger',
    'congo',
    'ghana',
    'haiti',
    'iran',
    'iraq',
    'israel',
    'japan',
    'korea',
    'libya',
    'nauru',
    'palau',
    'tuvalu',
    'samara',
    'kazan',
    'perm',
    'turin',
    'parma',
    'genoa',
    'bari',
    'nara',
    'osaka',
    'kyoto',
    'sendai',
    'pune',
    'surat',
    'goa',
    'tula',
    'bonn',
    'kiel',
    'ulm',
    'graz',
    'linz',
    'brno',
    'lodz',
    'kaunas',
    'tartu',
    'turku',
    'oulu',
    'bergen',
    'malmo',
    'lund',
    'aarhus',
    'odense',
    'split',
    'zadar',
    'varna',
    'burgas',
    'sochi',
    'tver',
    'ufa',
    'relax',
    'latex',
    'remix',
    'detox',
    'vlora',
    'borax',
    'redox',
    'telex',
    'rolex',
    'xerox',
    'kleenex',
    'timex',
  ].map((w) => w.toLowerCase()),
);

/**
 * Every word must contain one of these clusters. English has no word with "zh" or "vl", none ending
 * in "rv" or "lk" after a vowel + two syllables, and few ending in "x" (blocked above), so a generated
 * name cannot be an English word (measured first without this rule: a city was called "Vote").
 */
const MARKERS = /zh|vl|rv|lk|x/;

/** Hands out names whose every word is new to the world. */
export class NameForge implements NameSource {
  private readonly used = new Set<string>(BLOCKED);

  /** `accept`: a filter on lowercase words (a name-space partition, see `namePartition`). */
  constructor(
    private readonly rng: Rng,
    private readonly accept: (key: string) => boolean = () => true,
  ) {}

  /** One capitalised word of `syllables` syllables, unused so far (reserved on return). */
  word(syllables: number, hardStart = false): string {
    for (let attempt = 0; attempt < 10_000; attempt++) {
      let w = '';
      for (let s = 0; s < syllables; s++) {
        w += this.rng.pick(s === 0 && hardStart ? HARD_ONSETS : ONSETS) + this.rng.pick(VOWELS);
        // A coda only on the last syllable keeps words pronounceable (no "rvsk" clusters).
        if (s === syllables - 1) w += this.rng.pick(CODAS);
      }
      const key = w.toLowerCase();
      if (key.length < 4 || !MARKERS.test(key) || this.used.has(key) || !this.accept(key)) continue;
      this.used.add(key);
      return key.charAt(0).toUpperCase() + key.slice(1);
    }
    throw new Error(`names: could not find an unused ${syllables}-syllable word in 10,000 tries`);
  }

  /** A person: given name (2 syllables) + family name (2 syllables). */
  person(): { first: string; last: string } {
    return { first: this.word(2), last: this.word(2) };
  }

  /** A place or brand: 2 syllables opening with a hard onset ("Kelmar", "Zorvex"). */
  place(): string {
    return this.word(2, true);
  }

  /** A fresh place-like brand (unique in the world, so the full name is too), then the suffix. */
  company(suffixes: readonly string[]): { brand: string; suffix: string } {
    const brand = this.place();
    return { brand, suffix: this.rng.pick(suffixes) };
  }

  /** A language name: a 2-syllable root + "ic" ("Threlic"). */
  language(): string {
    for (let attempt = 0; attempt < 10_000; attempt++) {
      const root = this.word(2);
      const name = `${root}ic`;
      const key = name.toLowerCase();
      if (!this.used.has(key) && this.accept(key)) {
        this.used.add(key);
        return name;
      }
    }
    throw new Error('names: could not find an unused language name in 10,000 tries');
  }
}

/** Which part of the name space a world draws from: held-out worlds never share a word with training ones. */
export type NameSplit = 'train' | 'held-out';

/** One word in this many belongs to the held-out part of the name space. */
const HELD_OUT_NAME_SHARE = 8;

/**
 * A partition of all possible name words by a hash of the word: held-out names are the words whose
 * hash falls in bucket 0, training names all others. Whatever the seeds and counts, no word of a
 * held-out world can appear in a training world, so held-out accuracy measures reading and copying
 * names the model has never seen, not recall of memorised ones.
 */
export function namePartition(split: NameSplit): (key: string) => boolean {
  return split === 'held-out'
    ? (key) => fnv1a32(key) % HELD_OUT_NAME_SHARE === 0
    : (key) => fnv1a32(key) % HELD_OUT_NAME_SHARE !== 0;
}

/** What a world draws its names from: fresh syllable words (NameForge) or a fixed pool (PoolNames). */
export interface NameSource {
  person(): { first: string; last: string };
  place(): string;
  /** A company name `${brand} ${suffix}`, the suffix one of `suffixes`. */
  company(suffixes: readonly string[]): { brand: string; suffix: string };
  language(): string;
}

/** The fixed word pool of `PoolNames`: `size` distinct name words, the same for every seed and split. */
export function namePool(size: number): string[] {
  const forge = new NameForge(new Rng(0x9001));
  return Array.from({ length: size }, (_, i) => (i % 2 === 0 ? forge.place() : forge.word(2)));
}

/**
 * Names recombined from a fixed pool of words: every world assigns pool words to its entities at
 * random, so a word names a different entity with other facts in every episode and recalling it
 * is useless; reading and copying it is the only way to answer. With a pool, each word is frequent
 * enough to be one token of a fitted BPE vocabulary, which makes copying a one-token operation that
 * a tiny model can learn. The split applies to multi-word names (people "First Last", companies
 * "Brand Suffix"): held-out ones never occur in training; single-word names (cities, countries,
 * languages) come from the shared pool.
 */
export class PoolNames implements NameSource {
  private readonly used = new Set<string>();

  constructor(
    private readonly rng: Rng,
    private readonly pool: readonly string[],
    private readonly accept: (fullName: string) => boolean = () => true,
  ) {
    if (pool.length < 8) throw new Error(`names: a name pool needs at least 8 words, got ${pool.length}`);
  }

  private pick(ok: (w: string) => boolean = () => true): string {
    for (let attempt = 0; attempt < 10_000; attempt++) {
      const w = this.rng.pick(this.pool);
      if (this.used.has(w) || !ok(w)) continue;
      this.used.add(w);
      return w;
    }
    throw new Error(
      `names: the pool of ${this.pool.length} words has no unused word left for this world (use a larger ` +
        `data.synthetic.namePool)`,
    );
  }

  person(): { first: string; last: string } {
    for (let attempt = 0; attempt < 10_000; attempt++) {
      const first = this.pick();
      const last = this.pick((w) => this.accept(`${first} ${w}`.toLowerCase()));
      return { first, last };
    }
    throw new Error('names: no person name in 10,000 tries');
  }

  place(): string {
    return this.pick();
  }

  company(suffixes: readonly string[]): { brand: string; suffix: string } {
    const suffix = this.rng.pick(suffixes);
    return { brand: this.pick((w) => this.accept(`${w} ${suffix}`.toLowerCase())), suffix };
  }

  language(): string {
    return `${this.pick()}ic`;
  }
}
