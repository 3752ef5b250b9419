import { createHash } from 'node:crypto';
import type { ViewBundle } from './types.ts';

/**
 * The page's HTML shell: styles, the app root, and the script either by URL (served) or inlined with
 * the run's data (an exported file that opens from file://). Safe by construction: the data sits in a
 * non-executable JSON block with `<` escaped (no `</script>` can close it), the inlined script is
 * allowed by its hash only, and the page renders every model string as text.
 */

const STYLE =
  `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
header { display: ` +
  `flex; align-items: center; gap: 1.5rem; padding: .5rem 1rem; background: #23303f; color: #fff; }
header h1 { ` +
  `font-size: 1.1rem; margin: 0; }
nav button { background: none; border: 1px solid #7a8a9a; color: #fff; ` +
  `padding: .25rem .75rem; margin-right: .25rem; border-radius: 3px; cursor: pointer; }
nav button.active { ` +
  `background: #fff; color: #23303f; }
main { padding: 1rem; }
.charts { display: flex; flex-wrap: wrap; gap: ` +
  `1rem; }
.chart { margin: 0; background: #fff; border: 1px solid #ddd; padding: .5rem; }
.facts { display: ` +
  `grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
.facts dt { font-weight: 600; }
.facts dd { ` +
  `margin: 0; }
table.grid { border-collapse: collapse; margin: .5rem 0 1rem; background: #fff; }
table.grid ` +
  `th, table.grid td { border: 1px solid #ddd; padding: .2rem .5rem; text-align: left; vertical-align: top; ` +
  `}
.traj-row { cursor: pointer; }
.traj-row:hover { outline: 2px solid #4a7ab5; }
.group { background: #fff; ` +
  `border: 1px solid #ddd; padding: .5rem; margin-bottom: .75rem; }
.group .q { font-weight: 600; }
.toolbar { ` +
  `display: flex; gap: 1rem; align-items: center; margin-bottom: .75rem; }
.chip { display: inline-block; ` +
  `padding: 0 .3rem; margin-right: .2rem; border-radius: 3px; font-family: monospace; }
.badge { display: ` +
  `inline-block; padding: 0 .35rem; margin-left: .35rem; border-radius: 3px; background: #ddd; font-size: 12px; ` +
  `}
.badge.harmful, .badge.bad { background: #c0392b; color: #fff; }
.badge.helpful { background: #2e7d32; ` +
  `color: #fff; }
.ok { color: #2e7d32; } .bad { color: #c0392b; }
.muted { color: #777; }
.text { white-space: ` +
  `pre-wrap; word-break: break-word; }
pre { margin: .25rem 0; font: 12px/1.35 ui-monospace, monospace; ` +
  `white-space: pre-wrap; word-break: break-word; }
.lanes-wrap { overflow-x: auto; }
.lanes { display: grid; ` +
  `gap: .35rem .75rem; align-items: start; }
.lane-head { position: sticky; top: 0; padding: .35rem; border: ` +
  `1px solid #bbb; border-radius: 4px; z-index: 1; }
.msg { border: 1px solid #ccc; border-radius: 4px; ` +
  `padding: .3rem .45rem; background: #fff; }
.msg.system, .msg.user, .msg.tool { background: #f3f3f3; color: ` +
  `#555; }
.msg.first-error { outline: 3px solid #c0392b; }
.msg-head { font-size: 12px; font-weight: 600; ` +
  `}
.calls { margin: .2rem 0; padding-left: 1.1rem; }
.call.invalid code { text-decoration: underline wavy ` +
  `#c0392b; }
.result { background: rgba(255,255,255,.6); padding: .15rem; }
.replay-note { margin-top: .3rem; ` +
  `padding: .2rem .35rem; border: 1px dashed #555; border-radius: 3px; font-size: 12px; }
.repair-note { ` +
  `margin-top: .3rem; padding: .2rem .35rem; border: 1px dotted #2e7d32; border-radius: 3px; font-size: 12px; ` +
  `}
.preferred { margin-top: .3rem; padding: .2rem .35rem; border: 2px solid #2e7d32; border-radius: 3px; ` +
  `background: #eef8ee; }
.error { color: #c0392b; }
`;

/**
 * JSON for a `<script type="application/json">` block: `<`, U+2028 and U+2029 escaped, so nothing in it can end the
 * block.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** A script body safe to inline: a `</script` inside a string of the bundle would end the element. */
export function inlineScript(js: string): string {
  return js.replace(/<\/script/gi, '<\\/script');
}

export const scriptHash = (js: string): string =>
  `'sha256-${createHash('sha256').update(js, 'utf8').digest('base64')}'`;

/** The Content-Security-Policy of the page; `script` is 'self' (served) or the inlined script's hash. */
export function pagePolicy(script: string): string {
  return [
    `default-src 'none'`,
    `script-src ${script}`,
    `style-src 'unsafe-inline'`,
    `img-src 'self' data:`,
    `connect-src 'self'`,
    `base-uri 'none'`,
    `form-action 'none'`,
  ].join('; ');
}

export function pageHtml(o: { scriptUrl: string } | { script: string; bundle: ViewBundle }): string {
  const head = ['<!doctype html>', '<html lang="en">', '<head>', '<meta charset="utf-8">', '<title>sharp view</title>'];
  if ('scriptUrl' in o) {
    head.push(`<meta http-equiv="Content-Security-Policy" content="${pagePolicy(`'self'`)}">`);
    head.push(
      `<style>${STYLE}</style>`,
      '</head>',
      '<body>',
      '<div id="app"></div>',
      `<script src="${o.scriptUrl}"></script>`,
    );
  } else {
    const js = inlineScript(o.script);
    head.push(`<meta http-equiv="Content-Security-Policy" content="${pagePolicy(scriptHash(js))}">`);
    head.push(`<style>${STYLE}</style>`, '</head>', '<body>', '<div id="app"></div>');
    head.push(`<script type="application/json" id="sharp-data">${jsonForScript(o.bundle)}</script>`);
    head.push(`<script>${js}</script>`);
  }
  head.push('</body>', '</html>', '');
  return head.join('\n');
}
