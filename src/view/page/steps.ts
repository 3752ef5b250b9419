/// <reference lib="dom" />
import type { GroupRecord, StepRecord, TrajectoryRecord } from '../../credit/record.ts';
import type { StepEntry } from '../types.ts';
import { creditColour, fmt } from './colour.ts';
import { clear, el } from './dom.ts';

/**
 * A step's recorded groups and their trajectories, with the filters a debugging session needs:
 * failed only, has a harmful worker call (LOO Delta < 0), and a question substring.
 */
export interface Filters {
  failed: boolean;
  harmful: boolean;
  question: string;
}

export const hasHarmful = (t: TrajectoryRecord): boolean => t.deltas.some((d) => d < -1e-12);

/** The trajectories of a group the filters keep (a group is shown when any of its trajectories is). */
export function keep(g: GroupRecord, f: Filters): TrajectoryRecord[] {
  const q = f.question.trim().toLowerCase();
  if (q && !g.question.toLowerCase().includes(q)) return [];
  return g.trajectories.filter((t) => (!f.failed || t.success === 0) && (!f.harmful || hasHarmful(t)));
}

export function stepsView(
  steps: readonly StepEntry[],
  load: (name: string) => Promise<StepRecord>,
  open: (step: StepRecord, g: GroupRecord, t: TrajectoryRecord) => void,
  state: { step?: string; filters: Filters },
): HTMLElement {
  const list = el('div', { testid: 'groups' });
  const select = el(
    'select',
    { testid: 'step-select' },
    ...steps.map((s) => {
      const o = el(
        'option',
        {},
        `${s.kind === 'train' ? 'step' : 'eval batch'} ${s.step} (${s.groups} of ${s.groupsTotal} groups)`,
      );
      o.value = s.name;
      return o;
    }),
  );
  if (state.step) select.value = state.step;
  const box = (label: string, key: 'failed' | 'harmful', testid: string): HTMLElement => {
    const input = el('input', { testid, on: { change: () => ((state.filters[key] = input.checked), void render()) } });
    input.type = 'checkbox';
    input.checked = state.filters[key];
    return el('label', {}, input, ` ${label}`);
  };
  const search = el('input', {
    testid: 'filter-question',
    on: { input: () => ((state.filters.question = search.value), void render()) },
  });
  search.placeholder = 'question contains…';
  search.value = state.filters.question;
  select.addEventListener('change', () => {
    state.step = select.value;
    void render();
  });

  async function render(): Promise<void> {
    clear(list);
    const name = select.value;
    if (!name) {
      list.append(
        el(
          'p',
          { class: 'muted' },
          'No recorded trajectories in this run (credit.recordGroups = 0, or a run from before recording).',
        ),
      );
      return;
    }
    state.step = name;
    const step = await load(name);
    let shown = 0;
    for (const g of step.groups) {
      const ts = keep(g, state.filters);
      if (ts.length === 0) continue;
      shown += 1;
      list.append(
        el(
          'div',
          { class: 'group', testid: 'group' },
          el('div', { class: 'q text' }, g.question),
          el('div', { class: 'muted text' }, `gold: ${g.answers.join(' | ')} · ${g.episodeId}`),
          el(
            'table',
            { class: 'grid' },
            el(
              'thead',
              {},
              el(
                'tr',
                {},
                ...['sample', 'final answer', 'outcome', 'workers', 'worker credit (Delta)', ''].map((h) =>
                  el('th', {}, h),
                ),
              ),
            ),
            el(
              'tbody',
              {},
              ...ts.map((t) =>
                el(
                  'tr',
                  { class: 'traj-row', testid: 'traj-row', data: { id: t.id }, on: { click: () => open(step, g, t) } },
                  el('td', {}, String(t.sample)),
                  el('td', { class: 'text' }, t.finalAnswer ?? '(no answer)'),
                  el('td', { class: t.success >= 1 ? 'ok' : 'bad' }, t.success >= 1 ? 'right' : 'wrong'),
                  el('td', {}, String(t.k)),
                  el(
                    'td',
                    {},
                    ...t.deltas.map((d, m) =>
                      el(
                        'span',
                        { class: 'chip', style: { background: creditColour(d) }, title: `worker ${m}` },
                        `w${m} ${d >= 0 ? '+' : ''}${fmt(d, 2)}`,
                      ),
                    ),
                  ),
                  el('td', {}, hasHarmful(t) ? el('span', { class: 'badge harmful' }, 'harmful worker') : null),
                ),
              ),
            ),
          ),
        ),
      );
    }
    if (shown === 0)
      list.append(el('p', { class: 'muted', testid: 'no-match' }, 'No trajectory of this step matches the filters.'));
  }
  void render();
  return el(
    'section',
    { testid: 'steps' },
    el(
      'div',
      { class: 'toolbar' },
      el('label', {}, 'step ', select),
      box('failed only', 'failed', 'filter-failed'),
      box('has a harmful worker', 'harmful', 'filter-harmful'),
      search,
    ),
    list,
  );
}
