import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from './define.ts';

describe('defineTool', () => {
  it('returns the definition as given, its run typed by the zod schema', async () => {
    const def = {
      name: 'add',
      description: 'Adds.',
      parameters: z.object({ a: z.number(), b: z.number() }),
      run: ({ a, b }: { a: number; b: number }) => String(a + b),
    };
    const tool = defineTool(def);
    expect(tool).toBe(def);
    expect(await tool.run({ a: 1, b: 2 }, { tool: 'add', deadline: 0 })).toBe('3');
  });
});
