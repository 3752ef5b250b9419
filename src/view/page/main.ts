/// <reference lib="dom" />
import type { GroupRecord, StepRecord, TrajectoryRecord } from '../../credit/record.ts';
import { ablationView } from './ablation.ts';
import { openSource } from './data.ts';
import { clear, el } from './dom.ts';
import { overviewView } from './overview.ts';
import { stepsView, type Filters } from './steps.ts';
import { trajectoryView } from './trajectory.ts';

/** The `sharp view` page: tabs for the overview, the recorded trajectories, and the ablation. */
type Tab = 'overview' | 'trajectories' | 'ablation';

async function start(): Promise<void> {
  const root = document.getElementById('app');
  if (!root) return;
  const src = await openSource();
  const { index } = src;
  document.title = `sharp view: ${index.title}`;
  const main = el('main', {});
  const state: { step?: string; filters: Filters } = {
    step: index.steps.at(-1)?.name,
    filters: { failed: false, harmful: false, question: '' },
  };
  // Only the tabs with something to show (an ablation folder has no curves or steps of its own).
  const all: [Tab, boolean][] = [
    ['overview', index.charts.length + index.facts.length > 0],
    ['trajectories', index.steps.length > 0],
    ['ablation', index.ablation !== undefined],
  ];
  const tabs = all.filter(([, has]) => has).map(([t]) => t);
  if (tabs.length === 0) tabs.push('overview');
  const buttons = new Map<Tab, HTMLButtonElement>();
  const show = (tab: Tab): void => {
    for (const [t, b] of buttons) b.classList.toggle('active', t === tab);
    clear(main);
    if (tab === 'overview') main.append(overviewView(index));
    if (tab === 'trajectories') main.append(stepsView(index.steps, src.step, openTrajectory, state));
    if (tab === 'ablation' && index.ablation) main.append(ablationView(index.ablation));
  };
  const openTrajectory = (step: StepRecord, g: GroupRecord, t: TrajectoryRecord): void => {
    for (const b of buttons.values()) b.classList.remove('active');
    clear(main);
    main.append(trajectoryView(step, g, t, () => show('trajectories')));
    window.scrollTo(0, 0);
  };
  for (const t of tabs) buttons.set(t, el('button', { testid: `tab-${t}`, on: { click: () => show(t) } }, t));
  root.append(
    el(
      'header',
      {},
      el('h1', {}, 'sharp view: ', el('span', { class: 'text' }, index.title)),
      el('nav', {}, ...buttons.values()),
    ),
    main,
  );
  show(tabs[0] as Tab);
  root.setAttribute('data-ready', 'yes');
}

start().catch((err: unknown) => {
  const root = document.getElementById('app');
  root?.append(
    el(
      'p',
      { class: 'error', testid: 'load-error' },
      `sharp view could not load this run: ${err instanceof Error ? err.message : String(err)}`,
    ),
  );
});
