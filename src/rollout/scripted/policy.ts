import type { Policy, PolicyRequest, PolicyResponse } from '../policy.ts';

/**
 * A policy that is a plain function of the request: the scripted expert, random
 * garbage for robustness tests, and hand-written scenarios drive the real engine through it. It has no
 * tokenizer: token ids and logprobs are empty. Like a language model it stops right after the first
 * stop string it writes, so a script cannot smuggle two calls into one message unnoticed.
 */
export type ScriptFn = (req: PolicyRequest) => string;

/** Cuts `text` right after the earliest stop string (kept, as the LM keeps it). */
export function applyStop(text: string, stop: readonly string[]): { text: string; stopped: boolean } {
  let cut = -1;
  for (const s of stop) {
    const i = s === '' ? -1 : text.indexOf(s);
    if (i >= 0 && (cut < 0 || i + s.length < cut)) cut = i + s.length;
  }
  return cut < 0 ? { text, stopped: false } : { text: text.slice(0, cut), stopped: true };
}

export class ScriptedPolicy implements Policy {
  /** Sizes of the batches received, in order (tests check the engine batches across agents). */
  readonly batches: number[] = [];

  constructor(private readonly script: ScriptFn) {}

  async generate(requests: PolicyRequest[]): Promise<PolicyResponse[]> {
    this.batches.push(requests.length);
    return requests.map((req) => {
      if (req.forcedTokens && req.forcedTokens.length > 0)
        throw new Error(`ScriptedPolicy: request ${req.key} forces token ids, but a scripted policy has no tokenizer`);
      const { text, stopped } = applyStop(this.script(req), req.stop);
      return { text, tokenIds: [], logprobs: [], finishReason: stopped ? 'stop' : 'eos', promptTokens: 0 };
    });
  }
}
