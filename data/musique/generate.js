// Writes the shipped MuSiQue-format sample (a fictional world, hand-written for sharp-rl; NOT
// MuSiQue data): musique_ans_v1.0_sample.jsonl (20 answerable questions: 2, 3 and 4 hops) and
// musique_full_v1.0_sample.jsonl (10 questions, each answerable and unanswerable, same id).
// Deterministic: run `node data/musique/generate.js` and the files come out byte-identical.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

// The world: provinces, towns, people, firms, books. Every name is invented.
const provinces = {
  'Calder Province': { capital: 'Ostrava Vale', aliases: ['Calder'], formed: 1811 },
  'Merrow Reach': { capital: 'Saltings', aliases: ['the Reach'], formed: 1794 },
  'Upper Tolland': { capital: 'Greyhithe', aliases: ['Tolland'], formed: 1830 },
  'Fenmark': { capital: 'Lowmere', aliases: [], formed: 1802 },
};
const towns = {
  Thornwick: { province: 'Calder Province', mayor: 'Odile Prester', river: 'Lume', aliases: ['Thornwick-on-Lume'] },
  'Ostrava Vale': { province: 'Calder Province', mayor: 'Benedikt Sallow', river: 'Lume', aliases: ['Ostrava'] },
  Kettleby: { province: 'Merrow Reach', mayor: 'Agnes Whitlow', river: 'Merrow', aliases: [] },
  Saltings: { province: 'Merrow Reach', mayor: 'Corin Halloway', river: 'Merrow', aliases: ['Saltings Port'] },
  Greyhithe: { province: 'Upper Tolland', mayor: 'Perpetua Vance', river: 'Tolle', aliases: [] },
  Brackenford: { province: 'Upper Tolland', mayor: 'Idris Molyneux', river: 'Tolle', aliases: ['Bracken Ford'] },
  Lowmere: { province: 'Fenmark', mayor: 'Sunniva Ardent', river: 'Fen', aliases: [] },
  Quillon: { province: 'Fenmark', mayor: 'Tobias Rook', river: 'Fen', aliases: ['Quillon Cross'] },
};
const people = {
  'Ilsa Marrow': { born: 'Thornwick', year: 1902, job: 'weaver and industrialist', aliases: ['I. Marrow'] },
  'Dorian Fellgate': { born: 'Kettleby', year: 1888, job: 'shipwright', aliases: [] },
  'Maud Ashcombe': { born: 'Brackenford', year: 1915, job: 'chemist', aliases: ['Maud Ashcombe-Lyle'] },
  'Ezra Kindle': { born: 'Quillon', year: 1921, job: 'printer', aliases: ['E. Kindle'] },
  'Wren Halvard': { born: 'Saltings', year: 1897, job: 'novelist', aliases: [] },
  'Lucan Thorne': { born: 'Greyhithe', year: 1933, job: 'poet', aliases: ['L. Thorne'] },
  'Hester Quell': { born: 'Lowmere', year: 1909, job: 'historian', aliases: [] },
  'Amos Larkspur': { born: 'Ostrava Vale', year: 1876, job: 'engineer', aliases: ['Amos J. Larkspur'] },
};
const firms = {
  'Brightwater Looms': { founder: 'Ilsa Marrow', year: 1931, trade: 'textile' },
  'Fellgate Yards': { founder: 'Dorian Fellgate', year: 1912, trade: 'shipbuilding' },
  'Ashcombe Dyeworks': { founder: 'Maud Ashcombe', year: 1946, trade: 'dye' },
  'Kindle & Sons Press': { founder: 'Ezra Kindle', year: 1950, trade: 'printing' },
  'Larkspur Engines': { founder: 'Amos Larkspur', year: 1905, trade: 'engine' },
};
const books = {
  'The Salt Ledger': { author: 'Wren Halvard', year: 1931 },
  'Lanterns over Tolle': { author: 'Lucan Thorne', year: 1961 },
  'A Fenland Chronicle': { author: 'Hester Quell', year: 1948 },
  'Cold Looms': { author: 'Ilsa Marrow', year: 1958 },
  'Rivets and Rain': { author: 'Amos Larkspur', year: 1920 },
};

const booksBy = (p) => Object.keys(books).filter((b) => books[b].author === p);
const text = {
  province: (n) => `${n} is a province of the Republic of Veloria, formed in ${provinces[n].formed}. Its capital and seat of the provincial assembly is ${provinces[n].capital}.`,
  town: (n) => `${n} is a market town on the River ${towns[n].river} in ${towns[n].province}. The current mayor of ${n} is ${towns[n].mayor}, elected in 2019.`,
  person: (n) => {
    const p = people[n];
    const wrote = booksBy(n);
    return `${n} (born ${p.year}) was a Velorian ${p.job}. ${n} was born in ${p.born}` + (wrote.length ? ` and later wrote ${wrote.map((b) => `"${b}"`).join(' and ')}.` : '.');
  },
  firm: (n) => `${n} is a Velorian ${firms[n].trade} company founded in ${firms[n].year} by ${firms[n].founder}.`,
  book: (n) => `"${n}" is a ${books[n].year} book by ${books[n].author}, set along the rivers of Veloria.`,
};
const kindOf = (n) => (provinces[n] ? 'province' : towns[n] ? 'town' : people[n] ? 'person' : firms[n] ? 'firm' : 'book');
const allTitles = [...Object.keys(provinces), ...Object.keys(towns), ...Object.keys(people), ...Object.keys(firms), ...Object.keys(books)];
// A person paragraph names the books too, so books and people are separate titles.
const paragraphFor = (title) => ({ title, paragraph_text: text[kindOf(title)](title) });

// Hop definitions: [sub-question template, answer fn, title of the supporting paragraph fn].
const hop = {
  founder: (x) => ({ q: `Who founded ${x}?`, a: firms[x].founder, at: x }),
  author: (x) => ({ q: `Who wrote ${x}?`, a: books[x].author, at: x }),
  born: (x, ref) => ({ q: `Where was ${ref} born?`, a: people[x].born, at: x }),
  province: (x, ref) => ({ q: `In which province is ${ref}?`, a: towns[x].province, at: x }),
  mayor: (x, ref) => ({ q: `Who is the mayor of ${ref}?`, a: towns[x].mayor, at: x }),
  capital: (x, ref) => ({ q: `What is the capital of ${ref}?`, a: provinces[x].capital, at: x }),
};
const aliasesOf = (n) => (people[n] ?? towns[n] ?? provinces[n])?.aliases ?? [];

// Questions: start entity, chain of relations, the composed question text.
const questions = [
  ['Brightwater Looms', ['founder', 'born'], 'In which town was the founder of Brightwater Looms born?'],
  ['Fellgate Yards', ['founder', 'born'], 'Where was the person who founded Fellgate Yards born?'],
  ['Ashcombe Dyeworks', ['founder', 'born'], 'What is the birthplace of the founder of Ashcombe Dyeworks?'],
  ['Kindle & Sons Press', ['founder', 'born'], 'Where was the founder of Kindle & Sons Press born?'],
  ['The Salt Ledger', ['author', 'born'], 'Where was the author of The Salt Ledger born?'],
  ['Lanterns over Tolle', ['author', 'born'], 'In which town was the writer of Lanterns over Tolle born?'],
  ['A Fenland Chronicle', ['author', 'born'], 'What town is the author of A Fenland Chronicle from?'],
  ['Larkspur Engines', ['founder', 'born'], 'Where was the founder of Larkspur Engines born?'],
  ['Brightwater Looms', ['founder', 'born', 'mayor'], 'Who is the mayor of the birthplace of the founder of Brightwater Looms?'],
  ['The Salt Ledger', ['author', 'born', 'province'], 'In which province was the author of The Salt Ledger born?'],
  ['Ashcombe Dyeworks', ['founder', 'born', 'province'], 'Which province contains the birthplace of the founder of Ashcombe Dyeworks?'],
  ['Lanterns over Tolle', ['author', 'born', 'mayor'], 'Who is mayor of the town where the author of Lanterns over Tolle was born?'],
  ['Fellgate Yards', ['founder', 'born', 'mayor'], 'Who is the mayor of the hometown of the founder of Fellgate Yards?'],
  ['Cold Looms', ['author', 'born', 'province'], 'In which province was the author of Cold Looms born?'],
  ['Rivets and Rain', ['author', 'born', 'mayor'], 'Who is the mayor of the town where the author of Rivets and Rain was born?'],
  ['Kindle & Sons Press', ['founder', 'born', 'province'], 'Which province was the founder of Kindle & Sons Press born in?'],
  ['Brightwater Looms', ['founder', 'born', 'province', 'capital'], 'What is the capital of the province where the founder of Brightwater Looms was born?'],
  ['Fellgate Yards', ['founder', 'born', 'province', 'capital'], 'What is the capital of the province in which the founder of Fellgate Yards was born?'],
  ['A Fenland Chronicle', ['author', 'born', 'province', 'capital'], 'Name the capital of the province where the author of A Fenland Chronicle was born.'],
  ['Lanterns over Tolle', ['author', 'born', 'province', 'capital'], 'What is the provincial capital for the birthplace of the author of Lanterns over Tolle?'],
];

// Deterministic shuffle (LCG) so supporting paragraphs are not always first.
function shuffle(xs, seed) {
  let s = seed >>> 0;
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function build(qi, [start, chain, question], { dropHop = null } = {}) {
  const steps = [];
  let cur = start;
  chain.forEach((rel, k) => {
    const h = hop[rel](cur, k === 0 ? cur : `#${k}`);
    steps.push({ id: 9000 + qi * 10 + k, question: h.q, answer: h.a, title: h.at });
    cur = h.a;
  });
  const support = steps.map((s) => s.title);
  const dropped = dropHop === null ? null : support[dropHop];
  // Distractors: titles of the same kinds that are not on the chain, 10 paragraphs in all.
  const pool = shuffle(allTitles.filter((t) => !support.includes(t)), 7 + qi);
  const titles = support.filter((t) => t !== dropped);
  for (const t of pool) if (titles.length < 10) titles.push(t);
  const ordered = shuffle(titles, 101 + qi);
  const paragraphs = ordered.map((t, idx) => ({ idx, ...paragraphFor(t), is_supporting: t !== dropped && support.includes(t) }));
  const idxOf = (t) => ordered.indexOf(t);
  const last = steps[steps.length - 1];
  const prefix = chain.length === 2 ? '2hop' : `${chain.length}hop1`;
  return {
    id: `${prefix}__${steps.map((s) => s.id).join('_')}`,
    paragraphs,
    question,
    question_decomposition: steps.map((s) => ({ id: s.id, question: s.question, answer: s.answer, paragraph_support_idx: idxOf(s.title) >= 0 ? idxOf(s.title) : null })),
    answer: last.answer,
    answer_aliases: aliasesOf(last.answer),
    answerable: dropHop === null,
  };
}

const jsonl = (rows) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const ans = questions.map((q, i) => build(i, q));
const full = [];
for (const i of [0, 1, 4, 8, 9, 10, 13, 16, 17, 19]) {
  full.push(build(i, questions[i]));
  full.push(build(i, questions[i], { dropHop: i % questions[i][1].length }));
}
writeFileSync(join(here, 'musique_ans_v1.0_sample.jsonl'), jsonl(ans));
writeFileSync(join(here, 'musique_full_v1.0_sample.jsonl'), jsonl(full));
console.log(`wrote ${ans.length} + ${full.length} records`);
