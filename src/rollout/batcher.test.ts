import { describe, expect, it } from 'vitest';
import { StepBatcher } from './batcher.ts';
import type { Policy, PolicyRequest, PolicyResponse } from './policy.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Echo implements Policy {
  readonly batches: string[][] = [];
  async generate(reqs: PolicyRequest[]): Promise<PolicyResponse[]> {
    this.batches.push(reqs.map((r) => r.key));
    await sleep(1);
    return reqs.map((r) => ({ text: r.key, tokenIds: [], logprobs: [], finishReason: 'stop', promptTokens: 0 }));
  }
}

const req = (key: string): PolicyRequest => ({ key, role: 'worker', messages: [], stop: [], maxNewTokens: 1 });

describe('StepBatcher', () => {
  it('waits for tasks busy in slow tools, so each step holds every live task, in task order', async () => {
    const policy = new Echo();
    const batcher = new StepBatcher(policy);
    // Task i makes 3 - (i % 2) requests; between them it "runs a tool" for a task-dependent time.
    const tasks = [0, 1, 2, 3].map((i) => async (gen: (r: PolicyRequest) => Promise<PolicyResponse>) => {
      const texts: string[] = [];
      for (let turn = 0; turn < 3 - (i % 2); turn++) {
        await sleep((3 - i) * 5);
        texts.push((await gen(req(`t${i}/${turn}`))).text);
      }
      return texts.join(',');
    });
    const out = await batcher.run(tasks);
    expect(out).toEqual(['t0/0,t0/1,t0/2', 't1/0,t1/1', 't2/0,t2/1,t2/2', 't3/0,t3/1']);
    expect(policy.batches).toEqual([
      ['t0/0', 't1/0', 't2/0', 't3/0'],
      ['t0/1', 't1/1', 't2/1', 't3/1'],
      ['t0/2', 't2/2'],
    ]);
    expect(batcher.stats).toEqual({ steps: 3, requests: 10, maxBatch: 4 });
  });

  it('rethrows a task error after the other tasks finish', async () => {
    const batcher = new StepBatcher(new Echo());
    let finished = 0;
    const ok = async (gen: (r: PolicyRequest) => Promise<PolicyResponse>) => {
      await gen(req('a'));
      await gen(req('b'));
      finished++;
      return 1;
    };
    const bad = async () => {
      await sleep(2);
      throw new Error('bug in a task');
    };
    await expect(batcher.run([ok, bad, ok])).rejects.toThrow('bug in a task');
    expect(finished).toBe(2);
  });
});
