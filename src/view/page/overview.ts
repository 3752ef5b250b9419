/// <reference lib="dom" />
import type { ViewIndex } from '../types.ts';
import { chart } from './charts.ts';
import { el } from './dom.ts';

/** The run overview: its facts and the curves of `sharp plot`, interactive (tooltips, legend selection). */
export function overviewView(index: ViewIndex): HTMLElement {
  return el(
    'section',
    { testid: 'overview' },
    index.facts.length > 0
      ? el('dl', { class: 'facts' }, ...index.facts.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]))
      : null,
    index.charts.length === 0 ? el('p', { class: 'muted' }, 'No metrics.jsonl curves in this folder.') : null,
    el('div', { class: 'charts' }, ...index.charts.map((c) => chart(c.name, c.title, c.spec))),
  );
}
