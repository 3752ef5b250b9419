/**
 * Signed credit as a colour: green for credit > 0 (helped), red for < 0 (harmed), grey for 0, with
 * the strength growing with |credit| up to `scale`. Pure, so the mapping is tested without a browser.
 */
export function creditColour(credit: number, scale = 1): string {
  if (!Number.isFinite(credit) || Math.abs(credit) < 1e-12) return 'rgb(238, 238, 238)';
  const t = Math.min(1, Math.abs(credit) / Math.max(1e-12, scale));
  // From near-white (t -> 0) to a saturated tint (t = 1).
  const mix = (a: number, b: number): number => Math.round(a + (b - a) * (0.25 + 0.75 * t));
  return credit > 0
    ? `rgb(${mix(245, 120)}, ${mix(250, 200)}, ${mix(245, 120)})`
    : `rgb(${mix(250, 235)}, ${mix(245, 120)}, ${mix(245, 120)})`;
}

/** The word a credit value stands for, as the SHARP analysis counts worker calls. */
export function creditWord(credit: number): 'helpful' | 'harmful' | 'neutral' {
  if (credit > 1e-12) return 'helpful';
  if (credit < -1e-12) return 'harmful';
  return 'neutral';
}

export const fmt = (x: number | null | undefined, digits = 3): string =>
  x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits);
