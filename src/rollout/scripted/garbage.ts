import { Rng } from '../../random/rng.ts';
import type { PolicyRequest } from '../policy.ts';
import { ScriptedPolicy } from './policy.ts';

/**
 * A random policy for robustness tests (garbage output must never crash a rollout and every
 * invalid call must be recorded). Messages are random mixes of protocol fragments, well-formed calls,
 * JSON pieces and noise, drawn from a seeded Rng so a failure reproduces.
 */
const FRAGMENTS = [
  ...['search', 'answer', 'delegate', 'calculate', 'code', 'tool_call', 'think', 'result', 'foo'].flatMap((t) => [
    `<${t}>`,
    `</${t}>`,
  ]),
  '{"name": "search", "arguments": {"query": "city"}}',
  '{"name": "delegate", "arguments": {"subtask": "Who founded it?"}}',
  '{"name": "answer", "arguments": {"answer": "x"}}',
  '{"name":',
  '{',
  '}',
  '"',
  '\n',
  ' ',
  'the',
  'city',
  'born',
  'year',
  '1+2',
  '2 *',
  'while(true){}',
  'console.log(1)',
  'new Array(1e9).fill(0)',
  'require("fs")',
  '#1',
  '<',
  '>',
];
const WELL_FORMED = [
  '<search>founder born city</search>',
  '<calculate>1987 - 1950</calculate>',
  '<calculate>import(1)</calculate>',
  '<code>console.log(6*7)</code>',
  '<code>while(true){}</code>',
  '<delegate>Who founded the company?</delegate>',
  '<answer>Oslo</answer>',
  '<tool_call>{"name": "search", "arguments": {"query": "born"}}</tool_call>',
  '<tool_call>{"name": "delegate", "arguments": {"subtask": "Where?"}}</tool_call>',
];

export interface GarbageOptions {
  /**
   * Include programs that loop forever (default true). Their outcome depends on the wall clock (the
   * sandbox's time limit), so determinism tests leave them out.
   */
  loops?: boolean;
}

const LOOP = 'while(true){}';

export function garbageText(rng: Rng, opts: GarbageOptions = {}): string {
  const loops = opts.loops ?? true;
  const pick = (items: readonly string[]): string => {
    const s = rng.pick(items);
    return loops || !s.includes(LOOP) ? s : s.replace(LOOP, 'console.log(0)');
  };
  const r = rng.float();
  if (r < 0.05) return '';
  if (r < 0.3) return pick(WELL_FORMED);
  const n = rng.int(1, 12);
  let out = '';
  for (let i = 0; i < n; i++) {
    const q = rng.float();
    out += q < 0.7 ? pick(FRAGMENTS) : String.fromCharCode(rng.int(32, 126), rng.int(0, 0x2fff));
  }
  return out;
}

export function garbagePolicy(seed: number, opts: GarbageOptions = {}): ScriptedPolicy {
  const rng = new Rng(seed);
  return new ScriptedPolicy((_req: PolicyRequest) => garbageText(rng, opts));
}
