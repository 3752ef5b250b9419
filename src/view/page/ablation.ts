/// <reference lib="dom" />
import type { AblationView } from '../types.ts';
import { chart } from './charts.ts';
import { el } from './dom.ts';

/** A `sharp ablate` folder: the comparison table of ablation.md and the held-out curve per method. */
export function ablationView(a: AblationView): HTMLElement {
  return el(
    'section',
    { testid: 'ablation' },
    el('p', {}, a.complete ? 'Every run of the ablation finished.' : 'Partial ablation: some runs have not finished.'),
    el(
      'table',
      { class: 'grid', testid: 'ablation-table' },
      el('thead', {}, el('tr', {}, ...a.header.map((h) => el('th', {}, h)))),
      el('tbody', {}, ...a.rows.map((r) => el('tr', {}, ...r.map((c) => el('td', {}, c))))),
    ),
    chart('ablation', 'held-out accuracy during RL', a.plot),
    el('h3', {}, 'Runs'),
    el(
      'p',
      { class: 'muted' },
      'Each run is a run folder of its own: open its curves and trajectories with sharp view <this folder>/<folder>.',
    ),
    el(
      'table',
      { class: 'grid' },
      el(
        'thead',
        {},
        el('tr', {}, ...['method', 'seed', 'folder', 'before RL', 'after RL'].map((h) => el('th', {}, h))),
      ),
      el(
        'tbody',
        {},
        ...a.runs.map((r) =>
          el(
            'tr',
            {},
            el('td', {}, r.method),
            el('td', {}, String(r.seed)),
            el('td', {}, el('code', {}, r.dir)),
            el('td', {}, r.before),
            el('td', {}, r.after),
          ),
        ),
      ),
    ),
  );
}
