/// <reference lib="dom" />
import type { CoalitionRecord, GroupRecord, MessageRecord, StepRecord, TrajectoryRecord } from '../../credit/record.ts';
import { creditColour, creditWord, fmt } from './colour.ts';
import { el, type Child } from './dom.ts';

/**
 * One trajectory as the conversation it was: one lane (grid column) per agent, messages in the order
 * they were produced, each assistant message coloured by its signed credit (its message-level share
 * when credit.messageLevel was on, else its agent's marginal credit: LOO Delta or Shapley phi), the
 * counterfactual replays beside the delegation they remove, the Shapley table, the first error and
 * the preferred alternative. Every model string goes through el() as text.
 */

const quote = (s: string | null): string => (s === null ? 'no answer' : `'${s}'`);
const verdict = (success: number): string =>
  success >= 1 ? 'right' : success <= 0 ? 'wrong' : `${fmt(success, 2)} right`;

function agentLabel(t: TrajectoryRecord, agent: number): string {
  const a = t.agents[agent];
  if (!a) return `agent ${agent}`;
  return a.role === 'planner' ? 'planner' : `worker ${a.delegation ?? '?'}`;
}

/** Marginal credit of an agent (planner: SHARP's mean of max(x, 0); worker m: Delta_m or phi_m). */
function agentMarginal(t: TrajectoryRecord, agent: number): number {
  return t.credits.find((c) => c.agent === agent)?.parts.marginal ?? 0;
}

/** The signed credit a message is coloured by (generated messages only). */
export function messageCredit(t: TrajectoryRecord, m: MessageRecord): number | null {
  if (m.chatRole !== 'assistant') return null;
  if (m.share) return m.share.reward;
  return agentMarginal(t, m.agent);
}

/** The leave-one-out coalition of worker m (every worker but m reports). */
function looCoalition(t: TrajectoryRecord, m: number): CoalitionRecord | undefined {
  return t.coalitions.find((c) => c.masked.length === 1 && c.masked[0] === m);
}

/** "without worker 2: 'Zhobrel', wrong (v = 0.00; Delta = +1.00, helpful)" */
export function replaySentence(t: TrajectoryRecord, m: number): string | null {
  const d = t.deltas[m];
  if (t.likelihood) {
    // Nats of the gold answer's likelihood, scored on the recorded context: nothing was replayed.
    if (d === undefined) return null;
    const gain = `${d >= 0 ? '+' : ''}${fmt(d, 2)} nats, ${creditWord(d)}`;
    if (t.likelihood.readThrough) return `reading worker ${m}'s report: gold-answer log-likelihood ${gain}`;
    const lc = looCoalition(t, m);
    return lc ? `without worker ${m}: v_lik = ${fmt(lc.value, 2)} (Delta = ${gain})` : null;
  }
  const c = looCoalition(t, m);
  if (!c) return null;
  const answers =
    c.answers.length === 0
      ? 'not replayed'
      : c.answers.map((a) => `${quote(a.answer)}, ${verdict(a.success)}`).join('; ');
  const delta = d === undefined ? '' : `; Delta = ${d >= 0 ? '+' : ''}${fmt(d, 2)}, ${creditWord(d)}`;
  return `without worker ${m}: ${answers} (v = ${fmt(c.value, 2)}${delta})`;
}

function creditTable(t: TrajectoryRecord): HTMLElement {
  const rows = t.credits.map((c) => {
    const a = t.agents[c.agent];
    return el(
      'tr',
      { data: { agent: String(c.agent) } },
      el('td', {}, agentLabel(t, c.agent)),
      el('td', { class: 'text' }, a?.subtask ?? ''),
      el('td', { class: 'text' }, a?.answer ?? '(none)'),
      el('td', {}, fmt(c.parts.broadcast, 2)),
      el('td', { style: { background: creditColour(c.parts.marginal) } }, fmt(c.parts.marginal, 3)),
      el('td', {}, fmt(c.parts.tool, 2)),
      el('td', {}, fmt(c.total, 3)),
    );
  });
  return el(
    'table',
    { class: 'grid', testid: 'credit-table' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...['agent', 'subtask', 'answer / report', 'broadcast', 'marginal', 'tool', 'total'].map((h) =>
          el('th', {}, h),
        ),
      ),
    ),
    el('tbody', {}, ...rows),
  );
}

/** The sequential form: the gold answer's log-likelihood as the planner reads each report. */
function readThroughTable(t: TrajectoryRecord): HTMLElement | null {
  const r = t.likelihood?.readThrough;
  if (!r) return null;
  return el(
    'table',
    { class: 'grid', testid: 'read-through' },
    el(
      'thead',
      {},
      el('tr', {}, ...['reports read', 'v_lik (nats)', 'gain of that report'].map((h) => el('th', {}, h))),
    ),
    el(
      'tbody',
      {},
      ...r.map((v, j) =>
        el(
          'tr',
          {},
          el('td', {}, String(j)),
          el('td', {}, fmt(v, 3)),
          el('td', {}, j === 0 ? '-' : `worker ${j - 1}: ${fmt(v - (r[j - 1] as number), 3)}`),
        ),
      ),
    ),
  );
}

function coalitionTable(t: TrajectoryRecord): HTMLElement {
  const vFull = t.coalitions.find((c) => c.masked.length === 0)?.value ?? 0;
  const name = (c: CoalitionRecord): string =>
    c.members.length === 0 ? '{} (no worker reports)' : `{${c.members.join(', ')}}`;
  return el(
    'table',
    { class: 'grid', testid: 'coalitions' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        ...[
          'coalition S (reporting workers)',
          'masked',
          t.likelihood ? 'v_lik(S), nats' : 'v(S)',
          t.likelihood ? 'how' : 'replayed answers',
        ].map((h) => el('th', {}, h)),
      ),
    ),
    el(
      'tbody',
      {},
      ...t.coalitions.map((c) =>
        el(
          'tr',
          { data: { coalition: String(c.coalition) } },
          el('td', {}, name(c), c.masked.length === 0 ? ' (nothing masked)' : ''),
          el('td', {}, c.masked.length === 0 ? '-' : c.masked.map((m) => `worker ${m}`).join(', ')),
          el(
            'td',
            { style: { background: creditColour(c.value - (t.likelihood ? vFull : t.success)) } },
            fmt(c.value, 2),
          ),
          el(
            'td',
            { class: 'text' },
            t.likelihood ? 'scored on the recorded context (nothing replayed)' : null,
            ...(t.likelihood ? [] : c.answers).map((a) =>
              el('div', { class: a.success >= 1 ? 'ok' : 'bad' }, `${quote(a.answer)}: ${verdict(a.success)}`),
            ),
          ),
        ),
      ),
    ),
  );
}

function shapleyTable(t: TrajectoryRecord): HTMLElement | null {
  if (!t.phi) return null;
  const phi = t.phi;
  return el(
    'div',
    { testid: 'shapley' },
    el('h3', {}, 'Shapley values'),
    el(
      'table',
      { class: 'grid' },
      el('thead', {}, el('tr', {}, el('th', {}, 'worker'), el('th', {}, 'phi'), el('th', {}, 'LOO Delta'))),
      el(
        'tbody',
        {},
        ...phi.map((p, m) =>
          el(
            'tr',
            {},
            el('td', {}, `worker ${m}`),
            el('td', { style: { background: creditColour(p) } }, fmt(p, 3)),
            el('td', {}, fmt(t.deltas[m], 3)),
          ),
        ),
      ),
    ),
    t.efficiencyResidual !== undefined
      ? el(
          'p',
          { class: 'muted' },
          `efficiency residual |sum phi - (v(N) - v({}))| = ${t.efficiencyResidual.toExponential(1)}`,
        )
      : null,
  );
}

/** Counterfactual repair: the reference report beside the recorded one, and a wrong delegation's repaired subtask. */
function repairNote(t: TrajectoryRecord, workerAgent: number | undefined): HTMLElement | null {
  const d = workerAgent === undefined ? null : t.agents[workerAgent]?.delegation;
  const ref = d === null || d === undefined ? undefined : t.references?.find((r) => r.delegation === d);
  if (!ref || ref.reference === null) return null;
  const blame = t.plannerRepairs?.find(([x]) => x === d);
  return el(
    'div',
    { class: 'repair-note', testid: 'repair-note' },
    el('span', { class: ref.right ? 'badge helpful' : 'badge bad' }, ref.right ? 'right report' : 'wrong report'),
    ` reference report (gold sub-answer): `,
    el('code', {}, ref.reference),
    ref.delegationWrong && ref.goldSubtask !== null
      ? el(
          'div',
          { class: 'muted' },
          `wrong delegation; repaired subtask: ${ref.goldSubtask}${
            blame ? ` (planner blame ${fmt(blame[1], 3)})` : ''
          }`,
        )
      : null,
  );
}

function toolCalls(t: TrajectoryRecord, m: MessageRecord): HTMLElement | null {
  if (m.toolCalls.length === 0) return null;
  return el(
    'ul',
    { class: 'calls' },
    ...m.toolCalls.map((c) =>
      el(
        'li',
        { class: c.valid ? 'call' : 'call invalid', testid: 'tool-call' },
        el('code', {}, `${c.name}(${c.args})`),
        c.valid ? null : el('span', { class: 'badge bad' }, 'invalid'),
        c.error ? el('div', { class: 'muted' }, c.error) : null,
        c.result !== undefined ? el('pre', { class: 'result' }, c.result) : null,
        c.name === 'delegate' ? repairNote(t, c.workerAgent) : null,
      ),
    ),
  );
}

function messageCard(t: TrajectoryRecord, m: MessageRecord, scale: number): HTMLElement {
  const credit = messageCredit(t, m);
  const first = t.firstError?.index === m.index;
  const pair = t.pair && t.pair.messageIndex === m.index ? t.pair : undefined;
  const col = m.agent + 1;
  const delegations = m.toolCalls.filter((c) => c.name === 'delegate' && c.workerAgent !== undefined);
  const notes: Child[] = delegations.map((c) => {
    const d = t.agents[c.workerAgent as number]?.delegation;
    const s = d === null || d === undefined ? null : replaySentence(t, d);
    return s
      ? el(
          'div',
          {
            class: 'replay-note',
            testid: 'replay-note',
            style: { background: creditColour(t.deltas[d as number] ?? 0, scale) },
          },
          s,
        )
      : null;
  });
  return el(
    'div',
    {
      class: `msg ${m.chatRole}${first ? ' first-error' : ''}`,
      testid: 'message',
      data: { index: String(m.index), agent: String(m.agent), credit: credit === null ? '' : String(credit) },
      style: {
        gridColumn: String(col),
        gridRow: String(m.index + 2),
        background: credit === null ? '' : creditColour(credit, scale),
      },
    },
    el(
      'div',
      { class: 'msg-head' },
      `#${m.index} ${agentLabel(t, m.agent)} · ${m.chatRole}`,
      credit !== null
        ? el(
            'span',
            { class: `badge ${creditWord(credit)}` },
            `${m.share ? 'share' : 'credit'} ${credit >= 0 ? '+' : ''}${fmt(credit, 3)}`,
          )
        : null,
      m.share ? el('span', { class: 'badge' }, `judge ${m.share.label > 0 ? '+1' : String(m.share.label)}`) : null,
      first ? el('span', { class: 'badge bad', testid: 'first-error' }, 'first error') : null,
    ),
    // Role prompts are long and the same in every trajectory: folded, one click away.
    m.chatRole === 'system'
      ? el('details', {}, el('summary', {}, 'role prompt'), el('pre', { class: 'text' }, m.text))
      : el('pre', { class: 'text' }, m.text),
    toolCalls(t, m),
    ...notes,
    pair
      ? el(
          'div',
          { class: 'preferred', testid: 'preferred' },
          el('strong', {}, 'preferred alternative: '),
          el('pre', { class: 'text' }, pair.chosen),
        )
      : null,
  );
}

export function trajectoryView(
  step: StepRecord,
  group: GroupRecord,
  t: TrajectoryRecord,
  back: () => void,
): HTMLElement {
  const lanes = t.agents.length;
  // Colours are relative to the largest |credit| of the trajectory's messages, so small shares still show.
  const scale = Math.max(1e-9, ...t.messages.map((m) => Math.abs(messageCredit(t, m) ?? 0)));
  const grid = el('div', { class: 'lanes', testid: 'lanes' });
  grid.style.gridTemplateColumns = `repeat(${lanes}, minmax(16rem, 1fr))`;
  for (const a of t.agents) {
    const label = agentLabel(t, a.id);
    grid.append(
      el(
        'div',
        {
          class: 'lane-head',
          style: { gridColumn: String(a.id + 1), gridRow: '1', background: creditColour(agentMarginal(t, a.id)) },
        },
        el('strong', {}, label),
        a.subtask !== undefined ? el('div', { class: 'text' }, a.subtask) : null,
        el('div', { class: 'muted' }, `marginal ${fmt(agentMarginal(t, a.id), 3)} · ${a.endReason}`),
      ),
    );
  }
  for (const m of t.messages) grid.append(messageCard(t, m, scale));
  const harmful = t.deltas.map((d, m) => ({ d, m })).filter((x) => x.d < 0);
  return el(
    'section',
    { testid: 'trajectory', data: { id: t.id } },
    el('button', { on: { click: back }, testid: 'back' }, '← back to the step'),
    el('h2', {}, `Trajectory ${t.id}`),
    el(
      'dl',
      { class: 'facts' },
      el('dt', {}, 'question'),
      el('dd', { class: 'text' }, group.question),
      el('dt', {}, 'gold'),
      el('dd', { class: 'text' }, group.answers.join(' | ')),
      el('dt', {}, 'final answer'),
      el('dd', { class: 'text', testid: 'final-answer' }, `${quote(t.finalAnswer)}: ${verdict(t.success)}`),
      el('dt', {}, 'credit'),
      el(
        'dd',
        {},
        t.likelihood
          ? `${step.credit.method} over the gold answer's likelihood (${
              t.likelihood.readThrough ? 'sequential gain' : 'coalition values'
            }, nats, nothing replayed), masked reports read '${step.credit.placeholder}'`
          : `${step.credit.method}, replay mode ${step.credit.replayMode}, ${step.credit.replays} replay(s) per ` +
              `coalition, ` +
              `${
                step.credit.counterfactual === 'resample'
                  ? 'workers left out of a coalition are run again on their subtask'
                  : `masked reports read '${step.credit.placeholder}'`
              }`,
      ),
      harmful.length > 0 ? el('dt', {}, 'harmful') : null,
      harmful.length > 0
        ? el(
            'dd',
            { testid: 'harmful-summary' },
            ...harmful.map((h) => el('div', {}, replaySentence(t, h.m) ?? `worker ${h.m}`)),
          )
        : null,
    ),
    el('h3', {}, 'Credit per agent'),
    creditTable(t),
    el(
      'h3',
      {},
      t.likelihood
        ? "Coalition values v_lik(S): the policy's mean log-probability per token of the gold answer"
        : 'Counterfactual replays v(S)',
    ),
    t.likelihood?.readThrough ? readThroughTable(t) : coalitionTable(t),
    shapleyTable(t),
    t.firstError
      ? el(
          'p',
          { testid: 'first-error-summary' },
          t.firstError.index === null
            ? 'first error: the judge found none'
            : `first error: message #${t.firstError.index} (${agentLabel(t, t.firstError.agent ?? 0)}), ` +
                `${t.firstError.judgeCalls} judge calls`,
        )
      : null,
    el('h3', {}, 'Conversation'),
    el('div', { class: 'lanes-wrap' }, grid),
  );
}
