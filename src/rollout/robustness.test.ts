import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readMusique } from '../data/readers/musique.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { parseTrajectories, serializeTrajectories } from './jsonl.ts';
import { getProtocol } from './protocol/index.ts';
import { Rng } from '../random/rng.ts';
import { requestMeta, rollout } from './engine.ts';
import { garbagePolicy, garbageText } from './scripted/garbage.ts';
import { ScriptedPolicy } from './scripted/policy.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';
import type { Trajectory } from './types.ts';

afterAll(async () => {
  await closeCodeSandbox();
});

/**
 * Checks that every assistant message was classified and recorded: an answer or an empty message has
 * no call; anything else has exactly one call, and a message that does not parse as a call is recorded
 * as an invalid call with the parser's error. Returns counts for the non-vacuity checks.
 */
function audit(
  trajs: Trajectory[],
  protocolName: 'tags' | 'json',
): { valid: number; invalid: number; parseErrors: number } {
  const protocol = getProtocol(protocolName);
  let valid = 0;
  let invalid = 0;
  let parseErrors = 0;
  for (const t of trajs) {
    for (const m of t.messages) {
      if (m.chatRole !== 'assistant') {
        expect(m.toolCalls).toEqual([]);
        continue;
      }
      const p = protocol.parse(m.text);
      if (p.kind === 'answer' || p.kind === 'none') {
        expect(m.toolCalls).toEqual([]);
        continue;
      }
      expect(m.toolCalls).toHaveLength(1);
      const c = m.toolCalls[0];
      if (!c) continue;
      if (p.kind === 'invalid') {
        parseErrors++;
        expect(c.valid).toBe(false);
        expect(c.error).toBe(p.error);
      }
      if (c.valid) valid++;
      else {
        invalid++;
        expect(c.error, JSON.stringify(m)).toBeTruthy();
      }
    }
    const planner = t.agents[0];
    expect(planner?.role).toBe('planner');
    expect(t.finalAnswer).toBe(planner?.endReason === 'answer' ? planner.answer : null);
  }
  return { valid, invalid, parseErrors };
}

describe('robustness: random garbage policies', () => {
  it('1,000 garbage trajectories (tags) run without a crash and every invalid call is recorded', async () => {
    // One delegation allowed, so that the delegation limit is hit too.
    const cfg = rolloutConfig({ code: { timeoutMs: 50 }, maxDelegations: 1 });
    const episodes = Array.from({ length: 10 }, (_, i) => handEpisode(`g${i}`));
    const { trajectories, stats } = await rollout(garbagePolicy(2024), episodes, { cfg, groupSize: 100 });
    expect(trajectories).toHaveLength(1000);
    const counts = audit(trajectories, 'tags');
    expect(counts.parseErrors).toBeGreaterThan(1000);
    expect(counts.valid).toBeGreaterThan(50);
    // every end reason the garbage can reach is reached, and the records survive the JSONL round trip
    const reasons = new Set(trajectories.flatMap((t) => t.agents.map((a) => a.endReason)));
    for (const r of ['answer', 'max_turns', 'no_action', 'max_delegations']) expect(reasons, r).toContain(r);
    expect(parseTrajectories(serializeTrajectories(trajectories))).toEqual(trajectories);
    // all live agents decode together: far fewer steps than requests
    expect(stats.steps).toBeLessThan(40);
    expect(stats.maxBatch).toBe(1000);
  });

  const musique = resolve(
    dirname(fileURLToPath(import.meta.url)),
    '../../../shared/data/musique/musique_ans_train_100.jsonl',
  );
  it.skipIf(!existsSync(musique))(
    '200 trajectories over the real MuSiQue sample: searches return only the episode paragraphs',
    async () => {
      const cfg = rolloutConfig({ code: { timeoutMs: 50 } });
      const episodes = readMusique(musique);
      // The planner first delegates the real first hop and each worker first searches its subtask;
      // after that both write garbage.
      const rng = new Rng(5);
      const policy = new ScriptedPolicy((req) => {
        const m = requestMeta(req);
        if (m.turn === 0 && m.role === 'planner')
          return `<delegate>${m.episode.decomposition?.[0]?.question ?? m.episode.question}</delegate>`;
        if (m.turn === 0) return `<search>${m.subtask}</search>`;
        return garbageText(rng);
      });
      const { trajectories } = await rollout(policy, episodes, { cfg, groupSize: 2 });
      audit(trajectories, 'tags');
      let searches = 0;
      trajectories.forEach((t, i) => {
        const ep = episodes[Math.floor(i / 2)];
        expect(t.episodeId).toBe(ep?.id);
        const idx = new Set(ep?.paragraphs.map((p) => p.idx));
        for (const c of t.messages.flatMap((m) => m.toolCalls).filter((x) => x.name === 'search' && x.valid)) {
          searches++;
          expect(c.retrievedIdx?.length).toBeLessThanOrEqual(cfg.search.topK);
          expect(c.retrievedIdx?.every((x) => idx.has(x))).toBe(true);
        }
      });
      expect(searches).toBeGreaterThanOrEqual(200);
    },
  );

  it('300 garbage trajectories under the json protocol', async () => {
    const cfg = rolloutConfig({ protocol: 'json', code: { timeoutMs: 50 }, maxDelegations: 2 });
    const { trajectories } = await rollout(
      garbagePolicy(7),
      [handEpisode('j1'), handEpisode('j2'), handEpisode('j3')],
      { cfg, groupSize: 100 },
    );
    const counts = audit(trajectories, 'json');
    expect(counts.parseErrors).toBeGreaterThan(300);
    expect(counts.valid).toBeGreaterThan(10);
  });
});
