/**
 * The shape a synthetic question was drawn as (data.synthetic.shapes), read off its MuSiQue-format
 * id (src/data/synth/record.ts): `Nhopcmp__...` a comparison, `Nhopagg__...` an aggregation, any
 * other id (MuSiQue's 2hop, 3hop1, ... and real benchmark ids) a chain.
 */
export const QUESTION_SHAPES = ['chain', 'comparison', 'aggregation'] as const;
export type QuestionShape = (typeof QUESTION_SHAPES)[number];

export function questionShape(id: string): QuestionShape {
  const prefix = id.split('__')[0] ?? '';
  if (/^\dhopcmp$/.test(prefix)) return 'comparison';
  if (/^\dhopagg$/.test(prefix)) return 'aggregation';
  return 'chain';
}

/**
 * Accuracy of a measurement on the questions of some shapes: the mean over them of correct / k; null when it has none.
 */
export function accuracyOn(
  a: { samples?: number; questions?: readonly { id: string; correct: number }[] },
  shapes: readonly QuestionShape[],
): number | null {
  const k = a.samples ?? 1;
  const qs = (a.questions ?? []).filter((q) => shapes.includes(questionShape(q.id)));
  return qs.length === 0 ? null : qs.reduce((x, q) => x + q.correct / k, 0) / qs.length;
}
