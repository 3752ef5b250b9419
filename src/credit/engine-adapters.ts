/**
 * The credit module's three ports onto the rollout engine (credit drives the
 * engine only through its replay API): the replay runner behind v(S), the agent context of a message
 * (for DPO prefixes), and a resampler that asks the policy for another version of a message.
 */
import type { Counterfactual } from '../config/sections/credit.ts';
import type { Policy, PolicyRequest } from '../rollout/policy.ts';
import type { CreditConfig } from './config.ts';
import type { Protocol } from '../rollout/protocol/index.ts';
import { agentContext } from '../rollout/record.ts';
import { type EngineOptions, type RequestMeta } from '../rollout/engine.ts';
import { replay } from '../rollout/replay.ts';
import type { ReplayItem, ReplayRunner } from './counterfactual.ts';
import type { ContextOf, Resampler } from './first-error.ts';

export interface ReplaySettings {
  /** credit.replayMode */
  replayMode: 'final' | 'replan';
  /** credit.placeholder */
  placeholder: string;
  /** credit.counterfactual (default mask) */
  counterfactual?: Counterfactual;
  /**
   * Base of the replays' common random numbers: replay r of a trajectory draws the same streams
   * under every mask (rollout/replay.ts). Drawn once per step from the run's seed.
   */
  streamSeed: number;
}

/** The replay settings of a credit config: the one place they are read from it. */
export function replaySettings(
  cfg: Pick<CreditConfig, 'replayMode' | 'placeholder' | 'counterfactual'>,
  streamSeed: number,
): ReplaySettings {
  return { replayMode: cfg.replayMode, placeholder: cfg.placeholder, counterfactual: cfg.counterfactual, streamSeed };
}

/**
 * A ReplayRunner over the engine's batched `replay`: the whole group's coalitions go into one engine
 * run. The n replays of one coalition (replica 0..n-1) get distinct ids and distinct streams.
 */
export function engineReplayRunner(policy: Policy, engine: EngineOptions, settings: ReplaySettings): ReplayRunner {
  return (items: ReplayItem[]) =>
    replay(policy, items, {
      ...engine,
      mode: settings.replayMode,
      placeholder: settings.placeholder,
      streamSeed: settings.streamSeed,
      counterfactual: settings.counterfactual ?? 'mask',
    });
}

/** The context the agent saw when it generated message `index` (the engine's own reconstruction). */
export const engineContextOf: ContextOf = (ctx, index) => agentContext(ctx.traj, ctx.traj.messages[index].agent, index);

/**
 * Resamples messages from the policy with each agent's recorded context, all requests in one
 * batched generate call, with the same meta the engine gives a live request (scripted policies read
 * it): episode, agent, turn and the agent's earlier tool results, rebuilt from the record.
 */
export function policyResampler(policy: Policy, protocol: Protocol, maxNewTokens: number): Resampler {
  return async (reqs) => {
    const batch = reqs.map(({ ctx, index, prefix, role, attempt }): PolicyRequest => {
      const { traj, episode } = ctx;
      const msg = traj.messages[index];
      const agent = traj.agents[msg.agent];
      const earlier = traj.messages.filter(
        (m) => m.agent === agent.id && m.chatRole === 'assistant' && m.index < index,
      );
      const results: RequestMeta['results'] = [];
      for (const m of earlier) {
        for (const c of m.toolCalls) {
          if (c.result === undefined) continue;
          const r: RequestMeta['results'][number] = { name: c.name, valid: c.valid, output: c.result };
          if (c.retrievedIdx) r.retrievedIdx = [...c.retrievedIdx];
          results.push(r);
        }
      }
      // The message index is in the id: two first errors of one trajectory never share a sampler stream.
      const meta: RequestMeta = {
        episode,
        trajectoryId: `${traj.id}~resample${index}.${attempt}`,
        sample: traj.sample,
        agent: agent.id,
        role,
        delegation: agent.delegation,
        turn: earlier.length,
        protocol: protocol.name,
        results,
      };
      if (agent.subtask !== undefined) meta.subtask = agent.subtask;
      return {
        key: `${meta.trajectoryId}/${agent.id}`,
        role,
        messages: prefix,
        stop: [...protocol.stop],
        maxNewTokens,
        meta,
      };
    });
    const res = await policy.generate(batch);
    if (res.length !== batch.length)
      throw new Error(`resample: the policy returned ${res.length} responses for ${batch.length} requests`);
    return res.map((r) => r.text);
  };
}
