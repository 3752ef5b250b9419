/// <reference lib="dom" />
import embed from 'vega-embed';
import { expressionInterpreter } from 'vega-interpreter';
import { el } from './dom.ts';

/**
 * One interactive chart (Vega-Lite through vega-embed). The expression interpreter instead of
 * vega's code generation: no eval, so the page runs under a script CSP without 'unsafe-eval'.
 */
export function chart(name: string, title: string, spec: Record<string, unknown>): HTMLElement {
  const target = el('div', { class: 'chart-body' });
  const box = el('figure', { class: 'chart', testid: `chart-${name}`, data: { rendered: 'no' } }, target);
  embed(target, spec as never, {
    actions: false,
    renderer: 'svg',
    ast: true,
    expr: expressionInterpreter,
    tooltip: true,
  })
    .then(() => box.setAttribute('data-rendered', 'yes'))
    .catch((err: unknown) => {
      box.setAttribute('data-rendered', 'error');
      box.append(el('p', { class: 'error' }, `chart ${title}: ${err instanceof Error ? err.message : String(err)}`));
    });
  return box;
}
