import { afterAll, describe, expect, it } from 'vitest';
import { requestMeta, runTrajectories } from '../rollout/engine.ts';
import { PROTOCOLS } from '../rollout/protocol/index.ts';
import { ScriptedPolicy } from '../rollout/scripted/policy.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';
import { closeCodeSandbox } from './code.ts';
import { MAX_TOOL_RESULT_CHARS, capToolResult } from './result-cap.ts';

afterAll(async () => {
  await closeCodeSandbox();
});

const NOTE = `\n[tool result truncated at ${MAX_TOOL_RESULT_CHARS} characters]`;

describe('capToolResult', () => {
  it('keeps a result up to the cap as it is and cuts a longer one, saying so', () => {
    const fits = { ok: true, output: 'x'.repeat(MAX_TOOL_RESULT_CHARS) };
    expect(capToolResult(fits)).toBe(fits);
    const long = { ok: false, output: 'y'.repeat(MAX_TOOL_RESULT_CHARS + 1), retrievedIdx: [3] };
    expect(capToolResult(long)).toEqual({
      ok: false,
      output: `${'y'.repeat(MAX_TOOL_RESULT_CHARS)}${NOTE}`,
      retrievedIdx: [3],
    });
  });
});

describe('tool results in prompts', () => {
  it('a code tool set to keep 1,000,000 characters adds at most the cap to the prompt', async () => {
    // Past the config's bound (rollout.code.maxOutputChars <= 16,384): the cap holds whatever a tool returns.
    const cfg = rolloutConfig({ agents: 'single' });
    cfg.code.maxOutputChars = 1_000_000;
    const policy = new ScriptedPolicy((req) => {
      const m = requestMeta(req);
      const p = PROTOCOLS[m.protocol];
      return m.turn === 0 ? p.formatCall('code', '"z".repeat(1e6)') : p.formatAnswer('1950');
    });
    const { trajectories } = await runTrajectories(policy, [{ id: 't0', episode: handEpisode(), sample: 0 }], {
      cfg,
      agents: 'single',
    });
    const traj = trajectories[0]!;
    const call = traj.messages.flatMap((m) => m.toolCalls)[0]!;
    // The tool itself returned all 1,000,000 characters (its own limit allowed them).
    expect(call).toMatchObject({ name: 'code', valid: true });
    expect(call.result).toBe(`${'z'.repeat(MAX_TOOL_RESULT_CHARS)}${NOTE}`);
    const shown = traj.messages.find((m) => m.text.startsWith('<result>'));
    expect(shown?.text).toBe(`<result>${'z'.repeat(MAX_TOOL_RESULT_CHARS)}${NOTE}</result>`);
    expect(traj.finalAnswer).toBe('1950');
  });
});
