import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { inlineScript, jsonForScript, pageHtml, scriptHash } from './html.ts';
import type { ViewBundle } from './types.ts';

describe('the exported page shell', () => {
  const bundle = {
    index: { version: 1, title: '</script><script>alert(1)</script>', facts: [], charts: [], steps: [] },
    steps: {},
  } as ViewBundle;

  it('inlined data cannot close its script block, and parses back to the same value', () => {
    const json = jsonForScript({ s: '</script><!-- \u2028 <b>' });
    expect(json).not.toContain('<');
    expect(json).not.toContain('\u2028');
    expect(JSON.parse(json)).toEqual({ s: '</script><!-- \u2028 <b>' });
  });

  it('the inlined script runs under a CSP that allows exactly its hash', () => {
    const js = 'console.log("</script>")';
    const html = pageHtml({ script: js, bundle });
    const inlined = inlineScript(js);
    expect(inlined).toBe('console.log("<\\/script>")');
    const hash = `'sha256-${createHash('sha256').update(inlined).digest('base64')}'`;
    expect(scriptHash(inlined)).toBe(hash);
    expect(html.match(/script-src ([^;]*);/)?.[1]).toBe(hash);
    expect(html).not.toContain('unsafe-eval');
    // Exactly two <script openings: the JSON block and the app (the title's is escaped).
    expect(html.match(/<script/g)).toHaveLength(2);
    expect(html).toContain('\\u003c/script>\\u003cscript>alert(1)\\u003c/script>');
  });
});
